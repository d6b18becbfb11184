/** Errors as the official API writes them: `{error: {message, type, param, code}}` (the SDK's `APIError`). */
import type { ErrorBodies } from "../../http/errors.js";
import type { ApiError, ErrorKind } from "../../kernel/errors.js";

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
  rate_limited: "rate_limit_error",
  not_implemented: "not_implemented_error",
  unavailable: "server_error",
};

const body = (err: ApiError) => ({
  error: { message: err.message, type: OPENAI_TYPE[err.kind], param: err.param, code: err.code },
});

export const openaiErrors: ErrorBodies = {
  of: body,
  noRoute: body,
  internal: {
    error: { message: "Internal server error", type: "server_error", param: null, code: "internal_error" },
  },
};
