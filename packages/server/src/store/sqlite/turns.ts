import type { Queries, TurnError, TurnGoal, TurnRecord, TurnStatus, Usage } from "../types.js";
import { asIs, json, jsonOrNull, listByCreated, parse, parseOrNull, type SqliteDb, setClause } from "./db.js";

interface TurnRow {
  id: string;
  session_id: string;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  status: string;
  input: string;
  error: string | null;
  usage: string | null;
  goal: string | null;
  subagent_id: string | null;
}

const COLS =
  "id, session_id, created_at, started_at, completed_at, status, input, error, usage, goal, subagent_id";

const fromRow = (r: TurnRow): TurnRecord => ({
  id: r.id,
  session_id: r.session_id,
  created_at: r.created_at,
  started_at: r.started_at,
  completed_at: r.completed_at,
  status: r.status as TurnStatus,
  input: parse<unknown>(r.input),
  error: parseOrNull<TurnError>(r.error),
  usage: parseOrNull<Usage>(r.usage),
  goal: parseOrNull<TurnGoal>(r.goal),
  subagent_id: r.subagent_id,
});

const ENCODE = {
  started_at: asIs,
  completed_at: asIs,
  status: asIs,
  input: json,
  error: jsonOrNull,
  usage: jsonOrNull,
  goal: jsonOrNull,
};

export type TurnQueries = Pick<Queries, "insertTurn" | "getTurn" | "updateTurn" | "listTurns">;

export function turnQueries(db: SqliteDb): TurnQueries {
  const get = (sessionId: string, turnId: string) => {
    const row = db.get<TurnRow>(
      `SELECT ${COLS} FROM turns WHERE session_id = ? AND id = ?`,
      sessionId,
      turnId,
    );
    return row && fromRow(row);
  };
  return {
    async insertTurn(t) {
      db.run(
        `INSERT INTO turns (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        t.id,
        t.session_id,
        t.created_at,
        t.started_at,
        t.completed_at,
        t.status,
        json(t.input),
        jsonOrNull(t.error),
        jsonOrNull(t.usage),
        jsonOrNull(t.goal),
        t.subagent_id,
      );
    },
    async getTurn(sessionId, turnId) {
      return get(sessionId, turnId);
    },
    async updateTurn(sessionId, turnId, patch) {
      const set = setClause(patch, ENCODE);
      if (set.params.length > 0) {
        db.run(
          `UPDATE turns SET ${set.sql} WHERE session_id = ? AND id = ?`,
          ...set.params,
          sessionId,
          turnId,
        );
      }
      return get(sessionId, turnId);
    },
    async listTurns(sessionId, opts) {
      const where = ["session_id = ?"];
      const params: unknown[] = [sessionId];
      if (opts.status !== undefined) {
        where.push("status = ?");
        params.push(opts.status);
      }
      return listByCreated(db, { table: "turns", cols: COLS, where, params, opts, map: fromRow });
    },
  };
}
