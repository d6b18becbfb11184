/**
 * Scenario 14: slow consumers. 200 clients open a session's official stream, take its opening state frame and then
 * stop reading (their sockets paused: TCP backpressure only), while one turn streams a 16 MiB firehose (a message of
 * 1678 deltas of 10 000 bytes, as fast as the engine and the server go; ≈1 690 events with the message item and
 * the turn events, the item itself as large again). What the server's memory does meanwhile is the figure.
 * Two fresh servers, one after the other, each running the firehose turn twice: first with nobody watching (the
 * turn's own cost, which also grows the heap to what such a turn needs: RSS rarely shrinks), then, measured, with
 * (b) one client reading along, or (c) the same reader plus the 200 paused clients. Measured: the RSS peak during
 * the turn (sampled every 25 ms) minus the RSS just before it; (c) − (b) is what the paused clients cost. Then 20
 * of the paused clients resume and read to the end (the server catches them up from the log): each must get
 * exactly the frames the reader got, in order; the others disconnect.
 */
import http from "node:http";
import { scripts } from "@codex-agent-api/testkit";
import { COMPLETED, OfficialSession, type Scenario, TRIVIAL_PROMPT } from "../context.js";
import { OFFICIAL, SseLineScanner } from "../http.js";
import { now, rssMiB, sleep } from "../proc.js";
import { type ServerProcess, startServer } from "../server.js";
import type { Row } from "../stats.js";

const PARTS = 1678;
const PART_BYTES = 10_000;

/** The SSE ids of a stream, in order, and whether the turn's completed event was seen. */
class IdScanner {
  readonly ids: string[] = [];
  completed = false;
  bytes = 0;
  private readonly lines = new SseLineScanner((kind, value) => {
    if (kind === "id") this.ids.push(value);
    else if (value === COMPLETED) this.completed = true;
  });

  push(chunk: string): void {
    this.bytes += chunk.length;
    this.lines.push(chunk);
  }
}

interface Client {
  req: http.ClientRequest;
  res: http.IncomingMessage | null;
  scanner: IdScanner;
  ended: Promise<void>;
}

/** Opens the official stream; resolves once its first frame (the session's state) has arrived. */
function openClient(server: ServerProcess, path: string, agent: http.Agent, pause: boolean): Promise<Client> {
  return new Promise((resolve, reject) => {
    const scanner = new IdScanner();
    let endResolve!: () => void;
    const ended = new Promise<void>((r) => {
      endResolve = r;
    });
    const req = http.request(
      new URL(path, server.url),
      { method: "GET", agent, headers: { accept: "text/event-stream", ...OFFICIAL } },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`GET ${path}: HTTP ${res.statusCode}`));
          return;
        }
        res.setEncoding("utf8");
        let first = true;
        res.on("data", (d: string) => {
          scanner.push(d);
          if (first && scanner.ids.length > 0) {
            first = false;
            if (pause) res.pause();
            resolve(client);
          }
        });
        res.on("end", endResolve);
        res.on("close", endResolve);
        res.on("error", endResolve);
        client.res = res;
      },
    );
    const client: Client = { req, res: null, scanner, ended };
    req.on("error", reject);
    req.end();
  });
}

/** Posts the input and waits (polling the session) until its turn is over; the caller's stream reads nothing. */
async function firehoseTurn(server: ServerProcess, sessionId: string, input: string): Promise<number> {
  const t0 = now();
  await server.client.expect(
    202,
    "POST",
    `/v1/agents/sessions/${sessionId}/events`,
    { events: [{ type: "agent.session.input.message", input }] },
    OFFICIAL,
  );
  for (;;) {
    const s = await server.client.expect<{ status: string }>(
      200,
      "GET",
      `/v1/agents/sessions/${sessionId}`,
      undefined,
      OFFICIAL,
    );
    if (s.status === "idle" && now() - t0 > 50) return now() - t0;
    if (now() - t0 > 300_000) throw new Error("the firehose turn did not finish in 5 minutes");
    await sleep(50);
  }
}

/** Samples the server's RSS every 25 ms while `during` runs: the peak. */
async function peakDuring<T>(pid: number, during: () => Promise<T>): Promise<{ value: T; peak: number }> {
  let peak = rssMiB(pid) ?? 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB(pid) ?? 0);
  }, 25);
  try {
    const value = await during();
    peak = Math.max(peak, rssMiB(pid) ?? 0);
    return { value, peak };
  } finally {
    clearInterval(sampler);
  }
}

