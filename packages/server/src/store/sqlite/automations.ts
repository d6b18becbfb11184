import { assertUnixSeconds } from "../../kernel/unix-seconds.js";
import type { AutomationRecord, AutomationTarget, InvocationRecord, Queries } from "../types.js";
import { asIs, json, jsonOrNull, listByCreated, parse, parseOrNull, type SqliteDb, setClause } from "./db.js";

interface AutomationRow {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string;
  metadata: string;
  type: string;
  expression: string | null;
  timezone: string | null;
  run_at: number | null;
  status: string;
  next_run_at: number | null;
  target: string;
  created_by: string;
}

const COLS =
  "id, project_id, created_at, updated_at, name, metadata, type, expression, timezone, run_at, status, " +
  "next_run_at, target, created_by";

const fromRow = (r: AutomationRow): AutomationRecord => ({
  id: r.id,
  project_id: r.project_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  name: r.name,
  metadata: parse(r.metadata),
  type: r.type as AutomationRecord["type"],
  expression: r.expression,
  timezone: r.timezone,
  run_at: r.run_at,
  status: r.status as AutomationRecord["status"],
  next_run_at: r.next_run_at,
  target: parse(r.target),
  created_by: parse(r.created_by),
});

/** The session an existing-session target delivers to (indexed: the list filter). */
const targetSession = (t: AutomationTarget): string | null =>
  t.type === "existing_session" ? t.session_id : null;

const ENCODE = {
  updated_at: asIs,
  name: asIs,
  metadata: json,
  expression: asIs,
  timezone: asIs,
  run_at: asIs,
  status: asIs,
  next_run_at: asIs,
  target: json,
  created_by: json,
  target_session_id: asIs,
};

interface InvocationRow {
  id: string;
  automation_id: string;
  project_id: string;
  created_at: number;
  scheduled_at: number | null;
  source: string;
  snapshot: string | null;
  target: string;
  status: string;
  skip_reason: string | null;
  session_id: string | null;
  error: string | null;
  claims: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  completed_at: number | null;
}

const INV_COLS =
  "id, automation_id, project_id, created_at, scheduled_at, source, snapshot, target, status, skip_reason, " +
  "session_id, error, claims, next_attempt_at, lease_owner, lease_until, completed_at";

const invFromRow = (r: InvocationRow): InvocationRecord => ({
  id: r.id,
  automation_id: r.automation_id,
  project_id: r.project_id,
  created_at: r.created_at,
  scheduled_at: r.scheduled_at,
  source: r.source as InvocationRecord["source"],
  snapshot: parseOrNull(r.snapshot),
  target: parse(r.target),
  status: r.status as InvocationRecord["status"],
  skip_reason: r.skip_reason as InvocationRecord["skip_reason"],
  session_id: r.session_id,
  error: parseOrNull(r.error),
  claims: r.claims,
  next_attempt_at: r.next_attempt_at,
  lease_owner: r.lease_owner,
  lease_until: r.lease_until,
  completed_at: r.completed_at,
});

