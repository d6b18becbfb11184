/**
 * Scenario 12: several instances on one PostgreSQL database (a database created for the run, on the machine's
 * PostgreSQL: TEST_DATABASE_URL's server, default postgres://postgres@127.0.0.1:5432), one shared workspace root.
 * - trivial-turn latency, PostgreSQL vs SQLite (one instance each, interleaved);
 * - API read throughput (GET a session) with the load spread over 1, 2 and 3 instances;
 * - cross-instance delivery: a turn streaming 200 deltas on instance 1, one subscriber on instance 1 and one on
 *   instance 2; append → receive for each (created_at from the database);
 * - fan-out on a non-owner instance (1000 subscribers; 500 in quick mode), the subscribers in a worker thread;
 * - takeover: the owner of a running turn is SIGKILLed (with its engines); time until another instance has ended
 *   the turn (turn.failed, owner_lost on its stream), with the default dead-instance threshold.
 */

import { scripts } from "@codex-agent-api/testkit";
import autocannon from "autocannon";
import pg from "pg";
import { COMPLETED, type Context, OfficialSession, type Scenario, TRIVIAL_PROMPT } from "../context.js";
import type { FanoutMessage } from "../fanout-worker.js";
import { OFFICIAL, seqOf } from "../http.js";
import { isAlive, now } from "../proc.js";
import { type ServerProcess, startServer } from "../server.js";
import { median, percentile, type Row, ratio, sampleRow } from "../stats.js";
import { runWorker } from "./fanout.js";

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const DELTAS = 200;

