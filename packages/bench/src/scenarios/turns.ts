/** Scenarios 1–3: turns through the engine — HTTP (server child process) vs the SDK in-process vs codex exec. */
import type { Thread } from "@codex-agent-api/codex";
import { scripts } from "@codex-agent-api/testkit";
import {
  COMPLETED,
  type Context,
  createTemplateSession,
  execTurn,
  OfficialSession,
  type Scenario,
  TERMINAL,
  TRIVIAL_PROMPT,
  type TurnRig,
  templateTurn,
} from "../context.js";
import { cpuMs, now } from "../proc.js";
import { startServer } from "../server.js";
import { median, type Row, ratio, sampleRow } from "../stats.js";

const row = sampleRow;

async function sdkTurn(thread: Thread) {
  const t0 = now();
  const r = await thread.run(TRIVIAL_PROMPT, { model: "mock-model" });
  const ms = now() - t0;
  if (r.status !== "completed" || r.finalResponse !== "ok") {
    throw new Error(`SDK turn ended ${r.status}: ${r.finalResponse ?? r.error?.message}`);
  }
  return ms;
}

export const turnLatency: Scenario = {
  id: "1",
  title: "Turn latency (trivial follow-up turn)",
  async run(ctx: Context) {
    const rig = await ctx.turnRig();
    const n = ctx.quick ? 15 : 50;
    const execN = ctx.quick ? 6 : 20;
    const freshN = ctx.quick ? 3 : 10;
    const warm = 3;
    const templateId = await createTemplateSession(rig.server);
    const official = await OfficialSession.open(rig.server);
    // The same server with workspace checkpoints off: what checkpointing costs a turn, side by side.
    const { dir } = ctx.cleanup.tempDir("turns-no-checkpoints");
    const bare = await startServer(ctx.cleanup, {
      mockUrl: ctx.mock.url,
      dataDir: `${dir}/server`,
      args: ["--checkpoints", "off"],
    });
    const bareOfficial = await OfficialSession.open(bare);
    const thread = await rig.codex.startThread(rig.threadOptions);
    const legacyThread = await rig.legacy.codex.startThread(rig.legacy.threadOptions);
    // Warm-up: the first turns start the threads (and warm caches); the exec warm-up also creates the thread the
    // resumed runs continue.
    for (let i = 0; i < warm; i++) {
      await templateTurn(rig.server, templateId, TRIVIAL_PROMPT);
      await official.turn(TRIVIAL_PROMPT);
      await bareOfficial.turn(TRIVIAL_PROMPT);
      await sdkTurn(thread);
      await sdkTurn(legacyThread);
    }
    const first = await execTurn(rig, TRIVIAL_PROMPT);
    if (!first.threadId) throw new Error("codex exec reported no thread id");
    await execTurn(rig, TRIVIAL_PROMPT, first.threadId);
    const t: number[] = [];
    const o: number[] = [];
    const ob: number[] = [];
    const s: number[] = [];
    const sl: number[] = [];
    const er: number[] = [];
    const ef: number[] = [];
    // Interleaved, so drift (thermal, caches, growing threads) hits every variant alike.
    let serverCpu = 0;
    const variants: Array<() => Promise<void>> = [
      async () => {
        const c0 = cpuMs(rig.server.pid) ?? 0;
        t.push(await templateTurn(rig.server, templateId, TRIVIAL_PROMPT));
        serverCpu += (cpuMs(rig.server.pid) ?? 0) - c0;
      },
      async () => {
        const c0 = cpuMs(rig.server.pid) ?? 0;
        o.push(await official.turn(TRIVIAL_PROMPT));
        serverCpu += (cpuMs(rig.server.pid) ?? 0) - c0;
      },
      async () => {
        ob.push(await bareOfficial.turn(TRIVIAL_PROMPT));
      },
      async () => {
        s.push(await sdkTurn(thread));
      },
      async () => {
        sl.push(await sdkTurn(legacyThread));
      },
    ];
    for (let i = 0; i < n; i++) {
      // The order rotates, so no variant always runs first after an idle moment (or after an exec process).
      for (let k = 0; k < variants.length; k++) await variants[(i + k) % variants.length]!();
      if (i % Math.ceil(n / execN) === 0 && er.length < execN) {
        er.push((await execTurn(rig, TRIVIAL_PROMPT, first.threadId)).ms);
      }
      if (i % Math.ceil(n / freshN) === 0 && ef.length < freshN)
        ef.push((await execTurn(rig, TRIVIAL_PROMPT)).ms);
    }
    official.close();
    bareOfficial.close();
    await bare.stop();
    const sdk = { ref: s, name: "SDK" };
    const http = { ref: t, name: "HTTP template" };
    const rows: Row[] = [
      row("SDK direct: thread.run", "ms", s),
      row("SDK direct, plain workspace-write sandbox (no read isolation)", "ms", sl, sdk),
      row("HTTP template: POST events → SSE turn.completed", "ms", t, sdk),
      row("HTTP official: POST events 202 → stream turn.completed", "ms", o, sdk),
      row("HTTP official, --checkpoints off", "ms", ob, sdk),
      row("codex exec resume per turn (follow-up)", "ms", er, http),
      row("codex exec per turn (fresh thread)", "ms", ef, http),
    ];
    return {
      id: this.id,
      title: this.title,
      rows,
      targets: [
        {
          name: "HTTP/SDK turn latency (template)",
          value: ratio(median(t), median(s)),
          op: "<=",
          threshold: 1.1,
          unit: "×",
          detail:
            `official dialect: ${ratio(median(o), median(s))?.toFixed(2) ?? "—"}×; ` +
            `official with checkpoints off: ${ratio(median(ob), median(s))?.toFixed(2) ?? "—"}×`,
        },
        {
          name: "exec/HTTP turn latency",
          value: ratio(median(er), median(t)),
          op: ">=",
          threshold: 5,
          unit: "×",
          detail: `exec resume (follow-up) vs HTTP template; fresh exec: ${ratio(median(ef), median(t))?.toFixed(2) ?? "—"}×`,
        },
      ],
      notes: [
        "SDK and server run the same engine config (the server's config.toml: agent commands under its permission " +
          "profile); the plain-sandbox row shows what that isolation costs the engine per turn.",
        `Each sample is a follow-up turn on one existing session/thread (${warm} warm-up turns each); variants interleaved, their order rotating.`,
        "Server: separate process (`cli.js serve`), 1 engine; SDK: Codex.start in the bench process; same mock, same engine config. " +
          `Server process CPU per HTTP turn: ${(serverCpu / (2 * n)).toFixed(1)} ms (10 ms ticks, averaged over both dialects).`,
        "exec resume: `codex exec --json --skip-git-repo-check resume <thread> -- <prompt>`, one process per turn (the original " +
          "template's follow-up turn); fresh: the same without `resume` (a new thread each time).",
      ],
      data: {
        template: t,
        official: o,
        officialNoCheckpoints: ob,
        sdk: s,
        sdkPlainSandbox: sl,
        execResume: er,
        execFresh: ef,
        serverCpuMsPerHttpTurn: serverCpu / (2 * n),
      },
    };
  },
};

