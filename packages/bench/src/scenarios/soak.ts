/**
 * Scenario 9: a soak of the server as `npm start -- --mock-model` runs it (the scripted model in the server's own
 * process): clients create sessions, run three turns each and delete them, for a while; the server's memory at the
 * start and at the end must stay flat (the in-process mock once kept every request it received: +1 GiB in 5 min).
 */
import type { Context, Scenario } from "../context.js";
import { now, sleep } from "../proc.js";
import { startServer } from "../server.js";
import { type Row, ratio } from "../stats.js";

const CLIENTS = 6;
const TURNS = 3;

export const soak: Scenario = {
  id: "9",
  title: `Soak with the in-process mock model (${CLIENTS} clients; sessions of ${TURNS} turns, each deleted)`,
  async run(ctx: Context) {
    const seconds = ctx.quick ? 20 : 90;
    const { dir } = ctx.cleanup.tempDir("soak");
    const server = await startServer(ctx.cleanup, {
      mockUrl: "in-process",
      dataDir: dir,
      args: ["--max-sessions", "100000"],
    });
    const client = server.client;
    const session = async (k: number) => {
      const { id } = await client.expect<{ id: string }>(200, "POST", "/v1/agents/sessions", {
        agent: { model: "mock-model" },
      });
      for (let t = 0; t < TURNS; t++) {
        await client.expect(200, "POST", `/v1/agents/sessions/${id}/events`, {
          input: `Reply with exactly: soak ${k}.${t}`,
          stream: false,
        });
      }
      await client.expect(200, "DELETE", `/v1/agents/sessions/${id}`);
    };
    try {
      // Warm-up (engine, caches), then the baseline.
      for (let i = 0; i < 5; i++) await session(-1);
      await sleep(1000);
      const start = server.memory().serverMiB ?? 0;
      let peak = start;
      let done = 0;
      const t0 = now();
      const deadline = t0 + seconds * 1000;
      const sampler = setInterval(() => {
        peak = Math.max(peak, server.memory().serverMiB ?? 0);
      }, 500);
      try {
        await Promise.all(
          Array.from({ length: CLIENTS }, async () => {
            while (now() < deadline) {
              await session(done);
              done++;
            }
          }),
        );
      } finally {
        clearInterval(sampler);
      }
      const elapsed = (now() - t0) / 1000;
      await sleep(1000);
      const end = server.memory().serverMiB ?? 0;
      const growthPer1000 = done > 0 ? ((end - start) / done) * 1000 : null;
      const rows: Row[] = [
        { metric: "sessions (3 turns each, then deleted)", unit: "", median: done },
        { metric: "turns per second", unit: "turns/s", median: (done * TURNS) / elapsed },
        { metric: "server RSS at the start", unit: "MiB", median: start },
        { metric: "server RSS peak", unit: "MiB", median: peak },
        { metric: "server RSS at the end", unit: "MiB", median: end, ratio: ratio(end, start), vs: "start" },
        { metric: "server RSS growth per 1000 sessions", unit: "MiB", median: growthPer1000 },
      ];
      return {
        id: "9",
        title: this.title,
        rows,
        targets: [
          {
            name: "soak: server RSS end − start",
            value: end - start,
            op: "<=",
            threshold: 50,
            unit: "MiB",
            detail: `${done} sessions in ${elapsed.toFixed(0)} s`,
          },
        ],
        notes: [],
        data: { sessions: done, seconds: elapsed, startMiB: start, peakMiB: peak, endMiB: end },
      };
    } finally {
      await server.stop();
    }
  },
};
