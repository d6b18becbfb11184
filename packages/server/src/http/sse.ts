import type { FastifyReply, FastifyRequest } from "fastify";
import { badRequest } from "../kernel/errors.js";
import type { EndReason } from "../model/streams.js";
import type { StreamClients } from "../platform/stream/clients.js";
import type { EventHub } from "../platform/stream/hub.js";
import type { EventRecord } from "../store/types.js";

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

/** Writes are coalesced up to this size while more events are already at hand (replay, a client catching up). */
const COALESCE_BYTES = 65_536;

/**
 * How long a write may wait for `drain` before the subscription stops holding events for the client (short stalls
 * are ordinary TCP flow control, and dropping what is queued then would only make the client read it again).
 */
const LAG_AFTER_MS = 100;

/** How long the final frame of a stream the server ends may take to reach a client before its socket is closed. */
const END_GRACE_MS = 2000;

export interface StreamLogOptions {
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
  /** Where the stream is registered while open (revoking its key ends it). */
  clients?: StreamClients;
  /**
   * The last frame of a stream the server ends (the dialect's error shape), after the last event delivered
   * (`lastSeq`); null: none. No `[DONE]` follows it.
   */
  endFrame?: (reason: EndReason, lastSeq: number) => Frame | null;
}

/**
 * Streams a session's log as SSE: replay from `from`, then live, until `until` matches, the client leaves or the
 * server ends it (its key revoked: the dialect's error frame, then the response ends and the connection closes).
 *
 * A client that stops reading costs O(1): once a write finds its socket full (and still full 100 ms later), the
 * hub subscription drops whatever it holds and keeps only the last seq delivered; when the socket drains it is
 * caught up from the store, in pages, and rejoins the live tail (in order, nothing lost or repeated). Besides that
 * seq it holds at most the one chunk the socket has not taken (≤ 64 KiB, or one larger event).
 */
