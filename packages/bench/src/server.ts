/**
 * The server as a separate process, the way users run it: `node packages/server/dist/cli.js serve …`, pointed at
 * the bench's in-process mock model (`--model-base-url <mock> --model mock-model`, OPENAI_API_KEY=bench), on a
 * port chosen beforehand (so /health can be polled from the moment of spawn), with `--log-level warn` (no
 * per-request log lines; pino writes synchronously to a pipe the bench would have to drain).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { HttpClient } from "./http.js";
import {
  type Cleanup,
  childPids,
  cmdline,
  descendantPids,
  freePort,
  isAlive,
  now,
  rssMiB,
  sleep,
} from "./proc.js";

/** The server's CLI: this workspace's build, unless `setServerCli` chose another (e.g. a patched copy). */
let cliPath = join(dirname(fileURLToPath(import.meta.resolve("codex-agent-api"))), "cli.js");

export function setServerCli(path: string): void {
  cliPath = path;
}

export interface Health {
  status: string;
  engines: Array<{ index: number; running: boolean; threads: number }>;
  active_turns: number;
}

export interface Memory {
  serverMiB: number | null;
  /** The server's `codex app-server` children, plus whatever they spawned. */
  engineMiB: number;
  enginePids: number[];
}

export interface ServerProcess {
  url: string;
  pid: number;
  dataDir: string;
  client: HttpClient;
  /** ms from spawn() to the first `/health` 200. */
  startMs: number;
  /** ms from spawn() to `/health` reporting every engine running (when `waitForEngine`). */
  engineReadyMs: number | null;
  health(): Promise<Health>;
  memory(): Memory;
  stderrTail(): string;
  /** SIGTERM (graceful), SIGKILL after 10 s; engine processes left behind are killed by pid. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** The bench's mock model; "in-process" runs the server with --mock-model (its own scripted model). */
  mockUrl: string | "in-process";
  dataDir: string;
  /** Extra CLI flags. */
  args?: string[];
  /** Extra environment (e.g. AGENT_MAX_THREADS_PER_ENGINE). */
  env?: Record<string, string>;
  /** Also wait until the engine process is up (default true). */
  waitForEngine?: boolean;
  /** /health polling interval, ms (default 5). */
  pollMs?: number;
}

let nodeArgs: string[] = [];

/** Extra node flags for every server process started from now on (e.g. `--cpu-prof --cpu-prof-dir <dir>`). */
export function setServerNodeArgs(args: string[]): void {
  nodeArgs = args;
}

/** The parent environment without anything that would change the server's configuration. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(AGENT_|EBX_|CODEX_|OPENAI_|RUST_LOG)/.test(k)) continue;
    if (["HOST", "PORT", "WORKSPACE", "LOG_LEVEL"].includes(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/** GET /health on a fresh connection; null while nothing listens. */
async function probe(url: string): Promise<Health | null> {
  const client = new HttpClient(url, { maxSockets: 1 });
  try {
    const r = await client.request<Health>("GET", "/health", undefined, { connection: "close" });
    return r.status === 200 ? r.body : null;
  } catch {
    return null;
  } finally {
    client.close();
  }
}

export async function startServer(cleanup: Cleanup, opts: StartOptions): Promise<ServerProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = [
    ...nodeArgs,
    cliPath,
    "serve",
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--data-dir",
    opts.dataDir,
    ...(opts.mockUrl === "in-process"
      ? ["--mock-model"]
      : ["--model-base-url", opts.mockUrl, "--model", "mock-model"]),
    "--log-level",
    "warn",
    ...(opts.args ?? []),
  ];
  const t0 = now();
  const child: ChildProcess = spawn(process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: cleanEnv({ OPENAI_API_KEY: "bench", ...opts.env }),
  });
  const pid = child.pid!;
  let output = "";
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-8000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  let exited: { code: number | null; signal: string | null } | null = null;
  const exit = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      exited = { code, signal };
      resolve();
    }),
  );
  const enginePids = new Set<number>();
  const memory = (): Memory => {
    // The engines are the server's `codex app-server` children; anything they spawn counts towards them.
    const engines = childPids(pid).filter((p) => cmdline(p).includes("app-server"));
    let engineMiB = 0;
    for (const e of engines) {
      enginePids.add(e);
      for (const p of [e, ...descendantPids(e)]) engineMiB += rssMiB(p) ?? 0;
    }
    return { serverMiB: rssMiB(pid), engineMiB, enginePids: engines };
  };
  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      memory(); // remember the engine pids while the server still has them
      if (!exited) {
        child.kill("SIGTERM");
        const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exit;
        clearTimeout(killer);
      }
      // The engine ends on stdin EOF; give it a moment, then make sure.
      for (let i = 0; i < 50 && [...enginePids].some(isAlive); i++) await sleep(20);
      for (const p of enginePids) if (isAlive(p)) process.kill(p, "SIGKILL");
      client.close();
    })();
    return stopping;
  };
  const client = new HttpClient(url);
  const unregister = cleanup.add(`server ${pid}`, stop);
  const poll = opts.pollMs ?? 5;
  let health: Health | null = null;
  const deadline = Date.now() + 30_000;
  while (!health) {
    if (exited) throw new Error(`server exited early (${JSON.stringify(exited)}): ${output}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`server did not answer /health within 30 s: ${output}`);
    }
    health = await probe(url);
    if (!health) await sleep(poll);
  }
  const startMs = now() - t0;
  let engineReadyMs: number | null = null;
  if (opts.waitForEngine ?? true) {
    while (!health.engines.every((e) => e.running)) {
      if (exited) throw new Error(`server exited (${JSON.stringify(exited)}): ${output}`);
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`the engine did not start within 30 s: ${output}`);
      }
      await sleep(poll);
      health = (await probe(url)) ?? health;
    }
    engineReadyMs = now() - t0;
  }
  return {
    url,
    pid,
    dataDir: opts.dataDir,
    client,
    startMs,
    engineReadyMs,
    health: () => client.expect<Health>(200, "GET", "/health"),
    memory,
    stderrTail: () => output,
    stop: async () => {
      unregister();
      await stop();
    },
  };
}
