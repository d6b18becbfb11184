import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../src/store/migrations.js";
import { SqliteStore } from "../src/store/sqlite.js";
import type {
  AgentRecord,
  EventRecord,
  ItemRecord,
  SessionRecord,
  Store,
  TurnRecord,
  Usage,
} from "../src/store/types.js";

const tmpRoot = mkdtempSync(join(tmpdir(), "store-test-"));
afterAll(() => rmSync(tmpRoot, { recursive: true, force: true }));
let fileCounter = 0;
const tmpFile = () => join(tmpRoot, `nested-${++fileCounter}`, "dir", "store.db");

const usage = (n = 0): Usage => ({
  input_tokens: n,
  cached_input_tokens: 0,
  output_tokens: n,
  reasoning_output_tokens: 0,
  total_tokens: 2 * n,
});

const agent = (id: string, created_at = 1000, over: Partial<AgentRecord> = {}): AgentRecord => ({
  id,
  created_at,
  updated_at: created_at,
  name: `agent ${id}`,
  model: "gpt-test",
  instructions: "be nice",
  tools: [{ type: "shell" }],
  metadata: { k: "v" },
  extra: { reasoning: { effort: "low" } },
  ...over,
});

const session = (id: string, created_at = 1000, over: Partial<SessionRecord> = {}): SessionRecord => ({
  id,
  created_at,
  updated_at: created_at,
  last_active_at: created_at,
  status: "idle",
  agent_id: null,
  name: null,
  model: "gpt-test",
  instructions: null,
  tools: [],
  metadata: {},
  thread_id: null,
  workspace: `/tmp/ws/${id}`,
  usage: usage(),
  error: null,
  active_turn_id: null,
  extra: {},
  ...over,
});

const turn = (
  session_id: string,
  id: string,
  created_at = 1000,
  over: Partial<TurnRecord> = {},
): TurnRecord => ({
  id,
  session_id,
  created_at,
  started_at: null,
  completed_at: null,
  status: "queued",
  input: [{ type: "text", text: `hello ${id}` }],
  error: null,
  usage: null,
  goal: null,
  ...over,
});

const item = (session_id: string, turn_id: string, id: string): Omit<ItemRecord, "ordinal"> => ({
  session_id,
  turn_id,
  id,
  type: "agent_message",
  created_at: 1000.5,
  data: { id, text: `item ${id}` },
});

const event = (
  session_id: string,
  type = "delta",
  turn_id: string | null = null,
): Omit<EventRecord, "seq"> => ({
  session_id,
  type,
  turn_id,
  created_at: 1000.123,
  data: { type, n: 1 },
});

const ids = <T extends { id: string }>(rows: T[]) => rows.map((r) => r.id);

