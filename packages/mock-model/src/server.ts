/** A local mock of the OpenAI Responses API for driving the Codex app-server offline. */
import { EventEmitter } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import * as zlib from "node:zlib";
import { CapturedRequest } from "./request.js";
import { formatSseEvent, type ResponseScript, scripts, type Usage } from "./sse.js";

/**
 * Where a queued script applies: a thread id (matched against the request's `prompt_cache_key`),
 * or a predicate over the captured request.
 */
export type Route = string | ((req: CapturedRequest) => boolean);

/** Produces a response when no queued script matches. */
export type Fallback = (req: CapturedRequest) => ResponseScript;

export interface MockResponsesServerOptions {
  /** Used when no queued script matches; `null` (default) answers HTTP 500 "no queued response". */
  fallback?: Fallback | null;
  /**
   * How many of the most recent requests `requests()` keeps: `true` (default) keeps all of them, as tests
   * want; `false` or `0` keeps none; `n` keeps the last n. A long-running service should pass 0 or a small
   * number: nothing else the server holds grows with the number of requests served.
   */
  capture?: number | boolean;
}

export interface WaitForRequestsOptions {
  /** Default 10000. */
  timeoutMs?: number;
  route?: Route;
}

interface PredicateEntry {
  predicate: (req: CapturedRequest) => boolean;
  script: ResponseScript;
}

interface Waiter {
  n: number;
  route: Route | undefined;
  resolve: (reqs: CapturedRequest[]) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

const decoders: Record<string, (buf: Buffer) => Promise<Buffer>> = {
  gzip: promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};

function matches(req: CapturedRequest, route: Route | undefined): boolean {
  if (route === undefined) return true;
  if (typeof route === "string") return req.threadId === route;
  return route(req);
}

function captureLimit(capture: number | boolean | undefined): number {
  if (capture === undefined || capture === true) return Number.POSITIVE_INFINITY;
  if (capture === false) return 0;
  if (!Number.isInteger(capture) || capture < 0) {
    throw new RangeError(`capture must be a boolean or a non-negative integer, got ${capture}`);
  }
  return capture;
}

function describeRoute(route: Route | undefined): string {
  if (route === undefined) return "";
  if (typeof route === "string") return ` for thread ${route}`;
  return ` matching ${route.name ? `predicate ${route.name}` : "the predicate"}`;
}

function sendJson(res: ServerResponse, status: number, payload: unknown): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

export class MockResponsesServer {
  readonly #server: Server;
  readonly #emitter = new EventEmitter();
  readonly #requests: CapturedRequest[] = [];
  readonly #globalQueue: ResponseScript[] = [];
  readonly #threadQueues = new Map<string, ResponseScript[]>();
  readonly #predicateQueue: PredicateEntry[] = [];
  readonly #waiters = new Set<Waiter>();
  readonly #streams = new Set<AbortController>();
  #fallback: Fallback | null;
  /** Maximum number of captured requests kept (`Infinity` = all). */
  readonly #captureLimit: number;
  #received = 0;
  #closed = false;
  /** Base URL for the engine's model provider, e.g. `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  readonly port: number;

  private constructor(server: Server, port: number, fallback: Fallback | null, limit: number) {
    this.#server = server;
    this.port = port;
    this.url = `http://127.0.0.1:${port}/v1`;
    this.#fallback = fallback;
    this.#captureLimit = limit;
    this.#emitter.setMaxListeners(0);
  }

  /** Starts a server on 127.0.0.1 with a random port. */
  static async start(opts: MockResponsesServerOptions = {}): Promise<MockResponsesServer> {
    const limit = captureLimit(opts.capture);
    let mock: MockResponsesServer | undefined;
    const server = createServer((req, res) => {
      void mock?.handle(req, res).catch((err: unknown) => {
        const message = `mock internal error: ${err instanceof Error ? err.message : String(err)}`;
        if (!res.headersSent) sendJson(res, 500, { error: { message, type: "server_error" } });
        else res.destroy();
      });
    });
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    mock = new MockResponsesServer(server, port, opts.fallback ?? null, limit);
    return mock;
  }

