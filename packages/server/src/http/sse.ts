import type { FastifyReply, FastifyRequest } from "fastify";
import { badRequest } from "../domain/errors.js";
import type { EventRecord } from "../store/types.js";
import type { EventHub } from "../stream/hub.js";

export interface Frame {
  event?: string;
  data: unknown;
}

/**
 * Where a reconnecting client resumes (`Last-Event-ID`, or `?after=`): the SSE id — "<seq>" or "<seq>:<frame>" —
 * or the `event_id` a client of the official dialect holds — "evt_<session>_<seq>_<frame>" (or "…_state", the
 * current-state frame that stands for event <seq>). Resuming continues right after that frame.
 */
export interface Cursor {
  seq: number;
  frame: number;
}

export function parseCursor(req: FastifyRequest, sessionId: string): Cursor | null {
  const header = req.headers["last-event-id"];
  const query = (req.query as Record<string, unknown> | undefined)?.after;
  const raw = typeof header === "string" && header ? header : typeof query === "string" ? query : null;
  if (raw === null) return null;
  const id = raw.trim();
  const m = /^(\d+)(?::(\d+))?$/.exec(id);
  if (m) return { seq: Number(m[1]), frame: m[2] === undefined ? Number.POSITIVE_INFINITY : Number(m[2]) };
  const e = /^evt_([0-9a-f]+)_(\d+)_(\d+|state)$/.exec(id);
  if (e && e[1] === sessionId.slice(5)) {
    return { seq: Number(e[2]), frame: e[3] === "state" ? Number.POSITIVE_INFINITY : Number(e[3]) };
  }
  throw badRequest(
    e ? `Last-Event-ID ${raw} belongs to another session` : `Invalid Last-Event-ID: ${raw}`,
    "Last-Event-ID",
  );
}

/** Reconnection advice for EventSource-style clients, sent with the first frame. */
const RETRY_MS = 3000;

/**
 * Streams a session's log as SSE: replay from `from`, then live, until `until` matches (or the client leaves).
 * Writes respect backpressure: a slow client is paused on `drain` while the hub keeps only a bounded buffer
 * for it (the rest is re-read from the store), so it never blocks the turn or grows memory without bound.
 */
export async function streamLog(
  reply: FastifyReply,
  opts: {
    hub: EventHub;
    sessionId: string;
    from: Cursor;
    render: (e: EventRecord) => Frame[];
    /**
     * Identifies `render` across requests (e.g. "template", "openai:<agent id>"): a live event is rendered and
     * formatted once for every subscriber using the same key (the hub hands them all the same EventRecord).
     */
    renderKey?: string;
    until?: (e: EventRecord) => boolean;
    prelude?: Frame[];
    /** Emit `data: [DONE]` before closing (the official SDKs stop on it). */
    done?: boolean;
    /** Keep-alive comment interval. */
    keepaliveMs: number;
  },
): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  res.flushHeaders();
  const sub = opts.hub.subscribe(opts.sessionId, {
    afterSeq: Math.max(0, opts.from.seq - (opts.from.frame === Number.POSITIVE_INFINITY ? 0 : 1)),
    ...(opts.until ? { until: opts.until } : {}),
  });
  let closed = false;
  const onClose = () => {
    closed = true;
    sub.close();
  };
  // ServerResponse "close" = the client went away (IncomingMessage "close" fires once the body is read).
  res.on("close", onClose);
  // A comment line on its own, never followed by a blank line: a blank line after it would dispatch an empty event
  // in parsers that keep the last id (the Python SDK then fails to parse it); frames are always written whole, so
  // it always falls between two of them.
  const keepalive = setInterval(() => {
    if (!closed) res.write(": keepalive\n");
  }, opts.keepaliveMs);
  keepalive.unref();
  const write = async (chunk: string) => {
    if (closed) return;
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  };
  try {
    for (const f of opts.prelude ?? []) await write(format(f, null));
    // The retry advice rides on the first frame (a record of its own would be an empty event to some parsers).
    let advice = `retry: ${RETRY_MS}\n`;
    let batch = "";
    for await (const e of sub) {
      if (closed) break;
      // A live event comes straight from the hub (nothing queued): share its text with the other subscribers.
      // A replayed page is this subscriber's own copy: caching it would only cost.
      const text = eventText(e, opts, sub.buffered === 0);
      if (text && advice) {
        batch += advice;
        advice = "";
      }
      batch += text;
      // Coalesce while more events are already queued (replay pages, a subscriber that fell behind): one write
      // per 64 KiB instead of one per frame. Caught up: write at once, so live latency is unchanged.
      if (batch.length >= 65_536 || sub.buffered === 0) {
        const chunk = batch;
        batch = "";
        await write(chunk);
      }
    }
    if (batch) await write(batch);
    if (opts.done && !closed) await write("data: [DONE]\n\n");
  } finally {
    clearInterval(keepalive);
    sub.close();
    res.off("close", onClose);
    if (!res.writableEnded) res.end();
  }
}

/** The formatted frames of live events, per render key (weak: gone with the event). */
const rendered = new WeakMap<EventRecord, { key: string; text: string }>();

function eventText(
  e: EventRecord,
  opts: { render: (e: EventRecord) => Frame[]; renderKey?: string; from: Cursor },
  live: boolean,
): string {
  const key = live && e.seq !== opts.from.seq ? opts.renderKey : undefined;
  if (key !== undefined) {
    const hit = rendered.get(e);
    if (hit?.key === key) return hit.text;
  }
  const frames = opts.render(e);
  let text = "";
  for (let i = 0; i < frames.length; i++) {
    if (e.seq === opts.from.seq && i <= opts.from.frame) continue;
    text += format(frames[i]!, frames.length === 1 ? String(e.seq) : `${e.seq}:${i}`);
  }
  if (key !== undefined) rendered.set(e, { key, text });
  return text;
}

function format(f: Frame, id: string | null): string {
  return `${id !== null ? `id: ${id}\n` : ""}${f.event ? `event: ${f.event}\n` : ""}data: ${JSON.stringify(f.data)}\n\n`;
}
