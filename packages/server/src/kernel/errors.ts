/**
 * Typed domain errors: a kind, a message, the request field it is about and a machine-readable code. The HTTP status
 * comes from the kind (http/errors.ts, the one place errors become responses); each dialect writes the body in its
 * own shape (dialects/openai/errors.ts, dialects/legacy/errors.ts).
 */
export type ErrorKind =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "misdirected"
  | "unprocessable"
  | "capacity"
  | "rate_limited"
  | "not_implemented"
  | "unavailable";

export class ApiError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** The request field the error is about, and a machine-readable code (the official `param` / `code`). */
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, param: string | null = null, code: string | null = null) =>
  new ApiError("bad_request", message, param, code ?? "invalid_request_error");
export const unauthorized = (message = "unauthorized") =>
  new ApiError("unauthorized", message, null, "invalid_api_key");
export const forbidden = (message: string) => new ApiError("forbidden", message, null, "forbidden");
export const notFound = (message: string, param: string | null = null) =>
  new ApiError("not_found", message, param, "not_found");
export const conflict = (message: string, code: string | null = "conflict") =>
  new ApiError("conflict", message, null, code);
export const payloadTooLarge = (message: string) =>
  new ApiError("payload_too_large", message, null, "payload_too_large");
export const unprocessable = (message: string, param: string | null = null) =>
  new ApiError("unprocessable", message, param, "unprocessable_entity");
export const capacity = (message: string) => new ApiError("capacity", message, null, "rate_limit_exceeded");
export const notImplemented = (message: string) =>
  new ApiError("not_implemented", message, null, "not_implemented");
export const unavailable = (message: string) =>
  new ApiError("unavailable", message, null, "service_unavailable");