  /** Queues one script (or several, in order) for everyone, a thread, or a predicate. */
  enqueue(script: ResponseScript | ResponseScript[], route?: Route): this {
    const list = Array.isArray(script) ? script : [script];
    if (route === undefined) {
      this.#globalQueue.push(...list);
    } else if (typeof route === "string") {
      const queue = this.#threadQueues.get(route) ?? [];
      queue.push(...list);
      this.#threadQueues.set(route, queue);
    } else {
      for (const s of list) this.#predicateQueue.push({ predicate: route, script: s });
    }
    return this;
  }

  /** Queues created / assistant message / completed (like the Python `enqueue_assistant_message`). */
  enqueueAssistantMessage(
    text: string,
    opts: { responseId?: string; usage?: Usage; route?: Route } = {},
  ): this {
    const scriptOpts: { responseId?: string; usage?: Usage } = {};
    if (opts.responseId !== undefined) scriptOpts.responseId = opts.responseId;
    if (opts.usage !== undefined) scriptOpts.usage = opts.usage;
    return this.enqueue(scripts.assistantMessage(text, scriptOpts), opts.route);
  }

  /** Sets the responder for requests no queued script matches; `null` => HTTP 500. */
  setFallback(fallback: Fallback | null): void {
    this.#fallback = fallback;
  }

  /** How many `POST …/responses` arrived since start (or the last `reset()`), captured or not. */
  get received(): number {
    return this.#received;
  }

  /**
   * The captured `POST …/responses` requests (all of them, or the most recent ones when `capture` is
   * bounded), in arrival order, optionally filtered by route.
   */
  requests(route?: Route): CapturedRequest[] {
    return this.#requests.filter((r) => matches(r, route));
  }

  /**
   * Resolves with `requests(route)` once at least `n` matching requests have arrived.
   * Rejects after `timeoutMs` (default 10000) or when the server closes.
   */
  waitForRequests(n: number, opts: WaitForRequestsOptions = {}): Promise<CapturedRequest[]> {
    const { route } = opts;
    const timeoutMs = opts.timeoutMs ?? 10_000;
    const current = this.requests(route);
    if (current.length >= n) return Promise.resolve(current);
    if (this.#closed) return Promise.reject(new Error("waitForRequests: mock server is closed"));
    return new Promise<CapturedRequest[]>((resolve, reject) => {
      const waiter: Waiter = {
        n,
        route,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters.delete(waiter);
          const got = this.requests(route).length;
          reject(
            new Error(
              `waitForRequests: timed out after ${timeoutMs}ms waiting for ${n} request(s)${describeRoute(route)}; ` +
                `${got} arrived (${this.#received} in total)`,
            ),
          );
        }, timeoutMs),
      };
      this.#waiters.add(waiter);
    });
  }

