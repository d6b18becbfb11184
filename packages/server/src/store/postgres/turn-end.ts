/**
 * A turn's end as one statement: the turn's open items closed, the turn and the session patched, the thread's new
 * rollout bytes stored, and the closed items with the session as patched returned together (one round trip where
 * there were four; SQLite runs the three steps it has, which cost it microseconds: tables/index.ts
 * `closeTurnInSteps`).
 */
import { EMPTY, join, sql } from "../sql/query.js";
import { assignments } from "../sql/table.js";
import { SESSIONS } from "../tables/sessions.js";
import { TURNS } from "../tables/turns.js";
import type { ItemRecord, Queries, SessionRecord } from "../types.js";
import { type PgDb, sqlDb } from "./db.js";
import { closeOpenItemsStatement } from "./items.js";

export function closeTurn(db: PgDb): Queries["closeTurn"] {
  const q = sqlDb(db);
  return async (sessionId, turnId, end) => {
    const turnSet = assignments(TURNS, end.turn);
    const sessionSet = assignments(SESSIONS, end.session);
    // Data-modifying WITH clauses all run to completion, read or not. jsonb and double precision come back from
    // json_agg / row_to_json as they would in a row: the items and the session need no decoding of their own.
    const turnStep =
      turnSet.length > 0
        ? sql`, turn AS (UPDATE turns SET ${join(turnSet, ", ")} WHERE id = ${turnId} AND session_id = ${sessionId} RETURNING 1)`
        : EMPTY;
    // The chunk may be stored already (a save of the same bytes that was thought lost): the same bytes stay.
    const rollout = end.rollout
      ? sql`, rollout AS (INSERT INTO rollout_chunks (thread_id, start_offset, data)
          VALUES (${end.rollout.thread_id}, ${end.rollout.start_offset}, ${end.rollout.data}) ON CONFLICT DO NOTHING)`
      : EMPTY;
    const session =
      sessionSet.length > 0
        ? sql`UPDATE sessions SET ${join(sessionSet, ", ")} WHERE id = ${sessionId} RETURNING ${SESSIONS.columns}`
        : sql`SELECT ${SESSIONS.columns} FROM sessions WHERE id = ${sessionId}`;
    const row = await q.row<{ closed: ItemRecord[]; session: SessionRecord | null }>(sql`
      WITH closed AS (${closeOpenItemsStatement(sessionId, turnId, end.itemStatus)})${turnStep}${rollout}, s AS (${session})
      SELECT (SELECT coalesce(json_agg(closed ORDER BY ordinal), '[]'::json) FROM closed) AS closed,
        (SELECT row_to_json(s) FROM s) AS session`);
    return { closed: row?.closed ?? [], session: row?.session ?? undefined };
  };
}
