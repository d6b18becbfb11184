// The executor endpoint of one sandbox: a WebSocket listener on 127.0.0.1 (random port, capability token checked on
// the upgrade), and per connection one exec-server process in the container, its stdout lines <-> text frames (one
// JSON-RPC message each). The URL outlives the container behind it:
// - replace / unexpected exit: connections are closed (1012), the engine reconnects to the same URL;
// - stop (idle): connections stay open; the next message starts the container again and a new exec-server, to which
//   the bridge replays the connection's `initialize`/`initialized` before forwarding — the engine sees no disconnect.
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import type { ExecServerProcess } from "./exec-server.js";

export interface ExecutorHost {
  /** An exec-server for a connection; starts the container first when it is stopped. */
  acquire(): Promise<ExecServerProcess>;
  /** Traffic in either direction (for idle detection). */
  activity(): void;
}

const MAX_CONNECTIONS = 16;
const REINIT_ID = "codex-agent-sandbox-reinit";

interface JsonRpc {
  id?: string | number | null;
  method?: string;
  params?: { processId?: unknown } & Record<string, unknown>;
  result?: unknown;
  error?: unknown;
}

function parse(text: string): JsonRpc | null {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as JsonRpc) : null;
  } catch {
    return null;
  }
}

class Link {
  child: ExecServerProcess | null = null;
  /** Set by suspend(): the exec-server goes away with the container, the WebSocket stays. */
  suspended = false;
  private attaching: Promise<void> | null = null;
  private queue: string[] = [];
  private initParams: Record<string, unknown> | null = null;
  private initializedSeen = false;
  private reinits = 0;
  private swallow = new Set<string>();
  private pendingStarts = new Map<string, string>();
  readonly running = new Set<string>();
  closed = false;

  constructor(
    readonly ws: WebSocket,
    private readonly host: ExecutorHost,
    private readonly onClose: (link: Link) => void,
  ) {
    ws.on("message", (data, isBinary) => this.fromClient(data, isBinary));
    ws.on("close", () => this.teardown());
    ws.on("error", () => this.teardown());
    this.ensureChild();
  }

  private ensureChild(): void {
    if (this.child || this.attaching || this.closed) return;
    const replay = this.initParams !== null;
    this.attaching = this.host
      .acquire()
      .then((child) => {
        this.attaching = null;
        if (this.closed) {
          child.end();
          return;
        }
        this.attach(child, replay);
      })
      .catch((err: unknown) => {
        this.attaching = null;
        this.close(1011, `executor unavailable: ${err instanceof Error ? err.message : String(err)}`);
      });
  }

  private attach(child: ExecServerProcess, replay: boolean): void {
    this.child = child;
    this.suspended = false;
    child.on("line", (line) => this.fromServer(line));
    child.once("exit", () => this.childExited(child));
    if (child.exited) {
      this.childExited(child);
      return;
    }
    if (replay && this.initParams) {
      const id = `${REINIT_ID}-${++this.reinits}`;
      this.swallow.add(id);
      child.send(
        JSON.stringify({ id, method: "initialize", params: { ...this.initParams, resumeSessionId: null } }),
      );
      if (this.initializedSeen) child.send(JSON.stringify({ method: "initialized", params: {} }));
    }
    const queued = this.queue;
    this.queue = [];
    for (const line of queued) child.send(line);
  }

  /** The container is about to stop: the exec-server is let go now, the next message queues and re-attaches. */
  suspend(): void {
    this.suspended = true;
    const child = this.child;
    this.child = null;
    this.running.clear();
    this.pendingStarts.clear();
    child?.end();
  }

  private childExited(child: ExecServerProcess): void {
    if (this.child !== child) return;
    this.child = null;
    this.running.clear();
    this.pendingStarts.clear();
    if (!this.suspended) this.close(1012, "executor restarted");
  }

