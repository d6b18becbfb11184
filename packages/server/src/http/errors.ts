import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, type ErrorKind, notFound } from "../kernel/errors.js";
import { type Dialect, dialectOf } from "./dialect.js";

const STATUS: Record<ErrorKind, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  misdirected: 421,
  unprocessable: 422,
  capacity: 429,
  rate_limited: 429,
  not_implemented: 501,
  unavailable: 503,
};

/** Client mistakes: retrying the same request cannot help (the openai SDK retries 409/429/5xx otherwise). */
const NO_RETRY: ReadonlySet<ErrorKind> = new Set([
  "conflict",
  "unsupported_media_type",
  "misdirected",
  "forbidden",
  "not_implemented",
  "bad_request",
  "unprocessable",
]);

export function statusOf(err: ApiError): number {
  return STATUS[err.kind];
}

/** How a dialect writes an error's body (dialects/openai/errors.ts, dialects/legacy/errors.ts). */
export interface ErrorBodies {
  /** The body of an ApiError. */
  of(err: ApiError): unknown;
  /** The body of a request no route serves. */
  noRoute(err: ApiError): unknown;
  /** The body of an unexpected failure (a 500: nothing of what went wrong is shown). */
  internal: unknown;
}

declare module "fastify" {
  interface FastifyInstance {
    /** Each dialect's error bodies (installErrorHandling). */
    errorBodies: Record<Dialect, ErrorBodies>;
  }
}

/** Sends an ApiError in the request's dialect. The only place errors become responses. */
export function sendError(req: FastifyRequest, reply: FastifyReply, err: ApiError): FastifyReply {
  if (NO_RETRY.has(err.kind)) reply.header("x-should-retry", "false");
  return reply.code(STATUS[err.kind]).send(req.server.errorBodies[dialectOf(req)].of(err));
}

/** Maps framework errors (bad JSON, body too large, …) to ApiErrors; unknown errors become a logged 500. */
export function installErrorHandling(app: FastifyInstance, bodies: Record<Dialect, ErrorBodies>): void {
  app.decorate("errorBodies", bodies);
  app.setErrorHandler((error: FastifyError, req, reply) => {
    if (error instanceof ApiError) return sendError(req, reply, error);
    const code = error.code;
    if (code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      return sendError(req, reply, new ApiError("payload_too_large", "Request body too large"));
    }
    if (code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      return sendError(
        req,
        reply,
        new ApiError("bad_request", "Unsupported Content-Type: send application/json"),
      );
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      const message = code === "FST_ERR_CTP_EMPTY_JSON_BODY" ? "Invalid JSON: empty body" : error.message;
      return sendError(req, reply, new ApiError("bad_request", message, null, "invalid_request_error"));
    }
    req.log.error({ err: error }, "unhandled error");
    return reply.code(500).send(bodies[dialectOf(req)].internal);
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] ?? req.url;
    const err = notFound(`Not found: ${path}`);
    return reply.code(404).send(bodies[dialectOf(req)].noRoute(err));
  });
}
