/**
 * Where a session's stream starts and what it is read from, decided here once for both dialects: a client's cursor
 * (`Last-Event-ID`) as it is; else, while a turn runs, just before that turn's first event (the whole turn is
 * replayed), or the log's end when the turn has logged nothing yet; else (idle) the log's end. The dialects render
 * and frame the events (http/sse.ts `streamLog` reads the hub given here).
 */

import type { SessionRecord } from "../model/records.js";
import type { StreamClients } from "../platform/stream/clients.js";
import type { EventHub } from "../platform/stream/hub.js";
import type { EventRecord, Store } from "../store/types.js";

/** What a stream is read from: the hub (replay, then live), the registry of open streams, the keep-alive interval. */
export interface LogTail {
  hub: EventHub;
  clients: StreamClients;
  keepaliveMs: number;
}

/** Where a stream without a cursor starts: after event `seq`; `turn` when a turn runs, `idle` otherwise. */
export type StreamStart = { state: "turn"; turnId: string; seq: number } | { state: "idle"; seq: number };

export class StreamOperations {
  constructor(
    private readonly deps: {
      store: Pick<Store, "firstEventSeqOfTurn" | "lastEventSeq" | "readEvents">;
      tail: LogTail;
    },
  ) {}

  get tail(): LogTail {
    return this.deps.tail;
  }

  /** Where the session's stream starts when the client gave no cursor. */
  async start(session: SessionRecord): Promise<StreamStart> {
    const holder = session.active_turn_id;
    if (holder) return { state: "turn", turnId: holder, seq: await this.turnStart(session.id, holder) };
    return { state: "idle", seq: await this.deps.store.lastEventSeq(session.id) };
  }

  /** The seq just before the turn's first event; the log's end while the turn has logged nothing. */
  async turnStart(sessionId: string, turnId: string): Promise<number> {
    const first = await this.deps.store.firstEventSeqOfTurn(sessionId, turnId);
    return first !== undefined ? first - 1 : this.deps.store.lastEventSeq(sessionId);
  }

  /** The seq of the session's last event (0: none). */
  position(sessionId: string): Promise<number> {
    return this.deps.store.lastEventSeq(sessionId);
  }

  /** Up to `limit` events after `afterSeq`, in order. */
  events(sessionId: string, afterSeq: number, limit: number): Promise<EventRecord[]> {
    return this.deps.store.readEvents(sessionId, afterSeq, limit);
  }
}
