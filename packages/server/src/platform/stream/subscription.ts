/**
 * A subscription to one session's event log, as the hub hands it out (hub.ts): it replays the stored log from a
 * sequence number, a page at a time, then follows the events the hub publishes to it.
 *
 * Published events are handed to live subscribers directly; `notify(seq)` says "the log has grown up to seq" without
 * the events (another instance wrote them): the subscription then reads them from the store. While it reads a page,
 * events published meanwhile are remembered by seq only; it switches to live only when a short page leaves nothing
 * newer that it has heard of, so no event falls between the read and the switch. A live subscriber that falls more
 * than `maxBuffered` events behind stops queueing and reads the rest back from the store: memory per subscriber is
 * bounded. A consumer that cannot take more for now (an SSE client whose socket is full) calls `lag()`: everything
 * queued is dropped, only the last delivered seq is kept, and once it asks again it reads on from the store (in small
 * pages that grow while it keeps up) until it rejoins the live tail. So a paused subscriber holds no events at all,
 * however long it stays paused. A consumer can also take queued events synchronously (`poll`) and be told when there
 * are more (`onReady`, once per published batch): the SSE streams do, so that a live event reaches 1000 subscribers
 * without a promise each. No timers, no polling.
 */
import type { EventRecord, Queries } from "../../store/types.js";

export interface SubscribeOptions {
  /** Deliver events with seq > afterSeq. Default 0: from the beginning. */
  afterSeq?: number;
  /** Live events buffered per subscriber before it falls back to reading the store. Default 1024. */
  maxBuffered?: number;
  /** Store read page size. Default 1000. */
  pageSize?: number;
  /** The first page read after `lag()` (pages then double up to pageSize while the consumer keeps up). Default 64. */
  lagPageSize?: number;
  /** If it returns true for an event, that event is delivered and then the subscription ends. */
  until?: (e: EventRecord) => boolean;
}

/** `lagging`: reading the store again after `lag()` (a kind of replay), until it rejoins the live tail. */
export type SubscriptionMode = "replay" | "lagging" | "live" | "closed";

export interface Subscription extends AsyncIterableIterator<EventRecord> {
  /** Ends the subscription now (pending and later `next()` calls resolve done). */
  close(): void;
  /** Seq of the last event delivered (afterSeq before the first one). */
  readonly lastSeq: number;
  /** Events currently held in memory by this subscription. */
  readonly buffered: number;
  readonly mode: SubscriptionMode;
  /**
   * Whether the event last delivered is the hub's own copy, handed to every subscriber of the session (a live event),
   * rather than this subscription's own read of the store: what is derived from a shared one can be shared too.
   */
  readonly shared: boolean;
  /**
   * The consumer cannot take more for now: drop every queued event (keeping only the last delivered seq) and stop
   * queueing; the next `next()` reads on from the store. Order and exactly-once delivery are kept.
   */
  lag(): void;
  /**
   * For a consumer that does not wait in `next()` between events: the next event already queued, delivered now
   * (no store read, no promise), or undefined when none is (then `next()` reads the store, or `onReady` says when
   * there is one). Not while a `next()` is pending.
   */
  poll(): EventRecord | undefined;
  /**
   * Called, synchronously, whenever the subscription has something for a consumer that is not waiting in `next()`:
   * an event queued, the store to read (it left the live tail), or its end. It must not throw.
   */
  onReady(listener: () => void): void;
}

const DEFAULT_MAX_BUFFERED = 1024;
/** Store read page size unless a subscription says (the hub reads for many subscribers at once in pages of it too). */
export const DEFAULT_PAGE_SIZE = 1000;
const DEFAULT_LAG_PAGE_SIZE = 64;
const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

type Result = IteratorResult<EventRecord, undefined>;

interface Waiter {
  resolve: (r: Result) => void;
  reject: (err: unknown) => void;
}

