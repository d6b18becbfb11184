/**
 * The PostgreSQL store: the store contract against a database created for this run, and what only a shared
 * database has to show — several instances (stores with their own pools) writing at once (migrating at once:
 * postgres-migrations.external.test.ts).
 * Needs a PostgreSQL server (TEST_DATABASE_URL, default the local one): see postgres.ts.
 */
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/index.js";
import type { NewEvent } from "../../src/store/types.js";
import { freshDatabases } from "../support/postgres.js";
import { tcpProxy } from "../support/tcp-proxy.js";
import {
  delta,
  finishItem,
  ids,
  newEvent,
  session,
  startItem,
  storeContract,
  threadItem,
  turn,
} from "./contract.js";

const TABLES =
  "agents, sessions, turns, items, events, goals, idempotency, api_keys, automations, automation_invocations, " +
  "webhook_endpoints, webhook_deliveries, rollout_chunks";

/** A fresh database (dropped at the end of the run). */
const freshDatabase = freshDatabases();

/**
 * The database of this run, created on first use. Every test awaits it, so without a server each test fails with
 * the message saying how to start one (a failed beforeAll would only mark them skipped).
 */
let runDatabase: Promise<string> | undefined;
const testUrl = () => {
  runDatabase ??= freshDatabase();
  return runDatabase;
};

const open = async (opts?: Parameters<typeof PostgresStore.open>[1]) =>
  PostgresStore.open(await testUrl(), opts);

/** Every contract test starts from empty tables (one database per run; migrated on the first open). */
storeContract("postgres", async () => {
  const store = await open();
  await store.pool.query(`TRUNCATE ${TABLES} RESTART IDENTITY`);
  return store;
});

/** Counts the statements sent by a store's pooled connections while `fn` runs. */
async function countStatements<T>(
  store: PostgresStore,
  fn: () => Promise<T>,
): Promise<{ result: T; sql: string[] }> {
  const sql: string[] = [];
  const wrapped = new WeakSet<pg.PoolClient>();
  const wrap = (client: pg.PoolClient) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const q = args[0] as string | { text: string };
      sql.push(typeof q === "string" ? q : q.text);
      return query(...args);
    };
  };
  store.pool.on("acquire", wrap);
  try {
    return { result: await fn(), sql };
  } finally {
    store.pool.off("acquire", wrap);
  }
}

/** Polls (one query per round, no sleeps) until `cond` holds. */
async function until(cond: () => Promise<boolean>, what: string, rounds = 5000): Promise<void> {
  for (let i = 0; i < rounds; i++) if (await cond()) return;
  throw new Error(`timed out waiting for ${what}`);
}

