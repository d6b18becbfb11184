/**
 * Scenario 5: one session, N subscribers on its official event stream, one turn that streams a 200-delta message.
 * Delay = receive time (epoch ms in the subscriber worker, per chunk) − the event's stored `created_at` (the log's
 * unix seconds with ms precision, stamped by the server just before it appends and publishes the event).
 */
import { Worker } from "node:worker_threads";
import { scripts } from "@codex-agent-api/testkit";
import { type Context, OfficialSession, type Scenario, TRIVIAL_PROMPT } from "../context.js";
import type { FanoutMessage, FanoutWorkerData } from "../fanout-worker.js";
import { OFFICIAL } from "../http.js";
import { cpuMs, now, rssMiB } from "../proc.js";
import { openStore } from "../seed.js";
import { startServer } from "../server.js";
import { maxOf, median, minOf, percentile, type Row, ratio } from "../stats.js";

const DELTAS = 200;
/** 10 ms between deltas ≈ 100 tokens/s, a fast model. */
const DELTA_DELAY_MS = 10;

export function runWorker(data: FanoutWorkerData) {
  const worker = new Worker(new URL("../fanout-worker.js", import.meta.url), { workerData: data });
  const next = (type: FanoutMessage["type"], timeoutMs: number) =>
    new Promise<FanoutMessage>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`fan-out worker: no "${type}" within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onMessage = (m: FanoutMessage) => {
        if (m.type === "done" && type === "ready") {
          clearTimeout(timer);
          reject(new Error(`fan-out worker failed while connecting: ${m.error}`));
        } else if (m.type === type) {
          clearTimeout(timer);
          worker.off("message", onMessage);
          resolve(m);
        }
      };
      worker.on("message", onMessage);
      worker.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  const done = next("done", data.timeoutMs + 30_000);
  done.catch(() => {});
  return { worker, ready: next("ready", data.timeoutMs), done };
}

export const fanout: Scenario = {
  id: "5",
  title: `Stream fan-out (official GET …/events, one turn streaming ${DELTAS} deltas)`,
  async run(ctx: Context) {
    const levels = ctx.quick ? [1, 100, 500] : [1, 100, 1000];
    const { dir } = ctx.cleanup.tempDir("fanout");
    const server = await startServer(ctx.cleanup, { mockUrl: ctx.mock.url, dataDir: dir });
    const rows: Row[] = [];
    const data: Record<string, unknown> = {};
    let refMedian: number | null = null;
    let biggest: { n: number; p99: number } | null = null;
    try {
      const session = await OfficialSession.open(server);
      await session.turn(TRIVIAL_PROMPT); // warm-up: starts the thread
      const parts = Array.from({ length: DELTAS }, (_, i) => `w${i} `);
      ctx.mock.enqueue(scripts.streamingMessage(parts.slice(0, 50), { delayMs: DELTA_DELAY_MS }));
      await session.turn("stream warm-up"); // warm-up: one (shorter) streaming turn
      for (const n of levels) {
        ctx.log(`  ${n} subscriber(s)`);
        const idleRss = rssMiB(server.pid);
        const w = runWorker({
          url: server.url,
          path: `/v1/agents/sessions/${session.id}/events`,
          headers: OFFICIAL,
          n,
          timeoutMs: 120_000,
        });
        const ready = (await w.ready) as Extract<FanoutMessage, { type: "ready" }>;
        const connectedRss = rssMiB(server.pid);
        let peakRss = connectedRss ?? 0;
        const sampler = setInterval(() => {
          peakRss = Math.max(peakRss, rssMiB(server.pid) ?? 0);
        }, 25);
        ctx.mock.enqueue(scripts.streamingMessage(parts, { delayMs: DELTA_DELAY_MS }));
        const cpu0 = { server: cpuMs(server.pid) ?? 0, bench: process.cpuUsage() };
        const t0 = now();
        await session.turn("stream to the subscribers");
        const turnMs = now() - t0;
        const done = (await w.done) as Extract<FanoutMessage, { type: "done" }>;
        const spanMs = now() - t0;
        const benchCpu = process.cpuUsage(cpu0.bench);
        const cpu = {
          serverMs: (cpuMs(server.pid) ?? 0) - cpu0.server,
          benchMs: (benchCpu.user + benchCpu.system) / 1000,
          spanMs,
        };
        clearInterval(sampler);
        await w.worker.terminate();
        if (done.error) throw new Error(`fan-out with ${n} subscribers: ${done.error}`);
        // created_at of every event the subscribers received, from the server's own database.
        const store = openStore(dir);
        const minSeq = minOf(done.seqs);
        const maxSeq = maxOf(done.seqs);
        const created = new Map<number, number>();
        for (const e of await store.readEvents(session.id, minSeq - 1, maxSeq - minSeq + 1)) {
          created.set(e.seq, e.created_at * 1000);
        }
        await store.close();
        const delays: number[] = [];
        for (let i = 0; i < done.seqs.length; i++) {
          const c = created.get(done.seqs[i]!);
          if (c !== undefined) delays.push(done.times[i]! - c);
        }
        const med = median(delays);
        const p99v = percentile(delays, 99);
        refMedian ??= med;
        biggest = { n, p99: p99v };
        rows.push(
          {
            metric: `${n} subscriber(s): append → receive delay`,
            unit: "ms",
            n: delays.length,
            median: med,
            p95: percentile(delays, 95),
            p99: p99v,
            ratio: n === levels[0] ? null : ratio(med, refMedian),
            vs: n === levels[0] ? null : `${levels[0]} subscriber`,
            note: `max ${Math.round(maxOf(delays))} ms; turn ${Math.round(turnMs)} ms; bench CPU (subscribers + mock) ${Math.round(cpu.benchMs)} ms`,
          },
          {
            metric: `${n} subscriber(s): server RSS peak`,
            unit: "MiB",
            median: peakRss,
            ratio: ratio(peakRss, idleRss),
            vs: "before subscribing",
            note: `before ${idleRss?.toFixed(0)} MiB, connected ${connectedRss?.toFixed(0)} MiB; connect ${Math.round(ready.connectMs)} ms`,
          },
          {
            metric: `${n} subscriber(s): server CPU per delivered frame`,
            unit: "µs",
            median: (cpu.serverMs * 1000) / delays.length,
            note: `server CPU ${Math.round(cpu.serverMs)} ms over ${Math.round(spanMs)} ms (the whole turn, engine bridge included)`,
          },
        );
        data[String(n)] = {
          frames: delays.length,
          p50: med,
          p95: percentile(delays, 95),
          p99: p99v,
          max: maxOf(delays),
          turnMs,
          cpu,
          connectMs: ready.connectMs,
          rssMiB: { idle: idleRss, connected: connectedRss, peak: peakRss },
        };
      }
      session.close();
    } finally {
      await server.stop();
    }
    const b = biggest as { n: number; p99: number } | null;
    return {
      id: this.id,
      title: this.title,
      rows,
      targets: [
        {
          name: `fan-out p99 delay, ${b?.n ?? "—"} subscribers`,
          value: b?.p99 ?? null,
          op: "<=",
          threshold: 50,
          unit: "ms",
          detail: b && b.n !== 1000 ? "target is for 1000 subscribers; quick mode measures 500" : "",
        },
      ],
      notes: [
        `Server child process; subscribers in a worker thread of the bench (node:http), the mock streams ${DELTAS} ` +
          `output_text deltas ${DELTA_DELAY_MS} ms apart. Every frame after the opening state frame counts (deltas, ` +
          "item and turn events), per subscriber.",
        "Delay = receive epoch time (per chunk) − the event's stored created_at (Date.now() at append, ms precision): " +
          "includes the SQLite commit, rendering, the socket write and the client's parsing.",
      ],
      data,
    };
  },
};
