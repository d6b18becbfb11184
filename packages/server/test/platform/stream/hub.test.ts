import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EventHub, type Subscription } from "../../../src/platform/stream/hub.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { Appended, EventRecord, LogEvent, NewEvent, Store } from "../../../src/store/types.js";
import { delta, newEvent, session, threadItem, turn } from "../../store/contract.js";

/** Reads exactly n events (fails rather than hangs if the subscription ends early). */
async function take(sub: Subscription, n: number): Promise<EventRecord[]> {
  const out: EventRecord[] = [];
  while (out.length < n) {
    const r = await sub.next();
    if (r.done) throw new Error(`subscription ended after ${out.length} of ${n} events`);
    out.push(r.value);
  }
  return out;
}

/** Resolves once `p` has settled, or reports that it is still pending once the event loop has turned. */
async function settled<T>(p: Promise<T>): Promise<{ done: true; value: T } | { done: false }> {
  const pending = Symbol("pending");
  // setImmediate runs after every queued microtask (promise reaction), so a resolvable promise has resolved by then.
  const tick = new Promise<typeof pending>((r) => setImmediate(() => r(pending)));
  const v = await Promise.race([p, tick]);
  return v === pending ? { done: false } : { done: true, value: v as T };
}

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

/** Waits (turn by turn of the event loop, bounded) until `cond` holds. */
async function waitFor(cond: () => boolean, what = "condition"): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await nextTurn();
  }
  throw new Error(`${what} never held`);
}

/** The store with some operations replaced (the rest are the store's own). */
function wrap(store: Store, overrides: Partial<Store>): Store {
  // An empty target: the store's own methods are read-only properties, which a proxy of it could not replace.
  return new Proxy({} as Store, {
    get(_target, prop) {
      if (Object.hasOwn(overrides, prop)) return overrides[prop as keyof Store];
      const v = Reflect.get(store, prop);
      return typeof v === "function" ? v.bind(store) : v;
    },
  });
}

