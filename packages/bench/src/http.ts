/**
 * A lean HTTP client on node:http (keep-alive agent) with an SSE reader. Used instead of fetch so the client's own
 * cost stays small next to the server's (fan-out opens up to 1000 streams from one process).
 */
import http from "node:http";
import { epochMs, now } from "./proc.js";

export interface SseFrame {
  id: string | null;
  event: string | null;
  /** The raw `data:` text (JSON.parse it when needed). */
  data: string;
  /** performance.now() when the chunk holding the frame arrived. */
  t: number;
  /** Epoch ms (sub-ms) when the chunk holding the frame arrived. */
  epoch: number;
}

/** Incremental SSE parser: push text chunks, get complete frames (comments and empty blocks are skipped). */
export class SseParser {
  private buffer = "";

  push(chunk: string, t: number, epoch: number): SseFrame[] {
    this.buffer += chunk;
    const frames: SseFrame[] = [];
    let start = 0;
    for (;;) {
      const end = this.buffer.indexOf("\n\n", start);
      if (end < 0) break;
      const block = this.buffer.slice(start, end);
      start = end + 2;
      let id: string | null = null;
      let event: string | null = null;
      let data: string | null = null;
      for (const line of block.split("\n")) {
        if (line.startsWith("data: ")) data = data === null ? line.slice(6) : `${data}\n${line.slice(6)}`;
        else if (line.startsWith("id: ")) id = line.slice(4);
        else if (line.startsWith("event: ")) event = line.slice(7);
      }
      if (data !== null) frames.push({ id, event, data, t, epoch });
    }
    this.buffer = start === 0 ? this.buffer : this.buffer.slice(start);
    return frames;
  }
}

/**
 * A lean SSE reader for many streams (or huge frames): from text chunks, only the `id:` and `event:` lines, in order,
 * without keeping data lines (a frame can be 16 MiB) and without building a frame object per frame: what the fan-out
 * subscribers can afford. The rest of a line longer than 200 characters that is not yet complete is skipped.
 */
export class SseLineScanner {
  private carry = "";
  /** Inside a long line (data) whose end has not arrived yet: skipped. */
  private skipping = false;

  constructor(private readonly onLine: (kind: "id" | "event", value: string) => void) {}

  push(chunk: string): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf("\n", start);
      if (nl < 0) {
        if (!this.skipping && start < chunk.length) {
          this.carry += chunk.slice(start);
          if (this.carry.length > 200) {
            this.carry = "";
            this.skipping = true;
          }
        }
        return;
      }
      if (this.skipping) this.skipping = false;
      else if (this.carry) {
        this.line(this.carry + chunk.slice(start, nl));
        this.carry = "";
      } else if (chunk.startsWith("id: ", start) || chunk.startsWith("event: ", start)) {
        this.line(chunk.slice(start, nl));
      }
      start = nl + 1;
    }
  }

  private line(l: string): void {
    if (l.startsWith("id: ")) this.onLine("id", l.slice(4));
    else if (l.startsWith("event: ")) this.onLine("event", l.slice(7));
  }
}

/** The event-log sequence number of an SSE id ("<seq>" or "<seq>:<frame>"). */
export function seqOf(id: string | null): number {
  if (id === null) return Number.NaN;
  const colon = id.indexOf(":");
  return Number(colon < 0 ? id : id.slice(0, colon));
}

