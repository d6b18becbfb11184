import { resolveCodexBinary } from "./binary.js";
import { AppServerConnection, type RawNotification, type RawServerRequest } from "./connection.js";
import type { TransportClosedError } from "./errors.js";
import type { ThreadStartResponse } from "./generated/v2/ThreadStartResponse.js";
import { Thread } from "./thread.js";
import { notificationTurnId, type TurnOperation } from "./turn-operation.js";
import type {
  ExecutionEnvironment,
  ServerRequestAnsweredEvent,
  ServerRequestHandler,
  ThreadItem,
  ThreadOptions,
} from "./types.js";

export interface CodexOptions {
  /** Path of the codex binary; default: the platform binary of the pinned `@openai/codex` package. */
  codexPath?: string;
  /** CODEX_HOME for the engine (config.toml, sessions, state). */
  codexHome?: string;
  /** Extra environment for the engine process (merged over process.env, unless `inheritEnv` is false). */
  env?: Record<string, string | undefined>;
  /** Start the engine with `env` only, not this process's environment (default true: inherit). */
  inheritEnv?: boolean;
  /** config.toml overrides, passed as `-c key=value`. */
  config?: Record<string, string | number | boolean>;
  /** Working directory of the engine process. */
  cwd?: string;
  clientInfo?: { name: string; title?: string; version: string };
  /** Handles approvals and user-input requests; without one they are declined. */
  onServerRequest?: ServerRequestHandler;
  /** Sees every engine notification (after routing). */
  onNotification?: (n: RawNotification) => void;
  /** Called once when the engine process goes away (not after close()). */
  onExit?: (err: TransportClosedError) => void;
}

export type { RawNotification };

/** The permission profile a thread runs under (an experimental field of thread/start and thread/resume). */
interface ProfileProvenance {
  activePermissionProfile?: { id: string } | null;
}

function tomlValue(v: string | number | boolean): string {
  return typeof v === "string" ? JSON.stringify(v) : String(v);
}

/** The safe answer when nobody decides: decline approvals, answer nothing to questions. */
export function defaultServerRequestResponse(method: string): unknown {
  switch (method) {
    case "item/commandExecution/requestApproval":
    case "item/fileChange/requestApproval":
      return { decision: "decline" };
    case "execCommandApproval":
    case "applyPatchApproval":
      return { decision: "denied" };
    case "item/tool/requestUserInput":
      return { answers: {} };
    case "item/permissions/requestApproval":
      return { permissions: {}, scope: "turn" };
    case "mcpServer/elicitation/request":
      return { action: "decline" };
    default:
      throw new Error(`unsupported server request: ${method}`);
  }
}

/**
 * A client for one Codex app-server process. Threads started through it share the process; notifications are
 * routed to the turn that owns them.
 */
export class Codex {
  private readonly threads = new Map<string, Thread>();
  private readonly routes = new Map<string, TurnOperation>();
  private closing = false;
  private conn!: AppServerConnection;
  readonly startedAt = Date.now();

  private constructor(private readonly opts: CodexOptions) {}

  /** Spawns the app-server and performs the `initialize` handshake. */
  static async start(opts: CodexOptions = {}): Promise<Codex> {
    const codex = new Codex(opts);
    const args: string[] = [];
    for (const [k, v] of Object.entries(opts.config ?? {})) args.push("-c", `${k}=${tomlValue(v)}`);
    args.push("app-server", "--listen", "stdio://");
    const env: NodeJS.ProcessEnv = { ...(opts.inheritEnv === false ? {} : process.env), ...opts.env };
    if (opts.codexHome) env.CODEX_HOME = opts.codexHome;
    env.CODEX_APP_SERVER_DISABLE_MANAGED_CONFIG ??= "1";
    env.RUST_LOG ??= "warn";
    codex.conn = new AppServerConnection({
      bin: opts.codexPath ?? resolveCodexBinary(),
      args,
      env,
      cwd: opts.cwd,
      onNotification: (n) => codex.dispatch(n),
      onServerRequest: (r) => codex.answer(r),
      onClose: (err) => codex.onClose(err),
    });
    try {
      await codex.conn.request("initialize", {
        clientInfo: {
          name: opts.clientInfo?.name ?? "codex_agent_api_sdk",
          title: opts.clientInfo?.title ?? "codex-agent-api TypeScript SDK",
          version: opts.clientInfo?.version ?? "0.1.0",
        },
        capabilities: { experimentalApi: true },
      });
      codex.conn.notify("initialized");
    } catch (err) {
      await codex.conn.close();
      throw err;
    }
    return codex;
  }

