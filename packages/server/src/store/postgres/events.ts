import { FencedError } from "../fenced.js";
import { outboxEvents } from "../outbox.js";
import type { Appended, EventRecord, NewEvent, Queries } from "../types.js";
import { json, type PgDb } from "./db.js";
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

/** An event as append_events() takes it. */
export const eventRow = (e: NewEvent) => ({
  type: e.event.type,
  turn_id: e.turn_id,
  created_at: e.created_at,
  data: e.event.data,
});

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
      // outbox (one delivery per webhook event and subscribed endpoint of the session's project).
      const outbox = outboxEvents(sessionId, events).map(({ index: _index, ...o }) => o);
      const res = await db
        .row<AppendRow>(
          "SELECT base_seq, item_index, item_ordinal FROM append_events($1, $2::jsonb, $3::jsonb, $4, $5::jsonb)",
          [sessionId, json(events.map(eventRow)), json(planItemWrites(events)), fence ?? null, json(outbox)],
        )
        .catch((err: unknown) => {
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
