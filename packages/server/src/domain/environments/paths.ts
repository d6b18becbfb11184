/**
 * Where a client may put things in an environment: official `/workspace/…` paths checked and made
 * workspace-relative, and the 422 for what this server does not support.
 */
import { ApiError, badRequest } from "../../kernel/errors.js";
import { ENVIRONMENT_ROOT } from "../../model/environment-paths.js";

/** A 422 with a code naming what is not supported here. */
export const unsupported = (message: string, param: string, code = "unsupported_environment_feature") =>
  new ApiError("unprocessable", message, param, code);

/** The official root of an environment's files (where clients see every session's files: environment-paths.ts). */
export const WORKSPACE_ROOT = ENVIRONMENT_ROOT;

/**
 * The official path rules for files (`/workspace/<path>`: no empty, `.` or `..` component, no backslash or NUL, not
 * the reserved `.codex`, `.managed-agents*` or `/workspace/outputs`), plus this server's own `.environment` (where
 * packages go). Returns the workspace-relative path.
 */
export function workspaceFilePath(path: string, where: string): string {
  const parts = path.split("/");
  const root = parts[2] ?? "";
  if (
    !path.startsWith(`${WORKSPACE_ROOT}/`) ||
    path.includes("\\") ||
    path.includes("\0") ||
    parts.slice(1).some((p) => p === "" || p === "." || p === "..") ||
    root === ".codex" ||
    root === ".environment" ||
    root === ".managed-agents" ||
    root.startsWith(".managed-agents-") ||
    path === `${WORKSPACE_ROOT}/outputs` ||
    path.length > 4096
  ) {
    throw badRequest(
      `'${where}' must be a file path inside /workspace (like /workspace/src/app.py): no '.', '..' or empty ` +
        "components, not under .codex, .environment or .managed-agents, not /workspace/outputs",
      where,
    );
  }
  return parts.slice(2).join("/");
}

/** A directory given as `/workspace` or `/workspace/…`: workspace-relative ("" = the workspace itself). */
export function workspaceDirectory(path: string, where: string): string {
  if (path === WORKSPACE_ROOT || path === `${WORKSPACE_ROOT}/`) return "";
  return workspaceFilePath(path.replace(/\/+$/, ""), where);
}