  get pid(): number | undefined {
    return this.conn.pid;
  }

  get closed(): boolean {
    return this.conn.closed;
  }

  /** Number of turns currently receiving notifications (0 when nothing runs). */
  get activeRoutes(): number {
    return this.routes.size;
  }

  /** The engine's stderr tail (diagnostics). */
  stderrTail(lines?: number): string {
    return this.conn.stderrTail(lines);
  }

  /** Raw JSON-RPC request, for methods the SDK does not wrap. */
  request<T = unknown>(method: string, params: unknown): Promise<T> {
    return this.conn.request<T>(method, params);
  }

  async startThread(opts: ThreadOptions = {}): Promise<Thread> {
    const { onServerRequest, ...params } = opts;
    const res = await this.request<ThreadStartResponse & ProfileProvenance>("thread/start", params);
    const thread = this.adopt(res.thread.id, res.thread.ephemeral, onServerRequest);
    thread.permissionProfile = res.activePermissionProfile?.id ?? null;
    return thread;
  }

  /** Loads a persisted thread into this process (e.g. after a restart) and returns its handle. */
  async resumeThread(threadId: string, opts: ThreadOptions = {}): Promise<Thread> {
    // Function tools are fixed when a thread starts: the engine keeps them across resumes.
    const { onServerRequest, ephemeral: _ephemeral, dynamicTools: _tools, ...params } = opts;
    const thread = this.adopt(threadId, false, onServerRequest);
    try {
      const res = await this.request<ProfileProvenance>("thread/resume", {
        threadId,
        excludeTurns: true,
        ...params,
      });
      thread.permissionProfile = res.activePermissionProfile?.id ?? null;
    } catch (err) {
      this.threads.delete(threadId);
      throw err;
    }
    return thread;
  }

  /** Handle of a thread already loaded in this process. */
  thread(threadId: string): Thread | undefined {
    return this.threads.get(threadId);
  }

  /** Ends the app-server. Running turns end with TransportClosedError. */
  async close(): Promise<void> {
    this.closing = true;
    await this.conn.close();
  }

  /**
   * Makes an execution server available to this engine process's threads (`environment/add`, experimental in the
   * pinned engine). Adding an id again keeps its first connection: give a new URL a new id.
   */
  async addEnvironment(env: ExecutionEnvironment): Promise<void> {
    await this.request("environment/add", env);
  }

  /** Unloads a thread from the engine (best effort) and forgets its handle. */
  async unloadThread(threadId: string): Promise<void> {
    this.threads.delete(threadId);
    try {
      await this.request("thread/unsubscribe", { threadId });
    } catch {
      /* already gone */
    }
  }

  private adopt(id: string, ephemeral: boolean, handler?: ServerRequestHandler): Thread {
    const thread = new Thread(
      {
        request: (m, p) => this.request(m, p),
        route: (threadId, op) => this.routes.set(threadId, op),
        unroute: (threadId, op) => {
          if (this.routes.get(threadId) === op) this.routes.delete(threadId);
        },
      },
      id,
      ephemeral,
      handler,
    );
    this.threads.set(id, thread);
    return thread;
  }

