// The one SSE client of the tests, on a spec-following parser (eventsource-parser): frames come out exactly as a
// standard EventSource (or the official SDKs) would see them. Comments (keep-alives) and `[DONE]` are not frames.
import { createParser, type EventSourceMessage } from "eventsource-parser";

export interface SseEvent {
  id: string | null;
  event: string | null;
  data: Record<string, unknown>;
}

/** What a spec-following parser makes of an SSE text: frames, comments and retry advice. */
export interface ParsedSse {
  frames: SseEvent[];
  comments: string[];
  retries: number[];
  /** Events dispatched with an empty data field (a keep-alive that a client would see as an event). */
  empty: number;
}

function toFrame(m: EventSourceMessage): SseEvent | null {
  if (m.data === "[DONE]") return null;
  return { id: m.id ?? null, event: m.event ?? null, data: JSON.parse(m.data) as Record<string, unknown> };
}

/** A parser fed chunk by chunk. */
export function sseParser(): { feed(chunk: string): void; take(): SseEvent[]; parsed: ParsedSse } {
  const parsed: ParsedSse = { frames: [], comments: [], retries: [], empty: 0 };
  let pending: SseEvent[] = [];
  const parser = createParser({
    onEvent(m) {
      if (m.data === "") {
        parsed.empty++;
        return;
      }
      const f = toFrame(m);
      if (!f) return;
      parsed.frames.push(f);
      pending.push(f);
    },
    onComment(c) {
      parsed.comments.push(c);
    },
    onRetry(ms) {
      parsed.retries.push(ms);
    },
  });
  return {
    feed: (chunk) => parser.feed(chunk),
    take() {
      const out = pending;
      pending = [];
      return out;
    },
    parsed,
  };
}

/** Parses a whole SSE body. */
export function parseSse(text: string): ParsedSse {
  const p = sseParser();
  p.feed(text);
  return p.parsed;
}

/** An SSE response read frame by frame. */
export class SseReader {
  readonly frames: SseEvent[] = [];
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private readonly parser = sseParser();
  private pending: SseEvent[] = [];
  ended = false;

  constructor(readonly res: Response) {
    this.reader = res.body!.getReader();
  }

  /** The next frame, or null when the server ended the stream. */
  async next(): Promise<SseEvent | null> {
    for (;;) {
      const ready = this.pending.shift();
      if (ready) {
        this.frames.push(ready);
        return ready;
      }
      if (this.ended) return null;
      const { value, done } = await this.reader.read();
      if (done) {
        this.ended = true;
        continue;
      }
      this.parser.feed(this.decoder.decode(value, { stream: true }));
      this.pending.push(...this.parser.take());
    }
  }

  /** Reads up to and including the first frame matching `pred`; fails if the stream ends first. */
  async until(pred: (e: SseEvent) => boolean, what = "frame"): Promise<SseEvent[]> {
    const got: SseEvent[] = [];
    for (;;) {
      const e = await this.next();
      if (!e) throw new Error(`stream ended before ${what} (after ${got.length} frames)`);
      got.push(e);
      if (pred(e)) return got;
    }
  }

  async toEnd(): Promise<SseEvent[]> {
    const got: SseEvent[] = [];
    for (let e = await this.next(); e; e = await this.next()) got.push(e);
    return got;
  }

  async cancel(): Promise<void> {
    await this.reader.cancel();
  }
}

/** Reads an SSE response to its end (or until `stop` says so). */
export async function readSse(res: Response, stop?: (e: SseEvent) => boolean): Promise<SseEvent[]> {
  const reader = new SseReader(res);
  const events: SseEvent[] = [];
  for (let e = await reader.next(); e; e = await reader.next()) {
    events.push(e);
    if (stop?.(e)) {
      await reader.cancel();
      break;
    }
  }
  return events;
}
