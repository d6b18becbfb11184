/**
 * EventHub: append-then-publish over the durable event log, with replayable, bounded-memory subscriptions.
 *
 * `append` writes the event to the store first (synchronously, so it is durable before anyone can see it) and then
 * hands it to the live subscribers of the session, still synchronously. Because both steps happen without yielding,
 * a subscriber that reads the store synchronously can never miss an event that is appended "between" its read and
 * its switch to live mode.
 *
 * Each subscription is a small state machine:
 * - "replay": events come from the store, a page at a time (starting after the last delivered seq). Live events
 *   published meanwhile are ignored — they are in the store and a later page will contain them. When a page comes
 *   back shorter than the page size the store is caught up at that very moment, so the subscription switches to
 *   "live" (the rest of that page stays queued, live events are queued behind it).
 * - "live": published events are queued (or handed straight to a pending `next()`). If the queue would exceed
 *   `maxBuffered`, further live events are dropped and the subscription falls back to "replay": once the queue is
 *   drained the dropped events are read back from the store. Memory per subscriber is therefore bounded by
 *   max(maxBuffered, pageSize) events.
 * - "closed": finished (close()/return(), `until`, closeSession/closeAll); every `next()` resolves done.
 *
 * No timers, no polling. Don't call `append` inside a store transaction that may roll back: subscribers would have
 * seen an event that was never committed.
 */
import type { EventRecord, Store } from "../store/types.js";

export interface AppendInput {
  session_id: string;
  type: string;
  turn_id?: string | null;
  data: Record<string, unknown>;
}

export interface SubscribeOptions {
  /** Deliver events with seq > afterSeq. Default 0: from the beginning. */
  afterSeq?: number;
  /** Live events buffered per subscriber before it falls back to reading the store. Default 1024. */
  maxBuffered?: number;
  /** Store read page size. Default 1000. */
  pageSize?: number;
  /** If it returns true for an event, that event is delivered and then the subscription ends. */
  until?: (e: EventRecord) => boolean;
}

export type SubscriptionMode = "replay" | "live" | "closed";

export interface Subscription extends AsyncIterableIterator<EventRecord> {
  /** Ends the subscription now (unregisters it; pending and later `next()` calls resolve done). */
  close(): void;
  /** Seq of the last event delivered (afterSeq before the first one). */
  readonly lastSeq: number;
  /** Events currently held in memory by this subscription (diagnostics / tests). */
  readonly buffered: number;
  /** Current state (diagnostics / tests). */
  readonly mode: SubscriptionMode;
}

const DEFAULT_MAX_BUFFERED = 1024;
const DEFAULT_PAGE_SIZE = 1000;

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

type Result = IteratorResult<EventRecord, undefined>;

interface Waiter {
  resolve: (r: Result) => void;
  reject: (err: unknown) => void;
}

const positiveInt = (v: number | undefined, dflt: number): number =>
  v === undefined || !Number.isFinite(v) ? dflt : Math.max(1, Math.trunc(v));

class Sub implements Subscription {
  private _mode: SubscriptionMode = "replay";
  /** Seq of the last event handed to the consumer. */
  private delivered: number;
  /** Events ready to deliver, contiguous from delivered + 1; `queue[head]` is next. */
  private queue: EventRecord[] = [];
  private head = 0;
  /** Pending `next()` calls (only while live with an empty queue). */
  private readonly waiters: Waiter[] = [];
  private readonly maxBuffered: number;
  private readonly pageSize: number;
  private readonly until: ((e: EventRecord) => boolean) | undefined;

  constructor(
    private readonly hub: EventHub,
    private readonly store: Store,
    readonly sessionId: string,
    opts: SubscribeOptions,
  ) {
    this.delivered = Math.max(0, Math.trunc(opts.afterSeq ?? 0));
    this.maxBuffered = positiveInt(opts.maxBuffered, DEFAULT_MAX_BUFFERED);
    this.pageSize = positiveInt(opts.pageSize, DEFAULT_PAGE_SIZE);
    this.until = opts.until;
  }

  get lastSeq(): number {
    return this.delivered;
  }

  get buffered(): number {
    return this.queue.length - this.head;
  }

