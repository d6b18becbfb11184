import type { TurnResult } from "./types.js";

/** Base class of every error the SDK raises. */
export class CodexError extends Error {
  override name = "CodexError";
}

/** The engine rejected a request (JSON-RPC error). `message` is the engine's message verbatim. */
export class InvalidRequestError extends CodexError {
  override name = "InvalidRequestError";
  constructor(
    message: string,
    readonly code: number = -32600,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** The app-server process exited or was closed: every pending call and open stream ends with this. */
export class TransportClosedError extends CodexError {
  override name = "TransportClosedError";
  constructor(
    message: string,
    readonly stderrTail: string = "",
  ) {
    super(message);
  }
}

/** A turn ended with status `failed`; `message` is the engine's error message. */
export class TurnFailedError extends CodexError {
  override name = "TurnFailedError";
  constructor(
    message: string,
    readonly turnId: string,
    readonly codexErrorInfo: unknown = null,
    /** What the turn produced before it failed (items, usage). */
    readonly result: TurnResult | null = null,
  ) {
    super(message);
  }
}

export function isInvalidRequest(err: unknown, pattern: RegExp): err is InvalidRequestError {
  return err instanceof InvalidRequestError && pattern.test(err.message);
}
