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
  exitCode: number | null;
  stdout: string;
  stderr: string;
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

  /** Runs `sh -c cmd` in /workspace through process/start; resolves when it closed (exited, all output read). */
  async run(cmd: string, timeoutMs = 60_000): Promise<CommandResult> {
    const processId = `p${this.nextId}`;
    let stdout = "";
    let stderr = "";
    let exitCode: number | null = null;
    const done = new Promise<number | null>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`command timed out: ${cmd}`)), timeoutMs);
      const l = (m: ExecutorMessage) => {
        if (m.params?.processId !== processId) return;
        if (m.method === "process/output") {
          const s = Buffer.from(String(m.params.chunk), "base64").toString();
          if (m.params.stream === "stderr") stderr += s;
          else stdout += s;
        } else if (m.method === "process/exited") {
          exitCode = (m.params.exitCode as number | null) ?? null;
        } else if (m.method === "process/closed") {
          // After the last output chunk (process/exited can come before it).
          clearTimeout(t);
          this.listeners.delete(l);
          resolve(exitCode);
        }
      };
      this.listeners.add(l);
      this.ws.once("close", () => {
        clearTimeout(t);
        this.listeners.delete(l);
        reject(new Error(`connection closed during: ${cmd}`));
      });
    });
    const r = await this.request("process/start", {
      processId,
      argv: ["/bin/bash", "-c", cmd],
      cwd: "file:///workspace",
      envPolicy: { inherit: "all", ignoreDefaultExcludes: true, exclude: [], set: {}, includeOnly: [] },
      env: {},
      tty: false,
      pipeStdin: false,
      arg0: null,
      sandbox: null,
    });
    if (r.error) throw new Error(`process/start: ${r.error.message}`);
    return { exitCode: await done, stdout, stderr };
  }

  close(): void {
    this.ws.close();
  }
}
