/**
 * Where a session's files are as its clients see them: inside its environment (`/workspace`, or the directory a
 * client chose for a `self_hosted` session), never this host's directories (platform/workspace/environment-paths.ts
 * maps the host's paths to these).
 */

/** The official root of an environment's files. */
export const ENVIRONMENT_ROOT = "/workspace";

/** Where a session's workspace is, as its clients see it. */
export function environmentRoot(s: { extra: Record<string, unknown> }): string {
  const chosen = s.extra.workspace_directory;
  return typeof chosen === "string" && chosen.startsWith("/") ? chosen : ENVIRONMENT_ROOT;
}

/** A workspace-relative path ("" = the workspace itself) inside the environment whose workspace is `root`. */
export function environmentPath(root: string, rel: string): string {
  if (rel === "") return root;
  return root === "/" ? `/${rel}` : `${root}/${rel}`;
}
