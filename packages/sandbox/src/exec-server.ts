// One `codex exec-server --listen stdio` inside a container, through `podman exec -i`. It is spawned ahead of use
// (podman exec costs 100+ ms): a small launcher shell waits for one line of variable assignments on stdin, then
// execs the exec-server with them — so a pre-spawned process can still get a session's variables when it is claimed.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { createInterface } from "node:readline";
import { SandboxError } from "./errors.js";
import type { Podman } from "./podman.js";

/** Mount point of the engine's vendor directory inside the container. */
export const CODEX_MOUNT = "/opt/codex";

const LAUNCHER = `IFS= read -r line || exit 111; eval "$line"; exec ${CODEX_MOUNT}/bin/codex exec-server --listen stdio`;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Throws `invalid_spec` for a variable the launcher line cannot carry. */
export function validateEnv(env: Record<string, string>): void {
  for (const [k, v] of Object.entries(env)) {
    if (!NAME.test(k))
      throw new SandboxError("invalid_spec", `env: ${JSON.stringify(k)} is not a variable name`);
    if (typeof v !== "string" || /[\n\r\0]/.test(v)) {
      throw new SandboxError("invalid_spec", `env.${k} must be a string without newlines or NUL`);
    }
  }
}

/** `export A='x' B='y'` with single-quote escaping (the only shell syntax in it is ours). */
export function envLine(env: Record<string, string>): string {
  validateEnv(env);
  const parts = Object.entries(env).map(([k, v]) => `${k}='${v.replaceAll("'", "'\\''")}'`);
  return parts.length ? `export ${parts.join(" ")}` : ":";
}

export interface ExecServerEvents {
  line: [string];
  exit: [{ code: number | null; signal: NodeJS.Signals | null }];
}

export class ExecServerProcess extends EventEmitter<ExecServerEvents> {
  private readonly child: ChildProcessWithoutNullStreams;
  private configured = false;
  private stderr = "";
  exited = false;

  constructor(podman: Podman, container: string, opts: { user: string; home: string }) {
    super();
    this.child = spawn(
      podman.bin,
      podman.args([
        "exec",
        "-i",
        "--user",
        opts.user,
        "-w",
        "/workspace",
        "-e",
        `HOME=${opts.home}`,
        container,
        "/bin/sh",
        "-c",
        LAUNCHER,
      ]),
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    this.child.stdin.on("error", () => {});
    createInterface({ input: this.child.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (l) =>
      this.emit("line", l),
    );
    this.child.stderr.setEncoding("utf8").on("data", (d: string) => {
      this.stderr = (this.stderr + d).slice(-8192);
    });
    this.child.on("error", (err) => {
      this.stderr += `\n${err.message}`;
    });
    this.child.on("close", (code, signal) => {
      this.exited = true;
      this.emit("exit", { code, signal });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get isConfigured(): boolean {
    return this.configured;
  }

  /** Starts the exec-server with these variables (once). */
  configure(env: Record<string, string>): void {
    if (this.configured) return;
    this.configured = true;
    this.child.stdin.write(`${envLine(env)}\n`);
  }

  send(line: string): void {
    if (!this.exited) this.child.stdin.write(`${line}\n`);
  }

  /** stdin EOF (the exec-server exits on it, ending its commands); killed if still there after `graceMs`. */
  end(graceMs = 3000): void {
    if (this.exited) return;
    this.child.stdin.end();
    const t = setTimeout(() => this.kill(), graceMs);
    t.unref();
    this.child.once("close", () => clearTimeout(t));
  }

  kill(): void {
    if (!this.exited) this.child.kill("SIGKILL");
  }

  stderrTail(): string {
    return this.stderr;
  }
}
