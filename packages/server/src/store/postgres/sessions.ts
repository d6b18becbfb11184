import type { Queries, SessionRecord } from "../types.js";
import { asIs, asJson, json, listByCreated, type PgDb, setClause } from "./db.js";

/** jsonb columns come back parsed: a row is a SessionRecord (the log counters are never selected). */
export const SESSION_COLS =
  "id, project_id, created_at, updated_at, last_active_at, status, agent_id, name, model, instructions, tools, " +
  "metadata, thread_id, workspace, usage, error, active_turn_id, required_actions, owner_instance, lease_epoch, extra";

const ENCODE = {
  updated_at: asIs,
  last_active_at: asIs,
  status: asIs,
  agent_id: asIs,
  name: asIs,
  model: asIs,
  instructions: asIs,
  tools: asJson,
  metadata: asJson,
  thread_id: asIs,
  workspace: asIs,
  usage: asJson,
  error: asIs,
  active_turn_id: asIs,
  required_actions: asJson,
  owner_instance: asIs,
  lease_epoch: asIs,
  extra: asJson,
};

export type SessionQueries = Pick<
  Queries,
  | "insertSession"
  | "getSession"
  | "updateSession"
  | "claimSession"
  | "deleteSession"
  | "listSessions"
  | "countSessions"
  | "listIdleSessionsBefore"
  | "listBusySessions"
>;

export function sessionQueries(db: PgDb): SessionQueries {
  const get = (id: string) =>
    db.row<SessionRecord>(`SELECT ${SESSION_COLS} FROM sessions WHERE id = $1`, [id]);
  return {
    async insertSession(s) {
      await db.run(
        `INSERT INTO sessions (${SESSION_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12::jsonb, ` +
          "$13, $14, $15::jsonb, $16, $17, $18::jsonb, $19, $20, $21::jsonb)",
        [
          s.id,
          s.project_id,
          s.created_at,
          s.updated_at,
          s.last_active_at,
          s.status,
          s.agent_id,
          s.name,
          s.model,
          s.instructions,
          json(s.tools),
          json(s.metadata),
          s.thread_id,
          s.workspace,
          json(s.usage),
          s.error,
          s.active_turn_id,
          json(s.required_actions),
          s.owner_instance,
          s.lease_epoch,
          json(s.extra),
        ],
      );
    },
    getSession: get,
    async updateSession(id, patch) {
      const set = setClause(patch, ENCODE, 2);
      if (set.params.length === 0) return get(id);
      return db.row<SessionRecord>(`UPDATE sessions SET ${set.sql} WHERE id = $1 RETURNING ${SESSION_COLS}`, [
        id,
        ...set.params,
      ]);
    },
    async claimSession(id, turnId, patch) {
      // One conditional statement: of concurrent claims (any instance), the row lock lets exactly one through;
      // the others re-check active_turn_id after it commits and change nothing.
      const set = setClause({ ...patch, active_turn_id: turnId }, ENCODE, 2);
      return db.row<SessionRecord>(
        `UPDATE sessions SET ${set.sql}, lease_epoch = lease_epoch + 1 WHERE id = $1 AND active_turn_id IS NULL ` +
          `RETURNING ${SESSION_COLS}`,
        [id, ...set.params],
      );
    },
    async deleteSession(id) {
      // One statement (atomic on its own); turns, items, events and the goal go with it (ON DELETE CASCADE).
      return (
        (await db.run(
          "WITH idem AS (DELETE FROM idempotency WHERE scope = $1) DELETE FROM sessions WHERE id = $1",
          [id],
        )) > 0
      );
    },
    async listSessions(opts) {
      const where = ["project_id = $1"];
      const params: unknown[] = [opts.project_id];
      if (opts.agent_id !== undefined) {
        params.push(opts.agent_id);
        where.push(`agent_id = $${params.length}`);
      }
      if (opts.metadata && Object.keys(opts.metadata).length > 0) {
        params.push(json(opts.metadata));
        where.push(`metadata @> $${params.length}::jsonb`);
      }
      return listByCreated<SessionRecord, SessionRecord>(db, {
        table: "sessions",
        cols: SESSION_COLS,
        where,
        params,
        opts,
        map: (r) => r,
      });
    },
    async countSessions(projectId) {
      return projectId === undefined
        ? ((await db.value<number>("SELECT count(*) FROM sessions")) ?? 0)
        : ((await db.value<number>("SELECT count(*) FROM sessions WHERE project_id = $1", [projectId])) ?? 0);
    },
    async listIdleSessionsBefore(before, limit) {
      return db.rows<SessionRecord>(
        `SELECT ${SESSION_COLS} FROM sessions WHERE last_active_at < $1 AND active_turn_id IS NULL ` +
          "AND status = 'idle' ORDER BY last_active_at ASC, rid ASC LIMIT $2",
        [before, Math.max(0, Math.trunc(limit))],
      );
    },
    async listBusySessions() {
      return db.rows<SessionRecord>(
        `SELECT ${SESSION_COLS} FROM sessions ` +
          "WHERE status IN ('in_progress', 'requires_action') OR active_turn_id IS NOT NULL ORDER BY rid ASC",
      );
    },
  };
}
