/** Goals: one JSON document per session (read and written whole). */
import type { SqlDb } from "../sql/db.js";
import { jsonParam, sql } from "../sql/query.js";
import type { GoalRecord, Queries } from "../types.js";

export type GoalQueries = Pick<Queries, "getGoal" | "putGoal" | "deleteGoal" | "listGoals">;

interface GoalRow {
  session_id: string;
  data: unknown;
}

export function goalQueries(db: SqlDb): GoalQueries {
  const fromRow = (r: GoalRow): GoalRecord => ({
    ...((db.dialect.typedRows ? r.data : JSON.parse(String(r.data))) as GoalRecord),
    session_id: r.session_id,
  });
  return {
    async getGoal(sessionId) {
      const row = await db.row<GoalRow>(
        sql`SELECT session_id, data FROM goals WHERE session_id = ${sessionId}`,
      );
      return row && fromRow(row);
    },
    async putGoal(g) {
      await db.run(
        sql`INSERT INTO goals (session_id, data, updated_at) VALUES (${g.session_id}, ${jsonParam(g)}, ${g.updated_at})
            ON CONFLICT (session_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
      );
    },
    async deleteGoal(sessionId) {
      return (await db.run(sql`DELETE FROM goals WHERE session_id = ${sessionId}`)) > 0;
    },
    async listGoals(status) {
      const filter =
        status === undefined ? sql`` : sql` WHERE ${db.dialect.jsonText("data", "status")} = ${status}`;
      const rs = await db.rows<GoalRow>(
        sql`SELECT session_id, data FROM goals${filter} ORDER BY updated_at ASC, session_id ASC`,
      );
      return rs.map(fromRow);
    },
  };
}
