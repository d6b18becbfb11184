// Handing workspace files to the agent: what the server wrote there (an environment's files, a checkpoint restored
// or forked) becomes the commands' uid:gid. Changed from inside the container, so that a symbolic link the agent
// planted resolves in the container's file system, never this host's. The container drops every capability; this one
// process (ours, not the agent's) gets them back to change owners, and only for workspace-relative paths.
import { existsSync } from "node:fs";
import { isAbsolute, join, posix } from "node:path";
import { WORKSPACE_PATH } from "./container.js";
import { SandboxError } from "./errors.js";

/** The paths that exist under the workspace on the host; refuses any path that is not workspace-relative. */
export function presentPaths(hostWorkspace: string, paths: string[]): string[] {
  for (const p of paths) {
    if (isAbsolute(p) || p.split("/").includes("..")) {
      throw new SandboxError("invalid_spec", `not a workspace-relative path: ${p}`);
    }
  }
  return paths.filter((p) => existsSync(join(hostWorkspace, p)));
}

/** The podman arguments that give `paths` (workspace-relative, present) to `owner` (`uid:gid`) in `container`. */
export function chownArgs(container: string, owner: string, paths: string[]): string[] {
  return [
    "exec",
    "--privileged",
    "--user",
    "0:0",
    container,
    "chown",
    "-R",
    "--no-dereference",
    owner,
    "--",
    ...paths.map((p) => posix.join(WORKSPACE_PATH, p)),
  ];
}
