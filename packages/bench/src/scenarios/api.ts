/** Scenario 4: request throughput of routes that never touch the engine (autocannon, in this process). */
import autocannon from "autocannon";
import type { Context, Scenario } from "../context.js";
import { OFFICIAL } from "../http.js";
import { openStore, seedItems, seedSessions, workspaceOf } from "../seed.js";
import { type ServerProcess, startServer } from "../server.js";
import { type Row, ratio, type Target } from "../stats.js";

interface Endpoint {
  name: string;
  method: "GET" | "POST";
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

const CONNECTIONS = 50;

async function measure(server: ServerProcess, e: Endpoint, seconds: number) {
  const opts = {
    url: server.url + e.path,
    method: e.method,
    connections: CONNECTIONS,
    headers: { ...(e.body !== undefined ? { "content-type": "application/json" } : {}), ...e.headers },
    ...(e.body !== undefined ? { body: JSON.stringify(e.body) } : {}),
  };
  await autocannon({ ...opts, amount: 500 }); // warm-up (JIT, statement caches, connections)
  const r = await autocannon({ ...opts, duration: seconds });
  return r;
}

export const apiThroughput: Scenario = {
  id: "4",
  title: `API throughput without the engine (autocannon, ${CONNECTIONS} connections, server child process)`,
  async run(ctx: Context) {
    const seconds = ctx.quick ? 5 : 15;
    const { dir } = ctx.cleanup.tempDir("api");
    const store = openStore(dir);
    await seedSessions(store, 1000, { workspace: workspaceOf(dir), history: true });
    const [sessionId] = await seedSessions(store, 1, { workspace: workspaceOf(dir) });
    await seedItems(store, sessionId!, 100);
    await store.close();
    const endpoints: Endpoint[] = [
      { name: "GET /health", method: "GET", path: "/health" },
      { name: "GET session (template)", method: "GET", path: `/v1/agents/sessions/${sessionId}` },
      {
        name: "GET session (official)",
        method: "GET",
        path: `/v1/agents/sessions/${sessionId}`,
        headers: OFFICIAL,
      },
      // The template lists the 50 agent messages (it hides user messages); the official page holds all 100.
      { name: "GET items, 100 (template)", method: "GET", path: `/v1/agents/sessions/${sessionId}/items` },
      ...(ctx.quick
        ? []
        : [
            {
              name: "GET items ?limit=100 (official)",
              method: "GET" as const,
              path: `/v1/agents/sessions/${sessionId}/items?limit=100`,
              headers: OFFICIAL,
            },
          ]),
      {
        name: "POST /v1/agents (template)",
        method: "POST",
        path: "/v1/agents",
        body: { model: "mock-model", name: "bench" },
      },
    ];
    const rows: Row[] = [];
    const data: Record<string, unknown> = {};
    const notes: string[] = [];
    let health: number | null = null;
    let getSession: number | null = null;
    let getSessionOfficial: number | null = null;
    const record = (name: string, r: autocannon.Result) => {
      const rps = r.requests.p50;
      if (name === "GET /health") health = rps;
      rows.push({
        metric: `${name}: req/s`,
        unit: "req/s",
        n: r.requests.total,
        median: rps,
        ratio: name === "GET /health" ? null : ratio(rps, health),
        vs: name === "GET /health" ? null : "GET /health",
        note: r.non2xx || r.errors ? `${r.non2xx} non-2xx, ${r.errors} errors` : null,
      });
      rows.push({
        metric: `${name}: latency`,
        unit: "ms",
        median: r.latency.p50,
        p95: null,
        p99: r.latency.p99,
      });
      data[name] = {
        requestsPerSecond: r.requests,
        latency: r.latency,
        non2xx: r.non2xx,
        errors: r.errors,
      };
      return rps;
    };
    const server = await startServer(ctx.cleanup, { mockUrl: ctx.mock.url, dataDir: dir });
    try {
      for (const e of endpoints) {
        ctx.log(`  ${e.name}`);
        const rps = record(
          e.name,
          await measure(server, e, e.name === "GET /health" && ctx.quick ? 2 : seconds),
        );
        if (e.name === "GET session (template)") getSession = rps;
        if (e.name === "GET session (official)") getSessionOfficial = rps;
      }
    } finally {
      await server.stop();
    }
    if (!ctx.quick) {
      // The cost of the default log level: Fastify logs every request at info (two JSON lines to a pipe).
      const info = await startServer(ctx.cleanup, {
        mockUrl: ctx.mock.url,
        dataDir: dir,
        args: ["--log-level", "info"],
      });
      try {
        record("GET session (template), --log-level info", await measure(info, endpoints[1]!, seconds));
      } finally {
        await info.stop();
      }
      notes.push(
        "The `--log-level info` row: same server with request logging on (stdout is a pipe drained by the bench).",
      );
    }
    const targets: Target[] = [
      {
        name: "GET session req/s (template)",
        value: getSession,
        op: ">=",
        threshold: 5000,
        unit: "req/s",
        detail: `official dialect: ${getSessionOfficial === null ? "—" : Math.round(getSessionOfficial)} req/s`,
      },
    ];
    notes.unshift(
      `Seeded directly into SQLite before start: 1001 sessions (1000 with a completed turn, 2 items, 7 events), one with 100 items. ` +
        `Each route: 500-request warm-up, then ${seconds} s; req/s = median of the per-second samples; server at --log-level warn.`,
      "autocannon runs in the bench process (one core), the server in its own (the other core).",
      "Of the 100 items, the template's /items shows the 50 agent messages (it hides user messages); the official page has all 100.",
    );
    return { id: this.id, title: this.title, rows, targets, notes, data };
  },
};