  private fromClient(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      this.close(1003, "text frames only");
      return;
    }
    this.host.activity();
    let text = Buffer.isBuffer(data)
      ? data.toString("utf8")
      : Buffer.concat(data as Buffer[]).toString("utf8");
    if (text.includes("\n") || text.includes("\r")) {
      // One message per line on the exec-server's stdin: a pretty-printed message is re-serialized.
      const msg = parse(text);
      if (!msg) {
        this.close(1007, "invalid JSON");
        return;
      }
      text = JSON.stringify(msg);
    }
    if (this.initParams === null || !this.initializedSeen || text.includes('"process/start"'))
      this.track(text);
    if (this.child && !this.child.exited) {
      this.child.send(text);
    } else {
      this.queue.push(text);
      this.ensureChild();
    }
  }

  private track(text: string): void {
    const msg = parse(text);
    if (!msg) return;
    if (msg.method === "initialize" && msg.params && this.initParams === null)
      this.initParams = { ...msg.params };
    else if (msg.method === "initialized") this.initializedSeen = true;
    else if (msg.method === "process/start" && msg.id != null && typeof msg.params?.processId === "string") {
      this.pendingStarts.set(String(msg.id), msg.params.processId);
    }
  }

  private fromServer(line: string): void {
    this.host.activity();
    if (this.swallow.size && line.includes(REINIT_ID)) {
      const msg = parse(line);
      if (msg && typeof msg.id === "string" && this.swallow.delete(msg.id)) return;
    }
    if (line.length < 8192) {
      if (this.pendingStarts.size && line.includes('"processId"')) {
        const msg = parse(line);
        const pid = msg?.id != null ? this.pendingStarts.get(String(msg.id)) : undefined;
        if (msg && pid !== undefined && msg.method === undefined) {
          this.pendingStarts.delete(String(msg.id));
          if (msg.result !== undefined) this.running.add(pid);
        }
      }
      if (this.running.size && (line.includes('"process/exited"') || line.includes('"process/closed"'))) {
        const pid = parse(line)?.params?.processId;
        if (typeof pid === "string") this.running.delete(pid);
      }
    }
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(line);
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) {
      this.ws.close(code, reason.slice(0, 120));
    }
    this.teardown();
  }

  private teardown(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    this.child?.end();
    this.child = null;
    this.running.clear();
    this.onClose(this);
  }
}

export class ExecutorBridge {
  private readonly links = new Set<Link>();
  private token: Buffer;
  private closed = false;

  private constructor(
    private readonly server: Server,
    private readonly wss: WebSocketServer,
    private readonly host: ExecutorHost,
    token: string,
    readonly url: string,
  ) {
    this.token = Buffer.from(`Bearer ${token}`);
    server.on("upgrade", (req, socket, head) => this.upgrade(req, socket, head));
  }

  static async listen(host: ExecutorHost, token: string): Promise<ExecutorBridge> {
    const server = createServer((_req, res) => {
      res.writeHead(426, { "content-type": "text/plain" }).end("WebSocket upgrade required\n");
    });
    const wss = new WebSocketServer({
      noServer: true,
      maxPayload: 128 * 1024 * 1024,
      perMessageDeflate: false,
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    return new ExecutorBridge(server, wss, host, token, `ws://127.0.0.1:${port}`);
  }

  /** A new capability token (a claimed pool sandbox gets its own); open connections stay. */
  setToken(token: string): void {
    this.token = Buffer.from(`Bearer ${token}`);
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const reject = (status: string) => {
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    const auth = Buffer.from(req.headers.authorization ?? "");
    let refusal: string | null = null;
    if (this.closed || this.links.size >= MAX_CONNECTIONS) refusal = "503 Service Unavailable";
    if (auth.length !== this.token.length || !timingSafeEqual(auth, this.token)) refusal = "401 Unauthorized";
    if (refusal) {
      reject(refusal);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      if (this.closed) {
        ws.close(1001, "closing");
        return;
      }
      this.links.add(new Link(ws, this.host, (l) => this.links.delete(l)));
    });
  }

  get connections(): number {
    return this.links.size;
  }

  runningProcesses(): number {
    let n = 0;
    for (const l of this.links) n += l.running.size;
    return n;
  }

  /** Before stopping the container: keep the connections, re-attach them on their next message. */
  suspend(): void {
    for (const l of this.links) l.suspend();
  }

  /** Before replacing the container: connections are closed so that the engine reconnects. */
  closeConnections(code = 1012, reason = "executor restarted"): void {
    for (const l of [...this.links]) l.close(code, reason);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closeConnections(1001, "sandbox closed");
    this.wss.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
