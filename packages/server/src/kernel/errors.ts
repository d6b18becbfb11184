/**
 * Typed domain errors. HTTP status codes and both wire shapes are derived from these in one place
 * (http/errors.ts); nothing else maps errors to responses.
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
  | "not_implemented"
  | "unavailable";

export class ApiError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Template-dialect `type` (the original service's exception class name). */
    readonly templateType: string,
    /** Official-dialect `param` / `code`. */
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, param: string | null = null, code: string | null = null) =>
  new ApiError("bad_request", message, "ValueError", param, code ?? "invalid_request_error");
export const unauthorized = (message = "unauthorized") =>
  new ApiError("unauthorized", message, "AuthError", null, "invalid_api_key");
export const forbidden = (message: string) =>
  new ApiError("forbidden", message, "ForbiddenError", null, "forbidden");
export const notFound = (message: string, param: string | null = null) =>
  new ApiError("not_found", message, "NotFoundError", param, "not_found");
export const conflict = (message: string, code: string | null = "conflict") =>
  new ApiError("conflict", message, "ConflictError", null, code);
export const payloadTooLarge = (message: string) =>
  new ApiError("payload_too_large", message, "ValueError", null, "payload_too_large");
export const unprocessable = (message: string, param: string | null = null) =>
  new ApiError("unprocessable", message, "ValueError", param, "unprocessable_entity");
export const capacity = (message: string) =>
  new ApiError("capacity", message, "CapacityError", null, "rate_limit_exceeded");
export const notImplemented = (message: string) =>
  new ApiError("not_implemented", message, "NotImplementedError", null, "not_implemented");
export const unavailable = (message: string) =>
  new ApiError("unavailable", message, "UnavailableError", null, "service_unavailable");
