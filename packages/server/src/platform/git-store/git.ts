import { spawn } from "node:child_process";

/** git exited with a failure status (or could not be run for another reason than a missing binary). */
export class GitError extends Error {
  constructor(
    message: string,
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(message);
    this.name = "GitError";
  }
}

/** The git executable is not on PATH (or the configured path does not exist). */
export class GitNotFoundError extends Error {
  constructor(readonly bin: string) {
    super(`git executable not found ("${bin}"): checkpoints need git installed on the server`);
    this.name = "GitNotFoundError";
  }
}

/**
 * Configuration forced on every call, so nothing the agent (or the host) configured can change what the shadow
 * repository stores or run code: no hooks, no fsmonitor, no automatic gc, no line-ending or attribute
 * conversions (info/attributes of the shadow repo unsets them too), no user-level excludes or attributes.
 */
export const FORCED_CONFIG = [
  "core.hooksPath=/dev/null",
  "core.fsmonitor=false",
  "core.untrackedCache=false",
  "core.splitIndex=false",
  "core.sparseCheckout=false",
  "core.quotePath=false",
  "core.autocrlf=false",
  "core.safecrlf=false",
  "core.symlinks=true",
  "core.fileMode=true",
  "core.ignoreCase=false",
  "core.precomposeUnicode=false",
  "core.logAllRefUpdates=false",
  "core.excludesFile=/dev/null",
  "core.attributesFile=/dev/null",
  "gc.auto=0",
  "maintenance.auto=false",
  "commit.gpgSign=false",
  "pack.threads=1",
  // A new index (every store's is) in version 4: paths prefix-compressed, a large tree's index a fifth smaller,
  // and every command reads it.
  "index.version=4",
  "user.name=codex-agent-api",
  "user.email=checkpoints@localhost",
].flatMap((kv) => ["-c", kv]);

/**
 * The environment git runs with: the server's own minus every `GIT_*` variable (an inherited GIT_DIR,
 * GIT_WORK_TREE, GIT_INDEX_FILE… would redirect every command), with system and global configuration off.
 * Nothing here is ever set on process.env, so the agent's shell never inherits any of it.
 */
export function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.toUpperCase().startsWith("GIT_")) env[key] = value;
  }
  env.GIT_CONFIG_GLOBAL = "/dev/null";
  env.GIT_CONFIG_NOSYSTEM = "1";
  env.GIT_TERMINAL_PROMPT = "0";
  env.LC_ALL = "C";
  return env;
}

export interface RunOptions {
  cwd: string;
  /** Written to git's stdin, then closed. */
  input?: string | Buffer;
  /** Stop reading after this many bytes of stdout, kill git, and report `truncated`. */
  maxOutput?: number;
  /** Exit codes that are not failures (besides 0). */
  okCodes?: readonly number[];
  /** Variables added to {@link gitEnv} (never to process.env). */
  env?: Readonly<Record<string, string>>;
  /** Kill git (SIGKILL) after this long: the call fails with a GitError that says so. */
  timeoutMs?: number;
  /** Kill git when this is aborted (the call fails). */
  signal?: AbortSignal;
}

export interface RunResult {
  stdout: Buffer;
  exitCode: number;
  truncated: boolean;
}

const STDERR_LIMIT = 16 * 1024;

/** Runs `bin args…` (no shell) and collects its output. */
export function runGit(bin: string, args: readonly string[], opts: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    // A call that may be stopped runs in a process group of its own: git's helpers (git-remote-http, ssh,
    // index-pack) hold its output open, so the whole group is killed.
    const stoppable = opts.timeoutMs !== undefined || opts.signal !== undefined;
    const child = spawn(bin, args, {
      cwd: opts.cwd,
      env: { ...gitEnv(), ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
      windowsHide: true,
      detached: stoppable,
    });
    let stopped: string | null = null;
    const stop = (why: string) => {
      stopped ??= why;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    };
    const timer =
      opts.timeoutMs === undefined
        ? null
        : setTimeout(() => stop(`timed out after ${Math.round(opts.timeoutMs! / 1000)} s`), opts.timeoutMs);
    const onAbort = () => stop(String(opts.signal?.reason ?? "stopped"));
    if (opts.signal?.aborted) onAbort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      if (truncated) return;
      if (opts.maxOutput !== undefined && size + chunk.length > opts.maxOutput) {
        chunks.push(chunk.subarray(0, opts.maxOutput - size));
        size = opts.maxOutput;
        truncated = true;
        child.kill();
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < STDERR_LIMIT) stderr += chunk.toString("utf8");
    });
    child.stdin.on("error", () => {}); // git may exit before reading all of its input (EPIPE); its status tells
    if (opts.input === undefined) child.stdin.end();
    else child.stdin.end(opts.input);
    child.on("error", (err: NodeJS.ErrnoException) => {
      reject(err.code === "ENOENT" ? new GitNotFoundError(bin) : err);
    });
    child.on("close", (code, signal) => {
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      const exitCode = code ?? -1;
      if (stopped !== null) {
        reject(
          new GitError(`git ${args.find((a) => !a.startsWith("-")) ?? ""} ${stopped}`, args, code, stderr),
        );
        return;
      }
      if (truncated || exitCode === 0 || opts.okCodes?.includes(exitCode)) {
        resolve({ stdout: Buffer.concat(chunks, size), exitCode, truncated });
        return;
      }
      const what = signal ? `signal ${signal}` : `status ${exitCode}`;
      const detail = stderr.trim().split("\n").slice(-3).join(" / ");
      reject(
        new GitError(
          `git ${args.find((a) => !a.startsWith("-") && !a.includes("=")) ?? ""} failed (${what}): ${detail}`,
          args,
          code,
          stderr,
        ),
      );
    });
  });
}

/** Git invocations against one shadow repository and one work tree. */
export class Git {
  constructor(
    readonly bin: string,
    readonly gitDir: string,
    readonly workTree: string,
  ) {}

  /** The arguments every call starts with (exported for the tests' sake). */
  prefix(): string[] {
    return [
      `--git-dir=${this.gitDir}`,
      `--work-tree=${this.workTree}`,
      "--no-replace-objects",
      ...FORCED_CONFIG,
    ];
  }

  run(args: readonly string[], opts: Omit<RunOptions, "cwd"> = {}): Promise<RunResult> {
    return runGit(this.bin, [...this.prefix(), ...args], { ...opts, cwd: this.workTree });
  }

  async text(args: readonly string[], opts: Omit<RunOptions, "cwd"> = {}): Promise<string> {
    return (await this.run(args, opts)).stdout.toString("utf8");
  }

  /** Runs git and splits its `-z` output on NUL (the trailing empty field dropped). */
  async lines(args: readonly string[], opts: Omit<RunOptions, "cwd"> = {}): Promise<string[]> {
    return splitNul((await this.run(args, opts)).stdout);
  }
}

/** Splits NUL-terminated records. */
export function splitNul(buf: Buffer): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = buf.indexOf(0, start); i !== -1; i = buf.indexOf(0, start)) {
    out.push(buf.toString("utf8", start, i));
    start = i + 1;
  }
  if (start < buf.length) out.push(buf.toString("utf8", start));
  return out;
}

/** NUL-terminated records for git's `--stdin -z` modes. */
export function joinNul(paths: readonly string[]): Buffer {
  return Buffer.from(paths.map((p) => `${p}\0`).join(""), "utf8");
}
