/**
 * Forwards one HTTP request upstream: a plain proxied request (`GET http://host/…`) to a checked address, or a
 * request read from an intercepted TLS tunnel. Hop-by-hop headers are dropped, `Host` is the target's own (so a
 * request cannot name another site behind the same address), placeholders in the request target and header values
 * are replaced by their secrets, credential headers replace the client's, response headers carrying a credential are
 * dropped and those carrying a substituted secret get its placeholder back. Bodies pass untouched.
 */
import { type Agent, type IncomingMessage, request, type ServerResponse } from "node:http";
import { admit, type DecisionInput, type EndpointContext } from "./context.js";
import { BadTarget, hostForUrl, parseAbsoluteUrl, parseHost, type TargetHost } from "./hosts.js";
import type { InjectedHeaders } from "./policy.js";
import { REFUSED_HEADER, type Refusal, refusalBody, statusOf } from "./refusals.js";

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** How much larger than `maxHeaderBytes` a request head may grow by substitution. */
const SUBSTITUTED_HEAD_FACTOR = 4;

/** Where a request goes: the target, the checked address, the connections to use. */
export interface Route {
  target: TargetHost;
  port: number;
  address: string;
  agent: Agent;
  /** The port a Host header may omit (80 plain, 443 intercepted). */
  defaultPort: number;
  protocol: "http" | "https";
}

/** The header pairs of a message without hop-by-hop headers (and those the Connection header names). */
function endToEnd(raw: readonly string[], drop: ReadonlySet<string>): string[] {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === "connection") {
      for (const n of raw[i + 1]!.split(",")) named.add(n.trim().toLowerCase());
    }
  }
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!.toLowerCase();
    if (HOP_BY_HOP.has(k) || named.has(k) || drop.has(k)) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}

const authorityOf = (t: TargetHost, port: number, defaultPort: number) =>
  port === defaultPort ? hostForUrl(t) : `${hostForUrl(t)}:${port}`;

/** Answers a request with a refusal and reports it. */
export function refuseRequest(
  ctx: EndpointContext,
  res: ServerResponse,
  refusal: Refusal,
  d: Omit<DecisionInput, "decision" | "reason" | "message" | "status">,
): void {
  const status = statusOf(refusal.reason);
  ctx.decide({ ...d, decision: "refused", reason: refusal.reason, message: refusal.message, status });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.shouldKeepAlive = false;
  res.writeHead(status, {
    [REFUSED_HEADER]: refusal.reason,
    "content-type": "application/json",
    connection: "close",
  });
  res.end(refusalBody(refusal, d.host, d.port));
}

const CERT_ERRORS = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|HOSTNAME|ALTNAME|SIGNATURE|ISSUER/;

function upstreamRefusal(e: NodeJS.ErrnoException, what: string): Refusal {
  const code = e.code ?? e.message;
  if (CERT_ERRORS.test(code)) {
    return {
      reason: "upstream_certificate",
      message: `${what} presented a certificate that does not verify (${code})`,
    };
  }
  if (code === "ETIMEDOUT") return { reason: "upstream_timeout", message: `${what} did not answer in time` };
  return { reason: "upstream_failed", message: `${what} could not be reached (${code})` };
}

