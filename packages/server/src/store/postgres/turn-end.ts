/**
 * A turn's end as one statement: the turn's open items closed, the turn and the session patched, the thread's new
 * rollout bytes stored, and the turn's last events appended by append_events() with the closed items and the session
 * as patched — one round trip and one commit where a transaction took four (BEGIN, the writes, the append, COMMIT).
 * SQLite runs the steps (tables/index.ts `endTurnInSteps`); both make the same events (`endEvents`), which is what
 * the JSON built here must match.
 *
 * The data-modifying WITH clauses all run to completion, read or not; append_events() runs once per row of the
 * session's patch, after it and after the items were closed (LATERAL, and its events are made from both): its
 * statements see the patched row, bump its counters after the patch, and apply `log.before`'s item writes (the
 * commands a stop ended) over the closed items, as the transaction did. jsonb and double precision come back from
 * json_agg / row_to_json as they would in a row: the items and the session need no decoding of their own.
 */
import { outboxEvents } from "../outbox.js";
import { render } from "../sql/db.js";
import { EMPTY, join, jsonParam, sql } from "../sql/query.js";
import { assignments } from "../sql/table.js";
import { endEvents } from "../tables/index.js";
import { SESSIONS } from "../tables/sessions.js";
import { TURNS } from "../tables/turns.js";
import type { ItemRecord, Queries, SessionRecord } from "../types.js";
import { type PgDb, POSTGRES } from "./db.js";
import { appendedAt, eventRow, FENCED, fencedError } from "./events.js";
import { closeOpenItemsStatement, planItemWrites } from "./items.js";

interface EndRow {
  closed: ItemRecord[];
  session: SessionRecord;
  base_seq: number;
  item_index: number[];
  item_ordinal: number[];
}

export function endTurn(db: PgDb): Queries["endTurn"] {
  return async (sessionId, turnId, end, log, fence) => {
    const turnSet = assignments(TURNS, end.turn);
    const sessionSet = assignments(SESSIONS, end.session);
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
    // The events as endEvents makes them, the parts only the statement knows aside: the closed items' (their data
    // and index) and the session's (the patched row). The webhook event is made from the session the caller expects.
    const expected = endEvents(turnId, log, [], log.webhook);
    const [turnEvent, status] = expected.slice(log.before.length).map(eventRow);
    const { data: _data, ...statusHead } = status!;
    const outbox = outboxEvents(sessionId, expected).map(({ index: _index, ...o }) => o);
    const indexes = Object.fromEntries(log.outputIndex);
    const { text, params } = render(
      sql`WITH closed AS (${closeOpenItemsStatement(sessionId, turnId, end.itemStatus)})${turnStep}${rollout},
        s AS (${session}),
        numbered AS (
          SELECT c.*, sum(CASE WHEN ${jsonParam(indexes)} ? c.id THEN 0 ELSE 1 END) OVER (ORDER BY c.ordinal) AS fresh
          FROM closed c
        ),
        ev AS (
          SELECT coalesce(jsonb_agg(jsonb_build_object('type', 'item.completed', 'turn_id', ${turnId}::text,
              'created_at', ${log.at}::float8, 'data', jsonb_build_object('item', n.data, 'output_index',
              coalesce((${jsonParam(indexes)} ->> n.id)::int, ${log.outputIndex.size}::int + n.fresh::int - 1)))
            ORDER BY n.ordinal), '[]'::jsonb) AS closed_events
          FROM numbered n
        )
      SELECT (SELECT coalesce(json_agg(closed ORDER BY ordinal), '[]'::json) FROM closed) AS closed,
        row_to_json(s) AS session, a.base_seq, a.item_index, a.item_ordinal
      FROM s, ev, LATERAL append_events(s.id,
        ${jsonParam(log.before.map(eventRow))} || ev.closed_events || jsonb_build_array(${jsonParam(turnEvent)},
          ${jsonParam(statusHead)} || jsonb_build_object('data', jsonb_build_object('session', to_jsonb(s)))),
        ${jsonParam(planItemWrites(log.before))}, ${fence ?? null}, ${jsonParam(outbox)}) AS a`,
      POSTGRES,
    );
    const r = await db.row<EndRow>(text, params).catch((err: unknown) => {
      throw (err as { code?: string }).code === FENCED ? fencedError(sessionId, fence) : err;
    });
    if (!r) return { closed: [], session: undefined, appended: [] };
    const ordinals = new Map(r.item_index.map((i, k) => [i, r.item_ordinal[k]!]));
    const appended = appendedAt(sessionId, endEvents(turnId, log, r.closed, r.session), r.base_seq, ordinals);
    return { closed: r.closed, session: r.session, appended };
  };
}
