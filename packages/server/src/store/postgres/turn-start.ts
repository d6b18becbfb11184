/**
 * A turn's start as one statement: the session claimed (a conditional UPDATE, its lease epoch bumped), the turn
 * inserted from its JSON (only when the claim took: it reads the claim's row), and the turn's first events appended
 * by append_events() with the session as claimed, fenced by the claim's new epoch. One round trip and one commit where
 * there were two statements and a transaction of four; SQLite runs the steps (tables/index.ts `startTurnInSteps`).
 *
 * append_events() runs once per row of the claim, after it (LATERAL): the function's statements see the claimed row
 * and bump its counters after the claim's UPDATE. It reads no turn, so the insert beside it needs no order.
 */
import { outboxEvents } from "../outbox.js";
import { render } from "../sql/db.js";
import { join, jsonParam, sql } from "../sql/query.js";
import { assignments } from "../sql/table.js";
import { startEvents } from "../tables/index.js";
import { SESSIONS } from "../tables/sessions.js";
import { TURNS } from "../tables/turns.js";
import type { Queries, SessionRecord } from "../types.js";
import { type PgDb, POSTGRES } from "./db.js";
import { appendedAt } from "./events.js";

interface StartRow {
  session: SessionRecord;
  base_seq: number;
}

export function startTurn(db: PgDb): Queries["startTurn"] {
  return async (session, turn, patch, at) => {
    const set = assignments(SESSIONS, { ...patch, active_turn_id: turn.id });
    // What the stored events will say, the claimed session aside: the webhook event is made from `session` as the
    // claim leaves it; the session.status event's data is the claimed row itself, written by the statement.
    const events = startEvents(turn, { ...session, ...patch, active_turn_id: turn.id }, at);
    const outbox = outboxEvents(session.id, events).map(({ index: _index, ...o }) => o);
    const [started, status] = events.map((e) => ({
      type: e.event.type,
      turn_id: e.turn_id,
      created_at: e.created_at,
    }));
    const { text, params } = render(
      sql`WITH c AS (
          UPDATE sessions SET ${join(set, ", ")}, lease_epoch = lease_epoch + 1
          WHERE id = ${session.id} AND active_turn_id IS NULL RETURNING ${SESSIONS.columns}
        ), t AS (
          INSERT INTO turns (${TURNS.columns})
          SELECT ${TURNS.qualified("r")} FROM c, jsonb_populate_record(NULL::turns, ${jsonParam(turn)}) AS r
        )
        SELECT row_to_json(c) AS session, a.base_seq
        FROM c, LATERAL append_events(c.id,
          jsonb_build_array(
            ${jsonParam({ ...started, data: { turn } })},
            ${jsonParam(status)} || jsonb_build_object('data', jsonb_build_object('session', to_jsonb(c)))),
          '[]'::jsonb, c.lease_epoch, ${jsonParam(outbox)}) AS a`,
      POSTGRES,
    );
    const row = await db.row<StartRow>(text, params);
    if (!row) return undefined;
    return {
      session: row.session,
      appended: appendedAt(session.id, startEvents(turn, row.session, at), row.base_seq),
    };
  };
}