function storeContract(name: string, makeStore: () => Store) {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    beforeEach(() => {
      store = makeStore();
    });
    afterEach(() => store.close());

    describe("agents", () => {
      it("inserts, gets, updates and deletes", () => {
        const a = agent("ag_1");
        store.insertAgent(a);
        expect(store.getAgent("ag_1")).toEqual(a);
        expect(store.getAgent("nope")).toBeUndefined();

        const updated = {
          ...a,
          name: null,
          updated_at: 2000,
          metadata: { x: "y" },
          tools: [],
          instructions: null,
        };
        store.updateAgent(updated);
        expect(store.getAgent("ag_1")).toEqual(updated);

        expect(store.deleteAgent("ag_1")).toBe(true);
        expect(store.deleteAgent("ag_1")).toBe(false);
        expect(store.getAgent("ag_1")).toBeUndefined();
      });

      it("rejects a duplicate id", () => {
        store.insertAgent(agent("ag_1"));
        expect(() => store.insertAgent(agent("ag_1"))).toThrow();
      });

      it("paginates newest first by default, stable on equal created_at", () => {
        // a1..a5 all at the same second, a6 later
        for (let i = 1; i <= 5; i++) store.insertAgent(agent(`a${i}`, 100));
        store.insertAgent(agent("a6", 200));

        const p1 = store.listAgents({ limit: 2 });
        expect(ids(p1.data)).toEqual(["a6", "a5"]);
        expect(p1.has_more).toBe(true);
        const p2 = store.listAgents({ limit: 2, after: "a5" });
        expect(ids(p2.data)).toEqual(["a4", "a3"]);
        expect(p2.has_more).toBe(true);
        const p3 = store.listAgents({ limit: 2, after: "a3" });
        expect(ids(p3.data)).toEqual(["a2", "a1"]);
        expect(p3.has_more).toBe(false);

        const asc = store.listAgents({ order: "asc", limit: 4 });
        expect(ids(asc.data)).toEqual(["a1", "a2", "a3", "a4"]);
        expect(asc.has_more).toBe(true);
        const asc2 = store.listAgents({ order: "asc", after: "a4" });
        expect(ids(asc2.data)).toEqual(["a5", "a6"]);
        expect(asc2.has_more).toBe(false);
      });

      it("defaults limit to 20 and clamps it to 1..1000", () => {
        for (let i = 0; i < 25; i++) store.insertAgent(agent(`a${String(i).padStart(2, "0")}`, i));
        expect(store.listAgents({}).data).toHaveLength(20);
        expect(store.listAgents({}).has_more).toBe(true);
        expect(store.listAgents({ limit: 0 }).data).toHaveLength(1);
        expect(store.listAgents({ limit: -5 }).data).toHaveLength(1);
        const all = store.listAgents({ limit: 100_000 });
        expect(all.data).toHaveLength(25);
        expect(all.has_more).toBe(false);
        expect(store.listAgents({ limit: 25 }).has_more).toBe(false);
        expect(store.listAgents({ limit: 24 }).has_more).toBe(true);
      });

      it("returns an empty page for an unknown cursor", () => {
        store.insertAgent(agent("a1"));
        expect(store.listAgents({ after: "nope" })).toEqual({ data: [], has_more: false });
      });

      it("lists nothing when empty", () => {
        expect(store.listAgents({})).toEqual({ data: [], has_more: false });
      });
    });

    describe("sessions", () => {
      it("inserts, gets, updates (full replace) and counts", () => {
        const s = session("s1", 10, { agent_id: "ag_1", metadata: { a: "1" }, name: "n", thread_id: null });
        store.insertSession(s);
        expect(store.getSession("s1")).toEqual(s);
        expect(store.getSession("nope")).toBeUndefined();
        expect(store.countSessions()).toBe(1);

        const updated: SessionRecord = {
          ...s,
          status: "failed",
          thread_id: "thr_1",
          usage: usage(7),
          error: "boom",
          active_turn_id: "t1",
          last_active_at: 99.5,
          extra: { text: { format: "json" } },
          tools: [{ type: "function", name: "f" }],
        };
        store.updateSession(updated);
        expect(store.getSession("s1")).toEqual(updated);

        store.insertSession(session("s2"));
        expect(store.countSessions()).toBe(2);
        expect(store.deleteSession("s2")).toBe(true);
        expect(store.deleteSession("s2")).toBe(false);
        expect(store.countSessions()).toBe(1);
      });

      it("paginates with after/limit/order", () => {
        for (let i = 1; i <= 7; i++) store.insertSession(session(`s${i}`, i < 4 ? 50 : 50 + i));
        const seen: string[] = [];
        let after: string | undefined;
        for (;;) {
          const page = store.listSessions({ limit: 3, after });
          seen.push(...ids(page.data));
          if (!page.has_more) break;
          after = page.data.at(-1)!.id;
        }
        expect(seen).toEqual(["s7", "s6", "s5", "s4", "s3", "s2", "s1"]);

        const asc = store.listSessions({ order: "asc", limit: 3, after: "s3" });
        expect(ids(asc.data)).toEqual(["s4", "s5", "s6"]);
        expect(asc.has_more).toBe(true);
        expect(store.listSessions({ after: "missing" })).toEqual({ data: [], has_more: false });
      });

      it("filters by agent_id and metadata (all keys must match)", () => {
        store.insertSession(session("s1", 1, { agent_id: "a", metadata: { env: "prod", team: "x" } }));
        store.insertSession(session("s2", 2, { agent_id: "a", metadata: { env: "dev", team: "x" } }));
        store.insertSession(session("s3", 3, { agent_id: "b", metadata: { env: "prod" } }));
        store.insertSession(session("s4", 4, { metadata: { 'we.ird "key"': "v'al" } }));

        expect(ids(store.listSessions({ agent_id: "a" }).data)).toEqual(["s2", "s1"]);
        expect(ids(store.listSessions({ agent_id: "zzz" }).data)).toEqual([]);
        expect(ids(store.listSessions({ metadata: { env: "prod" } }).data)).toEqual(["s3", "s1"]);
        expect(ids(store.listSessions({ metadata: { env: "prod", team: "x" } }).data)).toEqual(["s1"]);
        expect(
          ids(store.listSessions({ metadata: { team: "x" }, agent_id: "a", order: "asc" }).data),
        ).toEqual(["s1", "s2"]);
        expect(ids(store.listSessions({ metadata: { env: "nope" } }).data)).toEqual([]);
        expect(ids(store.listSessions({ metadata: { 'we.ird "key"': "v'al" } }).data)).toEqual(["s4"]);
        expect(ids(store.listSessions({ metadata: {} }).data)).toEqual(["s4", "s3", "s2", "s1"]);

        const p = store.listSessions({ agent_id: "a", limit: 1 });
        expect(ids(p.data)).toEqual(["s2"]);
        expect(p.has_more).toBe(true);
        const p2 = store.listSessions({ agent_id: "a", limit: 1, after: "s2" });
        expect(ids(p2.data)).toEqual(["s1"]);
        expect(p2.has_more).toBe(false);
      });

      it("lists idle sessions before a time (not in_progress), oldest first, limited", () => {
        store.insertSession(session("old_idle", 1, { last_active_at: 10 }));
        store.insertSession(session("old_busy", 1, { last_active_at: 5, status: "in_progress" }));
        store.insertSession(session("old_failed", 1, { last_active_at: 20, status: "failed" }));
        store.insertSession(session("old_action", 1, { last_active_at: 15, status: "requires_action" }));
        store.insertSession(session("recent", 1, { last_active_at: 100 }));

        expect(ids(store.listIdleSessionsBefore(50, 10))).toEqual(["old_idle", "old_action", "old_failed"]);
        expect(ids(store.listIdleSessionsBefore(50, 2))).toEqual(["old_idle", "old_action"]);
        expect(ids(store.listIdleSessionsBefore(10, 10))).toEqual([]);
      });

      it("lists busy sessions (in_progress or with an active turn)", () => {
        store.insertSession(session("idle"));
        store.insertSession(session("running", 1000, { status: "in_progress" }));
        store.insertSession(session("stale", 1000, { status: "idle", active_turn_id: "t9" }));
        expect(ids(store.listBusySessions()).sort()).toEqual(["running", "stale"]);
      });
    });

    describe("turns", () => {
      beforeEach(() => {
        store.insertSession(session("s1"));
        store.insertSession(session("s2"));
      });

      it("inserts, gets and updates", () => {
        const t = turn("s1", "t1", 5, { goal: { objective: "x" } });
        store.insertTurn(t);
        expect(store.getTurn("s1", "t1")).toEqual(t);
        expect(store.getTurn("s2", "t1")).toBeUndefined();
        expect(store.getTurn("s1", "nope")).toBeUndefined();

        const done: TurnRecord = {
          ...t,
          status: "failed",
          started_at: 6,
          completed_at: 7.25,
          error: { code: "engine_error", message: "boom" },
          usage: usage(3),
          goal: null,
        };
        store.updateTurn(done);
        expect(store.getTurn("s1", "t1")).toEqual(done);
      });

      it("requires an existing session", () => {
        expect(() => store.insertTurn(turn("nope", "t1"))).toThrow();
      });

      it("lists per session with pagination", () => {
        for (let i = 1; i <= 5; i++) store.insertTurn(turn("s1", `t${i}`, 100));
        store.insertTurn(turn("s2", "other", 100));

        const p1 = store.listTurns("s1", { limit: 2 });
        expect(ids(p1.data)).toEqual(["t5", "t4"]);
        expect(p1.has_more).toBe(true);
        const p2 = store.listTurns("s1", { limit: 2, after: "t4" });
        expect(ids(p2.data)).toEqual(["t3", "t2"]);
        const p3 = store.listTurns("s1", { limit: 2, after: "t2" });
        expect(ids(p3.data)).toEqual(["t1"]);
        expect(p3.has_more).toBe(false);

        expect(ids(store.listTurns("s1", { order: "asc" }).data)).toEqual(["t1", "t2", "t3", "t4", "t5"]);
        expect(ids(store.listTurns("s2", {}).data)).toEqual(["other"]);
        // a cursor from another session is unknown here
        expect(store.listTurns("s2", { after: "t1" })).toEqual({ data: [], has_more: false });
      });
    });

    describe("items", () => {
      beforeEach(() => {
        store.insertSession(session("s1"));
        store.insertSession(session("s2"));
      });

      it("assigns ordinals 0, 1, 2… per session", () => {
        const a = store.appendItem(item("s1", "t1", "i_a"));
        const b = store.appendItem(item("s1", "t1", "i_b"));
        const x = store.appendItem(item("s2", "tx", "i_x"));
        const c = store.appendItem(item("s1", "t2", "i_c"));
        expect([a.ordinal, b.ordinal, c.ordinal]).toEqual([0, 1, 2]);
        expect(x.ordinal).toBe(0);
        expect(a).toEqual({ ...item("s1", "t1", "i_a"), ordinal: 0 });
        expect(store.countItems("s1")).toBe(3);
        expect(store.countItems("s2")).toBe(1);
        expect(store.countItems("nope")).toBe(0);
      });

      it("lists ascending by ordinal by default, filters by turn, paginates", () => {
        for (let i = 0; i < 6; i++) store.appendItem(item("s1", i < 3 ? "t1" : "t2", `i${i}`));
        const all = store.listItems("s1", {});
        expect(ids(all.data)).toEqual(["i0", "i1", "i2", "i3", "i4", "i5"]);
        expect(all.data.map((i) => i.ordinal)).toEqual([0, 1, 2, 3, 4, 5]);
        expect(all.data[0]).toEqual({ ...item("s1", "t1", "i0"), ordinal: 0 });

        const p1 = store.listItems("s1", { limit: 4 });
        expect(ids(p1.data)).toEqual(["i0", "i1", "i2", "i3"]);
        expect(p1.has_more).toBe(true);
        const p2 = store.listItems("s1", { limit: 4, after: "i3" });
        expect(ids(p2.data)).toEqual(["i4", "i5"]);
        expect(p2.has_more).toBe(false);

        expect(ids(store.listItems("s1", { order: "desc", limit: 2 }).data)).toEqual(["i5", "i4"]);
        expect(ids(store.listItems("s1", { order: "desc", after: "i4" }).data)).toEqual([
          "i3",
          "i2",
          "i1",
          "i0",
        ]);

        expect(ids(store.listItems("s1", { turn_id: "t2" }).data)).toEqual(["i3", "i4", "i5"]);
        const t1 = store.listItems("s1", { turn_id: "t1", limit: 1, after: "i0" });
        expect(ids(t1.data)).toEqual(["i1"]);
        expect(t1.has_more).toBe(true);
        expect(store.listItems("s1", { after: "nope" })).toEqual({ data: [], has_more: false });
        expect(store.listItems("s2", {})).toEqual({ data: [], has_more: false });
      });
    });

    describe("event log", () => {
      beforeEach(() => {
        store.insertSession(session("s1"));
        store.insertSession(session("s2"));
      });

      it("assigns seq 1, 2, 3… per session, independent across sessions", () => {
        expect(store.lastEventSeq("s1")).toBe(0);
        const e1 = store.appendEvent(event("s1", "turn.started", "t1"));
        expect(e1).toEqual({ ...event("s1", "turn.started", "t1"), seq: 1 });
        expect(store.appendEvent(event("s1")).seq).toBe(2);
        expect(store.appendEvent(event("s2")).seq).toBe(1);
        expect(store.appendEvent(event("s1")).seq).toBe(3);
        expect(store.appendEvent(event("s2")).seq).toBe(2);
        expect(store.lastEventSeq("s1")).toBe(3);
        expect(store.lastEventSeq("s2")).toBe(2);
        expect(store.lastEventSeq("nope")).toBe(0);
      });

      it("stores a missing turn_id as null", () => {
        const { turn_id: _omit, ...noTurn } = event("s1");
        const e = store.appendEvent(noTurn as Omit<EventRecord, "seq">);
        expect(e.turn_id).toBeNull();
        expect(store.readEvents("s1", 0, 10)[0]!.turn_id).toBeNull();
      });

      it("reads events after a seq, ascending, limited", () => {
        for (let i = 0; i < 10; i++) store.appendEvent({ ...event("s1"), data: { i } });
        store.appendEvent(event("s2"));
        const page = store.readEvents("s1", 3, 4);
        expect(page.map((e) => e.seq)).toEqual([4, 5, 6, 7]);
        expect(page.map((e) => e.data.i)).toEqual([3, 4, 5, 6]);
        expect(store.readEvents("s1", 8, 100).map((e) => e.seq)).toEqual([9, 10]);
        expect(store.readEvents("s1", 10, 100)).toEqual([]);
        expect(store.readEvents("s1", 0, 0)).toEqual([]);
        expect(store.readEvents("s2", 0, 100)).toEqual([{ ...event("s2"), seq: 1 }]);
      });

      it("finds the first event seq of a turn", () => {
        store.appendEvent(event("s1", "session.updated"));
        store.appendEvent(event("s1", "turn.started", "t1"));
        store.appendEvent(event("s1", "delta", "t1"));
        store.appendEvent(event("s1", "turn.started", "t2"));
        store.appendEvent(event("s1", "delta", "t1"));
        expect(store.firstEventSeqOfTurn("s1", "t1")).toBe(2);
        expect(store.firstEventSeqOfTurn("s1", "t2")).toBe(4);
        expect(store.firstEventSeqOfTurn("s1", "t3")).toBeUndefined();
        expect(store.firstEventSeqOfTurn("s2", "t1")).toBeUndefined();
      });

      it("requires an existing session and does not burn a seq on failure", () => {
        expect(() => store.appendEvent(event("nope"))).toThrow();
        expect(store.lastEventSeq("nope")).toBe(0);
        store.insertSession(session("nope"));
        expect(store.appendEvent(event("nope")).seq).toBe(1);
      });

      it("keeps seq and ordinals consistent when a transaction rolls back", () => {
        store.appendEvent(event("s1"));
        store.appendItem(item("s1", "t1", "i0"));
        expect(() =>
          store.transaction(() => {
            store.appendEvent(event("s1"));
            store.appendEvent(event("s1"));
            store.appendItem(item("s1", "t1", "i1"));
            throw new Error("rollback");
          }),
        ).toThrow("rollback");
        expect(store.lastEventSeq("s1")).toBe(1);
        expect(store.appendEvent(event("s1")).seq).toBe(2);
        expect(store.appendItem(item("s1", "t1", "i1")).ordinal).toBe(1);
      });
    });

    describe("goals", () => {
      it("puts (upsert), gets, lists and deletes", () => {
        store.insertSession(session("s1"));
        store.insertSession(session("s2"));
        expect(store.getGoal("s1")).toBeUndefined();
        store.putGoal({ session_id: "s1", data: { objective: "a" }, updated_at: 1 });
        store.putGoal({ session_id: "s2", data: { objective: "b" }, updated_at: 2 });
        store.putGoal({ session_id: "s1", data: { objective: "a2", tokens: 5 }, updated_at: 3 });
        expect(store.getGoal("s1")).toEqual({
          session_id: "s1",
          data: { objective: "a2", tokens: 5 },
          updated_at: 3,
        });
        expect(store.listGoals().map((g) => g.session_id)).toEqual(["s2", "s1"]);
        expect(store.deleteGoal("s1")).toBe(true);
        expect(store.deleteGoal("s1")).toBe(false);
        expect(store.getGoal("s1")).toBeUndefined();
        expect(store.listGoals()).toHaveLength(1);
      });
    });

    describe("idempotency", () => {
      it("round-trips and replaces", () => {
        expect(store.getIdempotency("scope", "k")).toBeUndefined();
        const r = {
          scope: "scope",
          key: "k",
          body_hash: "h1",
          status: 201,
          response: { id: "x", n: [1] },
          created_at: 5,
        };
        store.putIdempotency(r);
        expect(store.getIdempotency("scope", "k")).toEqual(r);
        expect(store.getIdempotency("other", "k")).toBeUndefined();
        const r2 = { ...r, body_hash: "h2", status: 409, response: null };
        store.putIdempotency(r2);
        expect(store.getIdempotency("scope", "k")).toEqual(r2);
        store.putIdempotency({ ...r, key: "k2", response: "text" });
        expect(store.getIdempotency("scope", "k2")?.response).toBe("text");
      });
    });

    describe("delete cascade", () => {
      it("deleting a session removes its turns, items, events, goal and idempotency rows only", () => {
        for (const sid of ["s1", "s2"]) {
          store.insertSession(session(sid));
          store.insertTurn(turn(sid, "t1"));
          store.appendItem(item(sid, "t1", "i1"));
          store.appendEvent(event(sid));
          store.appendEvent(event(sid));
          store.putGoal({ session_id: sid, data: {}, updated_at: 1 });
          store.putIdempotency({
            scope: sid,
            key: "k",
            body_hash: "h",
            status: 200,
            response: {},
            created_at: 1,
          });
        }
        store.putIdempotency({
          scope: "global",
          key: "k",
          body_hash: "h",
          status: 200,
          response: {},
          created_at: 1,
        });

        expect(store.deleteSession("s1")).toBe(true);
        expect(store.getSession("s1")).toBeUndefined();
        expect(store.getTurn("s1", "t1")).toBeUndefined();
        expect(store.listTurns("s1", {}).data).toEqual([]);
        expect(store.countItems("s1")).toBe(0);
        expect(store.readEvents("s1", 0, 100)).toEqual([]);
        expect(store.lastEventSeq("s1")).toBe(0);
        expect(store.getGoal("s1")).toBeUndefined();
        expect(store.getIdempotency("s1", "k")).toBeUndefined();

        // the other session and unrelated rows are untouched
        expect(store.getSession("s2")).toBeDefined();
        expect(store.getTurn("s2", "t1")).toBeDefined();
        expect(store.countItems("s2")).toBe(1);
        expect(store.lastEventSeq("s2")).toBe(2);
        expect(store.getGoal("s2")).toBeDefined();
        expect(store.getIdempotency("s2", "k")).toBeDefined();
        expect(store.getIdempotency("global", "k")).toBeDefined();
      });

      it("a re-created session starts over at seq 1 and ordinal 0", () => {
        store.insertSession(session("s1"));
        store.appendEvent(event("s1"));
        store.appendEvent(event("s1"));
        store.appendItem(item("s1", "t", "i"));
        store.deleteSession("s1");
        store.insertSession(session("s1"));
        expect(store.lastEventSeq("s1")).toBe(0);
        expect(store.appendEvent(event("s1")).seq).toBe(1);
        expect(store.appendItem(item("s1", "t", "i")).ordinal).toBe(0);
      });
    });

    describe("transaction", () => {
      it("commits on success and returns the value", () => {
        const v = store.transaction(() => {
          store.insertAgent(agent("a1"));
          store.insertAgent(agent("a2"));
          return 42;
        });
        expect(v).toBe(42);
        expect(store.listAgents({}).data).toHaveLength(2);
      });

      it("rolls everything back on error", () => {
        expect(() =>
          store.transaction(() => {
            store.insertAgent(agent("a1"));
            store.insertAgent(agent("a1"));
          }),
        ).toThrow();
        expect(store.getAgent("a1")).toBeUndefined();
      });
    });
  });
}