  get mode(): SubscriptionMode {
    return this._mode;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Seq of the last event held (queued), or delivered if the queue is empty. */
  private tailSeq(): number {
    return this.queue.length > this.head ? this.queue[this.queue.length - 1]!.seq : this.delivered;
  }

  /** Called by the hub, synchronously, right after the event was persisted. */
  publish(e: EventRecord): void {
    if (this._mode !== "live") return; // replay: the store has it; closed: nothing to do
    const tail = this.tailSeq();
    if (e.seq <= tail) return; // before our cursor (afterSeq beyond the log's end) or already held
    if (e.seq !== tail + 1) {
      // Should not happen with a single writer; recover from the store rather than deliver a gap.
      this._mode = "replay";
      this.pump();
      return;
    }
    const w = this.waiters.shift();
    if (w) {
      // The queue is empty whenever someone is waiting: deliver directly.
      w.resolve(this.deliver(e));
      return;
    }
    if (this.buffered >= this.maxBuffered) {
      // Slow consumer: stop buffering, re-read the rest from the store once the queue is drained.
      this._mode = "replay";
      return;
    }
    this.queue.push(e);
  }

  next(): Promise<Result> {
    try {
      if (this._mode === "closed") return Promise.resolve(DONE);
      // Keep the order of concurrent next() calls: if some are already waiting, this one waits behind them.
      if (this.waiters.length === 0) {
        const e = this.take();
        if (e) return Promise.resolve(this.deliver(e));
      }
      return new Promise<Result>((resolve, reject) => this.waiters.push({ resolve, reject }));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  return(): Promise<Result> {
    this.close();
    return Promise.resolve(DONE);
  }

  throw(err?: unknown): Promise<Result> {
    this.close();
    return Promise.reject(err);
  }

  close(): void {
    if (this._mode === "closed") return;
    this._mode = "closed";
    this.queue = [];
    this.head = 0;
    this.hub.unregister(this);
    for (const w of this.waiters.splice(0)) w.resolve(DONE);
  }

  /** The next event to deliver, or undefined when caught up (then the mode is "live"). */
  private take(): EventRecord | undefined {
    if (this.head < this.queue.length) {
      const e = this.queue[this.head]!;
      this.queue[this.head++] = undefined as unknown as EventRecord; // release the reference
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
      } else if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      return e;
    }
    if (this._mode !== "replay") return undefined;
    // Queue drained in replay mode: read the next page. Synchronous, so nothing can be appended in between.
    const page = this.store.readEvents(this.sessionId, this.delivered, this.pageSize);
    if (page.length < this.pageSize) this._mode = "live"; // caught up: from now on publish() feeds the queue
    if (page.length === 0) return undefined;
    this.queue = page;
    this.head = 0;
    return this.take();
  }

  /** Hands available events to pending next() calls (never throws: store errors reject the waiter). */
  private pump(): void {
    while (this.waiters.length > 0 && this._mode !== "closed") {
      let e: EventRecord | undefined;
      try {
        e = this.take();
      } catch (err) {
        this.waiters.shift()!.reject(err);
        continue;
      }
      if (!e) return;
      this.waiters.shift()!.resolve(this.deliver(e));
    }
  }

  private deliver(e: EventRecord): Result {
    this.delivered = e.seq;
    let last = true;
    try {
      last = this.until?.(e) === true;
    } catch {
      // a throwing predicate ends the subscription (after this event) rather than break the appender
    }
    if (last) this.close();
    return { done: false, value: e };
  }
}

export class EventHub {
  private readonly subs = new Map<string, Set<Sub>>();
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    opts: { now?: () => number } = {},
  ) {
    this.now = opts.now ?? (() => Date.now() / 1000);
  }

  /** Persists the event (store.appendEvent), then publishes it to the session's live subscribers. Synchronous. */
  append(input: AppendInput): EventRecord {
    const e = this.store.appendEvent({
      session_id: input.session_id,
      type: input.type,
      turn_id: input.turn_id ?? null,
      created_at: this.now(),
      data: input.data,
    });
    const set = this.subs.get(input.session_id);
    if (set) for (const s of set) s.publish(e);
    return e;
  }

  /**
   * Replays every stored event with seq > afterSeq (paged from the store), then tails live events: in seq order,
   * without gaps or duplicates. Registered immediately, so nothing appended after this call is missed.
   */
  subscribe(sessionId: string, opts: SubscribeOptions = {}): Subscription {
    const sub = new Sub(this, this.store, sessionId, opts);
    let set = this.subs.get(sessionId);
    if (!set) {
      set = new Set();
      this.subs.set(sessionId, set);
    }
    set.add(sub);
    return sub;
  }

  subscriberCount(sessionId?: string): number {
    if (sessionId !== undefined) return this.subs.get(sessionId)?.size ?? 0;
    let n = 0;
    for (const set of this.subs.values()) n += set.size;
    return n;
  }

  /** Ends every subscription of a session (e.g. deleted) — iterators finish (done: true). */
  closeSession(sessionId: string): void {
    const set = this.subs.get(sessionId);
    if (!set) return;
    for (const s of [...set]) s.close();
    this.subs.delete(sessionId);
  }

  /** Ends all subscriptions (server shutdown). */
  closeAll(): void {
    for (const id of [...this.subs.keys()]) this.closeSession(id);
  }

  /** @internal called by a subscription when it ends. */
  unregister(sub: Sub): void {
    const set = this.subs.get(sub.sessionId);
    if (!set) return;
    set.delete(sub);
    if (set.size === 0) this.subs.delete(sub.sessionId);
  }
}
