/**
 * Whether a session's workspace is its own: made for it (on the container backend, its sandbox's volume, wherever
 * that is on this host) and deleted with it — not the shared root, a directory the client chose or an environment's.
 * Recorded at creation (`extra.own_workspace`); sessions created before that was recorded tell it by their
 * directory's name (`<workspace root>/<session id>`, the only place the local backend made own workspaces).
 */
import { basename } from "node:path";
import type { SessionRecord } from "../../store/types.js";

export function ownsWorkspace(s: Pick<SessionRecord, "id" | "workspace" | "extra">): boolean {
  if (typeof s.extra.own_workspace === "boolean") return s.extra.own_workspace;
  return s.extra.workspace_mode === "session" && basename(s.workspace) === s.id;
}

/** The sandbox a session's commands run in (the container backend), or null: the engine's sandbox on this host. */
export function sandboxIdOf(s: Pick<SessionRecord, "extra">): string | null {
  const id = s.extra.sandbox_id;
  return typeof id === "string" && id !== "" ? id : null;
}
