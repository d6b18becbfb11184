/**
 * Scenario 15: what a container per session costs. Three servers side by side on the same mock: the local backend
 * (the engine's sandbox on this host), the container backend with no warm pool (each session's container made on
 * demand) and with a warm pool of 2. Rows: session create → its first command's turn completed (the container made
 * or claimed, the executor added to the engine, one `echo`), and a trivial turn in an existing session; interleaved
 * per round. Skipped (reported so) when the machine has no Podman or sandbox image.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createTemplateSession, type Scenario, TRIVIAL_PROMPT, templateTurn } from "../context.js";
import { now } from "../proc.js";
import { type ServerProcess, startServer } from "../server.js";
import { type Row, sampleRow } from "../stats.js";

const COMMAND_PROMPT =
  "Run this exact shell command and wait for it to finish: echo sandboxed. Then reply with exactly: ok";

type Kind = "local" | "cold" | "warm";
const LABEL: Record<Kind, string> = {
  local: "local backend",
  cold: "container, made on demand",
  warm: "container, from a warm pool of 2",
};

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
    const kinds: Kind[] = ["local", "cold", "warm"];
    const first: Record<Kind, number[]> = { local: [], cold: [], warm: [] };
    const trivial: Record<Kind, number[]> = { local: [], cold: [], warm: [] };
    const made: Record<Kind, string[]> = { local: [], cold: [], warm: [] };
    try {
      // One unmeasured round: first engine start, image pages.
      for (let r = -1; r < rounds; r++) {
        for (const kind of kinds) {
          const server = servers[kind];
          const t0 = now();
          const id = await createTemplateSession(server);
          made[kind].push(id);
          await templateTurn(server, id, COMMAND_PROMPT);
          const createToCommand = now() - t0;
          const turn = await templateTurn(server, id, TRIVIAL_PROMPT);
          if (r < 0) continue;
          first[kind].push(createToCommand);
          trivial[kind].push(turn);
        }
      }
    } finally {
      for (const kind of kinds) {
        for (const id of made[kind]) {
          await servers[kind].client.request("DELETE", `/v1/agents/sessions/${id}`).catch(() => undefined);
        }
        await servers[kind].stop();
      }
    }
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
      ],
      targets: [],
      notes: [
        "Template dialect: POST a session, then POST its first input (one `echo`), until turn.completed; then a " +
          "trivial turn on the same session. Servers interleaved per round; sessions deleted at the end (their " +
          "containers with them). Warm: the pool refills in the background while the other two servers run their " +
          "round.",
      ],
      data: { first, trivial },
    };
  },
};
