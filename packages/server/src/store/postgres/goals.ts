import type { GoalRecord, Queries } from "../types.js";
import { json, type PgDb } from "./db.js";

/** The goal is kept as one jsonb document per session (it is read and written whole). */
const fromRow = (r: { session_id: string; data: GoalRecord }): GoalRecord => ({
  ...r.data,
  session_id: r.session_id,
});

export type GoalQueries = Pick<Queries, "getGoal" | "putGoal" | "deleteGoal" | "listGoals">;

export function goalQueries(db: PgDb): GoalQueries {
  return {
    async getGoal(sessionId) {
      const row = await db.row<{ session_id: string; data: GoalRecord }>(
        "SELECT session_id, data FROM goals WHERE session_id = $1",
        [sessionId],
      );
      return row && fromRow(row);
    },
    async putGoal(g) {
      await db.run(
        "INSERT INTO goals (session_id, data, updated_at) VALUES ($1, $2::jsonb, $3) " +
          "ON CONFLICT (session_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
        [g.session_id, json(g), g.updated_at],
      );
    },
    async deleteGoal(sessionId) {
      return (await db.run("DELETE FROM goals WHERE session_id = $1", [sessionId])) > 0;
    },
    async listGoals(status) {
      const rows =
        status === undefined
          ? await db.rows<{ session_id: string; data: GoalRecord }>(
              "SELECT session_id, data FROM goals ORDER BY updated_at ASC, session_id ASC",
            )
          : await db.rows<{ session_id: string; data: GoalRecord }>(
              "SELECT session_id, data FROM goals WHERE data->>'status' = $1 ORDER BY updated_at ASC, session_id ASC",
              [status],
            );
      return rows.map(fromRow);
    },
  };
}
