/** What every scenario gets, and the shapes of their results. */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Codex, resolveCodexBinary, type ThreadOptions } from "@codex-agent-api/codex";
import { type CodexHome, createCodexHome, type MockResponsesServer } from "@codex-agent-api/testkit";
import { engineConfigToml, loadConfig, PERMISSION_PROFILE } from "codex-agent-api";
import { OFFICIAL } from "./http.js";
import { type Cleanup, now } from "./proc.js";
import { type ServerProcess, startServer } from "./server.js";
import type { Row, Target } from "./stats.js";

/** The trivial turn: the mock's scripted model answers "ok" (one model request, one streamed word). */
export const TRIVIAL_PROMPT = "Reply with exactly: ok";

export interface Context {
  quick: boolean;
  cleanup: Cleanup;
  /** The mock model, in this process (both the server child and the SDK engines use it). */
  mock: MockResponsesServer;
  log(message: string): void;
  /** The shared rig of the turn scenarios (1–3), started on first use. */
  turnRig(): Promise<TurnRig>;
}

export interface ScenarioResult {
  id: string;
  title: string;
  rows: Row[];
  targets: Target[];
  notes: string[];
  /** Extra raw numbers for the JSON output. */
  data?: Record<string, unknown>;
}

export interface Scenario {
  id: string;
  title: string;
  run(ctx: Context): Promise<ScenarioResult>;
}

/**
 * A server child process and, for reference, the SDK driving its own app-server directly in this process, both on
 * the same mock and with the same engine config: the server's own config.toml (its permission profile for agent
 * commands, approval never, provider env key). `legacy` is a second SDK engine on the engine's plain
 * `workspace-write` sandbox (no read isolation), to show what the isolation costs.
 */
export interface TurnRig {
  server: ServerProcess;
  codex: Codex;
  home: CodexHome;
  threadOptions: ThreadOptions;
  legacy: { codex: Codex; threadOptions: ThreadOptions };
  codexBin: string;
  close(): Promise<void>;
}

export async function startTurnRig(ctx: Pick<Context, "cleanup" | "mock">): Promise<TurnRig> {
  const { dir } = ctx.cleanup.tempDir("turns");
  const server = await startServer(ctx.cleanup, { mockUrl: ctx.mock.url, dataDir: `${dir}/server` });
  const homeOptions = {
    mockUrl: ctx.mock.url,
    sandboxMode: "workspace-write",
    approvalPolicy: "never",
    envKey: "OPENAI_API_KEY",
    envKeyValue: "bench",
  } as const;
  const home = await createCodexHome({ ...homeOptions, dir: `${dir}/sdk` });
  // The server's engine config, as the server writes it for this mock.
  const serverConfig = loadConfig(
    ["--model-base-url", ctx.mock.url, "--model", "mock-model", "--data-dir", dir],
    {
      OPENAI_API_KEY: "bench",
    },
  );
  writeFileSync(join(home.codexHome, "config.toml"), engineConfigToml(serverConfig, ctx.mock.url));
  const legacyHome = await createCodexHome({ ...homeOptions, dir: `${dir}/sdk-legacy` });
  const start = (h: CodexHome) =>
    Codex.start({
      codexHome: h.codexHome,
      env: h.env,
      cwd: h.workspace,
      clientInfo: { name: "codex_agent_api_bench", version: "0.1.0" },
    });
  const [codex, legacy] = await Promise.all([start(home), start(legacyHome)]);
  const unregister = ctx.cleanup.add("sdk engines", async () => {
    await Promise.all([codex.close(), legacy.close()]);
  });
  return {
    server,
    codex,
    home,
    codexBin: resolveCodexBinary(),
    threadOptions: {
      cwd: home.workspace,
      model: "mock-model",
      approvalPolicy: "never",
      config: { default_permissions: PERMISSION_PROFILE },
    },
    legacy: {
      codex: legacy,
      threadOptions: {
        cwd: legacyHome.workspace,
        model: "mock-model",
        sandbox: "workspace-write",
        approvalPolicy: "never",
      },
    },
    async close() {
      unregister();
      await Promise.all([codex.close(), legacy.close(), server.stop()]);
    },
  };
}

// ----------------------------------------------------------------- turns through the HTTP dialects