storeContract("sqlite :memory:", () => SqliteStore.open(":memory:"));
storeContract("sqlite file", () => SqliteStore.open(tmpFile()));
storeContract("sqlite file, groupCommit off", () => SqliteStore.open(tmpFile(), { groupCommit: false }));

describe("SqliteStore file persistence", () => {
  it("keeps data across close and reopen; seq and ordinals continue", () => {
    const file = tmpFile();
    const a = SqliteStore.open(file);
    a.insertAgent(agent("ag"));
    a.insertSession(session("s1", 5, { metadata: { k: "v" } }));
    a.insertTurn(turn("s1", "t1"));
    for (let i = 0; i < 3; i++) a.appendEvent(event("s1", "delta", "t1"));
    a.appendItem(item("s1", "t1", "i0"));
    a.putGoal({ session_id: "s1", data: { g: 1 }, updated_at: 1 });
    a.putIdempotency({
      scope: "s1",
      key: "k",
      body_hash: "h",
      status: 200,
      response: { ok: true },
      created_at: 1,
    });
    a.close();
    a.close(); // idempotent

    const b = SqliteStore.open(file);
    expect(b.getAgent("ag")).toEqual(agent("ag"));
    expect(b.getSession("s1")).toEqual(session("s1", 5, { metadata: { k: "v" } }));
    expect(b.getTurn("s1", "t1")).toEqual(turn("s1", "t1"));
    expect(b.lastEventSeq("s1")).toBe(3);
    expect(b.appendEvent(event("s1")).seq).toBe(4);
    expect(b.appendItem(item("s1", "t1", "i1")).ordinal).toBe(1);
    expect(b.getGoal("s1")?.data).toEqual({ g: 1 });
    expect(b.getIdempotency("s1", "k")?.response).toEqual({ ok: true });
    expect(b.readEvents("s1", 0, 100).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    b.close();
  });

  it("migrates once: user_version is set and reopening is a no-op", () => {
    const file = tmpFile();
    SqliteStore.open(file).close();
    const db = new Database(file);
    expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    const tables = db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .pluck()
      .all();
    expect(tables).toEqual(["agents", "events", "goals", "idempotency", "items", "sessions", "turns"]);
    db.close();

    const s = SqliteStore.open(file); // would throw "table already exists" if migrations re-ran
    s.insertSession(session("s1"));
    s.close();
    const again = SqliteStore.open(file);
    expect(again.countSessions()).toBe(1);
    again.close();
  });

  it("refuses a database from a newer schema version", () => {
    const file = tmpFile();
    SqliteStore.open(file).close();
    const db = new Database(file);
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    expect(() => SqliteStore.open(file)).toThrow(/newer/);
  });

  it("uses the primary key for readEvents and the indexes for list queries", () => {
    const file = tmpFile();
    SqliteStore.open(file).close();
    const db = new Database(file);
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[])
        .map((r) => r.detail)
        .join(" | ");
    expect(plan("SELECT * FROM events WHERE session_id = 'a' AND seq > 5 ORDER BY seq LIMIT 10")).toMatch(
      /USING (PRIMARY KEY|INDEX sqlite_autoindex_events_1)/,
    );
    expect(plan("SELECT * FROM events WHERE session_id = 'a' AND seq > 5 ORDER BY seq LIMIT 10")).not.toMatch(
      /TEMP B-TREE/,
    );
    expect(
      plan(
        "SELECT * FROM sessions WHERE (created_at, rid) < (1, 2) ORDER BY created_at DESC, rid DESC LIMIT 3",
      ),
    ).toMatch(/USING INDEX sessions_created/);
    expect(
      plan(
        "SELECT * FROM sessions WHERE agent_id = 'x' AND (created_at, rid) < (1, 2) ORDER BY created_at DESC, rid DESC",
      ),
    ).toMatch(/USING INDEX sessions_agent/);
    expect(plan("SELECT * FROM turns WHERE session_id = 's' ORDER BY created_at DESC, rid DESC")).not.toMatch(
      /TEMP B-TREE/,
    );
    expect(plan("SELECT * FROM items WHERE session_id = 's' AND turn_id = 't' ORDER BY ordinal")).toMatch(
      /USING INDEX items_turn/,
    );
    db.close();
  });
});

