/**
 * Scenario 15: what a container per session costs. Three servers side by side on the same mock: the local backend
 * (the engine's sandbox on this host), the container backend with no warm pool (each session's container made on
 * demand) and with a warm pool of 2. Rows: session create → its first command's turn completed (the container made
 * or claimed, the executor added to the engine, one `echo`), and a trivial turn in an existing session; interleaved
 * per round; then the memory each idle container holds; then, with no server at all, a sandbox and its first command
 * through its executor (sandbox-direct.ts: the anchors' measure). Skipped (reported so) when the machine has no
 * Podman or sandbox image.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type Scenario, startTurnRig, TRIVIAL_PROMPT, templateTurn } from "../context.js";
import { now } from "../proc.js";
import { type ServerProcess, startServer } from "../server.js";
import { median, type Row, ratio, sampleRow } from "../stats.js";
import { sandboxDirect } from "./sandbox-direct.js";

const COMMAND_PROMPT =
  "Run this exact shell command and wait for it to finish: echo sandboxed. Then reply with exactly: ok";

type Kind = "local" | "cold" | "warm";
const LABEL: Record<Kind, string> = {
  local: "local backend",
  cold: "container, made on demand",
  warm: "container, from a warm pool of 2",
};

/**
 * A template session with a workspace of its own (the official dialect's default): the template dialect's shared
 * root would be bind-mounted into a container made for it, which no warm container (its own volume) can be.
 */
async function createOwnSession(server: ServerProcess): Promise<string> {
  const s = await server.client.expect<{ id: string }>(200, "POST", "/v1/agents/sessions", {
    agent: { model: "mock-model" },
    workspace_mode: "session",
  });
  return s.id;
}

/** The memory of a server's running containers per container, from its /metrics (the sandboxes' cgroups). */
async function idleMemory(server: ServerProcess, label: string): Promise<Row> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? Number.NaN);
  const bytes = value(/^codex_agent_api_sandbox_memory_bytes (\S+)$/m);
  const running =
    value(/^codex_agent_api_sandboxes\{state="in_use"\} (\S+)$/m) +
    value(/^codex_agent_api_sandboxes\{state="warm"\} (\S+)$/m);
  const each = running > 0 ? bytes / running / 2 ** 20 : null;
  return { metric: `memory per idle container, ${label}`, unit: "MiB", n: running, median: each };
}

function podmanReady(): string | null {
  try {
    execFileSync("podman", ["image", "exists", "localhost/codex-agent-sandbox:0.1.0"], { stdio: "ignore" });
    return null;
  } catch {
    return "no podman or no sandbox image (bash packages/sandbox/scripts/build-image.sh)";
  }
}

