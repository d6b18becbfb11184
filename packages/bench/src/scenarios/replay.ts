/** Scenario 6: a reconnecting client replays a 100 000-event session log (`Last-Event-ID: 0`). */
import type { Context, Scenario } from "../context.js";
import { OFFICIAL, seqOf } from "../http.js";
import { cpuMs, now } from "../proc.js";
import { openStore, seedEventLog, workspaceOf } from "../seed.js";
import { type ServerProcess, startServer } from "../server.js";
import { median, type Row, sampleRow } from "../stats.js";

const EVENTS = 100_000;

/** ms from sending the request to receiving the frame of event `lastSeq` (first byte time and frames too). */
async function replay(server: ServerProcess, sessionId: string, lastSeq: number, official: boolean) {
  const cpu0 = cpuMs(server.pid) ?? 0;
  const t0 = now();
  let firstFrame: number | null = null;
  let bytes = 0;
  const stream = server.client.sse(
    "GET",
    `/v1/agents/sessions/${sessionId}/events`,
    undefined,
    { "last-event-id": "0", ...(official ? OFFICIAL : {}) },
    (f) => {
      firstFrame ??= f.t;
      bytes += f.data.length;
    },
  );
  const last = await stream.next((f) => seqOf(f.id) >= lastSeq, 60_000);
  const ms = last.t - t0;
  const serverCpuMs = (cpuMs(server.pid) ?? 0) - cpu0;
  const frames = stream.frames;
  stream.close();
  return { ms, serverCpuMs, firstMs: (firstFrame ?? last.t) - t0, frames, dataBytes: bytes };
}

export const replayLog: Scenario = {
  id: "6",
  title: `Replay of a ${EVENTS.toLocaleString("en-US")}-event session log (GET …/events, Last-Event-ID: 0)`,
  async run(ctx: Context) {
    const runs = ctx.quick ? 2 : 7;
    const { dir } = ctx.cleanup.tempDir("replay");
    const store = openStore(dir);
    const t0 = now();
    const sessionId = await seedEventLog(store, workspaceOf(dir), EVENTS);
    const seedMs = now() - t0;
    // Reference: the same log read from the store in this process, in the hub's page size (1000).
    const readMs: number[] = [];
    for (let r = 0; r < runs; r++) {
      const s = now();
      let after = 0;
      for (;;) {
        const page = await store.readEvents(sessionId, after, 1000);
        if (page.length === 0) break;
        after = page.at(-1)!.seq;
      }
      readMs.push(now() - s);
    }
    await store.close();
    const server = await startServer(ctx.cleanup, { mockUrl: ctx.mock.url, dataDir: dir });
    const official: number[] = [];
    const template: number[] = [];
    const first: number[] = [];
    const cpu = { official: [] as number[], template: [] as number[] };
    let info: Record<string, unknown> = {};
    try {
      // Template: the turn's frames (session.created and the closing session status are not part of a turn).
      await replay(server, sessionId, EVENTS, true); // warm-up
      if (!ctx.quick) await replay(server, sessionId, EVENTS - 1, false);
      for (let r = 0; r < runs; r++) {
        const o = await replay(server, sessionId, EVENTS, true);
        official.push(o.ms);
        cpu.official.push(o.serverCpuMs);
        first.push(o.firstMs);
        const t = await replay(server, sessionId, EVENTS - 1, false);
        template.push(t.ms);
        cpu.template.push(t.serverCpuMs);
        info = { officialFrames: o.frames, officialDataBytes: o.dataBytes, templateFrames: t.frames };
      }
    } finally {
      await server.stop();
    }
    const ref = { ref: readMs, name: "store read" };
    const row = (metric: string, samples: number[], vs?: typeof ref): Row =>
      sampleRow(metric, "ms", samples, vs);
    const rate = (ms: number[]) => Math.round(EVENTS / (median(ms) / 1000));
    return {
      id: this.id,
      title: this.title,
      rows: [
        row("store read, in-process (readEvents pages of 1000)", readMs),
        {
          ...row("official: request → last event", official, ref),
          note: `${rate(official).toLocaleString("en-US")} events/s`,
        },
        row("official: request → first event", first),
        {
          ...row("official: server CPU per replay", cpu.official),
          note: `${((median(cpu.official) * 1000) / EVENTS).toFixed(1)} µs per event (10 ms ticks)`,
        },
        {
          ...row("template: request → turn's last event", template, ref),
          note: `${rate(template).toLocaleString("en-US")} events/s`,
        },
        {
          ...row("template: server CPU per replay", cpu.template),
          note: `${((median(cpu.template) * 1000) / EVENTS).toFixed(1)} µs per event`,
        },
      ],
      targets: [
        {
          name: "100 000-event replay (official)",
          value: median(official),
          op: "<=",
          threshold: 1000,
          unit: "ms",
          detail: `template dialect: ${Math.round(median(template))} ms`,
        },
      ],
      notes: [
        `Seeded directly into SQLite (${Math.round(seedMs)} ms): one turn whose agent message streamed ${EVENTS - 6} deltas. ` +
          "Server child process; the client reads (and parses) every frame until the last event's id.",
        `Frames: official ${String(info.officialFrames)} (turn.started renders as 2), template ${String(info.templateFrames)}.`,
      ],
      data: { official, template, first, serverCpuMs: cpu, storeRead: readMs, seedMs, ...info },
    };
  },
};