describe("PostgresStore", () => {
  const stores: PostgresStore[] = [];
  const track = async (p: Promise<PostgresStore>) => {
    const s = await p;
    stores.push(s);
    return s;
  };
  beforeEach(async () => {
    const client = new pg.Client({ connectionString: await testUrl() });
    await client.connect();
    try {
      await client.query(`TRUNCATE ${TABLES} RESTART IDENTITY`);
    } finally {
      await client.end();
    }
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });

  it("a connection that breaks while a transaction holds it fails that transaction, never the process", async () => {
    const proxy = await tcpProxy(Number(new URL(await testUrl()).port || 5432));
    const url = new URL(await testUrl());
    url.port = String(proxy.port);
    const store = await track(PostgresStore.open(url.toString()));
    try {
      const failed = await store
        .transaction(async (tx) => {
          await tx.getSession("none");
          // Between two statements the connection goes (the client is checked out, no query is running).
          await proxy.cut();
          await tx.getSession("none");
        })
        .then(
          () => null,
          (err: unknown) => err,
        );
      expect(failed).toBeInstanceOf(Error);
    } finally {
      await proxy.close();
    }
  });

  describe("schema", () => {
    it("uses the indexes for the log, the project lists and the open items", async () => {
      const store = await track(open());
      const plan = async (sql: string) => {
        const client = await store.pool.connect();
        try {
          await client.query("BEGIN");
          await client.query("SET LOCAL enable_seqscan = off"); // tiny tables: ask what an index would do
          const res = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`);
          await client.query("ROLLBACK");
          return res.rows.map((r) => r["QUERY PLAN"]).join("\n");
        } finally {
          client.release();
        }
      };
      const readEvents = await plan(
        "SELECT * FROM events WHERE session_id = 'a' AND seq > 5 ORDER BY seq ASC LIMIT 10",
      );
      expect(readEvents).toMatch(/Index Scan using events_pkey/);
      expect(readEvents).not.toMatch(/Sort/);
      const page = "(created_at, rid) < (1, 2) ORDER BY created_at DESC, rid DESC LIMIT 3";
      expect(await plan(`SELECT * FROM sessions WHERE project_id = 'p' AND ${page}`)).toMatch(
        /sessions_project_created/,
      );
      expect(
        await plan(`SELECT * FROM sessions WHERE project_id = 'p' AND agent_id = 'x' AND ${page}`),
      ).toMatch(/sessions_project_agent/);
      expect(await plan(`SELECT * FROM agents WHERE project_id = 'p' AND ${page}`)).toMatch(
        /agents_project_created/,
      );
      expect(
        await plan("SELECT * FROM items WHERE session_id = 's' AND turn_id = 't' AND state = 'started'"),
      ).toMatch(/items_(open|turn)/);
      expect(await plan(`SELECT * FROM sessions WHERE metadata @> '{"k": "v"}'`)).toMatch(
        /sessions_metadata/,
      );
    });
  });

  describe("appends", () => {
    it("a batch of 1000 events with item writes is one statement and one transaction", async () => {
      const store = await track(open());
      await store.insertSession(session("big"));
      await store.appendEvents("big", [startItem("t0", threadItem("old"))]);
      const batch: NewEvent[] = [];
      for (let i = 0; batch.length < 1000; i++) {
        batch.push(newEvent(delta(i), "t1"));
        if (i % 10 === 0) batch.push(startItem("t1", threadItem(`i${i}`)));
        if (i % 10 === 5) batch.push(finishItem("t1", threadItem(`i${i - 5}`)));
      }
      batch.length = 999;
      batch.push(finishItem("t0", threadItem("old", "done"))); // an item of an earlier batch
      const { result, sql } = await countStatements(store, () => store.appendEvents("big", batch));
      expect(sql).toHaveLength(1);
      expect(sql[0]).toMatch(/append_events/);
      expect(result.map((a) => a.event.seq)).toEqual(batch.map((_, i) => i + 2));
      const starts = batch.filter((e) => e.item?.kind === "start").length;
      expect(result.filter((a) => a.ordinal !== null).map((a) => a.ordinal)).toEqual(
        Array.from({ length: starts }, (_, i) => i + 1),
      );

      // written by one transaction: every row of the batch carries the same xmin
      const xmins = await store.pool.query<{ n: number; xmin: string }>(
        "SELECT count(*) AS n, xmin::text AS xmin FROM events WHERE session_id = 'big' AND seq > 1 GROUP BY xmin",
      );
      expect(xmins.rows).toEqual([{ n: 1000, xmin: expect.any(String) }]);
      const itemXmins = await store.pool.query<{ xmin: string }>(
        "SELECT DISTINCT xmin::text AS xmin FROM items WHERE session_id = 'big'",
      );
      expect(itemXmins.rows).toEqual([{ xmin: xmins.rows[0]!.xmin }]); // including the finished old item
      const items = (await store.listItems("big", { limit: 1000 })).data;
      expect(items).toHaveLength(starts + 1);
      expect(items[0]).toMatchObject({ id: "old", state: "completed", data: threadItem("old", "done") });
      expect(await store.lastEventSeq("big")).toBe(1001);
    });

    it("a turn's start is one statement: the claim, the turn and the events that record it", async () => {
      const store = await track(open());
      await store.insertSession(session("s2"));
      const s2 = (await store.getSession("s2"))!;
      const t2 = turn("s2", "t2", 2);
      const started = await countStatements(store, () =>
        store.startTurn(s2, t2, { status: "in_progress", updated_at: 2 }, 2),
      );
      expect(started.sql).toHaveLength(1);
      expect(started.result?.appended.map((a) => a.event.seq)).toEqual([1, 2]);
      expect(await store.getTurn("s2", "t2")).toEqual(t2);
    });

    it("a turn's end is one statement, the thread's new rollout bytes stored in it (and kept when stored before)", async () => {
      const store = await track(open());
      await store.insertSession(session("s1"));
      await store.insertTurn(turn("s1", "t1", 1));
      await store.appendEvents("s1", [startItem("t1", threadItem("i1"))]);
      const data = Buffer.from('{"type":"turn"}\n\u0000\u00ff', "latin1");
      const done = turn("s1", "t1", 1, { status: "completed" });
      const log = {
        at: 1500,
        before: [],
        outputIndex: new Map([["i1", 0]]),
        turn: { type: "turn.completed" as const, data: { turn: done } },
        webhook: { ...session("s1"), status: "idle" as const },
      };
      const { result, sql } = await countStatements(store, () =>
        store.endTurn(
          "s1",
          "t1",
          {
            itemStatus: "failed",
            turn: { status: "completed", completed_at: 1500 },
            session: { status: "idle", active_turn_id: null },
            rollout: { thread_id: "thr_1", start_offset: 120, data },
          },
          log,
        ),
      );
      expect(sql).toHaveLength(1);
      expect(result.closed.map((i) => i.id)).toEqual(["i1"]);
      expect(result.session).toMatchObject({ status: "idle" });
      expect(result.appended.map((a) => a.event.type)).toEqual([
        "item.completed",
        "turn.completed",
        "session.status",
      ]);
      const chunks = async () =>
        (
          await store.pool.query<{ start_offset: number; data: Buffer }>(
            "SELECT start_offset, data FROM rollout_chunks WHERE thread_id = 'thr_1'",
          )
        ).rows;
      expect(await chunks()).toEqual([{ start_offset: 120, data }]);
      // The same offset again (a save thought lost): the bytes stored first stay, and the turn's end goes through.
      const again = await store.endTurn(
        "s1",
        "t1",
        {
          itemStatus: "failed",
          turn: {},
          session: { status: "idle" },
          rollout: { thread_id: "thr_1", start_offset: 120, data: Buffer.from("other") },
        },
        log,
      );
      expect(again.session).toMatchObject({ status: "idle" });
      expect(await chunks()).toEqual([{ start_offset: 120, data }]);
    });

    it("two instances appending to one session at once: seq 1..N and ordinals 0..M-1, no gaps or duplicates", async () => {
      const [a, b] = await Promise.all([track(open()), track(open())]);
      await a.insertSession(session("shared"));
      const ROUNDS = 40;
      /** One writer: each batch finishes the item it started in its previous batch and starts a new one. */
      const writer = async (store: PostgresStore, name: string) => {
        const out: { seqs: number[]; ordinals: number[] }[] = [];
        for (let k = 0; k < ROUNDS; k++) {
          const batch = [newEvent(delta(k), name), startItem(name, threadItem(`${name}-${k}`))];
          if (k > 0) batch.push(finishItem(name, threadItem(`${name}-${k - 1}`, "done")));
          const res = await store.appendEvents("shared", batch);
          out.push({
            seqs: res.map((r) => r.event.seq),
            ordinals: res.flatMap((r) => (r.ordinal === null ? [] : [r.ordinal])),
          });
        }
        return out;
      };
      // four writers per instance, each instance through its own pool
      const results = await Promise.all([
        ...["a1", "a2", "a3", "a4"].map((n) => writer(a, n)),
        ...["b1", "b2", "b3", "b4"].map((n) => writer(b, n)),
      ]);
      const batches = results.flat();
      const total = batches.reduce((n, x) => n + x.seqs.length, 0);
      // each batch got consecutive seqs; together they are 1..N exactly once
      for (const x of batches) expect(x.seqs).toEqual(x.seqs.map((_, i) => x.seqs[0]! + i));
      expect(batches.flatMap((x) => x.seqs).sort((p, q) => p - q)).toEqual(
        Array.from({ length: total }, (_, i) => i + 1),
      );
      expect(batches.flatMap((x) => x.ordinals).sort((p, q) => p - q)).toEqual(
        Array.from({ length: 8 * ROUNDS }, (_, i) => i),
      );
      for (const store of [a, b]) {
        expect(await store.lastEventSeq("shared")).toBe(total);
        expect((await store.readEvents("shared", 0, 10_000)).map((e) => e.seq)).toEqual(
          Array.from({ length: total }, (_, i) => i + 1),
        );
      }
      // every finish found its start (none inserted a second row)
      const items = (await b.listItems("shared", { limit: 1000 })).data;
      expect(items.map((i) => i.ordinal)).toEqual(Array.from({ length: 8 * ROUNDS }, (_, i) => i));
      expect(
        items
          .filter((i) => i.state === "started")
          .map((i) => i.id)
          .sort(),
      ).toEqual(["a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"].map((n) => `${n}-${ROUNDS - 1}`));
      // a writer's ordinals follow its own log order
      for (const writerBatches of results) {
        const ords = writerBatches.flatMap((x) => x.ordinals);
        expect([...ords].sort((p, q) => p - q)).toEqual(ords);
      }
    });

    it("an append waiting on another instance's open transaction sees that transaction's items once it commits", async () => {
      const [a, b] = await Promise.all([track(open()), track(open())]);
      await a.insertSession(session("s1"));
      const waiting = async () =>
        (
          await a.pool.query<{ n: number }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
          )
        ).rows[0]!.n > 0;
      let finish!: Promise<unknown>;
      await a.transaction(async (tx) => {
        await tx.appendEvents("s1", [startItem("t1", threadItem("i1"))]);
        // b's statement starts now (its snapshot predates a's commit) and waits for the session row
        finish = b.appendEvents("s1", [
          finishItem("t1", threadItem("i1", "final")),
          startItem("t1", threadItem("i2")),
        ]);
        await until(waiting, "b to wait for the session row");
      });
      const [fin, next] = (await finish) as Awaited<ReturnType<PostgresStore["appendEvents"]>>;
      expect([fin!.event.seq, fin!.ordinal]).toEqual([2, null]); // updated a's item: not a second i1
      expect([next!.event.seq, next!.ordinal]).toEqual([3, 1]);
      const items = (await b.listItems("s1", {})).data;
      expect(items.map((i) => [i.ordinal, i.id, i.state])).toEqual([
        [0, "i1", "completed"],
        [1, "i2", "started"],
      ]);
      expect(items[0]!.data).toEqual(threadItem("i1", "final"));
    });

    it("claims across instances: one of many concurrent claims wins", async () => {
      const [a, b] = await Promise.all([track(open()), track(open())]);
      await a.insertSession(session("c1"));
      const claims = await Promise.all(
        [a, b, a, b, a, b].map((s, i) =>
          s.transaction(async (tx) => {
            const won = await tx.claimSession("c1", `t${i}`, { status: "in_progress" });
            if (won) await tx.insertTurn(turn("c1", `t${i}`, 1, { status: "in_progress" }));
            return won?.active_turn_id;
          }),
        ),
      );
      const winners = claims.filter((c) => c !== undefined);
      expect(winners).toHaveLength(1);
      expect((await b.getSession("c1"))?.active_turn_id).toBe(winners[0]);
      expect(ids((await a.listTurns("c1", {})).data)).toEqual(winners);
    });

    it("stores text that jsonb and text columns cannot hold (NUL, unpaired surrogates) as U+FFFD", async () => {
      const store = await track(open());
      await store.insertSession(session("s1", 1, { name: "a\0b", metadata: { "k\0": "v\0" } }));
      expect(await store.getSession("s1")).toMatchObject({
        name: "a\uFFFDb",
        metadata: { "k\uFFFD": "v\uFFFD" },
      });
      const odd = "x\0y\uD800z\uDC00-\uD83D\uDE00";
      const [e] = await store.appendEvents("s1", [
        newEvent({
          type: "item.delta",
          data: { item_id: "i", output_index: 0, kind: "command_output", delta: odd },
        }),
        startItem("t", threadItem("i", odd)),
      ]);
      expect(e!.event.seq).toBe(1);
      const [stored] = await store.readEvents("s1", 0, 1);
      expect(stored!.type === "item.delta" && stored!.data.delta).toBe("x\uFFFDy\uFFFDz\uFFFD-\uD83D\uDE00");
      expect((await store.listItems("s1", {})).data[0]!.data).toEqual(
        threadItem("i", "x\uFFFDy\uFFFDz\uFFFD-\uD83D\uDE00"),
      );
    });

    it("a transaction's client is released after a failed statement, and the pool stays usable", async () => {
      const store = await track(open({ pool: { max: 2 } }));
      for (let i = 0; i < 5; i++) {
        await expect(
          store.transaction(async (tx) => {
            await tx.insertSession(session("dup"));
            await tx.insertSession(session("dup"));
          }),
        ).rejects.toThrow();
      }
      expect(store.pool.totalCount).toBeLessThanOrEqual(2);
      expect(store.pool.waitingCount).toBe(0);
      expect(await store.countSessions()).toBe(0);
      await expect(
        store.transaction(async (tx) => {
          await tx.insertSession(session("ok"));
          return "done";
        }),
      ).resolves.toBe("done");
      expect(await store.countSessions()).toBe(1);
    });
  });
});