const positiveInt = (v: number | undefined, dflt: number): number =>
  v === undefined || !Number.isFinite(v) ? dflt : Math.max(1, Math.trunc(v));

/** The hub's subscriptions: the hub publishes to them, notifies them and tells them where a batch ends. */
export class SessionSubscription implements Subscription {
  private _mode: SubscriptionMode = "replay";
  private delivered: number;
  /** Events ready to deliver, contiguous from delivered + 1; `queue[head]` is next. */
  private queue: EventRecord[] = [];
  private head = 0;
  private readonly waiters: Waiter[] = [];
  private readonly maxBuffered: number;
  private readonly pageSize: number;
  private readonly lagPageSize: number;
  /** The size of the next store read: pageSize, or smaller after `lag()`. */
  private pageLimit: number;
  /** Set by `lag()` until the subscription is live again. */
  private lagged = false;
  /** Queued events up to this seq were read by this subscription itself (the rest were published to all). */
  private ownUpTo = 0;
  private lastShared = false;
  private readonly until: ((e: EventRecord) => boolean) | undefined;
  /** The highest seq heard of (published or notified) that may not be queued yet. */
  private heard = 0;
  private reading = false;
  private ready: (() => void) | null = null;
  /** Something was queued or changed by publish() since the consumer was last told (see endOfBatch). */
  private unsignalled = false;

  constructor(
    /** Called once when the subscription ends (the hub forgets it). */
    private readonly onClose: (sub: SessionSubscription) => void,
    private readonly store: Queries,
    readonly sessionId: string,
    opts: SubscribeOptions,
  ) {
    this.delivered = Math.max(0, Math.trunc(opts.afterSeq ?? 0));
    this.maxBuffered = positiveInt(opts.maxBuffered, DEFAULT_MAX_BUFFERED);
    this.pageSize = positiveInt(opts.pageSize, DEFAULT_PAGE_SIZE);
    this.lagPageSize = Math.min(this.pageSize, positiveInt(opts.lagPageSize, DEFAULT_LAG_PAGE_SIZE));
    this.pageLimit = this.pageSize;
    this.until = opts.until;
  }

  get lastSeq(): number {
    return this.delivered;
  }

  get buffered(): number {
    return this.queue.length - this.head;
  }

  get mode(): SubscriptionMode {
    return this._mode === "replay" && this.lagged ? "lagging" : this._mode;
  }

  get shared(): boolean {
    return this.lastShared;
  }

