import type { Queries, TurnRecord } from "../types.js";
import { asIs, asJson, asJsonOrNull, json, jsonOrNull, listByCreated, type PgDb, setClause } from "./db.js";

/** jsonb columns come back parsed (SQL NULL as null): a row is a TurnRecord. */
const COLS =
  "id, session_id, created_at, started_at, completed_at, status, input, error, usage, goal, subagent_id";

const ENCODE = {
  started_at: asIs,
  completed_at: asIs,
  status: asIs,
  input: asJson,
  error: asJsonOrNull,
  usage: asJsonOrNull,
  goal: asJsonOrNull,
};

export type TurnQueries = Pick<Queries, "insertTurn" | "getTurn" | "updateTurn" | "listTurns">;

export function turnQueries(db: PgDb): TurnQueries {
  const get = (sessionId: string, turnId: string) =>
    db.row<TurnRecord>(`SELECT ${COLS} FROM turns WHERE session_id = $1 AND id = $2`, [sessionId, turnId]);
  return {
    async insertTurn(t) {
      await db.run(
        `INSERT INTO turns (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9::jsonb, $10::jsonb, $11)`,
        [
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
        ],
      );
    },
    getTurn: get,
    async updateTurn(sessionId, turnId, patch) {
      const set = setClause(patch, ENCODE, 3);
      if (set.params.length === 0) return get(sessionId, turnId);
      return db.row<TurnRecord>(
        `UPDATE turns SET ${set.sql} WHERE session_id = $1 AND id = $2 RETURNING ${COLS}`,
        [sessionId, turnId, ...set.params],
      );
    },
    async listTurns(sessionId, opts) {
      const where = ["session_id = $1"];
      const params: unknown[] = [sessionId];
      if (opts.status !== undefined) {
        params.push(opts.status);
        where.push(`status = $${params.length}`);
      }
      return listByCreated<TurnRecord, TurnRecord>(db, {
        table: "turns",
        cols: COLS,
        where,
        params,
        opts,
        map: (r) => r,
      });
    },
  };
}