export const sandboxes: Scenario = {
  id: "15",
  title: "Sandboxes: a container per session vs the local backend",
  async run(ctx) {
    const missing = podmanReady();
    if (missing) {
      return { id: this.id, title: this.title, rows: [], targets: [], notes: [`skipped: ${missing}`] };
    }
    const rounds = ctx.quick ? 5 : 20;
    // Loop-mounted workspace volumes need a real file system (not a tmpfs).
    const sandboxRoot = mkdtempSync("/var/tmp/cas-bench-sbx-");
    ctx.cleanup.add(`rm ${sandboxRoot}`, () => rmSync(sandboxRoot, { recursive: true, force: true }));
    const container = (warm: number, name: string) => [
      "--sandbox-backend",
      "container",
      "--sandbox-dir",
      join(sandboxRoot, name),
      "--sandbox-warm",
      String(warm),
      "--sandbox-size",
      "small",
      "--sandbox-disk",
      "256",
    ];
    const servers: Record<Kind, ServerProcess> = {
      local: await startServer(ctx.cleanup, {
        mockUrl: ctx.mock.url,
        dataDir: ctx.cleanup.tempDir("sbx-local").dir,
      }),
      cold: await startServer(ctx.cleanup, {
        mockUrl: ctx.mock.url,
        dataDir: ctx.cleanup.tempDir("sbx-cold").dir,
        args: container(0, "cold"),
      }),
      warm: await startServer(ctx.cleanup, {
        mockUrl: ctx.mock.url,
        dataDir: ctx.cleanup.tempDir("sbx-warm").dir,
        args: container(2, "warm"),
      }),
    };
    // The engine alone (the SDK in this process, the server's engine config): a new thread's first command turn.
    const rig = await startTurnRig(ctx);
    const engineFirst: number[] = [];
    const kinds: Kind[] = ["local", "cold", "warm"];
    const first: Record<Kind, number[]> = { local: [], cold: [], warm: [] };
    const trivial: Record<Kind, number[]> = { local: [], cold: [], warm: [] };
    const made: Record<Kind, string[]> = { local: [], cold: [], warm: [] };
    const idle: Row[] = [];
    try {
      // One unmeasured round: first engine start, image pages.
      for (let r = -1; r < rounds; r++) {
        for (const kind of kinds) {
          const server = servers[kind];
          const t0 = now();
          const id = await createOwnSession(server);
          made[kind].push(id);
          await templateTurn(server, id, COMMAND_PROMPT);
          const createToCommand = now() - t0;
          const turn = await templateTurn(server, id, TRIVIAL_PROMPT);
          if (r < 0) continue;
          first[kind].push(createToCommand);
          trivial[kind].push(turn);
        }
        const t0 = now();
        const thread = await rig.codex.startThread(rig.threadOptions);
        await thread.run(COMMAND_PROMPT, { model: "mock-model" });
        if (r >= 0) engineFirst.push(now() - t0);
      }
      // What the idle containers (every session's, the warm pool's) hold: their cgroups' memory, per container.
      for (const kind of ["cold", "warm"] as const) idle.push(await idleMemory(servers[kind], LABEL[kind]));
    } finally {
      for (const kind of kinds) {
        for (const id of made[kind]) {
          await servers[kind].client.request("DELETE", `/v1/agents/sessions/${id}`).catch(() => undefined);
        }
        await servers[kind].stop();
      }
      await rig.close();
    }
    // The anchors' own measure: a sandbox and its first command, no model (after the servers: nothing beside it).
    const direct = await sandboxDirect(sandboxRoot, rounds);
    const row = (metric: string, xs: number[], ref?: number[]): Row =>
      sampleRow(metric, "ms", xs, ref ? { ref, name: "local backend" } : undefined);
    return {
      id: this.id,
      title: this.title,
      rows: [
        ...kinds.map((k) =>
          row(`create → first command done, ${LABEL[k]}`, first[k], k === "local" ? undefined : first.local),
        ),
        ...kinds.map((k) =>
          row(`trivial turn, ${LABEL[k]}`, trivial[k], k === "local" ? undefined : trivial.local),
        ),
        row("the engine alone: new thread → first command turn (SDK direct, local sandbox)", engineFirst),
        row("sandbox → first command result, executor direct (no model), made on demand", direct.cold),
        row("sandbox → first command result, executor direct (no model), from a warm pool of 2", direct.warm),
        ...idle,
      ],
      targets: [
        {
          name: "sandbox + first command, warm pool (p50)",
          value: median(direct.warm),
          op: "<=",
          threshold: 100,
          unit: "ms",
          detail: `made on demand: ${median(direct.cold)?.toFixed(0) ?? "—"} ms; anchors 110 and 440 ms (no model)`,
        },
        {
          name: "session create → first command, made on demand (p50)",
          value: median(first.cold),
          op: "<=",
          threshold: 1000,
          unit: "ms",
          detail:
            `from the warm pool: ${median(first.warm)?.toFixed(0) ?? "—"} ms; the engine alone, a new thread's ` +
            `first command turn: ${median(engineFirst)?.toFixed(0) ?? "—"} ms`,
        },
        {
          name: "trivial turn, container / local",
          value: ratio(median(trivial.warm), median(trivial.local)),
          op: "<=",
          threshold: 1.15,
          unit: "×",
          detail: `made on demand: ${ratio(median(trivial.cold), median(trivial.local))?.toFixed(2) ?? "—"}×`,
        },
      ],
      notes: [
        "Template dialect: POST a session with a workspace of its own, then POST its first input (one `echo`), until turn.completed; then a " +
          "trivial turn on the same session. Servers interleaved per round; sessions deleted at the end (their " +
          "containers with them). Warm: the pool refills in the background while the other two servers run their " +
          "round.",
        "Executor direct: the sandbox package's backend in the bench process (no server, no engine, no model), a " +
          "small sandbox made or claimed, its executor connected, `echo` run to its end; the anchors' measure.",
      ],
      data: { first, trivial, direct, engineFirst },
    };
  },
};
