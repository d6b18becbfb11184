import type { GoalRecord, Queries } from "../types.js";
import { json, parse, type SqliteDb } from "./db.js";

interface GoalRow {
  session_id: string;
  data: string;
  updated_at: number;
}

/** The goal is kept as one JSON document per session (it is read and written whole). */
const fromRow = (r: GoalRow): GoalRecord => ({ ...parse<GoalRecord>(r.data), session_id: r.session_id });

export type GoalQueries = Pick<Queries, "getGoal" | "putGoal" | "deleteGoal" | "listGoals">;

export function goalQueries(db: SqliteDb): GoalQueries {
  return {
    async getGoal(sessionId) {
      const row = db.get<GoalRow>(
        "SELECT session_id, data, updated_at FROM goals WHERE session_id = ?",
        sessionId,
      );
      return row && fromRow(row);
    },
    async putGoal(g) {
      db.run(
        "INSERT INTO goals (session_id, data, updated_at) VALUES (?, ?, ?) " +
          "ON CONFLICT (session_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
        g.session_id,
        json(g),
        g.updated_at,
      );
    },
    async deleteGoal(sessionId) {
      return db.run("DELETE FROM goals WHERE session_id = ?", sessionId).changes > 0;
    },
    async listGoals(status) {
      const rows = db.all<GoalRow>(
        "SELECT session_id, data, updated_at FROM goals ORDER BY updated_at ASC, session_id ASC",
      );
      const goals = rows.map(fromRow);
      return status === undefined ? goals : goals.filter((g) => g.status === status);
    },
  };
}