export const slowConsumers: Scenario = {
  id: "14",
  title: "Slow consumers (200 paused official streams during a 16 MiB firehose turn)",
  async run(ctx) {
    const paused = 200;
    const resumed = 20;
    const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
    const rows: Row[] = [];
    const data: Record<string, unknown> = {};
    const body = (k: number) => `${String(k).padStart(6, "0")}${"x".repeat(PART_BYTES - 6)}`;
    const firehose = (salt: string) =>
      scripts.streamingMessage(
        Array.from({ length: PARTS }, (_, k) => `${salt}${body(k).slice(salt.length)}`),
      );
    const untilCompleted = async (c: Client) => {
      for (let i = 0; !c.scanner.completed; i++) {
        if (i > 12_000) throw new Error("a client did not reach the end of the turn in 4 minutes");
        await sleep(20);
      }
    };

    /** A fresh server: a warm-up firehose nobody watches, then the measured one with `pausedClients` paused. */
    const variant = async (pausedClients: number) => {
      const { dir } = ctx.cleanup.tempDir("slow");
      const server = await startServer(ctx.cleanup, { mockUrl: ctx.mock.url, dataDir: dir });
      try {
        const session = await OfficialSession.open(server);
        await session.turn(TRIVIAL_PROMPT); // starts the thread
        session.close();
        const path = `/v1/agents/sessions/${session.id}/events`;
        const idle = rssMiB(server.pid) ?? 0;
        ctx.mock.enqueue(firehose("a"));
        const warm = await peakDuring(server.pid, () =>
          firehoseTurn(server, session.id, "firehose, unwatched"),
        );

        const clients: Client[] = [];
        for (let i = 0; i < pausedClients; i += 50) {
          const n = Math.min(50, pausedClients - i);
          clients.push(
            ...(await Promise.all(Array.from({ length: n }, () => openClient(server, path, agent, true)))),
          );
        }
        const reader = await openClient(server, path, agent, false);
        const before = rssMiB(server.pid) ?? 0;
        ctx.mock.enqueue(firehose("b"));
        const hose = await peakDuring(server.pid, async () => {
          const ms = await firehoseTurn(server, session.id, "firehose, watched");
          await untilCompleted(reader);
          return ms;
        });
        const after = rssMiB(server.pid) ?? 0;
        let catchUp: { ms: number; peak: number; exact: number } | null = null;
        if (pausedClients > 0) {
          // Some resume (caught up from the log); the rest leave.
          for (const c of clients.slice(resumed)) c.req.destroy();
          const t0 = now();
          const r = await peakDuring(server.pid, async () => {
            for (const c of clients.slice(0, resumed)) c.res?.resume();
            await Promise.all(clients.slice(0, resumed).map(untilCompleted));
          });
          const want = reader.scanner.ids.join(" ");
          const exact = clients.slice(0, resumed).filter((c) => c.scanner.ids.join(" ") === want).length;
          catchUp = { ms: now() - t0, peak: r.peak, exact };
        }
        for (const c of clients) c.req.destroy();
        reader.req.destroy();
        return {
          idle,
          warm: { peak: warm.peak, ms: warm.value },
          before,
          peak: hose.peak,
          after,
          turnMs: hose.value,
          growth: hose.peak - before,
          frames: reader.scanner.ids.length,
          catchUp,
        };
      } finally {
        await server.stop();
      }
    };

    try {
      const reader = await variant(0);
      const withPaused = await variant(paused);
      const added = withPaused.growth - reader.growth;
      const line = (v: typeof reader) =>
        `${v.before.toFixed(0)} → peak ${v.peak.toFixed(0)} MiB, after ${v.after.toFixed(0)} MiB; turn ` +
        `${Math.round(v.turnMs)} ms (warm-up turn nobody watched: ${v.idle.toFixed(0)} → ${v.warm.peak.toFixed(0)} MiB)`;
      rows.push(
        {
          metric: "(b) firehose turn, one client reading along: RSS peak − before",
          unit: "MiB",
          median: reader.growth,
          note: line(reader),
        },
        {
          metric: `(c) the same + ${paused} paused clients`,
          unit: "MiB",
          median: withPaused.growth,
          note: line(withPaused),
        },
        { metric: `${paused} paused clients cost: (c) − (b)`, unit: "MiB", median: added },
      );
      const c = withPaused.catchUp!;
      rows.push({
        metric: `${resumed} of them resume: caught up`,
        unit: "ms",
        median: c.ms,
        note: `server RSS peak ${c.peak.toFixed(0)} MiB; ${c.exact}/${resumed} got exactly the ${withPaused.frames} frames of the reader, in order`,
      });
      data.reader = reader;
      data.paused = withPaused;
      data.addedMiB = added;
      if (c.exact !== resumed)
        throw new Error(`${resumed - c.exact} of ${resumed} resumed clients lost or repeated frames`);
    } finally {
      agent.destroy();
    }
    return {
      id: this.id,
      title: this.title,
      rows,
      targets: [
        {
          name: `RSS added by ${paused} paused subscribers during a 16 MiB turn`,
          value: (data.addedMiB as number | undefined) ?? null,
          op: "<=",
          threshold: 50,
          unit: "MiB",
          detail: "",
        },
      ],
      notes: [
        `Firehose: one message of ${PARTS} deltas × ${PART_BYTES} bytes (16 MiB) streamed by the mock with no delay; ` +
          "each paused client's socket stops reading after the opening state frame (TCP backpressure only).",
        "RSS peaks move with the garbage collector's timing: compare builds side by side (--server-cli), more than once.",
      ],
      data,
    };
  },
};