export interface JsonResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${status} ${body.slice(0, 300)}`);
  }
}

export const OFFICIAL = { "openai-beta": "agents=v1" } as const;

type Waiter = { match: (f: SseFrame) => boolean; resolve: (f: SseFrame) => void; reject: (e: Error) => void };

/** One SSE response being read. Frames go to `onFrame` and to pending `next()` waiters. */
export class SseStream {
  readonly opened: Promise<http.IncomingMessage>;
  readonly ended: Promise<void>;
  frames = 0;
  private readonly waiters: Waiter[] = [];
  private closed = false;
  private failure: Error | null = null;
  private req!: http.ClientRequest;

  constructor(
    url: URL,
    opts: { method: string; headers: Record<string, string>; body?: string; agent: http.Agent },
    private readonly onFrame: ((f: SseFrame) => void) | null = null,
  ) {
    let endResolve!: () => void;
    this.ended = new Promise<void>((r) => {
      endResolve = r;
    });
    this.opened = new Promise<http.IncomingMessage>((resolve, reject) => {
      this.req = http.request(
        url,
        { method: opts.method, headers: opts.headers, agent: opts.agent },
        (res) => {
          if (
            res.statusCode !== 200 ||
            !String(res.headers["content-type"]).startsWith("text/event-stream")
          ) {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (d: string) => {
              text += d;
            });
            res.on("end", () => {
              const err = new HttpError(res.statusCode ?? 0, text, `${opts.method} ${url.pathname} (SSE)`);
              this.fail(err);
              reject(err);
              endResolve();
            });
            return;
          }
          resolve(res);
          const parser = new SseParser();
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            const frames = parser.push(chunk, now(), epochMs());
            for (const f of frames) this.dispatch(f);
          });
          const finish = () => {
            this.closed = true;
            this.fail(new Error(`SSE stream ${url.pathname} ended`));
            endResolve();
          };
          res.on("end", finish);
          res.on("close", finish);
          res.on("error", finish);
        },
      );
      this.req.on("error", (err) => {
        this.fail(err);
        reject(err);
        endResolve();
      });
      if (opts.body !== undefined) this.req.write(opts.body);
      this.req.end();
    });
    this.opened.catch(() => {});
  }

  /** The next frame (from now on) that matches. */
  next(match: (f: SseFrame) => boolean, timeoutMs = 60_000): Promise<SseFrame> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<SseFrame>((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new Error(`no matching SSE frame within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter: Waiter = {
        match,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** Closes the connection (the server sees the client leave). */
  close(): void {
    this.closed = true;
    this.req.destroy();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private dispatch(f: SseFrame): void {
    this.frames++;
    this.onFrame?.(f);
    for (let i = 0; i < this.waiters.length; ) {
      const w = this.waiters[i]!;
      if (w.match(f)) {
        this.waiters.splice(i, 1);
        w.resolve(f);
      } else i++;
    }
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const w of this.waiters.splice(0)) w.reject(err);
  }
}

export class HttpClient {
  readonly agent: http.Agent;

  constructor(
    readonly baseUrl: string,
    opts: { maxSockets?: number } = {},
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? Number.POSITIVE_INFINITY });
  }

  /** A request with a JSON body (if any); resolves with the status and the parsed JSON (or {} when empty). */
  request<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<JsonResponse<T>> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        new URL(path, this.baseUrl),
        {
          method,
          agent: this.agent,
          headers: {
            ...(payload !== undefined
              ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) }
              : {}),
            ...headers,
          },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d: string) => {
            text += d;
          });
          res.on("end", () => {
            try {
              resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : {}) as T });
            } catch {
              reject(new HttpError(res.statusCode ?? 0, text, `${method} ${path}: not JSON`));
            }
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  /** Like request, but throws unless the status is `expect`. */
  async expect<T = Record<string, unknown>>(
    expect: number,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const r = await this.request<T>(method, path, body, headers);
    if (r.status !== expect) {
      throw new HttpError(r.status, JSON.stringify(r.body), `${method} ${path} (expected ${expect})`);
    }
    return r.body;
  }

  /** Opens an SSE response (GET, or a POST whose answer is a stream). */
  sse(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    onFrame: ((f: SseFrame) => void) | null = null,
  ): SseStream {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new SseStream(
      new URL(path, this.baseUrl),
      {
        method,
        agent: this.agent,
        headers: {
          accept: "text/event-stream",
          ...(payload !== undefined
            ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(payload)) }
            : {}),
          ...headers,
        },
        ...(payload !== undefined ? { body: payload } : {}),
      },
      onFrame,
    );
  }

  close(): void {
    this.agent.destroy();
  }
}