const seqs = (es: EventRecord[]) => es.map((e) => e.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const text = (e: EventRecord) => (e.type === "item.delta" ? e.data.delta : e.type);
const typed = (type: string): LogEvent => ({
  type: "item.delta",
  data: { item_id: "i", output_index: 0, kind: "agent_message", delta: type },
});

describe("EventHub", () => {
  let store: SqliteStore;
  let hub: EventHub;
  let clock: number;
  /** Appends fired without waiting, awaited before the store closes. */
  let inflight: Promise<unknown>[];

  beforeEach(async () => {
    store = SqliteStore.open(":memory:");
    await store.insertSession(session("s1"));
    await store.insertSession(session("s2"));
    clock = 1000;
    hub = new EventHub(store, { now: () => clock });
    inflight = [];
  });
  afterEach(async () => {
    hub.closeAll();
    await Promise.allSettled(inflight);
    await hub.drain();
    await store.close();
  });

  /** Appends n events in this turn of the event loop (one batch); resolves once they are stored. */
  const append = (n: number, sid = "s1", type?: string): Promise<Appended[]> => {
    const ps: Promise<Appended>[] = [];
    for (let i = 0; i < n; i++) ps.push(hub.append(sid, type === undefined ? delta(i) : typed(type)));
    const all = Promise.all(ps);
    inflight.push(all);
    return all;
  };

  it("append stores the event (and its item), assigns seq and uses the clock", async () => {
    clock = 1234.567;
    const started: LogEvent = { type: "turn.started", data: { turn: turn("s1", "t1") } };
    const a = await hub.append("s1", started, { turn_id: "t1" });
    expect(a).toEqual({
      event: { ...started, session_id: "s1", seq: 1, turn_id: "t1", created_at: 1234.567 },
      ordinal: null,
    });
    const b = await hub.append("s1", delta());
    expect(b.event.turn_id).toBeNull();
    expect(b.event.seq).toBe(2);
    const it0 = threadItem("i0");
    const c = await hub.append(
      "s1",
      { type: "item.started", data: { item: it0, output_index: 0 } },
      { turn_id: "t1", item: { kind: "start", turn_id: "t1", item: it0, created_at: 1 } },
    );
    expect(c.ordinal).toBe(0);
    expect(c.event.seq).toBe(3);
    expect(await store.readEvents("s1", 0, 10)).toEqual([a.event, b.event, c.event]);
    expect((await store.listItems("s1", {})).data).toEqual([
      expect.objectContaining({ id: "i0", state: "started" }),
    ]);
  });

  it("a failed append (unknown session) publishes nothing and does not disturb other sessions", async () => {
    const sub = hub.subscribe("nope");
    const next = sub.next();
    const writes: Array<[string, number]> = [];
    hub.onWrite((sid, seq) => writes.push([sid, seq]));
    const bad = hub.append("nope", delta());
    const good = hub.append("s1", delta());
    await expect(bad).rejects.toThrow();
    expect((await good).event.seq).toBe(1);
    expect(writes).toEqual([["s1", 1]]);
    expect((await settled(next)).done).toBe(false);
    sub.close();
    expect(await next).toEqual({ done: true, value: undefined });
  });

  it("a store that fails on append never reaches subscribers; the writer carries on afterwards", async () => {
    let fail = true;
    const failing = wrap(store, {
      appendEvents: async (sid: string, events: NewEvent[]) => {
        if (fail) throw new Error("disk full");
        return store.appendEvents(sid, events);
      },
    });
    const h = new EventHub(failing);
    const writes: number[] = [];
    h.onWrite((_sid, seq) => writes.push(seq));
    const sub = h.subscribe("s1");
    const next = sub.next(); // replay of an empty log, then waits live
    const batch = [h.append("s1", delta(1)), h.append("s1", delta(2))];
    for (const p of batch) await expect(p).rejects.toThrow("disk full"); // the whole batch fails
    expect((await settled(next)).done).toBe(false);
    expect(writes).toEqual([]);
    expect(await store.lastEventSeq("s1")).toBe(0);

    fail = false;
    expect((await h.append("s1", delta(3))).event.seq).toBe(1);
    expect((await next).value).toMatchObject({ seq: 1, data: { delta: "3" } });
    expect(writes).toEqual([1]);
    h.closeAll();
  });

  it("events are stored before any subscriber (or write listener) sees them", async () => {
    const sub = hub.subscribe("s1");
    const seenInStore: boolean[] = [];
    const consumer = (async () => {
      for await (const e of sub) {
        // read the store the moment the event is received
        const stored = (await store.readEvents("s1", e.seq - 1, 1))[0];
        seenInStore.push(stored?.seq === e.seq && stored.type === e.type);
        if (e.seq === 60) break;
      }
    })();
    const listenerChecks: Promise<boolean>[] = [];
    hub.onWrite((sid, seq) => {
      listenerChecks.push(store.lastEventSeq(sid).then((last) => last >= seq));
    });
    for (let i = 0; i < 50; i++) {
      inflight.push(hub.append("s1", typed(`t${i}`)));
      // let the consumer run between appends, so it is woken by live publication, not by replay
      if (i % 3 === 0) await nextTurn();
      else await Promise.resolve();
    }
    for (let i = 0; i < 10; i++) {
      inflight.push(
        hub.commit("s1", async (tx, log) => {
          await tx.updateSession("s1", { name: `n${i}` });
          log(typed(`c${i}`));
        }),
      );
      if (i % 2 === 0) await nextTurn();
    }
    await consumer;
    expect(seenInStore).toHaveLength(60);
    expect(seenInStore.every(Boolean)).toBe(true);
    expect(listenerChecks.length).toBeGreaterThan(0);
    expect((await Promise.all(listenerChecks)).every(Boolean)).toBe(true);
  });

  it("many subscribers each receive every event, in order; sessions are independent", async () => {
    const subs = Array.from({ length: 5 }, () => hub.subscribe("s1"));
    const other = hub.subscribe("s2");
    expect(hub.subscriberCount("s1")).toBe(5);
    expect(hub.subscriberCount("s2")).toBe(1);
    expect(hub.subscriberCount()).toBe(6);
    const readers = subs.map((s) => take(s, 300));
    for (let i = 0; i < 300; i++) {
      void append(1);
      if (i % 7 === 0) await Promise.resolve();
      if (i % 50 === 0) await nextTurn();
    }
    await append(2, "s2");
    const results = await Promise.all(readers);
    for (const r of results) expect(seqs(r)).toEqual(range(1, 300));
    expect(seqs(await take(other, 2))).toEqual([1, 2]);
    expect((await settled(other.next())).done).toBe(false); // s1's events never reach s2
    expect(await store.lastEventSeq("s2")).toBe(2);
  });

  it("replays stored events (paged) then tails live", async () => {
    await append(25);
    const sub = hub.subscribe("s1", { pageSize: 10 });
    expect(sub.mode).toBe("replay");
    expect(seqs(await take(sub, 25))).toEqual(range(1, 25));
    const pending = sub.next();
    await waitFor(() => sub.mode === "live", "live mode");
    void append(1);
    expect((await pending).value?.seq).toBe(26);
    void append(3);
    expect(seqs(await take(sub, 3))).toEqual([27, 28, 29]);
    expect(sub.lastSeq).toBe(29);
  });

  it("starts after afterSeq", async () => {
    await append(10);
    const sub = hub.subscribe("s1", { afterSeq: 7, pageSize: 2 });
    expect(sub.lastSeq).toBe(7);
    expect(seqs(await take(sub, 3))).toEqual([8, 9, 10]);
    void append(1);
    expect(seqs(await take(sub, 1))).toEqual([11]);
  });

  it("afterSeq beyond the end waits for that seq without duplicates", async () => {
    await append(3);
    const sub = hub.subscribe("s1", { afterSeq: 5 });
    const p = sub.next();
    await append(2); // seq 4, 5: before the cursor
    expect((await settled(p)).done).toBe(false);
    void append(1); // seq 6
    expect((await p).value?.seq).toBe(6);
  });

  for (const [label, perRead] of [
    ["one append per read", 1],
    ["one append every other read", 0.5],
    ["three appends per read", 3],
  ] as const) {
    it(`hands off from replay to live without gaps or duplicates (${label} during the replay)`, async () => {
      await append(35);
      const sub = hub.subscribe("s1", { pageSize: 10 });
      const got: number[] = [];
      let issued = 35;
      let credit = 0;
      // Append (without waiting) between next() calls: inside pages, at page boundaries, across the switch to live.
      while (got.length < 150) {
        const next = sub.next();
        if (got.length === issued) {
          // caught up: the pending next() must be woken by the append
          void append(1);
          issued++;
        }
        const r = await next;
        if (r.done) throw new Error("ended");
        got.push(r.value.seq);
        credit += perRead;
        while (credit >= 1 && issued < 150) {
          void append(1);
          issued++;
          credit--;
        }
      }
      expect(got).toEqual(range(1, 150));
      expect(sub.lastSeq).toBe(150);
      await Promise.all(inflight);
      const p = sub.next();
      await waitFor(() => sub.mode === "live", "live mode");
      void append(1);
      expect((await p).value?.seq).toBe(151);
      expect((await settled(sub.next())).done).toBe(false);
    });
  }

  it("pending next() calls during the switch to live are resolved by the next appends, in order", async () => {
    await append(10);
    const sub = hub.subscribe("s1", { pageSize: 10 });
    // exactly one full page: the hub cannot know it is caught up until the following (empty) read
    expect(seqs(await take(sub, 10))).toEqual(range(1, 10));
    expect(sub.mode).toBe("replay");
    const [a, b] = [sub.next(), sub.next()]; // concurrent next() calls keep their order
    await waitFor(() => sub.mode === "live", "live mode");
    void append(2);
    expect([(await a).value?.seq, (await b).value?.seq]).toEqual([11, 12]);
  });

  it("bounds memory for a subscriber that does not read, then recovers every event from the store", async () => {
    const sub = hub.subscribe("s1", { maxBuffered: 100, pageSize: 250 });
    const fast = hub.subscribe("s1", { maxBuffered: 100 });
    // get both into live mode
    await append(1);
    expect(seqs(await take(sub, 1))).toEqual([1]);
    expect(sub.mode).toBe("live");

    let maxSeen = 0;
    const fastGot: number[] = [];
    const fastReader = (async () => {
      for await (const e of fast) {
        fastGot.push(e.seq);
        if (e.seq === 10_001) break;
      }
    })();
    let last: Promise<Appended> = Promise.resolve({} as Appended);
    for (let i = 0; i < 10_000; i++) {
      last = hub.append("s1", delta(i));
      if (i % 50 === 49) {
        await last; // stored and published
        maxSeen = Math.max(maxSeen, sub.buffered);
        await nextTurn(); // let the fast reader keep up
      }
    }
    await last;
    expect(maxSeen).toBe(100);
    expect(sub.buffered).toBe(100);
    expect(sub.mode).toBe("replay"); // overflowed: the rest stays in the store

    // resumes: gets every event in order (the overflow re-read from the store), then continues live
    let maxWhileReading = 0;
    const got: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      const r = await sub.next();
      if (r.done) throw new Error("ended");
      got.push(r.value.seq);
      maxWhileReading = Math.max(maxWhileReading, sub.buffered);
    }
    expect(got).toEqual(range(2, 10_001));
    expect(maxWhileReading).toBeLessThanOrEqual(250);
    const p = sub.next();
    await waitFor(() => sub.mode === "live", "live mode");
    void append(1);
    expect((await p).value?.seq).toBe(10_002);

    await fastReader;
    expect(fastGot).toEqual(range(1, 10_001));
  });

  it("a subscriber that lags holds no events however many are published; resumed, it gets each once, in order", async () => {
    const reads: number[] = [];
    const counting = wrap(store, {
      readEvents: (sid, after, limit) => {
        reads.push(limit);
        return store.readEvents(sid, after, limit);
      },
    });
    hub = new EventHub(counting, { now: () => clock });
    const sub = hub.subscribe("s1", { pageSize: 100, lagPageSize: 8 });
    await append(3);
    expect(seqs(await take(sub, 2))).toEqual([1, 2]);
    expect(sub.mode).toBe("live");
    expect(sub.buffered).toBe(1); // event 3, queued live
    expect(sub.shared).toBe(false); // 1 and 2 came from its own first read

    // Its consumer cannot take more (e.g. a full socket): it drops what it held and keeps only its position.
    sub.lag();
    expect(sub.mode).toBe("lagging");
    expect(sub.buffered).toBe(0);
    expect(sub.lastSeq).toBe(2);
    let held = 0;
    for (let i = 0; i < 40; i++) {
      await append(50);
      held = Math.max(held, sub.buffered);
    }
    expect(held).toBe(0);
    expect(sub.mode).toBe("lagging");

    // It reads on from the store in pages that grow while it keeps up: 8, 16, 32, 64, then 100.
    reads.length = 0;
    const got = seqs(await take(sub, 300));
    expect(got).toEqual(range(3, 302));
    expect(reads.slice(0, 5)).toEqual([8, 16, 32, 64, 100]);
    // Lagging again part-way through a page drops the rest of it; the next read starts small again.
    expect(sub.buffered).toBeGreaterThan(0);
    sub.lag();
    expect(sub.buffered).toBe(0);
    reads.length = 0;
    expect(seqs(await take(sub, 1))).toEqual([303]);
    expect(reads).toEqual([8]);
    // To the end of the log, then back to the live tail: exactly once, in order.
    expect(seqs(await take(sub, 2003 - 303))).toEqual(range(304, 2003));
    const p = sub.next();
    await waitFor(() => sub.mode === "live", "live mode");
    void append(1);
    expect((await p).value?.seq).toBe(2004);
    expect(sub.shared).toBe(true); // published live: the hub's copy
  });

  it("poll/onReady: a consumer outside next() is told once per published batch and takes it synchronously", async () => {
    const sub = hub.subscribe("s1");
    let told = 0;
    sub.onReady(() => told++);
    await append(2);
    expect(seqs(await take(sub, 2))).toEqual([1, 2]);
    await waitFor(() => sub.mode === "live", "live mode");
    expect(sub.poll()).toBeUndefined();
    told = 0;
    await append(5); // one batch
    expect(told).toBe(1);
    const got: number[] = [];
    for (let e = sub.poll(); e; e = sub.poll()) got.push(e.seq);
    expect(got).toEqual([3, 4, 5, 6, 7]);
    expect(sub.lastSeq).toBe(7);
    expect(sub.shared).toBe(true);
    // Not while a next() is pending: that one gets the event.
    const p = sub.next();
    await append(1);
    expect(told).toBe(1);
    expect((await p).value?.seq).toBe(8);
    // Leaving the live tail (lag, then something to read) and the end are said too.
    sub.lag();
    await append(1);
    expect(sub.poll()).toBeUndefined(); // lagging: the event is in the store, not queued
    expect(sub.mode).toBe("lagging");
    expect(seqs(await take(sub, 1))).toEqual([9]);
    told = 0;
    sub.close();
    expect(told).toBe(1);
    expect(sub.poll()).toBeUndefined();
  });

  it("lag() while a page is being read, and publishes meanwhile: nothing is lost or repeated", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let hold = true;
    hub = new EventHub(
      wrap(store, {
        readEvents: async (sid, after, limit) => {
          const page = await store.readEvents(sid, after, limit);
          if (hold) await held;
          return page;
        },
      }),
      { now: () => clock },
    );
    await append(10);
    const sub = hub.subscribe("s1", { pageSize: 4, lagPageSize: 2 });
    const first = sub.next(); // reads a page of 4 (held)
    await nextTurn();
    sub.lag();
    await append(5); // heard of while reading
    hold = false;
    release();
    const got = [(await first).value!.seq, ...seqs(await take(sub, 14))];
    expect(got).toEqual(range(1, 15));
    const p = sub.next();
    await waitFor(() => sub.mode === "live", "live mode");
    void append(1);
    expect((await p).value?.seq).toBe(16);
  });

  it("keeps the buffer bounded while replaying a long log that grows", async () => {
    await append(5000);
    const sub = hub.subscribe("s1", { maxBuffered: 10, pageSize: 100 });
    let max = 0;
    for (let i = 0; i < 5000; i++) {
      const r = await sub.next();
      expect(r.value?.seq).toBe(i + 1);
      max = Math.max(max, sub.buffered);
      if (i % 10 === 0) void append(1);
    }
    expect(max).toBeLessThanOrEqual(100);
    expect(seqs(await take(sub, 500))).toEqual(range(5001, 5500));
  });

  it("close() unregisters immediately and ends pending and later next() calls", async () => {
    const sub = hub.subscribe("s1");
    expect(hub.subscriberCount("s1")).toBe(1);
    const p = sub.next();
    sub.close();
    expect(hub.subscriberCount("s1")).toBe(0);
    expect(hub.subscriberCount()).toBe(0);
    expect(await p).toEqual({ done: true, value: undefined });
    expect(await sub.next()).toEqual({ done: true, value: undefined });
    expect(sub.mode).toBe("closed");
    expect(sub.buffered).toBe(0);
    await append(1); // no one to publish to; no error
    sub.close(); // idempotent
    expect(await sub.next()).toEqual({ done: true, value: undefined });
  });

  it("breaking out of for await (return()) unregisters the subscriber", async () => {
    await append(5);
    const sub = hub.subscribe("s1");
    const got: number[] = [];
    for await (const e of sub) {
      got.push(e.seq);
      if (e.seq === 3) {
        expect(hub.subscriberCount("s1")).toBe(1);
        break;
      }
    }
    expect(got).toEqual([1, 2, 3]);
    expect(hub.subscriberCount("s1")).toBe(0);
    expect((await sub.next()).done).toBe(true);
  });

  it("until ends the subscription after delivering the matching event", async () => {
    const sub = hub.subscribe("s1", { until: (e) => text(e) === "turn.completed" });
    const got: string[] = [];
    const consumer = (async () => {
      for await (const e of sub) got.push(text(e));
    })();
    void append(1, "s1", "turn.started");
    void append(1, "s1", "delta");
    await nextTurn();
    void append(1, "s1", "turn.completed");
    void append(1, "s1", "after");
    await consumer;
    expect(got).toEqual(["turn.started", "delta", "turn.completed"]);
    expect(hub.subscriberCount("s1")).toBe(0);
  });

  it("until also applies to replayed events", async () => {
    await append(3, "s1", "a");
    await append(1, "s1", "stop");
    await append(3, "s1", "b");
    const sub = hub.subscribe("s1", { pageSize: 2, until: (e) => text(e) === "stop" });
    const got: number[] = [];
    for await (const e of sub) got.push(e.seq);
    expect(got).toEqual([1, 2, 3, 4]);
    expect(hub.subscriberCount()).toBe(0);
  });

  it("a throwing until ends the subscription without breaking append", async () => {
    const sub = hub.subscribe("s1", {
      until: () => {
        throw new Error("bad predicate");
      },
    });
    const p = sub.next();
    await expect(append(2)).resolves.toHaveLength(2);
    expect((await p).value?.seq).toBe(1);
    expect((await sub.next()).done).toBe(true);
  });

  it("closeSession finishes that session's pending next() calls only", async () => {
    const a = hub.subscribe("s1");
    const b = hub.subscribe("s1");
    const c = hub.subscribe("s2");
    const [pa, pb, pc] = [a.next(), b.next(), c.next()];
    hub.closeSession("s1");
    expect(await pa).toEqual({ done: true, value: undefined });
    expect(await pb).toEqual({ done: true, value: undefined });
    expect(hub.subscriberCount("s1")).toBe(0);
    expect(hub.subscriberCount("s2")).toBe(1);
    expect((await settled(pc)).done).toBe(false);
    void append(1, "s2");
    expect((await pc).value?.seq).toBe(1);
  });

  it("closeAll finishes every subscription", async () => {
    const subs = [hub.subscribe("s1"), hub.subscribe("s2"), hub.subscribe("s2")];
    const pending = subs.map((s) => s.next());
    hub.closeAll();
    expect(hub.subscriberCount()).toBe(0);
    for (const p of pending) expect((await p).done).toBe(true);
    // a for await over a closed subscription ends at once
    for await (const _ of subs[0]!) throw new Error("unexpected event");
  });

  it("closes a subscriber that is mid-replay", async () => {
    await append(50);
    const sub = hub.subscribe("s1", { pageSize: 10 });
    await take(sub, 5);
    expect(sub.buffered).toBe(5);
    hub.closeSession("s1");
    expect(sub.buffered).toBe(0);
    expect((await sub.next()).done).toBe(true);
  });

  it("closes a subscriber whose page read is in flight; the read's events are dropped", async () => {
    await append(5);
    const sub = hub.subscribe("s1");
    const p = sub.next(); // starts a page read
    sub.close();
    expect(await p).toEqual({ done: true, value: undefined });
    await nextTurn(); // the read has completed meanwhile
    expect(sub.buffered).toBe(0);
    expect(sub.lastSeq).toBe(0);
  });

  it("a subscriber of a deleted-then-closed session ends; new appends after re-creation start at 1", async () => {
    await append(3);
    const sub = hub.subscribe("s1");
    await take(sub, 3);
    await store.deleteSession("s1");
    hub.closeSession("s1");
    expect((await sub.next()).done).toBe(true);
    await store.insertSession(session("s1"));
    expect((await append(1))[0]!.event.seq).toBe(1);
  });

  describe("batching", () => {
    it("flush resolves once the session's earlier writes are stored, and writes nothing itself", async () => {
      let transactions = 0;
      let release: () => void = () => {};
      const held = new Promise<void>((r) => {
        release = r;
      });
      const counted = wrap(store, {
        appendEvents: async (sid: string, events: NewEvent[]) => {
          await held;
          return store.appendEvents(sid, events);
        },
        transaction: (fn) => {
          transactions++;
          return store.transaction(fn);
        },
      });
      const h = new EventHub(counted);
      const appended = h.append("s1", delta(1));
      const flushed = h.flush("s1");
      await nextTurn();
      expect(await settled(flushed)).toEqual({ done: false });
      release();
      await flushed;
      expect(await settled(appended)).toMatchObject({ done: true });
      expect(await store.lastEventSeq("s1")).toBe(1);
      expect(transactions).toBe(0);
      await h.drain();
    });

    it("appends made in one event-loop turn are written in one batch and published in seq order", async () => {
      const calls: Array<[string, number]> = [];
      const counted = wrap(store, {
        appendEvents: (sid: string, events: NewEvent[]) => {
          calls.push([sid, events.length]);
          return store.appendEvents(sid, events);
        },
      });
      const h = new EventHub(counted);
      const sub = h.subscribe("s1");
      const live = sub.next(); // in live mode before the appends
      await waitFor(() => sub.mode === "live", "live mode");
      const resolved: number[] = [];
      const writes: Array<[string, number]> = [];
      h.onWrite((sid, seq) => writes.push([sid, seq]));

      const ps = Array.from({ length: 10 }, (_, i) =>
        h.append("s1", delta(i)).then((a) => {
          resolved.push(a.event.seq);
          return a;
        }),
      );
      const other = h.append("s2", delta(100));
      const res = await Promise.all(ps);
      await other;
      expect(calls).toEqual([
        ["s1", 10],
        ["s2", 1],
      ]);
      expect(writes).toEqual([
        ["s1", 10],
        ["s2", 1],
      ]);
      expect(res.map((a) => a.event.seq)).toEqual(range(1, 10));
      expect(res.map((a) => text(a.event))).toEqual(range(0, 9).map(String)); // seq follows the order of the calls
      expect(resolved).toEqual(range(1, 10));
      expect((await live).value?.seq).toBe(1);
      expect(seqs(await take(sub, 9))).toEqual(range(2, 10));

      // a later turn: a batch of its own
      await h.append("s1", delta());
      expect(calls.at(-1)).toEqual(["s1", 1]);
      h.closeAll();
    });

    it("appends issued while a batch is being written form the next batch", async () => {
      const calls: number[] = [];
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      const gated = wrap(store, {
        appendEvents: async (sid: string, events: NewEvent[]) => {
          calls.push(events.length);
          if (calls.length === 1) await gate;
          return store.appendEvents(sid, events);
        },
      });
      const h = new EventHub(gated);
      const sub = h.subscribe("s1");
      const reader = take(sub, 7);
      const first = [h.append("s1", delta(0)), h.append("s1", delta(1))];
      await waitFor(() => calls.length === 1, "the first batch");
      const second = [h.append("s1", delta(2)), h.append("s1", delta(3))];
      await nextTurn();
      const third = [h.append("s1", delta(4)), h.append("s1", delta(5)), h.append("s1", delta(6))];
      expect(calls).toEqual([2]); // the first batch is still being written
      release();
      const all = await Promise.all([...first, ...second, ...third]);
      expect(calls).toEqual([2, 5]);
      expect(all.map((a) => a.event.seq)).toEqual(range(1, 7));
      expect(all.map((a) => text(a.event))).toEqual(range(0, 6).map(String));
      expect(seqs(await reader)).toEqual(range(1, 7));
      h.closeAll();
    });
  });

  describe("commit", () => {
    it("writes the state change and its events in one transaction, then publishes them", async () => {
      const sub = hub.subscribe("s1");
      const writes: number[] = [];
      hub.onWrite((_sid, seq) => writes.push(seq));
      const t = turn("s1", "t1", 5, { status: "in_progress" });
      const it0 = threadItem("i0");
      const result = await hub.commit("s1", async (tx, log) => {
        const s = await tx.claimSession("s1", "t1", { status: "in_progress" });
        await tx.insertTurn(t);
        log({ type: "session.status", data: { session: s! } });
        log({ type: "turn.started", data: { turn: t } }, { turn_id: "t1" });
        log(
          { type: "item.started", data: { item: it0, output_index: 0 } },
          { turn_id: "t1", item: { kind: "start", turn_id: "t1", item: it0, created_at: 6 } },
        );
        return "done";
      });
      expect(result).toBe("done");
      expect(await store.getSession("s1")).toMatchObject({ status: "in_progress", active_turn_id: "t1" });
      expect(await store.getTurn("s1", "t1")).toEqual(t);
      expect((await store.listItems("s1", {})).data).toEqual([
        expect.objectContaining({ id: "i0", ordinal: 0 }),
      ]);
      const got = await take(sub, 3);
      expect(got.map((e) => [e.seq, e.type, e.turn_id])).toEqual([
        [1, "session.status", null],
        [2, "turn.started", "t1"],
        [3, "item.started", "t1"],
      ]);
      expect(got).toEqual(await store.readEvents("s1", 0, 10));
      expect(writes).toEqual([3]); // once per commit

      // a commit that logs nothing publishes nothing
      expect(await hub.commit("s1", async (tx) => (await tx.getSession("s1"))?.status)).toBe("in_progress");
      expect(writes).toEqual([3]);
    });

    it("a throwing commit writes nothing and publishes nothing", async () => {
      await append(2);
      const sub = hub.subscribe("s1");
      expect(seqs(await take(sub, 2))).toEqual([1, 2]);
      const next = sub.next();
      const writes: number[] = [];
      hub.onWrite((_sid, seq) => writes.push(seq));
      await expect(
        hub.commit("s1", async (tx, log) => {
          await tx.updateSession("s1", { name: "changed", status: "in_progress" });
          log(typed("lost 1"));
          await tx.insertTurn(turn("s1", "t1"));
          await nextTurn();
          log(typed("lost 2"));
          throw new Error("nope");
        }),
      ).rejects.toThrow("nope");
      expect(await store.getSession("s1")).toEqual(session("s1"));
      expect(await store.getTurn("s1", "t1")).toBeUndefined();
      expect(await store.lastEventSeq("s1")).toBe(2);
      expect((await settled(next)).done).toBe(false);
      expect(writes).toEqual([]);

      // the session's writer carries on, without a gap
      void append(1);
      expect((await next).value).toMatchObject({ seq: 3, data: { delta: "0" } });
      expect(writes).toEqual([3]);
    });

    it("runs after the appends queued before it and before those queued after it", async () => {
      const sub = hub.subscribe("s1");
      const a1 = hub.append("s1", typed("before"));
      const c = hub.commit("s1", async (tx, log) => {
        // the earlier append is already stored when the commit runs
        expect(await tx.lastEventSeq("s1")).toBe(1);
        log(typed("committed"));
        return tx.lastEventSeq("s1");
      });
      const a2 = hub.append("s1", typed("after"));
      expect((await a1).event.seq).toBe(1);
      expect(await c).toBe(1); // its own events are appended once fn returns
      expect((await a2).event.seq).toBe(3);
      expect((await take(sub, 3)).map(text)).toEqual(["before", "committed", "after"]);
    });

    it("commits of different sessions do not wait for each other's appends", async () => {
      const [x, y] = await Promise.all([
        hub.commit("s1", async (_tx, log) => log(typed("x"))),
        hub.commit("s2", async (_tx, log) => log(typed("y"))),
        append(3, "s1"),
      ]);
      expect([x, y]).toEqual([undefined, undefined]);
      expect((await store.readEvents("s1", 0, 10)).map(text)).toEqual(["x", "0", "1", "2"]);
      expect((await store.readEvents("s2", 0, 10)).map(text)).toEqual(["y"]);
    });
  });

  describe("notify (events written by another instance)", () => {
    it("wakes a live subscriber, which then delivers them in order", async () => {
      await append(2);
      const sub = hub.subscribe("s1");
      expect(seqs(await take(sub, 2))).toEqual([1, 2]);
      const p = sub.next();
      await waitFor(() => sub.mode === "live", "live mode");
      // another instance writes straight into the store, bypassing this hub
      await store.appendEvents("s1", [newEvent(typed("x3")), newEvent(typed("x4")), newEvent(typed("x5"))]);
      expect((await settled(p)).done).toBe(false); // not heard of yet
      hub.notify("s2", 5); // another session: no effect
      expect((await settled(p)).done).toBe(false);
      hub.notify("s1", 5);
      expect((await p).value).toMatchObject({ seq: 3, data: { delta: "x3" } });
      expect((await take(sub, 2)).map(text)).toEqual(["x4", "x5"]);

      // a notify for what was delivered already is a no-op
      const q = sub.next();
      hub.notify("s1", 5);
      hub.notify("s1", 4);
      expect((await settled(q)).done).toBe(false);
      await waitFor(() => sub.mode === "live", "live mode");
      void append(1);
      expect((await q).value?.seq).toBe(6);
    });

    it("many live subscribers: the new events are read once for all of them, delivered to each in order", async () => {
      let reads = 0;
      const counting = wrap(store, {
        readEvents: (sid, after, limit) => {
          reads++;
          return store.readEvents(sid, after, limit);
        },
      });
      const shared = new EventHub(counting, { now: () => clock });
      const subs = Array.from({ length: 5 }, () => shared.subscribe("s1"));
      const nexts = subs.map((s) => take(s, 3));
      await waitFor(() => subs.every((s) => s.mode === "live"), "live mode");
      const before = reads;
      // another instance writes straight into the store
      await store.appendEvents("s1", [newEvent(typed("y1")), newEvent(typed("y2")), newEvent(typed("y3"))]);
      shared.notify("s1", 2);
      shared.notify("s1", 3); // while the first read is in flight: folded into it or read next
      for (const got of await Promise.all(nexts)) expect(got.map(text)).toEqual(["y1", "y2", "y3"]);
      expect(reads - before).toBeLessThanOrEqual(2);
      expect(subs.every((s) => s.lastSeq === 3)).toBe(true);
      shared.closeAll();
    });

    it("a notify during a replay is not lost", async () => {
      await append(20);
      const sub = hub.subscribe("s1", { pageSize: 10 });
      expect(seqs(await take(sub, 12))).toEqual(range(1, 12));
      await store.appendEvents("s1", [newEvent(), newEvent()]); // seq 21, 22 from elsewhere
      hub.notify("s1", 22);
      expect(seqs(await take(sub, 10))).toEqual(range(13, 22));
      const p = sub.next();
      expect((await settled(p)).done).toBe(false);
      void append(1);
      expect((await p).value?.seq).toBe(23);
    });

    it("a published event after a gap (written elsewhere, not notified) makes the subscriber read the gap", async () => {
      await append(1);
      const sub = hub.subscribe("s1");
      expect(seqs(await take(sub, 1))).toEqual([1]);
      await store.appendEvents("s1", [newEvent(typed("elsewhere"))]); // seq 2
      void append(1); // seq 3, published here
      expect((await take(sub, 2)).map((e) => [e.seq, text(e)])).toEqual([
        [2, "elsewhere"],
        [3, "0"],
      ]);
    });

    // A notify that runs ahead of what this store can see (or whose events were deleted) must not make the
    // subscription re-read forever in a loop that never yields: the store gives up after 1000 reads (failing the
    // test) if it does.
    it("a notify ahead of the stored log does not spin: the subscriber waits for the events", async () => {
      let reads = 0;
      const bounded = wrap(store, {
        readEvents: async (sid: string, after: number, limit: number) => {
          if (++reads > 1000) throw new Error("readEvents called 1000 times: spinning");
          return store.readEvents(sid, after, limit);
        },
      });
      const h = new EventHub(bounded);
      await h.append("s1", delta());
      const sub = h.subscribe("s1");
      expect(seqs(await take(sub, 1))).toEqual([1]);
      const p = sub.next();
      h.notify("s1", 3); // announced, but not (yet) visible
      expect((await settled(p)).done).toBe(false);
      expect(reads).toBeLessThan(10);
      await store.appendEvents("s1", [newEvent(), newEvent()]);
      h.notify("s1", 3);
      expect((await p).value?.seq).toBe(2);
      expect(seqs(await take(sub, 1))).toEqual([3]);
      h.closeAll();
    });
  });

  describe("subscribing while appends are in flight", () => {
    it("every subscriber sees exactly seq afterSeq+1..N (stress)", async () => {
      const N = 600;
      const subs: Array<{ sub: Subscription; from: number; reader?: Promise<EventRecord[]> }> = [];
      const writes: Promise<Appended>[] = [];
      for (let i = 0; i < N; i++) {
        writes.push(hub.append("s1", delta(i)));
        if (i % 3 === 0) {
          const sub = hub.subscribe("s1", { pageSize: 1 + (i % 7), maxBuffered: 1 + (i % 5) * 10 });
          subs.push({ sub, from: 0 });
        }
        if (i % 17 === 0) {
          // from wherever the log is right now (maybe with writes in flight)
          const from = await store.lastEventSeq("s1");
          subs.push({ sub: hub.subscribe("s1", { afterSeq: from, pageSize: 3 }), from });
        }
        if (i % 5 === 0) {
          // some read as they go, the others only at the end
          const s = subs.at(-1)!;
          if (!s.reader) s.reader = take(s.sub, N - s.from);
        }
        switch (i % 4) {
          case 0:
            await Promise.resolve();
            break;
          case 1:
            await nextTurn();
            break;
          case 2:
            if (i % 8 === 2) await writes.at(-1);
            break;
          default:
        }
      }
      const stored = await Promise.all(writes);
      expect(stored.map((a) => a.event.seq)).toEqual(range(1, N));
      expect(subs.length).toBeGreaterThan(200);
      for (const s of subs) {
        const got = await (s.reader ?? take(s.sub, N - s.from));
        expect(seqs(got)).toEqual(range(s.from + 1, N));
      }
      // and nothing more: no duplicates arrive later
      const after = subs.map((s) => s.sub.next());
      expect((await settled(Promise.race(after))).done).toBe(false);
      void append(1);
      for (const p of after) expect((await p).value?.seq).toBe(N + 1);
    });
  });

  // A listener that throws must not make stored appends reject (nor leave a commit's writer stuck).
  it("a throwing write listener does not fail appends that were stored", async () => {
    hub.onWrite(() => {
      throw new Error("listener");
    });
    const sub = hub.subscribe("s1");
    const p = sub.next();
    const a = await hub.append("s1", delta());
    expect(a.event.seq).toBe(1);
    expect((await p).value?.seq).toBe(1);
    // A commit settles too, and the session's writer keeps going.
    const committed = await hub.commit("s1", async (_tx, log) => {
      log(delta());
      return "done";
    });
    expect(committed).toBe("done");
    expect((await hub.append("s1", delta())).event.seq).toBe(3);
  });
});
