/**
 * Real git servers on 127.0.0.1 for tests, run with the system `git` binary:
 *
 * - `startGitDaemon` — `git daemon` (git://, anonymous, push enabled) serving every repository under a root;
 * - `startGitHttpServer` — smart HTTP: a node:http server running `git http-backend` as a CGI per request, with
 *   Basic auth for the repositories listed as private and for every push; each request is recorded;
 * - helpers to build fixtures: `makeRepo`, `commitFiles`, `makeBareFrom` and `gitOut` (git with no user or system
 *   configuration and no prompts, so a test never depends on the machine's git setup).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdir, realpath, stat, writeFile } from "node:fs/promises";
import type { createServer } from "node:http";
import { type AddressInfo, connect, createServer as createNetServer } from "node:net";
import { dirname, isAbsolute, relative, resolve } from "node:path";

// ---------------------------------------------------------------------------------------------------------------
// Running git

/** Variables that would point git at another repository, configuration or prompt; dropped from inherited env. */
const INHERITED_GIT_VARS = /^(GIT_|SSH_ASKPASS$)/;

/** `process.env` without GIT_* variables, plus no global/system config and no terminal prompts. */
/** (Shared with git-http-server.ts.) */
export function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!INHERITED_GIT_VARS.test(key)) env[key] = value;
  }
  return {
    ...env,
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    ...extra,
  };
}

export interface GitOutOptions {
  /** Extra environment variables (e.g. `GIT_TRACE_CURL`), on top of the isolated git environment. */
  env?: Record<string, string>;
  /** Kills git after this long (default 60 s). */
  timeoutMs?: number;
}

/**
 * Runs `git <args>` in `cwd` with `GIT_CONFIG_GLOBAL=/dev/null`, `GIT_CONFIG_NOSYSTEM=1`, `GIT_TERMINAL_PROMPT=0`
 * (and no inherited GIT_* variables); resolves with its trimmed stdout, rejects with its stderr.
 */
export function gitOut(cwd: string, args: string[], opts: GitOutOptions = {}): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      "git",
      args,
      { cwd, env: gitEnv(opts.env), timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (!err) {
          resolvePromise(stdout.trim());
          return;
        }
        const how = err.killed ? `was killed (${err.signal ?? "timeout"})` : `exited with ${err.code ?? "?"}`;
        const detail = stderr.trim() || stdout.trim() || err.message;
        reject(new Error(`git ${args.join(" ")} (in ${cwd}) ${how}: ${detail}`));
      },
    );
  });
}

const IDENT = ["-c", "user.name=test", "-c", "user.email=test@localhost", "-c", "commit.gpgsign=false"];

/** Writes `files` (paths relative to `dir`, `/`-separated, subdirectories created) and returns their paths. */
async function writeFiles(dir: string, files: Record<string, string>): Promise<string[]> {
  const paths = Object.keys(files);
  for (const path of paths) {
    const target = resolve(dir, path);
    const rel = relative(dir, target);
    if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
      throw new Error(`file path ${JSON.stringify(path)} is not inside the repository ${dir}`);
    }
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, files[path] ?? "");
  }
  return paths;
}

async function commit(dir: string, paths: string[], message: string): Promise<string> {
  if (paths.length > 0) await gitOut(dir, ["add", "--", ...paths]);
  await gitOut(dir, [...IDENT, "commit", "--quiet", "--allow-empty", "-m", message]);
  return gitOut(dir, ["rev-parse", "HEAD"]);
}

/**
 * Creates a non-bare repository in `dir` (created if missing) on branch `branch` (default `main`) with one
 * commit of `files` (committer test <test@localhost>); resolves with the commit id.
 */
export async function makeRepo(
  dir: string,
  files: Record<string, string>,
  opts: { branch?: string; message?: string } = {},
): Promise<string> {
  const abs = resolve(dir);
  await mkdir(abs, { recursive: true });
  await gitOut(abs, ["init", "--quiet", "-b", opts.branch ?? "main"]);
  return commit(abs, await writeFiles(abs, files), opts.message ?? "initial commit");
}

/** Writes `files` into the repository `dir` and commits them on its current branch; resolves with the commit id. */
export async function commitFiles(
  dir: string,
  files: Record<string, string>,
  message: string,
): Promise<string> {
  const abs = resolve(dir);
  return commit(abs, await writeFiles(abs, files), message);
}

/** `git clone --bare <src> <bareDir>`: a bare copy of `src` with the same branches and HEAD. */
export async function makeBareFrom(src: string, bareDir: string): Promise<void> {
  const from = resolve(src);
  await gitOut(from, ["clone", "--quiet", "--bare", "--", from, resolve(bareDir)]);
}

// ---------------------------------------------------------------------------------------------------------------
// Small process and network helpers

