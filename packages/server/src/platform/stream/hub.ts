/**
 * EventHub: the only writer of session event logs, and the live view of them.
 *
 * Writing. Each session has one write queue, so its events get their sequence numbers in the order they were
 * handed in. `append` batches: every event appended to a session during one turn of the event loop is written
 * in one store transaction (with the item rows that go with them). `commit` runs a state change and the events
 * it causes in one transaction (after whatever was queued before it). Either way an event is durable before it is
 * published to anyone.
 *
 * Reading. `subscribe` hands out a subscription (subscription.ts): it replays the stored log from a sequence number,
 * then follows the events the hub publishes to it once they are stored, in seq order, without gaps or duplicates.
 * `notify(sessionId, seq)` says "the log has grown up to seq" without the events (another instance wrote them): a
 * lone subscriber reads them from the store itself, several share one read. No timers, no polling.
 */
import type {
  Appended,
  EventRecord,
  ItemWrite,
  LogEvent,
  NewEvent,
  Queries,
  Store,
} from "../../store/types.js";
import {
  DEFAULT_PAGE_SIZE,
  endOfBatch,
  SessionSubscription,
  type SubscribeOptions,
  type Subscription,
} from "./subscription.js";

export type { SubscribeOptions, Subscription, SubscriptionMode } from "./subscription.js";

export interface AppendOptions {
  turn_id?: string | null;
  item?: ItemWrite;
}

/** Adds an event to the transaction of a `commit`. */
export type LogFn = (event: LogEvent, opts?: AppendOptions) => void;

/** Receives, after every write, the session and its last seq (cross-instance wake-ups). */
export type WriteListener = (sessionId: string, lastSeq: number) => void;

/** A session's writes, in order: appends (batched together) and tasks (a commit, a flush's barrier) between them. */
type Job =
  | { kind: "append"; entry: NewEvent; resolve: (a: Appended) => void; reject: (e: unknown) => void }
  | { kind: "task"; run: () => Promise<void> };

interface Writer {
  jobs: Job[];
  running: boolean;
}

export class EventHub {
  private readonly subs = new Map<string, Set<SessionSubscription>>();
  private readonly writers = new Map<string, Writer>();
  private readonly listeners: WriteListener[] = [];
  private readonly eventListeners: Array<(e: EventRecord) => void> = [];
  /** Sessions whose writes are fenced: the lease epoch of this process's claim of their running turn. */
  private readonly fences = new Map<string, number>();
  /** The highest seq handed to each session's subscribers (so events read for them are read once). */
  private readonly fetched = new Map<string, number>();
  /** Sessions whose new events are being read for their subscribers, with the seq to read up to. */
  private readonly fetching = new Map<string, number>();
  /** The clock of the events' `created_at` (unix seconds). */
  readonly now: () => number;

  private readonly onListenerError: (err: unknown) => void;

  constructor(
    private readonly store: Store,
    opts: { now?: () => number; onListenerError?: (err: unknown) => void } = {},
  ) {
    this.now = opts.now ?? (() => Date.now() / 1000);
    this.onListenerError = opts.onListenerError ?? (() => undefined);
  }

  /** Called after every write with the session's new last seq. */
  onWrite(listener: WriteListener): void {
    this.listeners.push(listener);
  }

  /**
   * Called with every event this process stored, once it is durable, in log order per session (observers such as
   * metrics and traces; never events written by another instance). A listener must not throw or block.
   */
  onEvent(listener: (e: EventRecord) => void): void {
    this.eventListeners.push(listener);
  }

  /**
   * From now on the session's writes carry this fencing token (the lease epoch of this process's claim of its
   * running turn): once another instance has taken the turn over they are refused (FencedError). null: unfenced.
   */
  fence(sessionId: string, epoch: number | null): void {
    if (epoch === null) this.fences.delete(sessionId);
    else this.fences.set(sessionId, epoch);
  }

