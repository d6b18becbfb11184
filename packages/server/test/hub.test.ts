import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/store/sqlite.js";
import type { EventRecord, SessionRecord, Store } from "../src/store/types.js";
import { EventHub, type Subscription } from "../src/stream/hub.js";

const session = (id: string): SessionRecord => ({
  id,
  created_at: 1,
  updated_at: 1,
  last_active_at: 1,
  status: "idle",
  agent_id: null,
  name: null,
  model: "m",
  instructions: null,
  tools: [],
  metadata: {},
  thread_id: null,
  workspace: `/tmp/${id}`,
  usage: {
    input_tokens: 0,
    cached_input_tokens: 0,
    output_tokens: 0,
    reasoning_output_tokens: 0,
    total_tokens: 0,
  },
  error: null,
  active_turn_id: null,
  extra: {},
});

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

/** Resolves once `p` has settled, or reports that it is still pending after the microtask queue drained. */
async function settled<T>(p: Promise<T>): Promise<{ done: true; value: T } | { done: false }> {
  const pending = Symbol("pending");
  // setImmediate runs after every queued microtask (promise reaction), so a resolvable promise has resolved by then.
  const tick = new Promise<typeof pending>((r) => setImmediate(() => r(pending)));
  const v = await Promise.race([p, tick]);
  return v === pending ? { done: false } : { done: true, value: v as T };
}