  private dispatch(n: RawNotification): void {
    const threadId = threadIdOf(n.params);
    if (threadId) {
      this.threads.get(threadId)?.observe(n.method, n.params);
      this.learnChildren(threadId, n);
      const route = this.routes.get(threadId);
      if (route) route.onNotification(n);
      else this.toParent(threadId, n);
    }
    this.opts.onNotification?.(n);
  }

  /** Child thread → the thread whose multi-agent tool spawned (or last addressed) it. */
  private readonly parents = new Map<string, string>();

  /** Engine turn id → its thread, for turns that started here (a child's turn names its root turn). */
  private readonly turnThreads = new Map<string, string>();

  /**
   * A child thread's turn names the root turn it works for (`rootTurnId`), so its parent is known from its first
   * turn on, even when that starts before the spawning tool call completes; a multi-agent tool call names the
   * threads it spawned or addresses.
   */
  private learnChildren(threadId: string, n: RawNotification): void {
    if (n.method === "turn/started") {
      const turn = n.params.turn as { id?: unknown; rootTurnId?: unknown } | undefined;
      if (typeof turn?.id !== "string") return;
      this.turnThreads.set(turn.id, threadId);
      if (this.turnThreads.size > 10_000) this.turnThreads.delete(this.turnThreads.keys().next().value!);
      const root = typeof turn.rootTurnId === "string" ? this.turnThreads.get(turn.rootTurnId) : undefined;
      if (root && root !== threadId) this.parents.set(threadId, root);
      return;
    }
    if (n.method !== "item/started" && n.method !== "item/completed") return;
    const item = n.params.item as ThreadItem | undefined;
    if (item?.type !== "collabAgentToolCall") return;
    for (const child of item.receiverThreadIds) {
      if (child !== threadId) this.parents.set(child, item.senderThreadId || threadId);
    }
    if (this.parents.size > 10_000) this.parents.delete(this.parents.keys().next().value!);
  }

  /** A child thread's notification, to the turn its parent is running (if one is). */
  private toParent(childThreadId: string, n: RawNotification): void {
    const parent = this.parents.get(childThreadId);
    if (parent) this.routes.get(parent)?.onSubagent(childThreadId, n);
  }

  private async answer(r: RawServerRequest): Promise<unknown> {
    const threadId = threadIdOf(r.params);
    const handler = (threadId && this.threads.get(threadId)?.onServerRequest) || this.opts.onServerRequest;
    let response: unknown;
    let defaulted = false;
    try {
      if (handler) response = await handler({ id: r.id, method: r.method, params: r.params });
      else {
        defaulted = true;
        response = defaultServerRequestResponse(r.method);
      }
    } catch (err) {
      response = { error: err instanceof Error ? err.message : String(err) };
      if (threadId) this.announce(threadId, r, response, defaulted);
      throw err;
    }
    if (threadId) this.announce(threadId, r, response, defaulted);
    return response;
  }

  private announce(threadId: string, r: RawServerRequest, response: unknown, defaulted: boolean): void {
    const event: ServerRequestAnsweredEvent = {
      method: "client/serverRequest/answered",
      params: {
        threadId,
        turnId: notificationTurnId(r.params) ?? null,
        requestId: r.id,
        requestMethod: r.method,
        request: r.params,
        response,
        defaulted,
      },
    };
    this.routes.get(threadId)?.onAnswered(event);
    this.opts.onNotification?.(event as unknown as RawNotification);
  }

  private onClose(err: TransportClosedError): void {
    for (const op of [...this.routes.values()]) op.fail(err);
    this.routes.clear();
    if (!this.closing) this.opts.onExit?.(err);
  }
}

function threadIdOf(params: Record<string, unknown>): string | undefined {
  if (typeof params.threadId === "string") return params.threadId;
  const thread = params.thread as { id?: unknown } | undefined;
  return thread && typeof thread.id === "string" ? thread.id : undefined;
}
