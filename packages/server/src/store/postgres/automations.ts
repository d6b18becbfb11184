import { assertUnixSeconds } from "../../kernel/unix-seconds.js";
import type { AutomationRecord, AutomationTarget, InvocationRecord, Queries } from "../types.js";
import { asIs, asJson, asJsonOrNull, json, jsonOrNull, listByCreated, type PgDb, setClause } from "./db.js";

/** jsonb columns come back parsed: a row is an AutomationRecord. */
const COLS =
  "id, project_id, created_at, updated_at, name, metadata, type, expression, timezone, run_at, status, " +
  "next_run_at, target, created_by";

/** The session an existing-session target delivers to (indexed: the list filter). */
const targetSession = (t: AutomationTarget): string | null =>
  t.type === "existing_session" ? t.session_id : null;

const ENCODE = {
  updated_at: asIs,
  name: asIs,
  metadata: asJson,
  expression: asIs,
  timezone: asIs,
  run_at: asIs,
  status: asIs,
  next_run_at: asIs,
  target: asJson,
  created_by: asJson,
  target_session_id: asIs,
};

/** A row is an InvocationRecord. */
const INV_COLS =
  "id, automation_id, project_id, created_at, scheduled_at, source, snapshot, target, status, skip_reason, " +
  "session_id, error, claims, next_attempt_at, lease_owner, lease_until, completed_at";
const qualified = (alias: string, cols: string) =>
  cols
    .split(", ")
    .map((c) => `${alias}.${c}`)
    .join(", ");

const INV_ENCODE = {
  status: asIs,
  session_id: asIs,
  error: asJsonOrNull,
  next_attempt_at: asIs,
  completed_at: asIs,
};

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
  | "claimInvocations"
  | "updateClaimedInvocation"
  | "findInvocationSession"
>;

/**
 * Automations and their invocations. Several instances share them: the scheduler locks due automations with FOR
 * UPDATE SKIP LOCKED (an instance never waits for another's tick; the other's occurrence is already fired when the
 * lock is gone), UNIQUE (automation_id, scheduled_at) makes an occurrence one invocation whatever happens, and the
 * deliverers claim invocations with SKIP LOCKED plus a lease.
 */