describe("SqliteStore group commit", () => {
  const otherConnectionCount = (file: string) => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare("SELECT count(*) FROM events").pluck().get() as number;
    } finally {
      db.close();
    }
  };
  const nextTurn = () => new Promise<void>((r) => setImmediate(r));

  it("writes are readable at once through the store and committed by the end of the event-loop turn", async () => {
    const file = tmpFile();
    const s = SqliteStore.open(file);
    s.insertSession(session("s1"));
    for (let i = 0; i < 5; i++) s.appendEvent(event("s1"));
    expect(s.readEvents("s1", 0, 100)).toHaveLength(5); // same connection: visible immediately
    expect(otherConnectionCount(file)).toBe(0); // not committed yet
    await nextTurn();
    await nextTurn();
    expect(otherConnectionCount(file)).toBe(5);
    s.close();
  });

  it("commits early after maxBatch writes, and on flush()", () => {
    const file = tmpFile();
    const s = SqliteStore.open(file, { maxBatch: 10 });
    s.insertSession(session("s1")); // write 1
    for (let i = 0; i < 24; i++) s.appendEvent(event("s1")); // writes 2..25: commits after writes 10 and 20
    expect(otherConnectionCount(file)).toBe(19);
    s.flush();
    expect(otherConnectionCount(file)).toBe(24);
    s.close();
  });

  it("a transaction() inside a batch is a savepoint: its rollback keeps the batch", async () => {
    const file = tmpFile();
    const s = SqliteStore.open(file);
    s.insertSession(session("s1"));
    s.appendEvent(event("s1"));
    expect(() =>
      s.transaction(() => {
        s.appendEvent(event("s1"));
        s.flush(); // ignored inside a transaction
        throw new Error("no");
      }),
    ).toThrow("no");
    s.transaction(() => s.appendEvent(event("s1")));
    s.flush();
    expect(otherConnectionCount(file)).toBe(2);
    expect(s.readEvents("s1", 0, 10).map((e) => e.seq)).toEqual([1, 2]);
    s.close();
  });

  it("groupCommit: false commits every write on its own", () => {
    const file = tmpFile();
    const s = SqliteStore.open(file, { groupCommit: false });
    s.insertSession(session("s1"));
    s.appendEvent(event("s1"));
    expect(otherConnectionCount(file)).toBe(1);
    expect(() =>
      s.transaction(() => {
        s.appendEvent(event("s1"));
        throw new Error("no");
      }),
    ).toThrow("no");
    expect(s.appendEvent(event("s1")).seq).toBe(2);
    expect(otherConnectionCount(file)).toBe(2);
    s.close();
  });
});
