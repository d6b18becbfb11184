/**
 * Browser trust boundaries, for every route of both dialects, with or without a token:
 *
 * - Host: on a loopback bind only loopback names are served (plus `--allowed-host`): a page on a name that
 *   resolves to 127.0.0.1 (DNS rebinding) gets 421 and can neither drive the agent nor read the answers.
 * - Origin: a request that carries an `Origin` must come from an allowed origin (the service's own, or one given
 *   with `--cors-origin`); anything else is 403. Preflights are answered for allowed origins only.
 * - Content type: a body must be JSON (`application/json`, `application/*+json`). Forms and text/plain bodies are
 *   what a web page can send cross-site without a preflight; they are refused with 415. The one exception is the
 *   route marked `multipartUpload` (the Files API's `POST /v1/files`), which takes `multipart/form-data` and only
 *   that, and only with a credential header (`Authorization` or `X-Access-Token`): a header no cross-site form can
 *   send, so even a browser that left out `Origin` could not upload through a user's loopback service.
 *
 * Requests without `Origin` (curl, the SDKs, other services) are not affected by the origin rule.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, forbidden } from "../kernel/errors.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** This route takes `multipart/form-data` (and only that): the Files API's upload. */
    multipartUpload?: boolean;
  }
}

export interface TrustOptions {
  /** Host names (no port) accepted in the Host header; empty = any (non-loopback binds without a list). */
  allowedHosts: ReadonlySet<string>;
  /** Origins (`scheme://host[:port]`) allowed besides the service's own. */
  corsOrigins: ReadonlySet<string>;
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/i;
/** Headers a browser client may send (the official SDK adds its own `x-stainless-*` ones). */
const ALLOWED_REQUEST_HEADERS =
  "authorization, content-type, openai-beta, idempotency-key, last-event-id, x-access-token, openai-organization, openai-project";
const EXPOSED_HEADERS = "x-request-id, idempotent-replayed, retry-after, x-should-retry";
const METHODS = "GET, POST, DELETE, OPTIONS";

export const misdirected = (host: string) =>
  new ApiError(
    "misdirected",
    `Host "${host}" is not served here: this service answers only to its own host names (see --allowed-host)`,
    null,
    "host_not_allowed",
  );

export const unsupportedMediaType = (type: string) =>
  new ApiError(
    "unsupported_media_type",
    `Unsupported Content-Type "${type}": send JSON with Content-Type: application/json`,
    null,
    "unsupported_media_type",
  );

/** `host[:port]` → lower-case host name without the port (IPv6 literals keep their brackets). */
export function hostName(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end < 0 ? h : h.slice(0, end + 1);
  }
  const colon = h.lastIndexOf(":");
  return colon < 0 ? h : h.slice(0, colon);
}

export const notMultipart = (type: string) =>
  new ApiError(
    "unsupported_media_type",
    `Unsupported Content-Type "${type}": upload the file as multipart/form-data (fields 'file' and 'purpose')`,
    null,
    "unsupported_media_type",
  );

/** The upload route: a multipart body, from a client that sends a credential header (never a cross-site form). */
function checkMultipartUpload(req: FastifyRequest, type: string | null): void {
  if (type === null || type.toLowerCase() !== "multipart/form-data") throw notMultipart(type ?? "none");
  if (req.headers.authorization === undefined && req.headers["x-access-token"] === undefined) {
    throw forbidden(
      "A multipart upload needs an Authorization (or X-Access-Token) header, even where none is checked: " +
        "it tells a client from a cross-site form",
    );
  }
}

function mediaType(req: FastifyRequest): string | null {
  const raw = req.headers["content-type"];
  if (typeof raw !== "string" || raw.trim() === "") return null;
  return raw.split(";")[0]!.trim();
}

function hasBody(req: FastifyRequest): boolean {
  const length = req.headers["content-length"];
  if (length !== undefined) return Number(length) > 0;
  return req.headers["transfer-encoding"] !== undefined;
}

export function installTrustBoundaries(app: FastifyInstance, opts: TrustOptions): void {
  const { allowedHosts, corsOrigins } = opts;

  const hostAllowed = (req: FastifyRequest): boolean => {
    if (allowedHosts.size === 0) return true;
    const host = req.headers.host;
    return typeof host === "string" && allowedHosts.has(hostName(host));
  };

  /** The service's own origin is the one whose host is the (allowed) Host the request was sent to. */
  const originAllowed = (req: FastifyRequest, origin: string): boolean => {
    if (corsOrigins.has(origin)) return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (url.origin !== origin || (url.protocol !== "http:" && url.protocol !== "https:")) return false;
    const host = req.headers.host;
    return typeof host === "string" && url.host === host.trim().toLowerCase();
  };

  const allowCors = (reply: FastifyReply, origin: string) => {
    reply.header("access-control-allow-origin", origin);
    reply.header("vary", "Origin");
    reply.header("access-control-expose-headers", EXPOSED_HEADERS);
  };

  app.addHook("onRequest", async (req, reply) => {
    if (!hostAllowed(req)) throw misdirected(String(req.headers.host ?? ""));
    const origin = req.headers.origin;
    if (origin !== undefined) {
      if (!originAllowed(req, origin))
        throw forbidden(`Origin "${origin}" is not allowed (see --cors-origin)`);
      allowCors(reply, origin);
      if (req.method === "OPTIONS") {
        const asked = req.headers["access-control-request-headers"];
        const extra = typeof asked === "string" ? asked : "";
        reply
          .code(204)
          .header("access-control-allow-methods", METHODS)
          .header(
            "access-control-allow-headers",
            extra ? `${ALLOWED_REQUEST_HEADERS}, ${extra}` : ALLOWED_REQUEST_HEADERS,
          )
          .header("access-control-max-age", "600")
          .send();
        return reply;
      }
    }
    if (req.method === "GET" || req.method === "HEAD" || req.method === "OPTIONS") return;
    const type = mediaType(req);
    if (req.routeOptions.config.multipartUpload === true) {
      checkMultipartUpload(req, type);
      return;
    }
    if (type === null ? hasBody(req) : !JSON_TYPE.test(type)) throw unsupportedMediaType(type ?? "none");
  });
}