export function automationQueries(db: PgDb): AutomationQueries {
  const get = (id: string) => db.row<AutomationRecord>(`SELECT ${COLS} FROM automations WHERE id = $1`, [id]);
  const getInv = (id: string) =>
    db.row<InvocationRecord>(`SELECT ${INV_COLS} FROM automation_invocations WHERE id = $1`, [id]);
  return {
    async insertAutomation(a) {
      assertUnixSeconds("automation", { run_at: a.run_at, next_run_at: a.next_run_at });
      await db.run(
        `INSERT INTO automations (${COLS}, target_session_id) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, ` +
          "$10, $11, $12, $13::jsonb, $14::jsonb, $15)",
        [
          a.id,
          a.project_id,
          a.created_at,
          a.updated_at,
          a.name,
          json(a.metadata),
          a.type,
          a.expression,
          a.timezone,
          a.run_at,
          a.status,
          a.next_run_at,
          json(a.target),
          json(a.created_by),
          targetSession(a.target),
        ],
      );
    },
    getAutomation: get,
    async lockAutomation(id) {
      return db.row<AutomationRecord>(`SELECT ${COLS} FROM automations WHERE id = $1 FOR UPDATE`, [id]);
    },
    async updateAutomation(id, patch) {
      assertUnixSeconds("automation", { run_at: patch.run_at, next_run_at: patch.next_run_at });
      const cols: Record<string, unknown> = { ...patch };
      if (patch.target) cols.target_session_id = targetSession(patch.target);
      const set = setClause(cols, ENCODE, 2);
      if (set.params.length === 0) return get(id);
      return db.row<AutomationRecord>(`UPDATE automations SET ${set.sql} WHERE id = $1 RETURNING ${COLS}`, [
        id,
        ...set.params,
      ]);
    },
    async deleteAutomation(id) {
      // its invocations go with it (ON DELETE CASCADE)
      return (await db.run("DELETE FROM automations WHERE id = $1", [id])) > 0;
    },
    async listAutomations(opts) {
      const where = ["project_id = $1"];
      const params: unknown[] = [opts.project_id];
      if (opts.session_id !== undefined) {
        params.push(opts.session_id);
        where.push(`target_session_id = $${params.length}`);
      }
      return listByCreated<AutomationRecord, AutomationRecord>(db, {
        table: "automations",
        cols: COLS,
        where,
        params,
        opts,
        map: (r) => r,
      });
    },
    async lockDueAutomations(now, limit) {
      return db.rows<AutomationRecord>(
        `SELECT ${COLS} FROM automations WHERE status = 'active' AND next_run_at IS NOT NULL AND next_run_at <= $1 ` +
          "ORDER BY next_run_at ASC, rid ASC LIMIT $2 FOR UPDATE SKIP LOCKED",
        [now, Math.max(0, Math.trunc(limit))],
      );
    },
    async insertInvocation(i) {
      assertUnixSeconds("invocation", { scheduled_at: i.scheduled_at });
      const inserted = await db.run(
        `INSERT INTO automation_invocations (${INV_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9, ` +
          "$10, $11, $12::jsonb, $13, $14, $15, $16, $17) ON CONFLICT (automation_id, scheduled_at) DO NOTHING",
        [
          i.id,
          i.automation_id,
          i.project_id,
          i.created_at,
          i.scheduled_at,
          i.source,
          jsonOrNull(i.snapshot),
          json(i.target),
          i.status,
          i.skip_reason,
          i.session_id,
          jsonOrNull(i.error),
          i.claims,
          i.next_attempt_at,
          i.lease_owner,
          i.lease_until,
          i.completed_at,
        ],
      );
      return inserted > 0;
    },
    getInvocation: getInv,
    async listInvocations(automationId, opts) {
      return listByCreated<InvocationRecord, InvocationRecord>(db, {
        table: "automation_invocations",
        cols: INV_COLS,
        where: ["automation_id = $1"],
        params: [automationId],
        opts,
        map: (r) => r,
      });
    },
    async hasQueuedInvocation(automationId) {
      return (
        (await db.value<number>(
          "SELECT 1 FROM automation_invocations WHERE automation_id = $1 AND status = 'queued' LIMIT 1",
          [automationId],
        )) !== null
      );
    },
    async claimInvocations(now, owner, leaseUntil, limit) {
      // One statement: the rows are picked (and locked, skipping those another instance holds) once, then leased.
      const rows = await db.rows<InvocationRecord>(
        "WITH c AS MATERIALIZED (SELECT i.rid FROM automation_invocations i JOIN automations a ON a.id = i.automation_id " +
          "WHERE i.status = 'queued' AND i.next_attempt_at <= $1 AND (i.lease_until IS NULL OR i.lease_until < $1) " +
          "AND (i.scheduled_at IS NULL OR a.status <> 'paused') " +
          "ORDER BY i.next_attempt_at ASC, i.rid ASC LIMIT $4 FOR UPDATE OF i SKIP LOCKED) " +
          "UPDATE automation_invocations t SET lease_owner = $2, lease_until = $3, claims = t.claims + 1 FROM c " +
          `WHERE t.rid = c.rid RETURNING ${qualified("t", INV_COLS)}`,
        [now, owner, leaseUntil, Math.max(0, Math.trunc(limit))],
      );
      return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at);
    },
    async updateClaimedInvocation(id, owner, patch) {
      const set = setClause(patch, INV_ENCODE, 3);
      const release =
        (patch.status !== undefined && patch.status !== "queued") || patch.next_attempt_at !== undefined;
      const lease = release ? "lease_owner = NULL, lease_until = NULL" : "lease_owner = lease_owner";
      return db.row<InvocationRecord>(
        `UPDATE automation_invocations SET ${set.sql ? `${set.sql}, ` : ""}${lease} ` +
          `WHERE id = $1 AND lease_owner = $2 RETURNING ${INV_COLS}`,
        [id, owner, ...set.params],
      );
    },
    async findInvocationSession(projectId, invocationId) {
      return (
        (await db.value<string>(
          "SELECT id FROM sessions WHERE project_id = $1 AND extra->>'automation_invocation_id' = $2 " +
            "ORDER BY rid ASC LIMIT 1",
          [projectId, invocationId],
        )) ?? undefined
      );
    },
  };
}