/** Sends a request along a route and streams the response back. */
export function forward(
  ctx: EndpointContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  path: string,
): void {
  const { target, port } = route;
  const injected: InjectedHeaders | null = ctx.credentials().for(target);
  // (Kept for the response: the values this request carried are the ones to conceal, even after an update.)
  const substitutions = ctx.substitutions();
  const substituter = substitutions.for(target);
  const drop = new Set(["host", ...(injected?.keys() ?? [])]);
  const headers = endToEnd(req.rawHeaders, drop);
  // The client's header values and request target only: header names, Host and the credentials' values are not.
  const upstreamPath = substituter ? substituter.requestTarget(path) : path;
  if (substituter) for (let i = 1; i < headers.length; i += 2) headers[i] = substituter.header(headers[i]!);
  headers.unshift("Host", authorityOf(target, port, route.defaultPort));
  for (const [k, v] of injected ?? []) headers.push(k, v);
  const base: Omit<DecisionInput, "decision" | "reason" | "message" | "status"> = {
    protocol: route.protocol,
    host: target.host,
    port,
    address: route.address,
    method: req.method ?? "GET",
    credentialed: injected !== null,
    substituted: (substituter?.count ?? 0) > 0,
  };
  if (base.substituted) {
    // A head full of placeholders must not turn into an unbounded one (each may stand for a long value).
    const limit = SUBSTITUTED_HEAD_FACTOR * ctx.limits.maxHeaderBytes;
    const size = headers.reduce((n, h) => n + h.length + 2, upstreamPath.length);
    if (size > limit) {
      refuseRequest(
        ctx,
        res,
        {
          reason: "bad_request",
          message: `the request head would be larger than ${limit} bytes with its secrets`,
        },
        base,
      );
      return;
    }
  }

  const up = request({
    host: route.address,
    port,
    method: req.method,
    path: upstreamPath,
    headers,
    agent: route.agent,
    setHost: false,
    timeout: ctx.limits.idleTimeoutMs,
  });
  const what = `${target.host}:${port}`;
  up.on("timeout", () => up.destroy(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })));
  up.on("error", (e: NodeJS.ErrnoException) => {
    if (res.headersSent) res.destroy();
    else refuseRequest(ctx, res, upstreamRefusal(e, what), base);
  });
  up.on("response", (upRes) => {
    const secrets = ctx.credentials().secrets;
    const out = endToEnd(upRes.rawHeaders, new Set());
    const kept: string[] = [];
    for (let i = 0; i < out.length; i += 2) {
      if (secrets.some((s) => out[i + 1]!.includes(s))) continue;
      kept.push(out[i]!, substitutions.empty ? out[i + 1]! : substitutions.conceal(out[i + 1]!));
    }
    ctx.decide({ ...base, decision: "allowed", status: upRes.statusCode });
    res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, kept);
    upRes.pipe(res);
    upRes.on("error", () => res.destroy());
  });
  res.on("close", () => {
    if (!res.writableFinished) up.destroy();
  });
  req.pipe(up);
}

/** A plain proxied request (`GET http://host/path`): parsed, admitted, forwarded to a checked address. */
export async function forwardPlain(
  ctx: EndpointContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const method = req.method ?? "GET";
  let parsed: ReturnType<typeof parseAbsoluteUrl>;
  try {
    parsed = parseAbsoluteUrl(req.url ?? "");
  } catch (e) {
    const message = e instanceof BadTarget ? e.message : "bad request target";
    refuseRequest(
      ctx,
      res,
      { reason: "bad_request", message },
      { protocol: "http", host: null, port: null, method },
    );
    return;
  }
  const { target, port, path } = parsed;
  const base = { protocol: "http" as const, host: target.host, port, method };
  if (req.headers.upgrade) {
    refuseRequest(ctx, res, { reason: "unsupported", message: "protocol upgrades are not proxied" }, base);
    return;
  }
  const admitted = await admit(ctx, target, port);
  if ("refusal" in admitted) {
    refuseRequest(ctx, res, admitted.refusal, base);
    return;
  }
  if (ctx.closed() || res.destroyed) return;
  forward(
    ctx,
    req,
    res,
    {
      target,
      port,
      address: admitted.addresses[0]!.address,
      agent: ctx.httpAgent,
      defaultPort: 80,
      protocol: "http",
    },
    path,
  );
}

/**
 * Whether a request's Host header names the tunnel's host. (The port is not compared: the request goes to the
 * tunnel's address and port whatever it says; the name is what a server behind a shared address routes by.)
 */
export function hostHeaderMatches(hostHeader: string | undefined, target: TargetHost): boolean {
  if (hostHeader === undefined) return true; // HTTP/1.0 without Host: the tunnel's host is used
  const m = /^(\[[^\]]*\]|[^:]+)(?::\d{1,5})?$/.exec(hostHeader.trim());
  if (!m) return false;
  try {
    return parseHost(m[1]!).host === target.host;
  } catch {
    return false;
  }
}
