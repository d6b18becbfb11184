// The one error type of this package: a code a caller can branch on, and a message a person can act on.

export type SandboxErrorCode =
  | "invalid_spec"
  | "conflict"
  | "not_found"
  | "unavailable"
  | "podman_failed"
  | "disk_failed"
  | "closed";

export class SandboxError extends Error {
  override readonly name = "SandboxError";
  constructor(
    readonly code: SandboxErrorCode,
    message: string,
  ) {
    super(message);
  }
}