  /** Appends one event (batched with the others of this event-loop turn); resolves once it is stored. */
  append(sessionId: string, event: LogEvent, opts: AppendOptions = {}): Promise<Appended> {
    return new Promise((resolve, reject) => {
      this.enqueue(sessionId, { kind: "append", entry: this.entry(event, opts), resolve, reject });
    });
  }

  private entry(event: LogEvent, opts: AppendOptions): NewEvent {
    return {
      event,
      turn_id: opts.turn_id ?? null,
      created_at: this.now(),
      ...(opts.item ? { item: opts.item } : {}),
    };
  }

  /**
   * Runs `fn` in a store transaction, after the session's earlier writes; the events it logs are written in the
   * same transaction and published once it has committed. Rejects (nothing written) when fn throws.
   */
  commit<T>(sessionId: string, fn: (tx: Queries, log: LogFn) => Promise<T>): Promise<T> {
    return this.write(sessionId, async (store) => {
      let appended: Appended[] = [];
      const result = await store.transaction(async (tx) => {
        const entries: NewEvent[] = [];
        const log: LogFn = (event, o = {}) => {
          entries.push(this.entry(event, o));
        };
        const r = await fn(tx, log);
        if (entries.length > 0)
          appended = await tx.appendEvents(sessionId, entries, this.fences.get(sessionId));
        return r;
      });
      return { result, appended };
    });
  }