const seqs = (es: EventRecord[]) => es.map((e) => e.seq);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("EventHub", () => {
  let store: Store;
  let hub: EventHub;
  let clock: number;

  beforeEach(() => {
    store = SqliteStore.open(":memory:");
    store.insertSession(session("s1"));
    store.insertSession(session("s2"));
    clock = 1000;
    hub = new EventHub(store, { now: () => clock });
  });
  afterEach(() => {
    hub.closeAll();
    store.close();
  });

  const append = (n: number, sid = "s1", type = "delta") => {
    const out: EventRecord[] = [];
    for (let i = 0; i < n; i++) out.push(hub.append({ session_id: sid, type, data: { i } }));
    return out;
  };

  it("append persists, assigns seq and uses the clock", () => {
    clock = 1234.567;
    const e = hub.append({ session_id: "s1", type: "turn.started", turn_id: "t1", data: { a: 1 } });
    expect(e).toEqual({
      session_id: "s1",
      seq: 1,
      type: "turn.started",
      turn_id: "t1",
      created_at: 1234.567,
      data: { a: 1 },
    });
    expect(hub.append({ session_id: "s1", type: "x", data: {} }).turn_id).toBeNull();
    expect(store.readEvents("s1", 0, 10)).toEqual([e, { ...e, seq: 2, type: "x", turn_id: null, data: {} }]);
  });

  it("a failed append (unknown session) publishes nothing", async () => {
    const sub = hub.subscribe("nope");
    const next = sub.next();
    expect(() => hub.append({ session_id: "nope", type: "x", data: {} })).toThrow();
    expect((await settled(next)).done).toBe(false);
    sub.close();
    expect(await next).toEqual({ done: true, value: undefined });
  });

  it("events are persisted before any subscriber sees them", async () => {
    const sub = hub.subscribe("s1");
    const seenInStore: boolean[] = [];
    const consumer = (async () => {
      for await (const e of sub) {
        // read the store the moment the event is received
        const stored = store.readEvents("s1", e.seq - 1, 1)[0];
        seenInStore.push(stored?.seq === e.seq && stored.type === e.type);
        if (e.seq === 50) break;
      }
    })();
    for (let i = 0; i < 50; i++) {
      hub.append({ session_id: "s1", type: `t${i}`, data: {} });
      // let the consumer run between appends, so it is woken by live publication, not by replay
      await Promise.resolve();
    }
    await consumer;
    expect(seenInStore).toHaveLength(50);
    expect(seenInStore.every(Boolean)).toBe(true);
  });

  it("a store that fails on append never reaches subscribers", async () => {
    const failing: Store = Object.create(store) as Store;
    failing.appendEvent = () => {
      throw new Error("disk full");
    };
    const h = new EventHub(failing);
    const sub = h.subscribe("s1");
    const next = sub.next(); // replay of an empty log, then waits live
    expect(() => h.append({ session_id: "s1", type: "x", data: {} })).toThrow("disk full");
    expect((await settled(next)).done).toBe(false);
    h.closeAll();
    expect((await next).done).toBe(true);
  });

  it("many subscribers each receive every event, in order", async () => {
    const subs = Array.from({ length: 5 }, () => hub.subscribe("s1"));
    const other = hub.subscribe("s2");
    expect(hub.subscriberCount("s1")).toBe(5);
    expect(hub.subscriberCount("s2")).toBe(1);
    expect(hub.subscriberCount()).toBe(6);
    const readers = subs.map((s) => take(s, 300));
    for (let i = 0; i < 300; i++) {
      append(1);
      if (i % 7 === 0) await Promise.resolve();
    }
    append(2, "s2");
    const results = await Promise.all(readers);
    for (const r of results) expect(seqs(r)).toEqual(range(1, 300));
    expect(seqs(await take(other, 2))).toEqual([1, 2]);
    expect((await take(other, 0)).length).toBe(0);
  });

  it("replays stored events (paged) then tails live", async () => {
    append(25);
    const sub = hub.subscribe("s1", { pageSize: 10 });
    expect(sub.mode).toBe("replay");
    expect(seqs(await take(sub, 25))).toEqual(range(1, 25));
    const pending = sub.next();
    expect(sub.mode).toBe("live");
    append(1);
    expect((await pending).value?.seq).toBe(26);
    append(3);
    expect(seqs(await take(sub, 3))).toEqual([27, 28, 29]);
    expect(sub.lastSeq).toBe(29);
  });

  it("starts after afterSeq", async () => {
    append(10);
    const sub = hub.subscribe("s1", { afterSeq: 7, pageSize: 2 });
    expect(sub.lastSeq).toBe(7);
    expect(seqs(await take(sub, 3))).toEqual([8, 9, 10]);
    append(1);
    expect(seqs(await take(sub, 1))).toEqual([11]);
  });

  it("afterSeq beyond the end waits for that seq without duplicates", async () => {
    append(3);
    const sub = hub.subscribe("s1", { afterSeq: 5 });
    const p = sub.next();
    append(2); // seq 4, 5: before the cursor
    expect((await settled(p)).done).toBe(false);
    append(1); // seq 6
    expect((await p).value?.seq).toBe(6);
  });

  for (const [label, perRead] of [
    ["one append per read", 1],
    ["one append every other read", 0.5],
    ["three appends per read", 3],
  ] as const) {
    it(`hands off from replay to live without gaps or duplicates (${label} during the replay)`, async () => {
      append(35);
      const sub = hub.subscribe("s1", { pageSize: 10 });
      const got: number[] = [];
      let appended = 35;
      let credit = 0;
      // Append between next() calls: inside pages, at page boundaries, and across the switch to live.
      while (got.length < 150) {
        const next = sub.next();
        if (got.length === appended) {
          // caught up: the pending next() must be woken by live publication
          expect(sub.mode).toBe("live");
          append(1);
          appended++;
        }
        const r = await next;
        if (r.done) throw new Error("ended");
        got.push(r.value.seq);
        credit += perRead;
        while (credit >= 1 && appended < 150) {
          append(1);
          appended++;
          credit--;
        }
      }
      expect(got).toEqual(range(1, 150));
      expect(sub.lastSeq).toBe(150);
      const p = sub.next();
      expect(sub.mode).toBe("live");
      append(1);
      expect((await p).value?.seq).toBe(151);
    });
  }

  it("a pending next() during the switch to live is resolved by the next append", async () => {
    append(10);
    const sub = hub.subscribe("s1", { pageSize: 10 });
    // exactly one full page: the hub cannot know it is caught up until the following (empty) read
    expect(seqs(await take(sub, 10))).toEqual(range(1, 10));
    expect(sub.mode).toBe("replay");
    const [a, b] = [sub.next(), sub.next()]; // concurrent next() calls keep their order
    expect(sub.mode).toBe("live");
    append(2);
    expect([(await a).value?.seq, (await b).value?.seq]).toEqual([11, 12]);
  });

  it("bounds memory for a subscriber that does not read, then recovers every event from the store", async () => {
    const sub = hub.subscribe("s1", { maxBuffered: 100, pageSize: 250 });
    const fast = hub.subscribe("s1", { maxBuffered: 100 });
    // get both into live mode
    append(1);
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
    for (let i = 0; i < 10_000; i++) {
      append(1);
      maxSeen = Math.max(maxSeen, sub.buffered);
      if (i % 50 === 0) await new Promise((r) => setImmediate(r)); // let the fast reader keep up
    }
    expect(maxSeen).toBe(100);
    expect(sub.buffered).toBe(100);
    expect(sub.mode).toBe("replay"); // overflowed: the rest stays in the store

    // resumes: gets every event in order (the overflow re-read from the store), then continues live
    const got = await take(sub, 10_000);
    expect(seqs(got)).toEqual(range(2, 10_001));
    expect(sub.buffered).toBeLessThanOrEqual(250);
    const p = sub.next();
    expect(sub.mode).toBe("live");
    append(1);
    expect((await p).value?.seq).toBe(10_002);

    await fastReader;
    expect(fastGot).toEqual(range(1, 10_001));
  });

  it("keeps the buffer bounded while replaying a long log that grows", async () => {
    append(5000);
    const sub = hub.subscribe("s1", { maxBuffered: 10, pageSize: 100 });
    let max = 0;
    for (let i = 0; i < 5000; i++) {
      const r = await sub.next();
      expect(r.value?.seq).toBe(i + 1);
      max = Math.max(max, sub.buffered);
      if (i % 10 === 0) append(1);
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
    append(1); // no one to publish to; no error
    sub.close(); // idempotent
  });

  it("breaking out of for await (return()) unregisters the subscriber", async () => {
    append(5);
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
    const sub = hub.subscribe("s1", { until: (e) => e.type === "turn.completed" });
    const got: string[] = [];
    const consumer = (async () => {
      for await (const e of sub) got.push(e.type);
    })();
    hub.append({ session_id: "s1", type: "turn.started", data: {} });
    hub.append({ session_id: "s1", type: "delta", data: {} });
    hub.append({ session_id: "s1", type: "turn.completed", data: {} });
    hub.append({ session_id: "s1", type: "after", data: {} });
    await consumer;
    expect(got).toEqual(["turn.started", "delta", "turn.completed"]);
    expect(hub.subscriberCount("s1")).toBe(0);
  });

  it("until also applies to replayed events", async () => {
    append(3, "s1", "a");
    append(1, "s1", "stop");
    append(3, "s1", "b");
    const sub = hub.subscribe("s1", { pageSize: 2, until: (e) => e.type === "stop" });
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
    expect(() => append(2)).not.toThrow();
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
    append(1, "s2");
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
    append(50);
    const sub = hub.subscribe("s1", { pageSize: 10 });
    await take(sub, 5);
    expect(sub.buffered).toBe(5);
    hub.closeSession("s1");
    expect(sub.buffered).toBe(0);
    expect((await sub.next()).done).toBe(true);
  });

  it("a subscriber of a deleted-then-closed session ends; new appends after re-creation start at 1", async () => {
    append(3);
    const sub = hub.subscribe("s1");
    await take(sub, 3);
    store.deleteSession("s1");
    hub.closeSession("s1");
    expect((await sub.next()).done).toBe(true);
    store.insertSession(session("s1"));
    expect(append(1)[0]!.seq).toBe(1);
  });
});