const INV_ENCODE = {
  status: asIs,
  session_id: asIs,
  error: jsonOrNull,
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
 * Automations and their invocations. SQLite has one writer: a transaction (BEGIN IMMEDIATE) holds the write lock,
 * so "locked" reads are plain reads inside it, and each claim is one UPDATE … RETURNING (atomic by itself).
 */
export function automationQueries(db: SqliteDb): AutomationQueries {
  const get = (id: string) => {
    const row = db.get<AutomationRow>(`SELECT ${COLS} FROM automations WHERE id = ?`, id);
    return row && fromRow(row);
  };
  const getInv = (id: string) => {
    const row = db.get<InvocationRow>(`SELECT ${INV_COLS} FROM automation_invocations WHERE id = ?`, id);
    return row && invFromRow(row);
  };
  return {
    async insertAutomation(a) {
      assertUnixSeconds("automation", { run_at: a.run_at, next_run_at: a.next_run_at });
      db.run(
        `INSERT INTO automations (${COLS}, target_session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
      );
    },
    async getAutomation(id) {
      return get(id);
    },
    async lockAutomation(id) {
      return get(id);
    },
    async updateAutomation(id, patch) {
      assertUnixSeconds("automation", { run_at: patch.run_at, next_run_at: patch.next_run_at });
      const cols: Record<string, unknown> = { ...patch };
      if (patch.target) cols.target_session_id = targetSession(patch.target);
      const set = setClause(cols, ENCODE);
      if (set.params.length > 0) db.run(`UPDATE automations SET ${set.sql} WHERE id = ?`, ...set.params, id);
      return get(id);
    },
    async deleteAutomation(id) {
      // its invocations go with it (ON DELETE CASCADE)
      return db.run("DELETE FROM automations WHERE id = ?", id).changes > 0;
    },
    async listAutomations(opts) {
      const where = ["project_id = ?"];
      const params: unknown[] = [opts.project_id];
      if (opts.session_id !== undefined) {
        where.push("target_session_id = ?");
        params.push(opts.session_id);
      }
      return listByCreated(db, { table: "automations", cols: COLS, where, params, opts, map: fromRow });
    },
    async lockDueAutomations(now, limit) {
      return db
        .all<AutomationRow>(
          `SELECT ${COLS} FROM automations WHERE status = 'active' AND next_run_at IS NOT NULL AND next_run_at <= ? ` +
            "ORDER BY next_run_at ASC, rid ASC LIMIT ?",
          now,
          Math.max(0, Math.trunc(limit)),
        )
        .map(fromRow);
    },
    async insertInvocation(i) {
      assertUnixSeconds("invocation", { scheduled_at: i.scheduled_at });
      const res = db.run(
        `INSERT INTO automation_invocations (${INV_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ` +
          "ON CONFLICT (automation_id, scheduled_at) DO NOTHING",
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
      );
      return res.changes > 0;
    },
    async getInvocation(id) {
      return getInv(id);
    },
    async listInvocations(automationId, opts) {
      return listByCreated(db, {
        table: "automation_invocations",
        cols: INV_COLS,
        where: ["automation_id = ?"],
        params: [automationId],
        opts,
        map: invFromRow,
      });
    },
    async hasQueuedInvocation(automationId) {
      return (
        db.value<number>(
          "SELECT 1 FROM automation_invocations WHERE automation_id = ? AND status = 'queued' LIMIT 1",
          automationId,
        ) !== null
      );
    },
    async claimInvocations(now, owner, leaseUntil, limit) {
      return db
        .all<InvocationRow>(
          "UPDATE automation_invocations SET lease_owner = ?, lease_until = ?, claims = claims + 1 WHERE rid IN (" +
            "SELECT i.rid FROM automation_invocations i JOIN automations a ON a.id = i.automation_id " +
            "WHERE i.status = 'queued' AND i.next_attempt_at <= ? AND (i.lease_until IS NULL OR i.lease_until < ?) " +
            "AND (i.scheduled_at IS NULL OR a.status <> 'paused') " +
            `ORDER BY i.next_attempt_at ASC, i.rid ASC LIMIT ?) RETURNING ${INV_COLS}`,
          owner,
          leaseUntil,
          now,
          now,
          Math.max(0, Math.trunc(limit)),
        )
        .map(invFromRow)
        .sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at);
    },
    async updateClaimedInvocation(id, owner, patch) {
      const set = setClause(patch, INV_ENCODE);
      const release =
        (patch.status !== undefined && patch.status !== "queued") || patch.next_attempt_at !== undefined;
      const lease = release ? "lease_owner = NULL, lease_until = NULL" : "lease_owner = lease_owner";
      const changed = db.run(
        `UPDATE automation_invocations SET ${set.sql ? `${set.sql}, ` : ""}${lease} WHERE id = ? AND lease_owner = ?`,
        ...set.params,
        id,
        owner,
      );
      return changed.changes > 0 ? getInv(id) : undefined;
    },
    async findInvocationSession(projectId, invocationId) {
      return (
        db.value<string>(
          "SELECT id FROM sessions WHERE project_id = ? AND json_extract(extra, '$.automation_invocation_id') = ? " +
            "ORDER BY rid ASC LIMIT 1",
          projectId,
          invocationId,
        ) ?? undefined
      );
    },
  };
}
