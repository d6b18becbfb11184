import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { MIGRATIONS, SqliteStore } from "../../src/store/sqlite/index.js";
import type { NewEvent } from "../../src/store/types.js";
import {
  agent,
  apiKey,
  delta,
  goal,
  idem,
  ids,
  newEvent,
  P1,
  session,
  startItem,
  storeContract,
  threadItem,
  turn,
} from "./contract.js";

const tmpRoot = mkdtempSync(join(tmpdir(), "store-test-"));
afterAll(() => rmSync(tmpRoot, { recursive: true, force: true }));
let fileCounter = 0;
const tmpFile = () => join(tmpRoot, `nested-${++fileCounter}`, "dir", "store.db");

storeContract("sqlite :memory:", async () => SqliteStore.open(":memory:"));
storeContract("sqlite file", async () => SqliteStore.open(tmpFile()));

/** Resolves with whether `p` settled before the event loop's next macrotask (a pending write stays pending). */
async function settledSoon(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  p.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await new Promise<void>((r) => setImmediate(r));
  return settled;
}

/**
 * SQLite has one writer: while a transaction is open, other writes queue behind it and transactions run one after
 * another, in call order (PostgreSQL runs them side by side; the contract checks what both guarantee).
 */
function sqliteWriteOrder(name: string, open: () => SqliteStore): void {
  describe(`SqliteStore write order: ${name}`, () => {
    let store: SqliteStore;
    beforeEach(() => {
      store = open();
    });
    afterEach(async () => {
      await store.close();
    });

    for (const outcome of ["commits", "rolls back"] as const) {
      it(`a write issued outside while a transaction spans awaits lands after it (the transaction ${outcome})`, async () => {
        let release!: () => void;
        const gate = new Promise<void>((r) => {
          release = r;
        });
        let entered!: () => void;
        const inside = new Promise<void>((r) => {
          entered = r;
        });
        const order: string[] = [];
        const tx = store.transaction(async (q) => {
          await q.insertAgent(agent("in_tx", 100));
          entered();
          await gate;
          // the outside write has been issued, and is not part of this transaction
          expect(await q.getAgent("outside")).toBeUndefined();
          if (outcome === "rolls back") throw new Error("rollback");
          return "ok";
        });
        const txDone = tx.then(
          () => order.push("tx"),
          () => order.push("tx"),
        );
        await inside;
        const outside = store.insertAgent(agent("outside", 100)).then(() => order.push("outside"));
        expect(await settledSoon(outside)).toBe(false); // waits for the transaction
        release();
        if (outcome === "rolls back") await expect(tx).rejects.toThrow("rollback");
        else expect(await tx).toBe("ok");
        await Promise.all([txDone, outside]);
        expect(order).toEqual(["tx", "outside"]);

        expect(await store.getAgent("outside")).toEqual(agent("outside", 100));
        const listed = ids((await store.listAgents({ project_id: P1, order: "asc" })).data);
        expect(listed).toEqual(outcome === "commits" ? ["in_tx", "outside"] : ["outside"]);
      });
    }

    it("transactions run one after another", async () => {
      await store.insertSession(session("s1"));
      const run = (n: number) =>
        store.transaction(async (tx) => {
          const last = await tx.lastEventSeq("s1");
          await new Promise<void>((r) => setImmediate(r));
          const [a] = await tx.appendEvents("s1", [newEvent(delta(n))]);
          expect(a!.event.seq).toBe(last + 1);
          return a!.event.seq;
        });
      const got = await Promise.all([run(1), run(2), run(3), run(4)]);
      expect(got).toEqual([1, 2, 3, 4]);
      expect((await store.readEvents("s1", 0, 1000)).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    });
  });
}

sqliteWriteOrder("sqlite :memory:", () => SqliteStore.open(":memory:"));
sqliteWriteOrder("sqlite file", () => SqliteStore.open(tmpFile()));

describe("SqliteStore file persistence", () => {
  it("keeps data across close and reopen; seq and ordinals continue", async () => {
    const file = tmpFile();
    const a = SqliteStore.open(file);
    await a.insertAgent(agent("ag"));
    await a.insertSession(session("s1", 5, { metadata: { k: "v" } }));
    await a.insertTurn(turn("s1", "t1"));
    await a.appendEvents("s1", [newEvent(), newEvent(), startItem("t1", threadItem("i0"))]);
    await a.putGoal(goal("s1"));
    await a.putIdempotency(idem("s1", "k"));
    await a.insertKey(apiKey("k1"));
    await a.close();
    await a.close(); // idempotent

    const b = SqliteStore.open(file);
    expect(await b.getAgent("ag")).toEqual(agent("ag"));
    expect(await b.getSession("s1")).toEqual(session("s1", 5, { metadata: { k: "v" } }));
    expect(await b.getTurn("s1", "t1")).toEqual(turn("s1", "t1"));
    expect(await b.lastEventSeq("s1")).toBe(3);
    const [e, i] = await b.appendEvents("s1", [newEvent(), startItem("t1", threadItem("i1"))]);
    expect(e!.event.seq).toBe(4);
    expect(i!.ordinal).toBe(1);
    expect(await b.getGoal("s1")).toEqual(goal("s1"));
    expect((await b.getIdempotency("s1", "k"))?.response).toEqual({ ok: true });
    expect(await b.getKey("k1")).toEqual(apiKey("k1"));
    expect((await b.readEvents("s1", 0, 100)).map((x) => x.seq)).toEqual([1, 2, 3, 4, 5]);
    await b.close();
  });

  it("brings schedule times stored before they were checked to whole seconds in range", async () => {
    const file = tmpFile();
    mkdirSync(dirname(file), { recursive: true });
    const step = MIGRATIONS.findIndex((m) => m.includes("253402300799"));
    expect(step).toBeGreaterThan(0);
    const db = new Database(file);
    for (let v = 0; v < step; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${step}`);
    const insert = db.prepare(
      "INSERT INTO automations (id, project_id, created_at, updated_at, name, metadata, type, run_at, status, " +
        "next_run_at, target, created_by) VALUES (?, 'p', 1, 1, 'n', '{}', 'once', ?, 'active', ?, '{}', '{}')",
    );
    insert.run("a_fraction", 1_900_000_000.7, 1_900_000_000.7);
    insert.run("a_huge", 1e20, 9_007_199_254_740_992);
    insert.run("a_fine", 1_900_000_000, null);
    db.prepare(
      "INSERT INTO automation_invocations (id, automation_id, project_id, created_at, scheduled_at, source, " +
        "target, status, next_attempt_at) VALUES ('i1', 'a_fraction', 'p', 1, 1900000000.7, 'automation', '{}', " +
        "'queued', 1)",
    ).run();
    db.close();
    const store = SqliteStore.open(file);
    const times = async (id: string) => {
      const a = await store.getAutomation(id);
      return [a?.run_at, a?.next_run_at];
    };
    expect(await times("a_fraction")).toEqual([1_900_000_000, 1_900_000_000]);
    expect(await times("a_huge")).toEqual([253_402_300_799, 253_402_300_799]);
    expect(await times("a_fine")).toEqual([1_900_000_000, null]);
    expect((await store.getInvocation("i1"))?.scheduled_at).toBe(1_900_000_000);
    await store.close();
  });

  it("migrates once: a schema_version row per step, user_version is set and reopening is a no-op", async () => {
    const file = tmpFile();
    await SqliteStore.open(file).close();
    const db = new Database(file);
    expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    expect(db.prepare("SELECT version FROM schema_version ORDER BY version").pluck().all()).toEqual(
      MIGRATIONS.map((_, i) => i + 1),
    );
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    const tables = db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .pluck()
      .all();
    expect(tables).toEqual([
      "agents",
      "api_keys",
      "automation_invocations",
      "automations",
      "environment_templates",
      "environments",
      "events",
      "files",
      "goals",
      "idempotency",
      "items",
      "schema_version",
      "sessions",
      "turns",
      "vault_credentials",
      "vaults",
      "webhook_deliveries",
      "webhook_endpoints",
    ]);
    db.close();

    const s = SqliteStore.open(file); // would throw "duplicate column" if migrations re-ran
    await s.insertSession(session("s1"));
    await s.close();
    const again = SqliteStore.open(file);
    expect(await again.countSessions()).toBe(1);
    await again.close();
  });

  it("migrates a version-1 database: rows survive, get project 'default', items become 'completed'", async () => {
    const file = tmpFile();
    mkdirSync(dirname(file), { recursive: true });
    const v1 = new Database(file);
    v1.exec(MIGRATIONS[0]!);
    v1.pragma("user_version = 1");
    const s = session("s1", 5, { agent_id: "ag", metadata: { env: "prod" } });
    const { project_id: _p, required_actions: _r, owner_instance: _o, lease_epoch: _e, ...v1Session } = s;
    const a = agent("ag", 3);
    const { project_id: _q, ...v1Agent } = a;
    const row = (r: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(r).map(([k, v]) => [k, v !== null && typeof v === "object" ? JSON.stringify(v) : v]),
      );
    const insert = (table: string, r: object) => {
      const cols = Object.keys(r);
      v1.prepare(
        `INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map((c) => `@${c}`).join(", ")})`,
      ).run(row(r as Record<string, unknown>));
    };
    insert("agents", v1Agent);
    insert("sessions", v1Session);
    const { subagent_id: _sub, ...v1Turn } = turn("s1", "t1", 6, { status: "completed" });
    insert("turns", v1Turn);
    insert("items", {
      session_id: "s1",
      ordinal: 0,
      turn_id: "t1",
      id: "i0",
      type: "agentMessage",
      created_at: 7,
      data: threadItem("i0"),
    });
    for (let seq = 1; seq <= 2; seq++) {
      insert("events", { session_id: "s1", seq, type: "item.delta", turn_id: "t1", created_at: 8, data: {} });
    }
    insert("goals", { session_id: "s1", data: goal("s1"), updated_at: 1 });
    insert("idempotency", idem("s1", "k"));
    v1.close();

    const store = SqliteStore.open(file);
    expect(await store.getAgent("ag")).toEqual({ ...a, project_id: "default" });
    expect(await store.getSession("s1")).toEqual({ ...s, project_id: "default" });
    expect(ids((await store.listSessions({ project_id: "default", agent_id: "ag" })).data)).toEqual(["s1"]);
    expect((await store.listSessions({ project_id: P1 })).data).toEqual([]);
    expect(ids((await store.listAgents({ project_id: "default" })).data)).toEqual(["ag"]);
    expect(await store.getTurn("s1", "t1")).toEqual(turn("s1", "t1", 6, { status: "completed" }));
    expect((await store.listItems("s1", {})).data).toEqual([
      {
        session_id: "s1",
        turn_id: "t1",
        ordinal: 0,
        id: "i0",
        type: "agentMessage",
        state: "completed",
        created_at: 7,
        data: threadItem("i0"),
      },
    ]);
    expect(await store.getGoal("s1")).toEqual(goal("s1"));
    expect(await store.getIdempotency("s1", "k")).toEqual(idem("s1", "k"));
    expect(await store.lastEventSeq("s1")).toBe(2);
    const [e, i] = await store.appendEvents("s1", [newEvent(), startItem("t2", threadItem("i1"))]);
    expect([e!.event.seq, i!.ordinal]).toEqual([3, 1]);
    expect(await store.hasKeys()).toBe(false);
    await store.insertKey(apiKey("k1"));
    expect(await store.hasKeys()).toBe(true);
    await store.close();

    const db = new Database(file, { readonly: true });
    expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    db.close();
  });

  it("refuses a database from a newer schema version", async () => {
    const file = tmpFile();
    await SqliteStore.open(file).close();
    const db = new Database(file);
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    expect(() => SqliteStore.open(file)).toThrow(/newer/);
  });

  it("uses the primary key for readEvents and the project indexes for list queries", async () => {
    const file = tmpFile();
    await SqliteStore.open(file).close();
    const db = new Database(file);
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[])
        .map((r) => r.detail)
        .join(" | ");
    const events = plan("SELECT * FROM events WHERE session_id = 'a' AND seq > 5 ORDER BY seq ASC LIMIT 10");
    expect(events).toMatch(/USING (PRIMARY KEY|INDEX sqlite_autoindex_events_1)/);
    expect(events).not.toMatch(/TEMP B-TREE/);
    const page = "(created_at, rid) < (1, 2) ORDER BY created_at DESC, rid DESC LIMIT 3";
    expect(plan(`SELECT * FROM sessions WHERE project_id = 'p' AND ${page}`)).toMatch(
      /USING INDEX sessions_project_created/,
    );
    expect(plan(`SELECT * FROM sessions WHERE project_id = 'p' AND agent_id = 'x' AND ${page}`)).toMatch(
      /USING INDEX sessions_project_agent/,
    );
    expect(plan(`SELECT * FROM agents WHERE project_id = 'p' AND ${page}`)).toMatch(
      /USING INDEX agents_project_created/,
    );
    for (const sql of [
      "SELECT * FROM sessions WHERE project_id = 'p' ORDER BY created_at DESC, rid DESC LIMIT 3",
      "SELECT * FROM turns WHERE session_id = 's' ORDER BY created_at DESC, rid DESC",
      "SELECT * FROM turns WHERE session_id = 's' AND status = 'completed' ORDER BY created_at DESC, rid DESC",
      "SELECT * FROM items WHERE session_id = 's' AND turn_id = 't' ORDER BY ordinal",
    ]) {
      expect(plan(sql)).not.toMatch(/TEMP B-TREE/);
    }
    expect(plan("SELECT * FROM items WHERE session_id = 's' AND turn_id = 't' ORDER BY ordinal")).toMatch(
      /USING INDEX items_turn/,
    );
    expect(
      plan("SELECT * FROM items WHERE session_id = 's' AND turn_id = 't' AND state = 'started'"),
    ).toMatch(/USING INDEX items_(open|turn)/);
    db.close();
  });
});

describe("SqliteStore change counter", () => {
  it("moves when another connection (another process) commits, not on this store's own writes", async () => {
    const file = tmpFile();
    const mine = SqliteStore.open(file);
    const other = SqliteStore.open(file);
    try {
      const c0 = await mine.changeCounter();
      expect(typeof c0).toBe("number");
      await mine.insertKey(apiKey("own"));
      expect(await mine.changeCounter()).toBe(c0);
      await other.revokeKey("own", 5);
      const c1 = await mine.changeCounter();
      expect(c1).not.toBe(c0);
      expect(await mine.changeCounter()).toBe(c1);
    } finally {
      await other.close();
      await mine.close();
    }
    expect(await mine.changeCounter()).toBeNull();
  });
});

describe("SqliteStore batches", () => {
  // The cached last seq / ordinal must not stay ahead of the data when a batch rolls back part-way.
  it("a batch that fails part-way writes nothing and burns no seq or ordinal", async () => {
    const store = SqliteStore.open(":memory:");
    try {
      await store.insertSession(session("s1"));
      await store.appendEvents("s1", [newEvent(), startItem("t1", threadItem("i0"))]);
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic; // cannot be serialised: the third event of the batch fails
      const bad = { ...newEvent(), event: { ...delta(), data: cyclic } } as unknown as NewEvent;
      await expect(
        store.appendEvents("s1", [newEvent(), startItem("t1", threadItem("i1")), bad, newEvent()]),
      ).rejects.toThrow();
      expect((await store.readEvents("s1", 0, 100)).map((e) => e.seq)).toEqual([1, 2]); // rolled back
      expect(ids((await store.listItems("s1", {})).data)).toEqual(["i0"]);
      // …but the counters ran ahead: lastEventSeq says 4 and the next append gets seq 5
      expect(await store.lastEventSeq("s1")).toBe(2);
      const [e, i] = await store.appendEvents("s1", [newEvent(), startItem("t1", threadItem("i1"))]);
      expect([e!.event.seq, i!.event.seq, i!.ordinal]).toEqual([3, 4, 1]);
    } finally {
      await store.close();
    }
  });
});

describe("SqliteStore rollouts", () => {
  // One instance: the engine's rollout file is the only copy, so a turn's end is never handed one to share.
  it("refuses a turn's end that carries a rollout chunk, and writes nothing of it", async () => {
    const store = SqliteStore.open(":memory:");
    try {
      await store.insertSession(session("s1"));
      await store.insertTurn(turn("s1", "t1", 1));
      const end = {
        itemStatus: "failed",
        turn: { status: "completed" as const },
        session: { status: "idle" as const },
        rollout: { thread_id: "thr_1", start_offset: 0, data: Buffer.from("x") },
      };
      const log = {
        at: 1,
        before: [],
        outputIndex: new Map<string, number>(),
        turn: { type: "turn.completed" as const, data: { turn: turn("s1", "t1", 1) } },
        webhook: session("s1"),
      };
      await expect(store.endTurn("s1", "t1", end, log)).rejects.toThrow(/shares no rollouts/);
      expect(await store.lastEventSeq("s1")).toBe(0);
      expect(await store.getTurn("s1", "t1")).toEqual(turn("s1", "t1", 1));
    } finally {
      await store.close();
    }
  });
});
