// The server as a user runs it: `node packages/server/dist/cli.js serve …` in a child process.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { childPids, descendantPids, isAlive, pidsRunning } from "@codex-agent-api/testkit";
import { waitFor } from "./fixture.js";
import { backendArgs } from "./sandbox.js";

export { childPids, descendantPids, isAlive, pidsRunning };

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
export const cliPath = join(repoRoot, "packages/server/dist/cli.js");

/** The parent environment without anything that would change the server's config. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(AGENT_|EBX_|CODEX_|OPENAI_)/.test(k) || ["HOST", "PORT", "WORKSPACE", "LOG_LEVEL"].includes(k)) {
      continue;
    }
    env[k] = v;
  }
  return { ...env, ...extra };
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface CliProcess {
  child: ChildProcess;
  pid: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<Exit>;
}

export interface SpawnOptions {
  /** Another build of the CLI (e.g. an installed package's `dist/cli.js`; default: this repository's). */
  cli?: string;
  /** Run as this user (the test runner must be root). */
  uid?: number;
  gid?: number;
}

/** Spawns the CLI with `args` (after `serve`, or after `opts.command`). */
export function spawnCli(
  args: string[],
  env: Record<string, string> = {},
  opts: SpawnOptions & { command?: string } = {},
): CliProcess {
  const { command = "serve", cli = cliPath, ...spawnOpts } = opts;
  if (!existsSync(cli)) throw new Error(`build the server first (npx tsc -b): ${cli} is missing`);
  const child = spawn(process.execPath, [cli, command, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: cleanEnv(env),
    ...spawnOpts,
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<Exit>((r) => child.once("exit", (code, signal) => r({ code, signal })));
  return { child, pid: child.pid!, stdout: () => out, stderr: () => err, exited };
}

/** Runs the CLI to its end (for start-up failures); fails if it is still running after `timeoutMs`. */
export async function runCliToExit(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 20_000,
  command = "serve",
): Promise<Exit & { stdout: string; stderr: string }> {
  const p = spawnCli(args, env, { command });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      p.child.kill("SIGKILL");
      reject(new Error(`cli still running after ${timeoutMs} ms: ${p.stderr()}`));
    }, timeoutMs);
  });
  try {
    const exit = await Promise.race([p.exited, timeout]);
    return { ...exit, stdout: p.stdout(), stderr: p.stderr() };
  } finally {
    clearTimeout(timer);
  }
}

export interface CliServer extends CliProcess {
  /** http://127.0.0.1:<port> */
  url: string;
  /** Log records (pino JSON lines) printed so far. */
  logs(): Array<Record<string, unknown>>;
}

function parseLogs(text: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a partial line
    }
  }
  return out;
}

export interface CliServerOptions extends SpawnOptions {
  /** A model outside the server (e.g. a mock in the test process, so it outlives a killed server). */
  modelUrl?: string;
}

/**
 * Starts `serve --port 0 --data-dir <dataDir> …args` with the in-process mock model (or `opts.modelUrl`) and waits
 * for it to listen and for /health. The port is read from the "listening" log line.
 */
export async function startCliServer(
  dataDir: string,
  args: string[] = [],
  env: Record<string, string> = {},
  opts: CliServerOptions = {},
): Promise<CliServer> {
  const { modelUrl, ...spawnOpts } = opts;
  const model = modelUrl ? ["--model-base-url", modelUrl, "--model", "mock-model"] : ["--mock-model"];
  const p = spawnCli(
    [...model, "--port", "0", "--data-dir", dataDir, ...backendArgs(args, dataDir).args, ...args],
    { LOG_LEVEL: "info", ...(modelUrl ? { OPENAI_API_KEY: "dummy" } : {}), ...env },
    spawnOpts,
  );
  const logs = () => parseLogs(p.stdout());
  let early: Exit | null = null;
  void p.exited.then((e) => {
    early = e;
  });
  const listening = await waitFor(
    () => {
      if (early) throw new Error(`cli exited early (${JSON.stringify(early)}): ${p.stderr()}`);
      return logs().find((l) => l.msg === "codex-agent-api listening");
    },
    30_000,
    "the cli to listen",
  );
  const port = new URL(String(listening!.url)).port;
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/health`).catch(() => null))?.ok, 30_000, "cli /health");
  return { ...p, url, logs };
}