/** One new session + its first trivial turn through HTTP (template create with input, streamed). */
async function httpSessionTurn(rig: TurnRig): Promise<{ ms: number; sessionId: string }> {
  const t0 = now();
  let sessionId = "";
  const stream = rig.server.client.sse(
    "POST",
    "/v1/agents/sessions",
    { agent: { model: "mock-model" }, input: TRIVIAL_PROMPT, stream: true },
    {},
    (f) => {
      if (f.event === "agent.session.created") sessionId = (JSON.parse(f.data) as { id: string }).id;
    },
  );
  const end = await stream.next((f) => TERMINAL.has(f.event ?? ""));
  if (end.event !== COMPLETED) throw new Error(`turn ended ${end.event}: ${end.data}`);
  const ms = end.t - t0;
  await stream.ended;
  return { ms, sessionId };
}

async function sdkThreadTurn(rig: TurnRig): Promise<{ ms: number; threadId: string }> {
  const t0 = now();
  const thread = await rig.codex.startThread(rig.threadOptions);
  const r = await thread.run(TRIVIAL_PROMPT, { model: "mock-model" });
  if (r.status !== "completed") throw new Error(`SDK turn ended ${r.status}`);
  return { ms: now() - t0, threadId: thread.id };
}

export const concurrency: Scenario = {
  id: "2",
  title: "Concurrency (new session + one trivial turn each, all at once; 1 engine process each side)",
  async run(ctx: Context) {
    const rig = await ctx.turnRig();
    const levels = [1, 10, 50];
    const reps: Record<number, number> = ctx.quick ? { 1: 2, 10: 1, 50: 1 } : { 1: 5, 10: 3, 50: 3 };
    // CPU time (ms) of every process involved, so the throughput ratio can be explained on a CPU-bound box.
    const serverEngine = () => rig.server.memory().enginePids[0];
    const cpuNow = (side: "http" | "sdk") => {
      const bench = process.cpuUsage();
      const enginePid = side === "http" ? serverEngine() : rig.codex.pid;
      return {
        server: side === "http" ? (cpuMs(rig.server.pid) ?? 0) : 0,
        engine: enginePid ? (cpuMs(enginePid) ?? 0) : 0,
        bench: (bench.user + bench.system) / 1000,
      };
    };
    const cpuPerSession = (a: ReturnType<typeof cpuNow>, b: ReturnType<typeof cpuNow>, k: number) => ({
      server: (b.server - a.server) / k,
      engine: (b.engine - a.engine) / k,
      bench: (b.bench - a.bench) / k,
    });
    const round = async (side: "http" | "sdk", k: number) => {
      const c0 = cpuNow(side);
      const t0 = now();
      if (side === "http") {
        const res = await Promise.all(Array.from({ length: k }, () => httpSessionTurn(rig)));
        const wall = now() - t0;
        const cpu = cpuPerSession(c0, cpuNow(side), k);
        // Deleting a session unloads its thread from the engine (keeps the pool below its recycle bound).
        await Promise.all(
          res.map((r) => rig.server.client.expect(200, "DELETE", `/v1/agents/sessions/${r.sessionId}`)),
        );
        return { wall, latencies: res.map((r) => r.ms), cpu };
      }
      const res = await Promise.all(Array.from({ length: k }, () => sdkThreadTurn(rig)));
      const wall = now() - t0;
      const cpu = cpuPerSession(c0, cpuNow(side), k);
      await Promise.all(res.map((r) => rig.codex.unloadThread(r.threadId)));
      return { wall, latencies: res.map((r) => r.ms), cpu };
    };
    const warmup = ctx.quick ? 2 : 10;
    await round("http", warmup);
    await round("sdk", warmup);
    const rows: Row[] = [];
    const data: Record<string, unknown> = {};
    let ratio50: number | null = null;
    for (const k of levels) {
      const wall = { http: [] as number[], sdk: [] as number[] };
      const lat = { http: [] as number[], sdk: [] as number[] };
      type Cpu = { server: number; engine: number; bench: number };
      const cpu = { http: [] as Cpu[], sdk: [] as Cpu[] };
      for (let r = 0; r < reps[k]!; r++) {
        for (const side of r % 2 === 0 ? (["http", "sdk"] as const) : (["sdk", "http"] as const)) {
          const res = await round(side, k);
          wall[side].push(res.wall);
          lat[side].push(...res.latencies);
          cpu[side].push(res.cpu);
        }
      }
      const tput = { http: wall.http.map((w) => (k * 1000) / w), sdk: wall.sdk.map((w) => (k * 1000) / w) };
      const sdkRef = { ref: wall.sdk, name: "SDK" };
      rows.push(
        row(`${k} at once: wall, SDK`, "ms", wall.sdk),
        row(`${k} at once: wall, HTTP`, "ms", wall.http, sdkRef),
        row(`${k} at once: turns/s, SDK`, "turns/s", tput.sdk),
        row(`${k} at once: turns/s, HTTP`, "turns/s", tput.http, { ref: tput.sdk, name: "SDK" }),
        row(`${k} at once: per-session latency, HTTP`, "ms", lat.http, { ref: lat.sdk, name: "SDK" }),
      );
      const total = (c: Cpu) => c.server + c.engine + c.bench;
      const part = (xs: Cpu[], key: keyof Cpu) => median(xs.map((c) => c[key])).toFixed(0);
      rows.push(
        {
          ...row(`${k} at once: CPU per session, SDK`, "ms", cpu.sdk.map(total)),
          p95: null,
          note: `engine ${part(cpu.sdk, "engine")} + bench ${part(cpu.sdk, "bench")}`,
        },
        {
          ...row(`${k} at once: CPU per session, HTTP`, "ms", cpu.http.map(total), {
            ref: cpu.sdk.map(total),
            name: "SDK",
          }),
          p95: null,
          note: `server ${part(cpu.http, "server")} + engine ${part(cpu.http, "engine")} + bench ${part(cpu.http, "bench")}`,
        },
      );
      if (k === 50) ratio50 = ratio(median(tput.http), median(tput.sdk));
      data[String(k)] = { wall, latencies: lat, cpuPerSession: cpu };
    }
    return {
      id: this.id,
      title: this.title,
      rows,
      targets: [
        {
          name: "HTTP/SDK throughput at 50 sessions",
          value: ratio50,
          op: ">=",
          threshold: 0.9,
          unit: "×",
        },
      ],
      notes: [
        "HTTP: template `POST /v1/agents/sessions {input, stream:true}` per session (create + first turn, thread/start " +
          "included), read until turn.completed; SDK: startThread + thread.run. Wall = first request to last completion.",
        "Between rounds the sessions are deleted / threads unloaded on both sides; HTTP and SDK rounds alternate order.",
        `Rounds per level: ${levels.map((k) => `${k}→${reps[k]}`).join(", ")} (median over rounds; p95 of latency over all sessions).`,
        "CPU per session: CPU time of the server, of its engine (HTTP) or of the SDK's engine, and of this process (client + " +
          "mock), during the round ÷ sessions (10 ms ticks for the child processes).",
      ],
      data,
    };
  },
};