export const COMPLETED = "agent.session.turn.completed";
export const TERMINAL: ReadonlySet<string> = new Set([
  COMPLETED,
  "agent.session.turn.failed",
  "agent.session.turn.cancelled",
]);

/** Creates a session (template dialect) and returns its id. */
export async function createTemplateSession(server: ServerProcess): Promise<string> {
  const s = await server.client.expect<{ id: string }>(200, "POST", "/v1/agents/sessions", {
    agent: { model: "mock-model" },
  });
  return s.id;
}

export async function createOfficialSession(server: ServerProcess): Promise<string> {
  const s = await server.client.expect<{ id: string }>(
    200,
    "POST",
    "/v1/agents/sessions",
    { agent: { model: "mock-model" } },
    OFFICIAL,
  );
  return s.id;
}

/**
 * Template dialect: `POST …/events {input, goal?}` answers SSE; resolves with the ms from sending the request to
 * receiving `agent.session.turn.completed` (the response is then read to its end, so the connection is reused).
 */
export async function templateTurn(
  server: ServerProcess,
  sessionId: string,
  input: string,
  extra: Record<string, unknown> = {},
): Promise<number> {
  const t0 = now();
  const stream = server.client.sse("POST", `/v1/agents/sessions/${sessionId}/events`, { input, ...extra });
  const end = await stream.next((f) => TERMINAL.has(f.event ?? ""));
  if (end.event !== COMPLETED) throw new Error(`template turn ended ${end.event}: ${end.data}`);
  const ms = end.t - t0;
  await stream.ended;
  return ms;
}

/** Official dialect: a session stream kept open; each turn is a `POST …/events` (202) awaited on that stream. */
export class OfficialSession {
  private constructor(
    readonly server: ServerProcess,
    readonly id: string,
    private readonly stream: ReturnType<ServerProcess["client"]["sse"]>,
  ) {}

  static async open(server: ServerProcess, id?: string): Promise<OfficialSession> {
    const sessionId = id ?? (await createOfficialSession(server));
    const stream = server.client.sse("GET", `/v1/agents/sessions/${sessionId}/events`, undefined, OFFICIAL);
    // The stream of an idle session starts with its state (agent.session.idle).
    await stream.next(() => true);
    return new OfficialSession(server, sessionId, stream);
  }

  /** ms from sending the POST to receiving the turn's `agent.session.turn.completed` on the open stream. */
  async turn(input: string, extra: Record<string, unknown> = {}): Promise<number> {
    const t0 = now();
    const end = this.stream.next((f) => TERMINAL.has(f.event ?? ""));
    await this.server.client.expect(
      202,
      "POST",
      `/v1/agents/sessions/${this.id}/events`,
      { events: [{ type: "agent.session.input.message", input, ...extra }] },
      OFFICIAL,
    );
    const f = await end;
    if (f.event !== COMPLETED) throw new Error(`official turn ended ${f.event}: ${f.data}`);
    return f.t - t0;
  }

  close(): void {
    this.stream.close();
  }
}

// ----------------------------------------------------------------- codex exec per turn

export interface ExecRun {
  ms: number;
  threadId: string | null;
}

/**
 * The original design: one `codex exec --json --skip-git-repo-check …` process per turn, same CODEX_HOME and
 * mock as the SDK. `resume` = a follow-up turn on an existing thread (`exec … resume <id> -- <prompt>`).
 */
export function execTurn(rig: TurnRig, prompt: string, resume: string | null = null): Promise<ExecRun> {
  const args = [
    "exec",
    "--json",
    "--skip-git-repo-check",
    ...(resume ? ["resume", resume] : []),
    "--",
    prompt,
  ];
  return new Promise((resolve, reject) => {
    const t0 = now();
    const child = spawn(rig.codexBin, args, {
      cwd: rig.home.workspace,
      env: { ...process.env, ...rig.home.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      err = (err + d.toString()).slice(-2000);
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      const ms = now() - t0;
      if (code !== 0 || !out.includes('"type":"turn.completed"')) {
        reject(new Error(`codex exec exited ${code}: ${err.slice(-500)}`));
        return;
      }
      const m = /"type":"thread\.started","thread_id":"([^"]+)"/.exec(out);
      resolve({ ms, threadId: m?.[1] ?? null });
    });
  });
}