export async function streamLog(reply: FastifyReply, opts: StreamLogOptions): Promise<void> {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  res.flushHeaders();
  // The body's chunk framing is known (HTTP/1.1 chunked): a frame shared by many subscribers is framed once and
  // written to each socket as the same bytes.
  const socket = res.chunkedEncoding ? res.socket : null;
  const sub = opts.hub.subscribe(opts.sessionId, {
    afterSeq: Math.max(0, opts.from.seq - (opts.from.frame === Number.POSITIVE_INFINITY ? 0 : 1)),
    ...(opts.until ? { until: opts.until } : {}),
  });
  let closed = false;
  let ending: EndReason | null = null;
  /** Resolves a pending wait for `drain` (the client left, or the stream is being ended). */
  let wake: (() => void) | null = null;
  const onClose = () => {
    closed = true;
    wake?.();
    sub.close();
  };
  // ServerResponse "close" = the client went away (IncomingMessage "close" fires once the body is read).
  res.on("close", onClose);
  const pending = new Pending();
  /** Seq of the last event whose frames were all written. */
  let written = sub.lastSeq;
  const keyId = reply.request.keyId ?? null;
  const unregister = opts.clients?.add({
    sessionId: opts.sessionId,
    keyId,
    end: (reason) => {
      if (closed || ending) return;
      ending = reason;
      sub.close();
      wake?.();
    },
    stats: () => ({
      sessionId: opts.sessionId,
      keyId,
      mode: sub.mode,
      bufferedEvents: sub.buffered,
      pendingBytes: res.writableLength + pending.length,
      lastSeq: sub.lastSeq,
    }),
  });
  // A comment line on its own, never followed by a blank line: a blank line after it would dispatch an empty event
  // in parsers that keep the last id (the Python SDK then fails to parse it); frames are always written whole, so
  // it always falls between two of them.
  const keepalive = setInterval(() => {
    if (!closed && !ending) res.write(": keepalive\n");
  }, opts.keepaliveMs);
  keepalive.unref();
  const put = (c: string | Rendered): boolean => {
    if (typeof c === "string") return res.write(c);
    // Straight to the socket only while the response holds nothing of its own back (e.g. waiting for the socket
    // behind a pipelined response): otherwise the bytes would overtake it.
    const direct = socket !== null && res.writableLength === socket.writableLength;
    const framed = direct ? c.framed() : null;
    return framed ? socket!.write(framed) : res.write(c.text);
  };
  /** Writes what is pending; false when the socket is over its high-water mark (then wait for drain). */
  const flush = (): boolean => {
    const chunks = pending.take();
    written = last;
    if (closed || ending || chunks.length === 0) return true;
    if (chunks.length === 1) return put(chunks[0]!);
    res.cork();
    let ok = true;
    for (const c of chunks) ok = put(c);
    res.uncork();
    return ok;
  };
  // Waits for `drain`. If it does not come soon, the client is not keeping up: the subscription stops holding
  // events for it until it drains.
  const drained = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => sub.lag(), LAG_AFTER_MS);
      const done = () => {
        clearTimeout(timer);
        wake = null;
        res.off("drain", done);
        socket?.off("drain", done);
        resolve();
      };
      wake = done;
      // The response says so for its own writes; the socket for the shared frames written to it directly.
      res.on("drain", done);
      socket?.on("drain", done);
    });

  // The retry advice rides on the first frame (a record of its own would be an empty event to some parsers).
  let advice = `retry: ${RETRY_MS}\n`;
  /** Seq of the last event taken into `pending`. */
  let last = written;
  /** Adds an event's frames; true when they should be written now. */
  const add = (e: EventRecord): boolean => {
    // A live event is the hub's shared record: its text is shared with the other subscribers using the same
    // render key. A replayed page is this subscriber's own copy: caching it would only cost.
    const r = rendered(e, opts, sub.shared);
    if (r.text && advice) {
      pending.text(advice);
      advice = "";
    }
    pending.add(r);
    last = e.seq;
    // Coalesce while more events are already queued (replay pages, a subscriber catching up): one write per
    // 64 KiB instead of one per frame. Caught up: write at once, so live latency is unchanged.
    return pending.length >= COALESCE_BYTES || sub.buffered === 0;
  };

  let settle!: { resolve: () => void; reject: (err: unknown) => void };
  const over = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  let finished = false;
  const finish = (err?: unknown) => {
    if (finished) return;
    finished = true;
    if (err === undefined && !ending && !closed) {
      flush();
      if (opts.done) res.write("data: [DONE]\n\n");
    }
    clearInterval(keepalive);
    sub.close();
    unregister?.();
    res.off("close", onClose);
    const reason = ending as EndReason | null; // set by end(), from outside this function
    if (reason && !closed) endByServer(res, opts.endFrame?.(reason, written) ?? null);
    else if (!res.writableEnded) res.end();
    if (err === undefined) settle.resolve();
    else settle.reject(err);
  };

  /**
   * Delivers what the subscription has, synchronously while events are queued (a live event is written from
   * within the hub's publish, without a promise per event and subscriber: what 1000 subscribers cost the most);
   * it goes async only to wait for drain or to read the store. Idle while live and caught up: the hub's onReady
   * calls it again.
   */
  let driving = false;
  const drive = (): void => {
    for (;;) {
      if (closed || ending) {
        finish();
        return;
      }
      const e = sub.poll();
      if (e !== undefined) {
        if (add(e) && !flush()) {
          resume(drained());
          return;
        }
        continue;
      }
      if (sub.mode === "closed") {
        finish();
        return;
      }
      if (pending.length > 0) {
        if (!flush()) {
          resume(drained());
          return;
        }
        continue;
      }
      if (sub.mode === "live") {
        driving = false;
        return;
      }
      // Replaying or lagging: the next event comes from the store.
      resume(
        sub.next().then(async (r) => {
          if (r.done) return;
          if (add(r.value) && !flush()) await drained();
        }),
      );
      return;
    }
  };
  const resume = (p: Promise<void>): void => {
    void p.then(
      () => {
        try {
          drive();
        } catch (err) {
          finish(err);
        }
      },
      (err: unknown) => finish(err),
    );
  };
  const kick = () => {
    if (driving || finished) return;
    driving = true;
    try {
      drive();
    } catch (err) {
      finish(err);
    }
  };

  for (const f of opts.prelude ?? []) res.write(format(f, null));
  sub.onReady(kick);
  kick();
  return over;
}

