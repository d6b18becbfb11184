import type { Queries, SessionRecord, SessionStatus, Usage } from "../types.js";
import type { Counters } from "./counters.js";
import { asIs, json, listByCreated, parse, type SqliteDb, setClause } from "./db.js";

interface SessionRow {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  last_active_at: number;
  status: string;
  agent_id: string | null;
  name: string | null;
  model: string;
  instructions: string | null;
  tools: string;
  metadata: string;
  thread_id: string | null;
  workspace: string;
  usage: string;
  error: string | null;
  active_turn_id: string | null;
  required_actions: string;
  owner_instance: string | null;
  lease_epoch: number;
  extra: string;
}

const COLS =
  "id, project_id, created_at, updated_at, last_active_at, status, agent_id, name, model, instructions, tools, " +
  "metadata, thread_id, workspace, usage, error, active_turn_id, required_actions, owner_instance, lease_epoch, extra";

const fromRow = (r: SessionRow): SessionRecord => ({
  id: r.id,
  project_id: r.project_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  last_active_at: r.last_active_at,
  status: r.status as SessionStatus,
  agent_id: r.agent_id,
  name: r.name,
  model: r.model,
  instructions: r.instructions,
  tools: parse(r.tools),
  metadata: parse(r.metadata),
  thread_id: r.thread_id,
  workspace: r.workspace,
  usage: parse<Usage>(r.usage),
  error: r.error,
  active_turn_id: r.active_turn_id,
  required_actions: parse(r.required_actions),
  owner_instance: r.owner_instance,
  lease_epoch: r.lease_epoch,
  extra: parse(r.extra),
});

const ENCODE = {
  updated_at: asIs,
  last_active_at: asIs,
  status: asIs,
  agent_id: asIs,
  name: asIs,
  model: asIs,
  instructions: asIs,
  tools: json,
  metadata: json,
  thread_id: asIs,
  workspace: asIs,
  usage: json,
  error: asIs,
  active_turn_id: asIs,
  required_actions: json,
  owner_instance: asIs,
  lease_epoch: asIs,
  extra: json,
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

export function sessionQueries(db: SqliteDb, counters: Counters): SessionQueries {
  const get = (id: string) => {
    const row = db.get<SessionRow>(`SELECT ${COLS} FROM sessions WHERE id = ?`, id);
    return row && fromRow(row);
  };
  return {
    async insertSession(s) {
      db.run(
        `INSERT INTO sessions (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
      );
    },
    async getSession(id) {
      return get(id);
    },
    async updateSession(id, patch) {
      const set = setClause(patch, ENCODE);
      if (set.params.length > 0) db.run(`UPDATE sessions SET ${set.sql} WHERE id = ?`, ...set.params, id);
      return get(id);
    },
    async claimSession(id, turnId, patch) {
      const set = setClause({ ...patch, active_turn_id: turnId }, ENCODE);
      const claimed = db.run(
        `UPDATE sessions SET ${set.sql}, lease_epoch = lease_epoch + 1 WHERE id = ? AND active_turn_id IS NULL`,
        ...set.params,
        id,
      );
      return claimed.changes > 0 ? get(id) : undefined;
    },
    async deleteSession(id) {
      const deleted = db.atomic(() => {
        db.run("DELETE FROM idempotency WHERE scope = ?", id);
        // turns, items, events and the goal go with it (ON DELETE CASCADE)
        return db.run("DELETE FROM sessions WHERE id = ?", id).changes > 0;
      });
      counters.forget(id);
      return deleted;
    },
    async listSessions(opts) {
      const where = ["project_id = ?"];
      const params: unknown[] = [opts.project_id];
      if (opts.agent_id !== undefined) {
        where.push("agent_id = ?");
        params.push(opts.agent_id);
      }
      for (const [k, v] of Object.entries(opts.metadata ?? {})) {
        where.push(
          "EXISTS (SELECT 1 FROM json_each(sessions.metadata) AS m WHERE m.key = ? AND m.value = ?)",
        );
        params.push(k, v);
      }
      return listByCreated(db, { table: "sessions", cols: COLS, where, params, opts, map: fromRow });
    },
    async countSessions(projectId) {
      return projectId === undefined
        ? (db.value<number>("SELECT count(*) FROM sessions") ?? 0)
        : (db.value<number>("SELECT count(*) FROM sessions WHERE project_id = ?", projectId) ?? 0);
    },
    async listIdleSessionsBefore(before, limit) {
      return db
        .all<SessionRow>(
          `SELECT ${COLS} FROM sessions WHERE last_active_at < ? AND active_turn_id IS NULL ` +
            "AND status = 'idle' ORDER BY last_active_at ASC, rid ASC LIMIT ?",
          before,
          Math.max(0, Math.trunc(limit)),
        )
        .map(fromRow);
    },
    async listBusySessions() {
      return db
        .all<SessionRow>(
          `SELECT ${COLS} FROM sessions WHERE status IN ('in_progress', 'requires_action') OR active_turn_id IS NOT NULL ` +
            "ORDER BY rid ASC",
        )
        .map(fromRow);
    },
  };
}
