/**
 * One webhook POST: to a target the guard allows (checked on the address it connects to), a fresh connection each
 * time (so every attempt resolves and checks the name again), a 10 s limit for the whole exchange, redirects never
 * followed (a 3xx is a failed attempt), and only a little of the answer read.
 */
import http from "node:http";
import https from "node:https";
import { checkTargetUrl, guardedLookup, type Resolve, type TargetPolicy } from "./guard.js";

export const SEND_TIMEOUT_MS = 10_000;
/** Bytes of the answer read (the rest is dropped): a receiver's body is not needed. */
const MAX_ANSWER_BYTES = 64 * 1024;

export interface SendResult {
  /** The HTTP status (null: no answer). */
  status_code: number | null;
  /** Why the attempt failed (null: a 2xx). */
  error: string | null;
  duration_ms: number;
}

export interface SendOptions {
  policy: TargetPolicy;
  timeoutMs?: number;
  /** Aborts the request (service shutdown). */
  signal?: AbortSignal;
  /** How names are resolved (default: the system resolver). */
  resolve?: Resolve;
}

export function postWebhook(
  target: string,
  body: string,
  headers: Record<string, string>,
  opts: SendOptions,
): Promise<SendResult> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = checkTargetUrl(target, opts.policy);
    } catch (err) {
      resolve({ status_code: null, error: (err as Error).message, duration_ms: took() });
      return;
    }
    let settled = false;
    const finish = (r: Omit<SendResult, "duration_ms">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...r, duration_ms: took() });
    };
    const client = url.protocol === "https:" ? https : http;
    const req = client.request(url, {
      method: "POST",
      headers: {
        ...headers,
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(body)),
        "user-agent": "codex-agent-api-webhooks/1",
      },
      // No pooled connections: each attempt connects anew, through the guard.
      agent: false,
      lookup: guardedLookup(opts.policy, opts.resolve) as unknown as http.RequestOptions["lookup"],
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    const timeoutMs = opts.timeoutMs ?? SEND_TIMEOUT_MS;
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    timer.unref();
    req.on("error", (err) => finish({ status_code: null, error: err.message }));
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      const done = () => {
        const ok = status >= 200 && status < 300;
        finish({
          status_code: status,
          error: ok
            ? null
            : status >= 300 && status < 400
              ? `answered ${status}: redirects are not followed`
              : `answered ${status}`,
        });
        res.destroy();
      };
      res.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) done();
      });
      res.on("end", done);
      res.on("error", done);
    });
    req.end(body);
  });
}