  /** Scripts still queued: all of them, those for one thread, or those queued with this exact predicate. */
  pending(route?: Route): number {
    if (route === undefined) {
      let total = this.#globalQueue.length + this.#predicateQueue.length;
      for (const q of this.#threadQueues.values()) total += q.length;
      return total;
    }
    if (typeof route === "string") return this.#threadQueues.get(route)?.length ?? 0;
    return this.#predicateQueue.filter((e) => e.predicate === route).length;
  }

  /** Clears every queue and the captured requests (fallback and in-flight streams are untouched). */
  reset(): void {
    this.#globalQueue.length = 0;
    this.#predicateQueue.length = 0;
    this.#threadQueues.clear();
    this.#requests.length = 0;
    this.#received = 0;
  }

  /** Stops listening, ends in-flight streams and rejects pending waiters. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const controller of this.#streams) controller.abort();
    for (const waiter of this.#waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(new Error("waitForRequests: mock server closed"));
    }
    this.#waiters.clear();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  /** Subscribes to every captured request. Returns an unsubscribe function. */
  onRequest(listener: (req: CapturedRequest) => void): () => void {
    this.#emitter.on("request", listener);
    return () => this.#emitter.off("request", listener);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.on("error", () => {});
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (req.method === "GET" && path.endsWith("/models")) {
      sendJson(res, 200, {
        object: "list",
        data: [{ id: "mock-model", object: "model", created: 0, owned_by: "openai" }],
      });
      return;
    }
    if (req.method !== "POST" || !path.endsWith("/responses")) {
      sendJson(res, 404, { error: { message: `unexpected ${req.method} ${req.url}`, type: "not_found" } });
      return;
    }

    const captured = await this.capture(req, path);
    const script = this.choose(captured);
    if (script === undefined) {
      sendJson(res, 500, { error: { message: "no queued response", type: "server_error" } });
      return;
    }
    await this.serve(script, req, res);
  }

  private async capture(req: IncomingMessage, path: string): Promise<CapturedRequest> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let raw: Buffer = Buffer.concat(chunks);
    const encoding = req.headers["content-encoding"]?.toLowerCase();
    const decode = encoding ? decoders[encoding] : undefined;
    if (decode) raw = await decode(raw).catch(() => raw);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
    }
    const captured = new CapturedRequest({
      method: req.method ?? "POST",
      path,
      headers,
      rawBody: raw.toString("utf8"),
    });
    this.#received += 1;
    if (this.#captureLimit > 0) {
      this.#requests.push(captured);
      const excess = this.#requests.length - this.#captureLimit;
      if (excess > 0) this.#requests.splice(0, excess);
    }
    this.#emitter.emit("request", captured);
    for (const waiter of [...this.#waiters]) {
      const got = this.requests(waiter.route);
      if (got.length >= waiter.n) {
        clearTimeout(waiter.timer);
        this.#waiters.delete(waiter);
        waiter.resolve(got);
      }
    }
    return captured;
  }

  /** Routing priority: thread queue, then first matching predicate entry, then global FIFO, then fallback. */
  private choose(req: CapturedRequest): ResponseScript | undefined {
    if (req.threadId !== undefined) {
      const queue = this.#threadQueues.get(req.threadId);
      if (queue && queue.length > 0) {
        const script = queue.shift();
        if (queue.length === 0) this.#threadQueues.delete(req.threadId);
        return script;
      }
    }
    const index = this.#predicateQueue.findIndex((entry) => {
      try {
        return entry.predicate(req);
      } catch {
        return false;
      }
    });
    if (index >= 0) return this.#predicateQueue.splice(index, 1)[0]!.script;
    if (this.#globalQueue.length > 0) return this.#globalQueue.shift();
    return this.#fallback ? this.#fallback(req) : undefined;
  }

  private async serve(script: ResponseScript, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (script.kind === "http_error") {
      const body =
        script.body ??
        JSON.stringify({ error: { message: `mock http error ${script.status}`, type: "mock_error" } });
      const isJson = body.trimStart().startsWith("{");
      res.writeHead(script.status, {
        "content-type": isJson ? "application/json" : "text/plain; charset=utf-8",
        "content-length": Buffer.byteLength(body),
      });
      res.end(body);
      return;
    }

    const controller = new AbortController();
    const { signal } = controller;
    const onClose = () => {
      if (!res.writableFinished) controller.abort();
    };
    res.on("close", onClose);
    req.socket.setNoDelay(true);
    this.#streams.add(controller);
    try {
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        connection: "keep-alive",
      });
      res.flushHeaders();
      for (const [i, event] of script.events.entries()) {
        if (signal.aborted) return;
        if (i > 0 && script.delayMs && script.delayMs > 0) {
          await abortableSleep(script.delayMs, signal);
          if (signal.aborted) return;
        }
        res.write(formatSseEvent(event));
        if (i === 0 && script.gate) {
          script.gate.markReached();
          if (!script.gate.isReleased) await abortableWait(script.gate.released, signal);
        }
      }
      if (!signal.aborted) res.end();
    } finally {
      this.#streams.delete(controller);
      res.off("close", onClose);
      if (signal.aborted && !res.destroyed) res.destroy();
    }
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

function abortableWait(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    promise.then(done, done);
  });
}
