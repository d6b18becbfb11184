// A webhook receiver for tests: a local HTTP server that records every request (headers and raw body) and answers
// with the statuses it is told to (200 by default).
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  /** The request's path (each endpoint of a test gets its own). */
  path: string;
  headers: Record<string, string>;
  body: string;
  /** What the receiver answered. */
  status: number;
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  /** Statuses to answer next, per path. */
  private readonly answers = new Map<string, number[]>();
  /** Requests answered never (the connection is held until the receiver closes). */
  hang = false;
  /** Extra headers of every answer (e.g. a Location). */
  answerHeaders: Record<string, string> = {};

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    let self: WebhookReceiver | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const r = self!;
        if (r.hang) return;
        const path = (req.url ?? "/").split("?")[0]!;
        const status = r.answers.get(path)?.shift() ?? 200;
        r.received.push({
          path,
          headers: flat(req.headers),
          body: Buffer.concat(chunks).toString("utf8"),
          status,
        });
        res.writeHead(status, { "content-type": "text/plain", ...r.answerHeaders });
        res.end(status < 300 ? "ok" : "no");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    self = new WebhookReceiver(server, `http://127.0.0.1:${port}`);
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The URL of a path on the receiver. */
  urlOf(path: string): string {
    return `${this.url}${path}`;
  }

  /** The next requests to `path` are answered with these statuses, in order. */
  answerNext(path: string, ...statuses: number[]): void {
    this.answers.set(path, [...(this.answers.get(path) ?? []), ...statuses]);
  }

  /** Requests to `path` (whose JSON body satisfies `pred`). */
  at(
    path: string,
    pred: (event: { id: string; type: string; data: Record<string, unknown> }) => boolean = () => true,
  ): Received[] {
    return this.received.filter((r) => r.path === path && pred(JSON.parse(r.body) as never));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function flat(h: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}
