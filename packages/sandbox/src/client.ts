// A minimal client of an executor endpoint (the JSON-RPC an engine's app-server speaks to an exec-server): for health
// probes, measurements and tests. The engine itself is the real client.
import WebSocket from "ws";

export interface ExecutorMessage {
  id?: number | string;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

export interface CommandResult {
  /** null when it was terminated (timeout, abort) or ended by a signal. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  aborted: boolean;
}

export interface RunOptions {
  /** An absolute path inside the sandbox (default /workspace). */
  cwd?: string;
  /** Variables added to the exec-server's own for this command. */
  env?: Record<string, string>;
  /** Default 60 s; then the process is terminated. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Each chunk of output as it arrives (stdout and stderr). */
  onOutput?: (chunk: string) => void;
}

export class ExecutorClient {
  private nextId = 1;
  private pending = new Map<number, (m: ExecutorMessage) => void>();
  private listeners = new Set<(m: ExecutorMessage) => void>();
  closed: { code: number; reason: string } | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const m = JSON.parse(String(data)) as ExecutorMessage;
      if (typeof m.id === "number" && !m.method) {
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        p?.(m);
      } else for (const l of this.listeners) l(m);
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: String(reason) };
      for (const p of this.pending.values()) p({ error: { code: -1, message: `closed ${code}` } });
      this.pending.clear();
    });
  }

  static connect(url: string, token: string | null): Promise<ExecutorClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
      ws.once("open", () => resolve(new ExecutorClient(ws)));
      ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.once("error", reject);
    });
  }

  /** connect + initialize + initialized. */
  static async open(url: string, token: string): Promise<ExecutorClient> {
    const c = await ExecutorClient.connect(url, token);
    await c.initialize();
    return c;
  }

  request(method: string, params: unknown, timeoutMs = 30_000): Promise<ExecutorMessage> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${method}: no answer in ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, (m) => {
        clearTimeout(t);
        resolve(m);
      });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  async initialize(): Promise<ExecutorMessage> {
    const r = await this.request("initialize", { clientName: "codex-agent-sandbox", resumeSessionId: null });
    if (r.error) throw new Error(`initialize: ${r.error.message}`);
    this.ws.send(JSON.stringify({ method: "initialized", params: {} }));
    return r;
  }

  /**
   * Runs `bash -c cmd` (in `/workspace` unless `cwd` says otherwise) through process/start; resolves when it closed
   * (exited, all output read). A timeout or an abort terminates the process (its exit code is then null and
   * `timedOut` / `aborted` say why).
   */
  async run(cmd: string, opts: RunOptions | number = {}): Promise<CommandResult> {
    const o: RunOptions = typeof opts === "number" ? { timeoutMs: opts } : opts;
    const processId = `p${this.nextId}-${Date.now().toString(36)}`;
    let stdout = "";
    let stderr = "";
    let exitCode: number | null = null;
    let timedOut = false;
    let aborted = false;
    let timer: NodeJS.Timeout | undefined;
    const terminate = () => {
      void this.request("process/terminate", { processId }, 10_000).catch(() => undefined);
    };
    const onAbort = () => {
      aborted = true;
      terminate();
    };
    const done = new Promise<number | null>((resolve, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        terminate();
      }, o.timeoutMs ?? 60_000);
      const l = (m: ExecutorMessage) => {
        if (m.params?.processId !== processId) return;
        if (m.method === "process/output") {
          const chunk = Buffer.from(String(m.params.chunk), "base64").toString();
          if (m.params.stream === "stderr") stderr += chunk;
          else stdout += chunk;
          o.onOutput?.(chunk);
        } else if (m.method === "process/exited") {
          exitCode = (m.params.exitCode as number | null) ?? null;
        } else if (m.method === "process/closed") {
          // After the last output chunk (process/exited can come before it).
          this.listeners.delete(l);
          resolve(exitCode);
        }
      };
      this.listeners.add(l);
      this.ws.once("close", () => {
        this.listeners.delete(l);
        reject(new Error(`connection closed during: ${cmd}`));
      });
    });
    o.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const r = await this.request("process/start", {
        processId,
        argv: ["/bin/bash", "-c", cmd],
        cwd: `file://${o.cwd ?? "/workspace"}`,
        envPolicy: { inherit: "all", ignoreDefaultExcludes: true, exclude: [], set: {}, includeOnly: [] },
        env: o.env ?? {},
        tty: false,
        pipeStdin: false,
        arg0: null,
        sandbox: null,
      });
      if (r.error) throw new Error(`process/start: ${r.error.message}`);
      if (o.signal?.aborted) onAbort();
      const code = await done;
      return { exitCode: timedOut || aborted ? null : code, stdout, stderr, timedOut, aborted };
    } finally {
      clearTimeout(timer);
      o.signal?.removeEventListener("abort", onAbort);
    }
  }

  close(): void {
    this.ws.close();
  }
}
