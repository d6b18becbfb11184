/**
 * Automations and their invocations. An occurrence is one invocation whatever happens (UNIQUE (automation_id,
 * scheduled_at)); the scheduler locks due automations (PostgreSQL: FOR UPDATE SKIP LOCKED, so an instance never
 * waits for another's tick; SQLite: the transaction holds the write lock). Deliverers claim invocations with a
 * lease, each backend its own way.
 */
import { assertUnixSeconds } from "../../kernel/unix-seconds.js";
import type { SqlDb } from "../sql/db.js";
import { limitOf, sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { AutomationRecord, AutomationTarget, InvocationRecord, Queries } from "../types.js";

const AUTOMATIONS = table<AutomationRecord>("automations", {
  id: "value",
  project_id: "value",
  created_at: "value",
  updated_at: "value",
  name: "value",
  metadata: "json",
  type: "value",
  expression: "value",
  timezone: "value",
  run_at: "value",
  status: "value",
  next_run_at: "value",
  target: "json",
  created_by: "json",
});

export const INVOCATIONS = table<InvocationRecord>("automation_invocations", {
  id: "value",
  automation_id: "value",
  project_id: "value",
  created_at: "value",
  scheduled_at: "value",
  source: "value",
  snapshot: "json?",
  target: "json",
  status: "value",
  skip_reason: "value",
  session_id: "value",
  error: "json?",
  claims: "value",
  next_attempt_at: "value",
  lease_owner: "value",
  lease_until: "value",
  completed_at: "value",
});

/** The session an existing-session target delivers to (a column of its own: the list filter). */
const targetSession = (t: AutomationTarget): string | null =>
  t.type === "existing_session" ? t.session_id : null;

export type AutomationQueries = Pick<
  Queries,
  | "insertAutomation"
  | "getAutomation"
  | "lockAutomation"
  | "updateAutomation"
  | "deleteAutomation"
  | "listAutomations"
  | "lockDueAutomations"
  | "insertInvocation"
  | "getInvocation"
  | "listInvocations"
  | "hasQueuedInvocation"
  | "updateClaimedInvocation"
  | "findInvocationSession"
>;

export function automationQueries(db: SqlDb): AutomationQueries {
  const automations = rows(db, AUTOMATIONS);
  const invocations = rows(db, INVOCATIONS);
  return {
    async insertAutomation(a) {
      assertUnixSeconds("automation", { run_at: a.run_at, next_run_at: a.next_run_at });
      await automations.insert(a, { target_session_id: targetSession(a.target) });
    },
    getAutomation: automations.get,
    lockAutomation: (id) => automations.first([sql`id = ${id}`], db.dialect.forUpdate(false)),
    async updateAutomation(id, patch) {
      assertUnixSeconds("automation", { run_at: patch.run_at, next_run_at: patch.next_run_at });
      const set = patch.target ? [sql`target_session_id = ${targetSession(patch.target)}`] : [];
      return automations.update(id, patch, { set });
    },
    // its invocations go with it (ON DELETE CASCADE)
    deleteAutomation: automations.remove,
    listAutomations(opts) {
      const conds = [sql`project_id = ${opts.project_id}`];
      if (opts.session_id !== undefined) conds.push(sql`target_session_id = ${opts.session_id}`);
      return automations.list(opts, conds);
    },
    lockDueAutomations: (now, limit) =>
      automations.select(
        [sql`status = 'active'`, sql`next_run_at IS NOT NULL`, sql`next_run_at <= ${now}`],
        sql` ORDER BY next_run_at ASC, rid ASC LIMIT ${limitOf(limit)}${db.dialect.forUpdate(true)}`,
      ),
    async insertInvocation(i) {
      assertUnixSeconds("invocation", { scheduled_at: i.scheduled_at });
      return (
        (await invocations.insert(i, {}, sql` ON CONFLICT (automation_id, scheduled_at) DO NOTHING`)) > 0
      );
    },
    getInvocation: invocations.get,
    listInvocations: (automationId, opts) => invocations.list(opts, [sql`automation_id = ${automationId}`]),
    async hasQueuedInvocation(automationId) {
      const found = await db.value<number>(
        sql`SELECT 1 FROM automation_invocations WHERE automation_id = ${automationId} AND status = 'queued' LIMIT 1`,
      );
      return found !== null;
    },
    updateClaimedInvocation(id, owner, patch) {
      const release =
        (patch.status !== undefined && patch.status !== "queued") || patch.next_attempt_at !== undefined;
      const lease = release
        ? [sql`lease_owner = NULL`, sql`lease_until = NULL`]
        : [sql`lease_owner = lease_owner`];
      return invocations.update(id, patch, { set: lease, conds: [sql`lease_owner = ${owner}`] });
    },
    async findInvocationSession(projectId, invocationId) {
      const id = await db.value<string>(
        sql`SELECT id FROM sessions WHERE project_id = ${projectId}
          AND ${db.dialect.jsonText("extra", "automation_invocation_id")} = ${invocationId} ORDER BY rid ASC LIMIT 1`,
      );
      return id ?? undefined;
    },
  };
}