const goalScripts = () => [
  scripts.assistantMessage("Step one done."),
  scripts.assistantMessage("Step two done."),
  scripts.updateGoal("complete"),
  scripts.assistantMessage("Goal complete."),
];

export const goal: Scenario = {
  id: "3",
  title: "Goal (first turn + two continuations: message, message, update_goal complete + final)",
  async run(ctx: Context) {
    const rig = await ctx.turnRig();
    const n = ctx.quick ? 4 : 15;
    const objective = "Bench goal: finish in three steps";
    const templateId = await createTemplateSession(rig.server);
    const official = await OfficialSession.open(rig.server);
    const thread = await rig.codex.startThread(rig.threadOptions);
    const expectDrained = (what: string) => {
      const left = ctx.mock.pending();
      if (left !== 0) {
        ctx.mock.reset();
        throw new Error(`${what}: ${left} scripted response(s) left unused`);
      }
    };
    const viaTemplate = async () => {
      ctx.mock.enqueue(goalScripts());
      const ms = await templateTurn(rig.server, templateId, objective, { goal: { max_turns: 5 } });
      expectDrained("template goal");
      return ms;
    };
    const viaOfficial = async () => {
      ctx.mock.enqueue(goalScripts());
      const ms = await official.turn(objective, { goal: { max_turns: 5 } });
      expectDrained("official goal");
      return ms;
    };
    const viaSdk = async () => {
      ctx.mock.enqueue(goalScripts());
      const t0 = now();
      const turn = await thread.turn(objective, { goal: { tokenBudget: 1_000_000 }, model: "mock-model" });
      const r = await turn.run();
      const ms = now() - t0;
      if (r.status !== "completed" || r.engineTurns !== 3) {
        throw new Error(`SDK goal ended ${r.status} after ${r.engineTurns} engine turns`);
      }
      expectDrained("SDK goal");
      return ms;
    };
    // Warm-up: a plain turn each (thread start), then one goal each.
    await templateTurn(rig.server, templateId, TRIVIAL_PROMPT);
    await official.turn(TRIVIAL_PROMPT);
    await thread.run(TRIVIAL_PROMPT);
    await viaTemplate();
    await viaOfficial();
    await viaSdk();
    const t: number[] = [];
    const o: number[] = [];
    const s: number[] = [];
    const variants = [
      async () => t.push(await viaTemplate()),
      async () => o.push(await viaOfficial()),
      async () => s.push(await viaSdk()),
    ];
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < variants.length; k++) await variants[(i + k) % variants.length]!();
    }
    official.close();
    const sdk = { ref: s, name: "SDK" };
    return {
      id: this.id,
      title: this.title,
      rows: [
        row("SDK: thread.turn(goal) → run", "ms", s),
        row("HTTP template: POST events {goal} → turn.completed", "ms", t, sdk),
        row("HTTP official: events[].goal 202 → turn.completed", "ms", o, sdk),
      ],
      targets: [],
      notes: [
        "Each sample replaces the goal on the same session/thread; 4 model requests, 3 engine turns, one logical turn. " +
          "Variants interleaved, their order rotating.",
      ],
      data: { template: t, official: o, sdk: s },
    };
  },
};
