import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { InvalidRequestError, TransportClosedError } from "./errors.js";

/** A notification from the engine: `{method, params}` (plus the engine's `emittedAtMs`). */
export interface RawNotification {
  method: string;
  params: Record<string, unknown>;
}

/** A request from the engine to us (approvals, user input): must be answered. */
export interface RawServerRequest {
  id: number | string;
  method: string;
  params: Record<string, unknown>;
}

export interface ConnectionOptions {
  bin: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  onNotification: (n: RawNotification) => void;
  onServerRequest: (r: RawServerRequest) => Promise<unknown>;
  onClose: (err: TransportClosedError) => void;
}

interface Pending {
  method: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

const STDERR_LINES = 200;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** JSON replacer: strings with lone surrogates get U+FFFD instead (as String#toWellFormed does). */
function wellFormed(_key: string, value: unknown): unknown {
  return typeof value === "string" && LONE_SURROGATE.test(value)
    ? value.replace(LONE_SURROGATE, "\uFFFD")
    : value;
}

/**
 * Newline-delimited JSON-RPC over the app-server's stdio. Owns the child process; when it exits every
 * pending request rejects with TransportClosedError and `onClose` fires exactly once.
 */
export class AppServerConnection {
  readonly process: ChildProcessWithoutNullStreams;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly stderr: string[] = [];
  private closedError: TransportClosedError | null = null;
  private readonly exited: Promise<void>;

  constructor(private readonly opts: ConnectionOptions) {
    this.process = spawn(opts.bin, opts.args, { env: opts.env, cwd: opts.cwd, stdio: "pipe" });
    this.process.stdin.on("error", () => {
      /* EPIPE after the child died: reported through the exit path */
    });
    createInterface({ input: this.process.stdout }).on("line", (line) => this.onLine(line));
    createInterface({ input: this.process.stderr }).on("line", (line) => {
      this.stderr.push(line);
      if (this.stderr.length > STDERR_LINES) this.stderr.shift();
    });
    this.exited = new Promise((resolve) => {
      this.process.on("error", (err) => {
        this.fail(`failed to start the Codex app-server: ${err.message}`);
        resolve();
      });
      this.process.on("close", (code, signal) => {
        this.fail(`Codex app-server exited (code ${code ?? "null"}, signal ${signal ?? "none"})`);
        resolve();
      });
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get closed(): boolean {
    return this.closedError !== null;
  }

  stderrTail(lines = 40): string {
    return this.stderr.slice(-lines).join("\n");
  }

  request<T>(method: string, params: unknown): Promise<T> {
    if (this.closedError) return Promise.reject(this.closedError);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { method, resolve: resolve as (v: unknown) => void, reject });
      this.write({ id, method, params });
    });
  }

  notify(method: string, params?: unknown): void {
    this.write(params === undefined ? { method } : { method, params });
  }

  /** Ends the process: stdin EOF first (the engine exits cleanly), SIGKILL if it lingers. */
  async close(timeoutMs = 3000): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.stdin.end();
      const timer = setTimeout(() => this.process.kill("SIGKILL"), timeoutMs);
      await this.exited;
      clearTimeout(timer);
    }
    this.fail("Codex app-server was closed");
  }

  private write(msg: unknown): void {
    if (this.closedError) return;
    // The engine drops lines it cannot parse (a lone UTF-16 surrogate is one) and would never answer.
    this.process.stdin.write(`${JSON.stringify(msg, wellFormed)}\n`);
  }

  private onLine(line: string): void {
    if (!line) return;
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    const method = typeof msg.method === "string" ? msg.method : undefined;
    const id = msg.id as number | string | undefined;
    if (method !== undefined && id !== undefined) {
      this.answer(id, method, (msg.params as Record<string, unknown>) ?? {});
    } else if (method !== undefined) {
      this.opts.onNotification({ method, params: (msg.params as Record<string, unknown>) ?? {} });
    } else if (typeof id === "number") {
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      const error = msg.error as { code?: number; message?: string; data?: unknown } | undefined;
      if (error) p.reject(new InvalidRequestError(error.message ?? "unknown error", error.code, error.data));
      else p.resolve(msg.result);
    }
  }

  private answer(id: number | string, method: string, params: Record<string, unknown>): void {
    this.opts.onServerRequest({ id, method, params }).then(
      (result) => this.write({ id, result }),
      (err: unknown) =>
        this.write({
          id,
          error: { code: -32603, message: err instanceof Error ? err.message : String(err) },
        }),
    );
  }

  private fail(reason: string): void {
    if (this.closedError) return;
    const tail = this.stderrTail();
    this.closedError = new TransportClosedError(reason, tail);
    for (const p of this.pending.values()) p.reject(this.closedError);
    this.pending.clear();
    this.opts.onClose(this.closedError);
  }
}