/** Resolves once `child` has exited (at once if it already has). */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolvePromise) => child.once("exit", () => resolvePromise()));
}

/** SIGTERM, then SIGKILL if `child` is still running after `graceMs`; resolves when it has exited. */
/** (Shared with git-http-server.ts.) */
export async function stop(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = exited(child);
  child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(true), graceMs);
  });
  if (await Promise.race([done.then(() => false), timedOut])) child.kill("SIGKILL");
  clearTimeout(timer);
  await done;
}

/** A port that was free a moment ago: bind 127.0.0.1:0, read the port, release it. */
function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const probe = createNetServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolvePromise(port));
    });
  });
}

/** Whether 127.0.0.1:`port` accepts a TCP connection (closed at once). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolvePromise(true);
    });
    socket.once("error", () => resolvePromise(false));
  });
}

/** (Shared with git-http-server.ts.) */
export function listen(server: ReturnType<typeof createServer>): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolvePromise((server.address() as AddressInfo).port);
    });
  });
}

/** (Shared with git-http-server.ts.) */
export async function existingDir(root: string, what: string): Promise<string> {
  const abs = resolve(root);
  const info = await stat(abs).catch(() => undefined);
  if (!info?.isDirectory()) throw new Error(`${what}: root ${abs} is not a directory`);
  return realpath(abs);
}

// ---------------------------------------------------------------------------------------------------------------
// git daemon

export interface GitDaemon {
  /** `git://127.0.0.1:<port>/<repo>`. */
  url(repo: string): string;
  port: number;
  /** Stops the daemon and resolves once it has exited. */
  close(): Promise<void>;
}

const DAEMON_ATTEMPTS = 5;
const DAEMON_READY_MS = 10_000;

/**
 * Starts `git daemon` serving every repository under `root` (anonymous, `--export-all`, push enabled) on a free
 * port of 127.0.0.1; resolves once the daemon has bound the port and accepts connections.
 */
export async function startGitDaemon(opts: { root: string }): Promise<GitDaemon> {
  const root = await existingDir(opts.root, "startGitDaemon");
  const failures: string[] = [];
  for (let attempt = 1; attempt <= DAEMON_ATTEMPTS; attempt++) {
    const port = await freePort();
    const started = await tryDaemon(root, port);
    if (started.ok) {
      const { child } = started;
      return {
        port,
        url: (repo) => `git://127.0.0.1:${port}/${repo.replace(/^\/+/, "")}`,
        close: () => stop(child),
      };
    }
    failures.push(`port ${port}: ${started.error}`);
    if (!started.retry) break;
  }
  throw new Error(`git daemon did not start (root ${root}):\n  ${failures.join("\n  ")}`);
}

type DaemonAttempt = { ok: true; child: ChildProcess } | { ok: false; retry: boolean; error: string };

/** One `git daemon` on `port`: ready once it logged "Ready to rumble" (bound) and the port accepts. */
async function tryDaemon(root: string, port: number): Promise<DaemonAttempt> {
  const args = [
    "daemon",
    "--reuseaddr",
    "--verbose",
    "--informative-errors",
    `--base-path=${root}`,
    "--export-all",
    "--enable=receive-pack",
    "--listen=127.0.0.1",
    `--port=${port}`,
    root,
  ];
  const child = spawn("git", args, { env: gitEnv(), stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  // --verbose logs each connection too: keep the tail only, and keep draining the pipe.
  child.stderr?.on("data", (d: Buffer) => {
    log = (log + d.toString()).slice(-16_384);
  });
  let spawnError: Error | undefined;
  child.once("error", (err) => {
    spawnError = err;
  });
  const deadline = Date.now() + DAEMON_READY_MS;
  while (Date.now() < deadline) {
    if (spawnError) return { ok: false, retry: false, error: `cannot run git: ${spawnError.message}` };
    if (child.exitCode !== null || child.signalCode !== null) {
      await new Promise((r) => setImmediate(r)); // let the last stderr chunk arrive
      const bindFailed = /unable to allocate any listen sockets|address already in use/i.test(log);
      const how = child.exitCode !== null ? `exited with ${child.exitCode}` : `killed by ${child.signalCode}`;
      return { ok: false, retry: bindFailed, error: `git daemon ${how}: ${log.trim() || "(no output)"}` };
    }
    // "Ready to rumble" proves this daemon (not whoever took the port since) holds it.
    if (log.includes("Ready to rumble") && (await accepts(port))) return { ok: true, child };
    await new Promise((r) => setTimeout(r, 20));
  }
  await stop(child);
  return {
    ok: false,
    retry: false,
    error: `not ready after ${DAEMON_READY_MS} ms: ${log.trim() || "(no output)"}`,
  };
}