async function createDatabase(ctx: Context): Promise<string> {
  const name = `cas_bench_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5000 });
  await admin.connect().catch((err: Error) => {
    throw new Error(
      `scenario 12 needs PostgreSQL at ${ADMIN_URL} (${err.message}): start it with ` +
        "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
    );
  });
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  await admin.end();
  ctx.cleanup.add(`database ${name}`, async () => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await c.end();
  });
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

const row = (metric: string, unit: string, samples: number[], extra: Partial<Row> = {}): Row => ({
  ...sampleRow(metric, unit, samples),
  ...extra,
});

/** created_at (epoch ms) of a session's events, by seq. */
async function createdAt(dbUrl: string, sessionId: string): Promise<Map<number, number>> {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  try {
    const res = await c.query<{ seq: string; created_at: number }>(
      "SELECT seq, created_at FROM events WHERE session_id = $1",
      [sessionId],
    );
    return new Map(res.rows.map((r) => [Number(r.seq), r.created_at * 1000]));
  } finally {
    await c.end();
  }
}

async function readThroughput(servers: ServerProcess[], path: string, seconds: number): Promise<number> {
  const per = Math.max(1, Math.floor(48 / servers.length));
  const run = (s: ServerProcess, opts: { amount?: number; duration?: number }) =>
    autocannon({ url: s.url + path, headers: OFFICIAL, connections: per, ...opts });
  await Promise.all(servers.map((s) => run(s, { amount: 300 })));
  const results = await Promise.all(servers.map((s) => run(s, { duration: seconds })));
  return results.reduce((sum, r) => sum + r.requests.average, 0);
}

export const cluster: Scenario = {
  id: "12",
  title: "Scale-out on PostgreSQL (several instances, one database, a shared workspace)",
  async run(ctx: Context) {
    const { dir } = ctx.cleanup.tempDir("cluster");
    const dbUrl = await createDatabase(ctx);
    const shared = ["--database-url", dbUrl, "--workspace", `${dir}/workspace`];
    const start = (name: string, args: string[]) =>
      startServer(ctx.cleanup, { mockUrl: ctx.mock.url, dataDir: `${dir}/${name}`, args });
    const [lite, p1, p2] = await Promise.all([
      start("sqlite", []),
      start("pg1", shared),
      start("pg2", shared),
    ]);
    const rows: Row[] = [];
    const data: Record<string, unknown> = {};

    // 1. Trivial-turn latency, PostgreSQL vs SQLite.
    const n = ctx.quick ? 15 : 40;
    const onLite = await OfficialSession.open(lite);
    const onPg = await OfficialSession.open(p1);
    for (let i = 0; i < 3; i++) {
      await onLite.turn(TRIVIAL_PROMPT);
      await onPg.turn(TRIVIAL_PROMPT);
    }
    const tl: number[] = [];
    const tp: number[] = [];
    for (let i = 0; i < n; i++) {
      if (i % 2 === 0) {
        tl.push(await onLite.turn(TRIVIAL_PROMPT));
        tp.push(await onPg.turn(TRIVIAL_PROMPT));
      } else {
        tp.push(await onPg.turn(TRIVIAL_PROMPT));
        tl.push(await onLite.turn(TRIVIAL_PROMPT));
      }
    }
    onLite.close();
    rows.push(
      row("trivial turn, SQLite (one instance)", "ms", tl),
      row("trivial turn, PostgreSQL (instance 1 of 3)", "ms", tp, {
        ratio: ratio(median(tp), median(tl)),
        vs: "SQLite",
      }),
    );
    data.turn = { sqlite: tl, postgres: tp };
    await lite.stop();

    // 2. Read throughput with 1, 2, 3 instances.
    const p3 = await start("pg3", shared);
    const seconds = ctx.quick ? 3 : 8;
    const path = `/v1/agents/sessions/${onPg.id}`;
    const rps: number[] = [];
    for (const k of [1, 2, 3]) rps.push(await readThroughput([p1, p2, p3].slice(0, k), path, seconds));
    for (const [i, r] of rps.entries()) {
      rows.push({
        metric: `GET session, load over ${i + 1} instance(s)`,
        unit: "req/s",
        median: r,
        ratio: i === 0 ? null : ratio(r, rps[0]!),
        vs: i === 0 ? null : "1 instance",
      });
    }
    data.readRps = rps;

    // 3. Cross-instance delivery: one subscriber on the owner, one on another instance.
    const local: Array<[number, number]> = [];
    const remote: Array<[number, number]> = [];
    const track = (target: Array<[number, number]>) => (f: { id: string | null; event: string | null }) => {
      if (f.event !== "agent.session.idle") target.push([seqOf(f.id), Date.now()]);
    };
    const sLocal = p1.client.sse(
      "GET",
      `/v1/agents/sessions/${onPg.id}/events`,
      undefined,
      OFFICIAL,
      track(local),
    );
    const sRemote = p2.client.sse(
      "GET",
      `/v1/agents/sessions/${onPg.id}/events`,
      undefined,
      OFFICIAL,
      track(remote),
    );
    await Promise.all([sLocal.next(() => true), sRemote.next(() => true)]);
    local.length = 0;
    remote.length = 0;
    const parts = Array.from({ length: DELTAS }, (_, i) => `w${i} `);
    ctx.mock.enqueue(scripts.streamingMessage(parts, { delayMs: 10 }));
    await onPg.turn("stream across instances");
    await sRemote.next((f) => f.event === COMPLETED);
    sLocal.close();
    sRemote.close();
    const created = await createdAt(dbUrl, onPg.id);
    const delays = (list: Array<[number, number]>) =>
      list.flatMap(([seq, t]) => (created.has(seq) ? [t - created.get(seq)!] : []));
    const dLocal = delays(local);
    const dRemote = delays(remote);
    rows.push(
      row("append → receive, subscriber on the owner instance", "ms", dLocal),
      row("append → receive, subscriber on another instance", "ms", dRemote, {
        ratio: ratio(median(dRemote), median(dLocal)),
        vs: "owner instance",
      }),
    );
    data.delivery = { local: dLocal, remote: dRemote };
    onPg.close();

    // 4. Fan-out on a non-owner instance.
    const subscribers = ctx.quick ? 500 : 1000;
    const fan = await OfficialSession.open(p1);
    await fan.turn(TRIVIAL_PROMPT);
    const w = runWorker({
      url: p2.url,
      path: `/v1/agents/sessions/${fan.id}/events`,
      headers: OFFICIAL,
      n: subscribers,
      timeoutMs: 120_000,
    });
    await w.ready;
    ctx.mock.enqueue(scripts.streamingMessage(parts, { delayMs: 10 }));
    await fan.turn("fan out from another instance");
    const done = (await w.done) as Extract<FanoutMessage, { type: "done" }>;
    await w.worker.terminate();
    if (done.error) throw new Error(`fan-out: ${done.error}`);
    const fanCreated = await createdAt(dbUrl, fan.id);
    const fanDelays: number[] = [];
    for (let i = 0; i < done.seqs.length; i++) {
      const c = fanCreated.get(done.seqs[i]!);
      if (c !== undefined) fanDelays.push(done.times[i]! - c);
    }
    rows.push(row(`fan-out: ${subscribers} subscribers on a non-owner instance`, "ms", fanDelays));
    fan.close();

    // 5. Takeover after SIGKILL (default threshold: a heartbeat older than 7 s is dead).
    const victim = await start("victim", shared);
    const watch = await OfficialSession.open(p1);
    const doomed = watch.id;
    const ended = p1.client.sse("GET", `/v1/agents/sessions/${doomed}/events`, undefined, OFFICIAL);
    await ended.next(() => true);
    await victim.client.expect(
      202,
      "POST",
      `/v1/agents/sessions/${doomed}/events`,
      {
        events: [
          {
            type: "agent.session.input.message",
            input:
              "Run this exact shell command and wait for it to finish: sleep 60. Then reply with exactly: never",
          },
        ],
      },
      OFFICIAL,
    );
    await ended.next(
      (f) => f.event === "agent.session.turn.item.added" && f.data.includes("command_execution"),
    );
    const engines = victim.memory().enginePids;
    process.kill(victim.pid, "SIGKILL");
    for (const p of engines) if (isAlive(p)) process.kill(p, "SIGKILL");
    const killedAt = now();
    const failed = await ended.next((f) => f.event === "agent.session.turn.failed", 60_000);
    const takeoverMs = failed.t - killedAt;
    ended.close();
    watch.close();
    await victim.stop().catch(() => undefined);
    rows.push({
      metric: "takeover after SIGKILL of the owner (turn.failed seen elsewhere)",
      unit: "ms",
      median: takeoverMs,
    });
    data.takeoverMs = takeoverMs;

    await Promise.all([p1.stop(), p2.stop(), p3.stop()]);
    return {
      id: this.id,
      title: this.title,
      rows,
      targets: [
        {
          name: "PostgreSQL/SQLite trivial-turn latency",
          value: ratio(median(tp), median(tl)),
          op: "<=",
          threshold: 1.1,
          unit: "×",
        },
        {
          name: "cross-instance append → receive p99",
          value: percentile(dRemote, 99),
          op: "<=",
          threshold: 10,
          unit: "ms",
        },
        {
          name: `fan-out p99 on a non-owner instance, ${subscribers} subscribers`,
          value: percentile(fanDelays, 99),
          op: "<=",
          threshold: 50,
          unit: "ms",
          detail: subscribers !== 1000 ? "target is for 1000 subscribers; quick mode measures 500" : "",
        },
        { name: "takeover after SIGKILL", value: takeoverMs / 1000, op: "<=", threshold: 10, unit: "s" },
      ],
      notes: [
        "Instances are server child processes on this machine (2 cores shared with the bench, the mock and PostgreSQL): " +
          "more instances add no CPU, so read throughput measures the cost of spreading, not scaling.",
        "append → receive = receive epoch time − the event's created_at in the database (stamped at append).",
      ],
      data,
    };
  },
};