  lag(): void {
    if (this._mode === "closed") return;
    // What was queued exists in the store: remember how far (to read it again), not the events.
    const tail = this.tailSeq();
    if (tail > this.heard) this.heard = tail;
    this.queue = [];
    this.head = 0;
    this._mode = "replay";
    this.lagged = true;
    this.pageLimit = this.lagPageSize;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  onReady(listener: () => void): void {
    this.ready = listener;
  }

  poll(): EventRecord | undefined {
    if (this._mode === "closed" || this.waiters.length > 0) return undefined;
    const e = this.take();
    return e && this.deliver(e).value;
  }

  /** Tells a consumer that is not in next() that there is something for it. */
  private signal(): void {
    this.unsignalled = false;
    if (this.ready && this.waiters.length === 0) this.ready();
  }

  /**
   * The hub has handed over a batch of events (one write's worth): tell the consumer now, once for the batch, so
   * that it writes them together rather than one by one.
   */
  endOfBatch(): void {
    if (this.unsignalled) this.signal();
  }

  private tailSeq(): number {
    return this.queue.length > this.head ? this.queue[this.queue.length - 1]!.seq : this.delivered;
  }

  /** A stored event, straight from the writer (same process). */
  publish(e: EventRecord): void {
    if (this._mode === "closed") return;
    if (this._mode === "replay") {
      if (e.seq > this.heard) this.heard = e.seq;
      return;
    }
    const tail = this.tailSeq();
    if (e.seq <= tail) return;
    if (e.seq !== tail + 1 || this.buffered >= this.maxBuffered) {
      // A gap (events written elsewhere) or a slow consumer: read the rest from the store.
      this.heard = Math.max(this.heard, e.seq);
      this._mode = "replay";
      this.pump();
      this.unsignalled = true;
      return;
    }
    const w = this.waiters.shift();
    if (w) w.resolve(this.deliver(e));
    else {
      this.queue.push(e);
      this.unsignalled = true;
    }
  }

  /** The log has grown up to `seq` (written by another instance). */
  notify(seq: number): void {
    if (this._mode === "closed" || seq <= this.tailSeq()) return;
    if (seq > this.heard) this.heard = seq;
    const was = this._mode;
    this._mode = "replay";
    this.pump();
    if (was === "live") this.signal();
  }

  next(): Promise<Result> {
    if (this._mode === "closed") return Promise.resolve(DONE);
    if (this.waiters.length === 0 && this.head < this.queue.length) {
      return Promise.resolve(this.deliver(this.take()!));
    }
    const p = new Promise<Result>((resolve, reject) => this.waiters.push({ resolve, reject }));
    this.pump();
    return p;
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
    this.onClose(this);
    for (const w of this.waiters.splice(0)) w.resolve(DONE);
    this.signal();
  }

  private take(): EventRecord | undefined {
    if (this.head >= this.queue.length) return undefined;
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

  /** Hands queued events to waiters; in replay mode with an empty queue, reads the next page. */
  private pump(): void {
    while (this.waiters.length > 0 && this._mode !== "closed") {
      const e = this.take();
      if (!e) break;
      this.waiters.shift()!.resolve(this.deliver(e));
    }
    if (this.waiters.length > 0 && this._mode === "replay" && !this.reading && this.buffered === 0) {
      void this.readPage();
    }
  }

  private async readPage(): Promise<void> {
    this.reading = true;
    const from = this.tailSeq();
    const limit = this.pageLimit;
    let page: EventRecord[];
    try {
      page = await this.store.readEvents(this.sessionId, from, limit);
    } catch (err) {
      this.reading = false;
      for (const w of this.waiters.splice(0)) w.reject(err);
      return;
    }
    this.reading = false;
    if (this._mode === "closed") return;
    // Replay mode queues nothing live, and a lag() during the read dropped only what was queued before it: the page
    // continues the queue (a page read from before a lag() is still in order: tail is the last delivered seq).
    const before = this.tailSeq();
    for (const e of page) if (e.seq > this.tailSeq()) this.queue.push(e);
    this.ownUpTo = this.tailSeq();
    // A short page with nothing new: whatever else was heard of is not in the store (a session deleted
    // elsewhere): stop expecting it rather than read again and again; a later notify or publish wakes us.
    if (page.length < limit && this.tailSeq() === before) this.heard = before;
    if (page.length < limit && this.heard <= this.tailSeq()) {
      this._mode = "live";
      this.lagged = false;
      this.pageLimit = this.pageSize;
    } else if (this.pageLimit < this.pageSize) {
      this.pageLimit = Math.min(this.pageSize, this.pageLimit * 2);
    }
    this.pump();
  }

  private deliver(e: EventRecord): Result {
    this.delivered = e.seq;
    this.lastShared = e.seq > this.ownUpTo;
    let last = true;
    try {
      last = this.until?.(e) === true;
    } catch {
      // a throwing predicate ends the subscription (after this event) rather than break the writer
    }
    if (last) this.close();
    return { done: false, value: e };
  }
}

/**
 * Tells the subscribers that a batch was handed to them, in one microtask for them all: after the caller has carried
 * on (the writer resolved its appends and started its next write, the cross-instance reader sent its next query),
 * so that writing to 1000 sockets does not hold those up.
 */
export function endOfBatch(subs: Iterable<SessionSubscription>): void {
  const list = [...subs];
  queueMicrotask(() => {
    for (const s of list) s.endOfBatch();
  });
}