/** Ends a response the server decided to end: its final frame, then the connection closes (at the latest soon). */
function endByServer(res: FastifyReply["raw"], frame: Frame | null): void {
  const socket = res.socket;
  const timer = setTimeout(() => socket?.destroy(), END_GRACE_MS);
  timer.unref();
  res.once("close", () => clearTimeout(timer));
  res.once("finish", () => socket?.end());
  if (!res.writableEnded) {
    if (frame) res.end(format(frame, null));
    else res.end();
  }
}

/** A shared event's text at least this long is written as a chunk of its own rather than copied into a batch. */
const SHARED_CHUNK_MIN = 1024;

/**
 * Frames rendered but not written yet, as the chunks to write: this stream's own texts merged into one string, a
 * shared event's frames as a chunk of their own (written as the bytes every subscriber writes, never copied per
 * subscriber); small shared ones are merged too while a batch is being coalesced.
 */
class Pending {
  length = 0;
  private chunks: Array<string | Rendered> = [];
  private tail = "";

  text(t: string): void {
    this.tail += t;
    this.length += t.length;
  }

  add(r: Rendered): void {
    if (!r.text) return;
    if (r.key === undefined || (this.length > 0 && r.text.length < SHARED_CHUNK_MIN)) {
      this.text(r.text);
      return;
    }
    if (this.tail) this.chunks.push(this.tail);
    this.tail = "";
    this.chunks.push(r);
    this.length += r.text.length;
  }

  take(): Array<string | Rendered> {
    if (this.tail) this.chunks.push(this.tail);
    const out = this.chunks;
    this.chunks = [];
    this.tail = "";
    this.length = 0;
    return out;
  }
}

/** The formatted frames of an event; a live event's are kept (weakly) for the other subscribers of the render key. */
interface Rendered {
  key: string | undefined;
  text: string;
  /**
   * The text as one HTTP/1.1 chunk (size line, bytes, CRLF), made once and shared: null on its first use (one
   * subscriber alone gains nothing from a copy), the same Buffer on every later one.
   */
  framed(): Buffer | null;
}

const cache = new WeakMap<EventRecord, Rendered>();

function makeRendered(key: string | undefined, text: string): Rendered {
  let uses = 0;
  let bytes: Buffer | null = null;
  return {
    key,
    text,
    framed() {
      if (key === undefined || uses++ === 0) return null;
      if (!bytes) {
        const n = Buffer.byteLength(text);
        const head = `${n.toString(16)}\r\n`;
        bytes = Buffer.allocUnsafe(head.length + n + 2);
        bytes.write(head, 0, "latin1");
        bytes.write(text, head.length, "utf8");
        bytes.write("\r\n", head.length + n, "latin1");
      }
      return bytes;
    },
  };
}

function rendered(
  e: EventRecord,
  opts: { render: (e: EventRecord) => Frame[]; renderKey?: string; from: Cursor },
  shared: boolean,
): Rendered {
  const key = shared && e.seq !== opts.from.seq ? opts.renderKey : undefined;
  if (key !== undefined) {
    const hit = cache.get(e);
    if (hit?.key === key) return hit;
  }
  const frames = opts.render(e);
  let text = "";
  for (let i = 0; i < frames.length; i++) {
    if (e.seq === opts.from.seq && i <= opts.from.frame) continue;
    text += format(frames[i]!, frames.length === 1 ? String(e.seq) : `${e.seq}:${i}`);
  }
  const r = makeRendered(key, text);
  if (key !== undefined) cache.set(e, r);
  return r;
}

function format(f: Frame, id: string | null): string {
  return `${id !== null ? `id: ${id}\n` : ""}${f.event ? `event: ${f.event}\n` : ""}data: ${JSON.stringify(f.data)}\n\n`;
}
