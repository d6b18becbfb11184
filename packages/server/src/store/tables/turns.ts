/** Turns of a session (a turn's id is unique within its session). */
import type { SqlDb } from "../sql/db.js";
import { sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { Queries, TurnRecord } from "../types.js";

export const TURNS = table<TurnRecord>("turns", {
  id: "value",
  session_id: "value",
  created_at: "value",
  started_at: "value",
  completed_at: "value",
  status: "value",
  input: "json",
  error: "json?",
  usage: "json?",
  goal: "json?",
  subagent_id: "value",
});

export type TurnQueries = Pick<Queries, "insertTurn" | "getTurn" | "updateTurn" | "listTurns">;

export function turnQueries(db: SqlDb): TurnQueries {
  const turns = rows(db, TURNS);
  const ofSession = (sessionId: string) => sql`session_id = ${sessionId}`;
  return {
    async insertTurn(t) {
      await turns.insert(t);
    },
    getTurn: (sessionId, turnId) => turns.first([ofSession(sessionId), sql`id = ${turnId}`]),
    updateTurn: (sessionId, turnId, patch) => turns.update(turnId, patch, { conds: [ofSession(sessionId)] }),
    listTurns(sessionId, opts) {
      const conds = [ofSession(sessionId)];
      if (opts.status !== undefined) conds.push(sql`status = ${opts.status}`);
      return turns.list(opts, conds);
    },
  };
}
