import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";

/** The pinned engine binary (`CODEX_BIN` overrides), or undefined when it is not installed. */
export function findCodexBinary(): string | undefined {
  if (process.env.CODEX_BIN) return process.env.CODEX_BIN;
  if (process.platform !== "linux" || process.arch !== "x64") return undefined;
  try {
    const require = createRequire(import.meta.url);
    const launcher = require.resolve("@openai/codex/package.json");
    const pkg = require.resolve("@openai/codex-linux-x64/package.json", { paths: [dirname(launcher)] });
    const bin = join(dirname(pkg), "vendor", "x86_64-unknown-linux-musl", "bin", "codex");
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

export interface RpcMessage {
  id?: number | string;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { code: number; message: string };
}

/** A minimal newline-delimited JSON-RPC client for `codex app-server --listen stdio://`. */
export class AppServerProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly notifications: RpcMessage[] = [];
  stderr = "";
  #nextId = 0;
  #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #listeners = new Set<(m: RpcMessage) => void>();
  #exited: Promise<number | null>;

  /** Server requests (`item/tool/call`, approvals…) in arrival order. */
  readonly serverRequests: RpcMessage[] = [];

  /**
   * `onServerRequest` answers engine→client requests (its return value is the result; a throw becomes a
   * JSON-RPC error); without it they are answered with an error.
   */
  constructor(
    bin: string,
    env: Record<string, string>,
    readonly onServerRequest?: (method: string, params: Record<string, unknown>) => unknown,
  ) {
    this.child = spawn(bin, ["app-server", "--listen", "stdio://"], {
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child.stderr.on("data", (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.#exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      let msg: RpcMessage;
      try {
        msg = JSON.parse(line) as RpcMessage;
      } catch {
        return;
      }
      if (msg.id !== undefined && msg.method === undefined) {
        const pending = this.#pending.get(Number(msg.id));
        this.#pending.delete(Number(msg.id));
        if (msg.error) pending?.reject(new Error(`${msg.error.code}: ${msg.error.message}`));
        else pending?.resolve(msg.result);
        return;
      }
      if (msg.method !== undefined && msg.id !== undefined) {
        this.serverRequests.push(msg);
        void this.answer(msg);
        return;
      }
      if (msg.method !== undefined && msg.id === undefined) {
        this.notifications.push(msg);
        for (const listener of this.#listeners) listener(msg);
      }
    });
  }

  private async answer(msg: RpcMessage): Promise<void> {
    let reply: Record<string, unknown>;
    try {
      if (!this.onServerRequest) throw new Error(`unhandled server request ${msg.method}`);
      reply = { id: msg.id, result: await this.onServerRequest(msg.method!, msg.params ?? {}) };
    } catch (err) {
      reply = {
        id: msg.id,
        error: { code: -32000, message: err instanceof Error ? err.message : String(err) },
      };
    }
    if (this.child.stdin.writable) this.child.stdin.write(`${JSON.stringify(reply)}\n`);
  }

  request<T = Record<string, unknown>>(method: string, params?: unknown): Promise<T> {
    const id = ++this.#nextId;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.stdin.write(`${JSON.stringify({ id, method, params })}\n`);
    });
  }

  notify(method: string, params?: unknown): void {
    this.child.stdin.write(`${JSON.stringify(params === undefined ? { method } : { method, params })}\n`);
  }

  async initialize(): Promise<void> {
    await this.request("initialize", {
      clientInfo: { name: "testkit", title: "testkit", version: "0" },
      capabilities: { experimentalApi: true },
    });
    this.notify("initialized");
  }

  /** Resolves with the first notification (past or future) matching `pred`. */
  waitFor(pred: (m: RpcMessage) => boolean, timeoutMs = 20_000): Promise<RpcMessage> {
    const seen = this.notifications.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#listeners.delete(listener);
        reject(new Error(`timed out waiting for a notification; stderr tail: ${this.stderr.slice(-2000)}`));
      }, timeoutMs);
      const listener = (m: RpcMessage) => {
        if (!pred(m)) return;
        clearTimeout(timer);
        this.#listeners.delete(listener);
        resolve(m);
      };
      this.#listeners.add(listener);
    });
  }

  /** Starts a text turn and resolves with the completed turn object. */
  async runTurn(threadId: string, text: string): Promise<Record<string, unknown>> {
    const started = await this.request<{ turn: { id: string } }>("turn/start", {
      threadId,
      input: [{ type: "text", text }],
    });
    const done = await this.waitFor(
      (m) =>
        m.method === "turn/completed" &&
        (m.params?.turn as { id?: string } | undefined)?.id === started.turn.id,
    );
    return done.params?.turn as Record<string, unknown>;
  }

  /** Closes stdin (the engine exits on EOF) and waits for the exit. */
  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.stdin.end();
    await this.#exited;
  }
}