  /**
   * Runs a store operation that appends events itself, atomically with the rest it writes (`startTurn`, `endTurn`),
   * after the session's earlier writes, with the session's fence (see `fence`) for its appends; what it appended is
   * published once it has returned. Rejects (nothing published) when it throws.
   */
  write<T>(
    sessionId: string,
    fn: (store: Store, fence: number | undefined) => Promise<{ result: T; appended: Appended[] }>,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.enqueue(sessionId, {
        kind: "task",
        run: async () => {
          let out: { result: T; appended: Appended[] };
          try {
            out = await fn(this.store, this.fences.get(sessionId));
          } catch (err) {
            reject(err);
            return;
          }
          this.published(sessionId, out.appended);
          resolve(out.result);
        },
      });
    });
  }

  /** Resolves once every write queued for the session so far is done (it writes nothing itself). */
  flush(sessionId: string): Promise<void> {
    return new Promise((resolve) => this.enqueue(sessionId, { kind: "task", run: async () => resolve() }));
  }

  /**
   * Replays every stored event with seq > afterSeq, then follows live events: in seq order, without gaps or
   * duplicates. Registered at once, so nothing written after this call is missed.
   */
  subscribe(sessionId: string, opts: SubscribeOptions = {}): Subscription {
    const sub = new SessionSubscription((s) => this.unregister(s), this.store, sessionId, opts);
    let set = this.subs.get(sessionId);
    if (!set) {
      set = new Set();
      this.subs.set(sessionId, set);
    }
    set.add(sub);
    return sub;
  }

  /** The log of a session has grown up to `seq` elsewhere (another instance): wake its subscribers. */
  notify(sessionId: string, seq: number): void {
    const set = this.subs.get(sessionId);
    if (!set || set.size === 0) return;
    if (set.size === 1) {
      for (const s of set) s.notify(seq);
      return;
    }
    // Many subscribers: read the new events once for all of them (each would read them itself otherwise).
    const pending = this.fetching.get(sessionId);
    this.fetching.set(sessionId, Math.max(seq, pending ?? 0));
    if (pending === undefined) void this.fetchFor(sessionId);
  }

  /** Reads what other instances appended to a session, once, and hands it to its subscribers in order. */
  private async fetchFor(sessionId: string): Promise<void> {
    for (;;) {
      const target = this.fetching.get(sessionId) ?? 0;
      const set = this.subs.get(sessionId);
      const from = this.fetched.get(sessionId) ?? Math.min(...[...(set ?? [])].map((s) => s.lastSeq));
      if (!set || set.size === 0 || from >= target) {
        this.fetching.delete(sessionId);
        return;
      }
      let events: EventRecord[];
      try {
        events = await this.store.readEvents(sessionId, from, Math.min(target - from, DEFAULT_PAGE_SIZE));
      } catch {
        events = [];
      }
      if (events.length === 0) {
        // Nothing to share (or the read failed): each subscriber reads for itself.
        this.fetching.delete(sessionId);
        for (const s of this.subs.get(sessionId) ?? []) s.notify(target);
        return;
      }
      const subs = this.subs.get(sessionId) ?? new Set<SessionSubscription>();
      for (const e of events) for (const s of subs) s.publish(e);
      // Told after this loop has asked for the next events (the read is then in flight while they write).
      endOfBatch(subs);
      this.fetched.set(sessionId, Math.max(this.fetched.get(sessionId) ?? 0, events.at(-1)!.seq));
    }
  }

  /** Every subscriber reads the store again (wake-ups from other instances may have been lost). */
  wakeAll(): void {
    for (const set of this.subs.values()) for (const s of set) s.notify(Number.MAX_SAFE_INTEGER);
  }

  subscriberCount(sessionId?: string): number {
    if (sessionId !== undefined) return this.subs.get(sessionId)?.size ?? 0;
    let n = 0;
    for (const set of this.subs.values()) n += set.size;
    return n;
  }

  /** Ends every subscription of a session (e.g. deleted): iterators finish (done: true). */
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

  /** Resolves once every session's queued writes are done. */
  async drain(): Promise<void> {
    await Promise.all([...this.writers.keys()].map((id) => this.flush(id)));
  }

  /** Forgets a subscription that has ended. */
  private unregister(sub: SessionSubscription): void {
    const set = this.subs.get(sub.sessionId);
    if (!set) return;
    set.delete(sub);
    if (set.size === 0) {
      this.subs.delete(sub.sessionId);
      this.fetched.delete(sub.sessionId);
    }
  }

  private enqueue(sessionId: string, job: Job): void {
    let w = this.writers.get(sessionId);
    if (!w) {
      w = { jobs: [], running: false };
      this.writers.set(sessionId, w);
    }
    w.jobs.push(job);
    if (!w.running) {
      w.running = true;
      // One turn of the event loop collects the batch.
      setImmediate(() => void this.run(sessionId, w!));
    }
  }

  private async run(sessionId: string, w: Writer): Promise<void> {
    while (w.jobs.length > 0) {
      const job = w.jobs[0]!;
      if (job.kind === "task") {
        w.jobs.shift();
        await job.run();
        continue;
      }
      let n = 0;
      while (n < w.jobs.length && w.jobs[n]!.kind === "append") n++;
      const batch = w.jobs.splice(0, n) as Array<Extract<Job, { kind: "append" }>>;
      try {
        const appended = await this.store.appendEvents(
          sessionId,
          batch.map((j) => j.entry),
          this.fences.get(sessionId),
        );
        this.published(sessionId, appended);
        for (const [i, a] of appended.entries()) batch[i]!.resolve(a);
      } catch (err) {
        for (const j of batch) j.reject(err);
      }
    }
    w.running = false;
    this.writers.delete(sessionId);
  }

  /** Hands stored events to subscribers and write listeners; never throws (they are stored whatever happens). */
  private published(sessionId: string, appended: Appended[]): void {
    if (appended.length === 0) return;
    const set = this.subs.get(sessionId);
    if (set) {
      for (const a of appended) for (const s of set) s.publish(a.event);
      endOfBatch(set);
      this.fetched.set(sessionId, Math.max(this.fetched.get(sessionId) ?? 0, appended.at(-1)!.event.seq));
    }
    for (const l of this.eventListeners) {
      for (const a of appended) {
        try {
          l(a.event);
        } catch (err) {
          this.onListenerError(err);
        }
      }
    }
    const last = appended.at(-1)!.event.seq;
    for (const l of this.listeners) {
      try {
        l(sessionId, last);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
