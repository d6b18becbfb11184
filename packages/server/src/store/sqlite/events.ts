import { FencedError } from "../fenced.js";
import { outboxEvents } from "../outbox.js";
import type { Appended, EventRecord, NewEvent, Queries } from "../types.js";
import type { Counters } from "./counters.js";
import type { SqliteDb } from "./db.js";
import { writeItem } from "./items.js";

interface EventRow {
  session_id: string;
  seq: number;
  type: string;
  turn_id: string | null;
  created_at: number;
  data: string;
}

const COLS = "session_id, seq, type, turn_id, created_at, data";

/** The stored type and data are a LogEvent as it was appended. */
const fromRow = (r: EventRow): EventRecord =>
  ({
    session_id: r.session_id,
    seq: r.seq,
    type: r.type,
    turn_id: r.turn_id,
    created_at: r.created_at,
    data: JSON.parse(r.data),
  }) as EventRecord;

export type EventQueries = Pick<
  Queries,
  "appendEvents" | "readEvents" | "lastEventSeq" | "firstEventSeqOfTurn"
>;

export function eventQueries(db: SqliteDb, counters: Counters): EventQueries {
  const append = (sessionId: string, events: NewEvent[]): Appended[] => {
    const out: Appended[] = [];
    let seq = counters.lastSeq(sessionId);
    for (const e of events) {
      const ordinal = e.item ? writeItem(db, counters, sessionId, e.item) : null;
      seq += 1;
      db.run(
        `INSERT INTO events (${COLS}) VALUES (?, ?, ?, ?, ?, ?)`,
        sessionId,
        seq,
        e.event.type,
        e.turn_id,
        e.created_at,
        JSON.stringify(e.event.data),
      );
      counters.setSeq(sessionId, seq);
      const event = { ...e.event, session_id: sessionId, seq, turn_id: e.turn_id, created_at: e.created_at };
      out.push({ event, ordinal });
    }
    // The webhook outbox, in the same transaction: one pending delivery per subscribed endpoint of the project.
    for (const o of outboxEvents(sessionId, events)) {
      db.run(
        "INSERT INTO webhook_deliveries (id, endpoint_id, project_id, session_id, event_id, event_type, " +
          "event_created_at, data, created_at, status, next_attempt_at) " +
          "SELECT 'whd_' || lower(hex(randomblob(16))), w.id, w.project_id, s.id, ?, ?, ?, ?, ?, 'pending', ? " +
          "FROM sessions s JOIN webhook_endpoints w ON w.project_id = s.project_id " +
          "WHERE s.id = ? AND EXISTS (SELECT 1 FROM json_each(w.event_types) AS t WHERE t.value = ?)",
        o.event_id,
        o.type,
        o.created_at,
        JSON.stringify(o.data),
        o.created_at,
        o.created_at,
        sessionId,
        o.type,
      );
    }
    return out;
  };
  return {
    async appendEvents(sessionId, events, fence) {
      try {
        return db.atomic(() => {
          if (fence !== undefined) {
            const epoch = db.value<number>("SELECT lease_epoch FROM sessions WHERE id = ?", sessionId);
            if (epoch !== undefined && epoch !== fence) throw new FencedError(sessionId, fence);
          }
          return append(sessionId, events);
        });
      } catch (err) {
        // The batch was rolled back: the cached counters must not stay ahead of the data.
        counters.forget(sessionId);
        throw err;
      }
    },
    async readEvents(sessionId, afterSeq, limit) {
      if (limit <= 0) return [];
      return db
        .all<EventRow>(
          `SELECT ${COLS} FROM events WHERE session_id = ? AND seq > ? ORDER BY seq ASC LIMIT ?`,
          sessionId,
          afterSeq,
          Math.trunc(limit),
        )
        .map(fromRow);
    },
    async lastEventSeq(sessionId) {
      return counters.lastSeq(sessionId);
    },
    async firstEventSeqOfTurn(sessionId, turnId) {
      return (
        db.value<number>(
          "SELECT min(seq) FROM events WHERE session_id = ? AND turn_id = ?",
          sessionId,
          turnId,
        ) ?? undefined
      );
    },
  };
}
