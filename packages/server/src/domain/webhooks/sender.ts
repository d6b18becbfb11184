/**
 * One webhook POST: to a target the outbound guard allows (platform/net/outbound-guard.ts: checked on the address it connects
 * to), a fresh connection each time (so every attempt resolves and checks the name again), a 10 s limit for the
 * whole exchange, redirects never followed (a 3xx is a failed attempt), and only a little of the answer read.
 */
import http from "node:http";
import https from "node:https";
import { type OutboundGuard, TargetRefused } from "../../platform/net/outbound-guard.js";

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

/** Where webhooks may go: what the outbound guard allows, over https (or http when the operator allows it). */
export interface WebhookTargets {
  guard: OutboundGuard;
  /** `--webhook-allow-http`. */
  allowHttp: boolean;
}

export interface SendOptions extends WebhookTargets {
  timeoutMs?: number;
  /** Aborts the request (service shutdown). */
  signal?: AbortSignal;
}

/** Checks a webhook URL as written (scheme, credentials, an address literal or a loopback name); throws TargetRefused. */
export function checkWebhookUrl(raw: string, targets: WebhookTargets): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRefused(`"${raw}" is not a valid URL`);
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && targets.allowHttp)) {
    throw new TargetRefused(
      targets.allowHttp
        ? "Webhook URLs must be http:// or https://"
        : "Webhook URLs must be https:// (plain http:// needs --webhook-allow-http on the server)",
    );
  }
  if (url.username || url.password) throw new TargetRefused("Webhook URLs must not contain credentials");
  targets.guard.checkHost(url);
  return url;
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
      url = checkWebhookUrl(target, opts);
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
      lookup: opts.guard.lookup,
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
