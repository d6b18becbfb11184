import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError, type ErrorKind, notFound } from "../kernel/errors.js";
import { dialectOf } from "./dialect.js";

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
  not_implemented: 501,
  unavailable: 503,
};

const OPENAI_TYPE: Record<ErrorKind, string> = {
  bad_request: "invalid_request_error",
  unauthorized: "authentication_error",
  forbidden: "permission_error",
  not_found: "not_found_error",
  conflict: "conflict_error",
  payload_too_large: "invalid_request_error",
  unsupported_media_type: "invalid_request_error",
  misdirected: "invalid_request_error",
  unprocessable: "invalid_request_error",
  capacity: "rate_limit_error",
  not_implemented: "not_implemented_error",
  unavailable: "server_error",
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

/** Sends an ApiError in the request's dialect. The only place errors become responses. */
export function sendError(req: FastifyRequest, reply: FastifyReply, err: ApiError): FastifyReply {
  const status = STATUS[err.kind];
  if (NO_RETRY.has(err.kind)) reply.header("x-should-retry", "false");
  if (dialectOf(req) === "openai") {
    return reply.code(status).send({
      error: { message: err.message, type: OPENAI_TYPE[err.kind], param: err.param, code: err.code },
    });
  }
  return reply.code(status).send({ error: err.message, type: err.templateType });
}

/** Maps framework errors (bad JSON, body too large, …) to ApiErrors; unknown errors become a logged 500. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, req, reply) => {
    if (error instanceof ApiError) return sendError(req, reply, error);
    const code = error.code;
    if (code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      return sendError(req, reply, new ApiError("payload_too_large", "Request body too large", "ValueError"));
    }
    if (code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      return sendError(
        req,
        reply,
        new ApiError("bad_request", "Unsupported Content-Type: send application/json", "ValueError"),
      );
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      const message = code === "FST_ERR_CTP_EMPTY_JSON_BODY" ? "Invalid JSON: empty body" : error.message;
      return sendError(
        req,
        reply,
        new ApiError("bad_request", message, "ValueError", null, "invalid_request_error"),
      );
    }
    req.log.error({ err: error }, "unhandled error");
    const body =
      dialectOf(req) === "openai"
        ? {
            error: {
              message: "Internal server error",
              type: "server_error",
              param: null,
              code: "internal_error",
            },
          }
        : { error: "Internal server error", type: "InternalError" };
    return reply.code(500).send(body);
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] ?? req.url;
    const err = notFound(`Not found: ${path}`);
    if (dialectOf(req) === "template")
      return reply.code(404).send({ error: err.message, type: "ValueError" });
    return sendError(req, reply, err);
  });
}
