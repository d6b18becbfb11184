import { FencedError } from "../fenced.js";
import { outboxEvents } from "../outbox.js";
import { render } from "../sql/db.js";
import { EMPTY, join, jsonParam, raw, sql } from "../sql/query.js";
import { insertStatement } from "../sql/table.js";
import { TURNS } from "../tables/turns.js";
import type { Appended, EventRecord, NewEvent, Queries } from "../types.js";
import { type PgDb, POSTGRES } from "./db.js";
import { planItemWrites } from "./items.js";

/** jsonb data comes back parsed; type and data are a LogEvent as it was appended. */
const COLS = "session_id, seq, type, turn_id, created_at, data";

interface AppendRow {
  base_seq: number;
  item_index: number[];
  item_ordinal: number[];
}

export type EventQueries = Pick<
  Queries,
  "appendEvents" | "readEvents" | "lastEventSeq" | "firstEventSeqOfTurn"
>;

/** The SQLSTATE append_events() raises when the session's lease epoch is not the writer's fence. */
export const FENCED = "CF001";

export const fencedError = (sessionId: string, fence: number | undefined): FencedError =>
  new FencedError(sessionId, fence ?? -1);

/** The events append_events() stored from `baseSeq` on, as the store hands them back (with the items' ordinals). */
export function appendedAt(
  sessionId: string,
  events: readonly NewEvent[],
  baseSeq: number,
  ordinals: ReadonlyMap<number, number> = new Map(),
): Appended[] {
  return events.map((e, i): Appended => {
    const event = {
      ...e.event,
      session_id: sessionId,
      seq: baseSeq + i + 1,
      turn_id: e.turn_id,
      created_at: e.created_at,
    } as EventRecord;
    return { event, ordinal: ordinals.get(i) ?? null };
  });
}

export function eventQueries(db: PgDb): EventQueries {
  return {
    async appendEvents(sessionId, events, fence) {
      if (events.length === 0) return [];
      // The whole batch is one statement (one round trip; one transaction unless inside one): append_events()
      // locks the session row, takes seqs and ordinals from its counters and writes events, items and the webhook
      // outbox (one delivery per webhook event and subscribed endpoint of the session's project); the turns the
      // batch starts are inserted by the statement's WITH clauses (append_events reads no turn).
      const outbox = outboxEvents(sessionId, events).map(({ index: _index, ...o }) => o);
      const turns = events.flatMap((e) => (e.turn ? [insertStatement(TURNS, e.turn)] : []));
      const inserts = turns.map((q, k) => sql`${raw(`turn_${k}`)} AS (${q})`);
      const rows = events.map((e) => ({
        type: e.event.type,
        turn_id: e.turn_id,
        created_at: e.created_at,
        data: e.event.data,
      }));
      const { text, params } = render(
        sql`${inserts.length > 0 ? sql`WITH ${join(inserts, ", ")} ` : EMPTY}SELECT base_seq, item_index, item_ordinal
          FROM append_events(${sessionId}, ${jsonParam(rows)}, ${jsonParam(planItemWrites(events))}, ${fence ?? null},
            ${jsonParam(outbox)})`,
        POSTGRES,
      );
      const res = await db.row<AppendRow>(text, params).catch((err: unknown) => {
        throw (err as { code?: string }).code === FENCED ? fencedError(sessionId, fence) : err;
      });
      if (!res) throw new Error("append_events returned nothing");
      const ordinals = new Map(res.item_index.map((i, k) => [i, res.item_ordinal[k]!]));
      return appendedAt(sessionId, events, res.base_seq, ordinals);
    },
    async readEvents(sessionId, afterSeq, limit) {
      if (limit <= 0) return [];
      return db.rows<EventRecord>(
        `SELECT ${COLS} FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq ASC LIMIT $3`,
        [sessionId, afterSeq, Math.trunc(limit)],
      );
    },
    async lastEventSeq(sessionId) {
      return (await db.value<number>("SELECT last_seq FROM sessions WHERE id = $1", [sessionId])) ?? 0;
    },
    async firstEventSeqOfTurn(sessionId, turnId) {
      return (
        (await db.value<number>("SELECT min(seq) FROM events WHERE session_id = $1 AND turn_id = $2", [
          sessionId,
          turnId,
        ])) ?? undefined
      );
    },
  };
}
