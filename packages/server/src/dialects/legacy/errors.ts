/**
 * Errors as the original service wrote them (the seed contract): `{error: <message>, type: <its exception class>}`.
 * A URL no route serves is a `ValueError`, as it was there.
 */
import type { ErrorBodies } from "../../http/errors.js";
import type { ErrorKind } from "../../kernel/errors.js";

const TEMPLATE_TYPE: Record<ErrorKind, string> = {
  bad_request: "ValueError",
  unauthorized: "AuthError",
  forbidden: "ForbiddenError",
  not_found: "NotFoundError",
  conflict: "ConflictError",
  payload_too_large: "ValueError",
  unsupported_media_type: "UnsupportedMediaTypeError",
  misdirected: "MisdirectedRequestError",
  unprocessable: "ValueError",
  capacity: "CapacityError",
  rate_limited: "RateLimitError",
  not_implemented: "NotImplementedError",
  unavailable: "UnavailableError",
};

export const legacyErrors: ErrorBodies = {
  of: (err) => ({ error: err.message, type: TEMPLATE_TYPE[err.kind] }),
  noRoute: (err) => ({ error: err.message, type: "ValueError" }),
  internal: { error: "Internal server error", type: "InternalError" },
};
