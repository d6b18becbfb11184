/**
 * Scenario 7: memory of the server process and of its app-server engine (VmRSS from /proc): idle, with 1000
 * stored idle sessions, and while/after many sessions each run a turn (the pool recycles an engine that holds more
 * than AGENT_MAX_THREADS_PER_ENGINE loaded threads once it is idle).
 */
import { type Context, type Scenario, TRIVIAL_PROMPT } from "../context.js";
import { sleep } from "../proc.js";
import { openStore, seedSessions, workspaceOf } from "../seed.js";
import { type Memory, type ServerProcess, startServer } from "../server.js";
import { type Row, ratio } from "../stats.js";

const WAVE = 10;

/** Memory once the server has been idle for a moment (the engine is up). */
async function settled(server: ServerProcess, ms: number): Promise<Memory> {
  await sleep(ms);
  return server.memory();
}

export const footprint: Scenario = {
  id: "7",
  title: "Footprint (VmRSS of the server process and its engine child)",
  async run(ctx: Context) {
    const sessions = ctx.quick ? 50 : 200;
    // Quick mode scales the recycle bound down with the session count so that a recycle is still observed.
    const bound = ctx.quick ? 20 : 100;
    const settle = ctx.quick ? 500 : 1000;
    const { dir } = ctx.cleanup.tempDir("footprint");
    const args = ["--max-sessions", "100000"];
    const env = { AGENT_MAX_THREADS_PER_ENGINE: String(bound) };

    const empty = await startServer(ctx.cleanup, {
      mockUrl: ctx.mock.url,
      dataDir: `${dir}/empty`,
      args,
      env,
    });
    const idle = await settled(empty, settle);
    await empty.stop();

    const seededDir = `${dir}/seeded`;
    const store = openStore(seededDir);
    await seedSessions(store, 1000, { workspace: workspaceOf(seededDir), history: true });
    await store.close();
    const server = await startServer(ctx.cleanup, { mockUrl: ctx.mock.url, dataDir: seededDir, args, env });
    const rows: Row[] = [];
    const trace: Array<Record<string, unknown>> = [];
    let withSessions: Memory;
    let peakEngine = 0;
    let peakServer = 0;
    let maxThreads = 0;
    const enginePids = new Set<number>();
    let after: Memory;
    try {
      withSessions = await settled(server, settle);
      for (const p of withSessions.enginePids) enginePids.add(p);
      const sample = () => {
        const m = server.memory();
        peakEngine = Math.max(peakEngine, m.engineMiB);
        peakServer = Math.max(peakServer, m.serverMiB ?? 0);
        for (const p of m.enginePids) enginePids.add(p);
        return m;
      };
      // Loaded threads from /health, polled alongside (a recycle right after a wave hides the peak from a
      // sample taken between waves).
      let polling = false;
      const pollThreads = () => {
        if (polling) return;
        polling = true;
        server
          .health()
          .then((h) => {
            maxThreads = Math.max(
              maxThreads,
              h.engines.reduce((n, e) => n + e.threads, 0),
            );
          })
          .catch(() => {})
          .finally(() => {
            polling = false;
          });
      };
      const sampler = setInterval(() => {
        sample();
        pollThreads();
      }, 50);
      try {
        for (let done = 0; done < sessions; done += WAVE) {
          // A wave: WAVE new sessions, each created with one trivial turn (template, answered after the turn).
          await Promise.all(
            Array.from({ length: Math.min(WAVE, sessions - done) }, async () => {
              const s = await server.client.expect<{ status: string }>(200, "POST", "/v1/agents/sessions", {
                agent: { model: "mock-model" },
                input: TRIVIAL_PROMPT,
              });
              if (s.status !== "idle") throw new Error(`session ended ${s.status}`);
            }),
          );
          const h = await server.health();
          const threads = h.engines.reduce((n, e) => n + e.threads, 0);
          maxThreads = Math.max(maxThreads, threads);
          const m = sample();
          trace.push({
            sessions: done + WAVE,
            threads,
            serverMiB: m.serverMiB,
            engineMiB: m.engineMiB,
            enginePids: m.enginePids,
          });
        }
      } finally {
        clearInterval(sampler);
      }
      after = await settled(server, settle);
      const h = await server.health();
      trace.push({
        settled: true,
        threads: h.engines.reduce((n, e) => n + e.threads, 0),
        engineMiB: after.engineMiB,
      });
    } finally {
      await server.stop();
    }
    const recycles = Math.max(0, enginePids.size - 1);
    const mib = (v: number | null | undefined) => (v === null || v === undefined ? null : v);
    rows.push(
      { metric: "server idle (empty store)", unit: "MiB", median: mib(idle.serverMiB) },
      {
        metric: "server idle, 1000 stored sessions",
        unit: "MiB",
        median: mib(withSessions.serverMiB),
        ratio: ratio(withSessions.serverMiB, idle.serverMiB),
        vs: "idle",
      },
      {
        metric: `server after ${sessions} sessions ran a turn`,
        unit: "MiB",
        median: mib(after.serverMiB),
        ratio: ratio(after.serverMiB, idle.serverMiB),
        vs: "idle",
        note: `peak ${peakServer.toFixed(0)} MiB`,
      },
      { metric: "engine idle (after initialize)", unit: "MiB", median: idle.engineMiB },
      {
        metric: `engine peak during ${sessions} sessions`,
        unit: "MiB",
        median: peakEngine,
        ratio: ratio(peakEngine, idle.engineMiB),
        vs: "engine idle",
        note: `max ${maxThreads} loaded threads seen (bound ${bound} + wave ${WAVE})`,
      },
      {
        metric: `engine after ${sessions} sessions (settled)`,
        unit: "MiB",
        median: after.engineMiB,
        ratio: ratio(after.engineMiB, idle.engineMiB),
        vs: "engine idle",
        note: `${recycles} recycle(s) observed (${enginePids.size} engine pids)${after.enginePids.length === 0 ? "; no engine running (respawns on next use)" : ""}`,
      },
    );
    const bounded = recycles > 0 && maxThreads <= bound + WAVE;
    return {
      id: this.id,
      title: this.title,
      rows,
      targets: [
        {
          name: `engine RSS bounded after ${sessions} sessions`,
          value: bounded ? 1 : 0,
          op: ">=",
          threshold: 1,
          unit: "",
          display: bounded ? "yes" : "no",
          detail: `${recycles} recycle(s) at AGENT_MAX_THREADS_PER_ENGINE=${bound}; max ${maxThreads} loaded threads; engine peak ${peakEngine.toFixed(0)} MiB vs idle ${idle.engineMiB.toFixed(0)} MiB`,
        },
      ],
      notes: [
        `Server child process(es), 1 engine, AGENT_MAX_THREADS_PER_ENGINE=${bound}${ctx.quick ? " (quick mode: scaled down from 100 so that 50 sessions reach it)" : " (default)"}. ` +
          `Sessions run in waves of ${WAVE} concurrent \`POST /v1/agents/sessions {input}\` (the pool is idle between waves, so it may recycle). ` +
          `RSS sampled every 50 ms; 'settled' = ${settle} ms after the last wave. Engine = the server's app-server child (and anything it spawns); loaded threads from /health, polled every 50 ms.`,
      ],
      data: { idle, withSessions, after, peakEngine, peakServer, maxThreads, recycles, trace },
    };
  },
};
