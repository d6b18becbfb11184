/**
 * The paths clients see: a session's files as paths inside its environment, never this host's directories.
 *
 * A session's workspace is a directory on this host (`<workspace-root>/sess_…`, `<workspace-root>/env_…` or the
 * template's shared root). Clients see it as the environment's workspace directory: `/workspace` (the official
 * default, and where `openai_hosted` files are addressed), or the directory a client chose itself for a
 * `self_hosted` session (its `workspace_directory`, which it knows already). Everything a client reads maps through
 * here: artifacts, environment file listings, a session's `workspace_directory`, the paths the engine reports in
 * items (a command's `cwd`, a file change's paths) and approval requests.
 */
import { realpathSync } from "node:fs";
import { environmentPath, environmentRoot } from "../../model/environment-paths.js";

/**
 * Rewrites absolute host paths inside a session's workspace (as given, or with symlinks resolved: the engine may
 * report either) to the same paths inside its environment. Other strings (paths outside the workspace, relative
 * paths, anything else) are returned unchanged.
 */
export class HostPaths {
  private readonly hostRoots: string[];

  constructor(
    hostRoot: string,
    readonly root: string,
  ) {
    const roots = new Set([trimSlash(hostRoot)]);
    try {
      roots.add(trimSlash(realpathSync(hostRoot)));
    } catch {
      // Not there (yet): only the path as given.
    }
    // Longest first: a root inside another maps by the more specific one.
    this.hostRoots = [...roots].filter((r) => r !== "").sort((a, b) => b.length - a.length);
  }

  /** The environment path of `p` when it is a host path inside the workspace, else `p`. */
  map(p: string): string {
    for (const host of this.hostRoots) {
      if (p === host) return this.root;
      if (p.startsWith(`${host}/`)) return environmentPath(this.root, p.slice(host.length + 1));
    }
    return p;
  }

  /** {@link map} for an optional value: anything but a string is returned unchanged. */
  mapOptional<T>(p: T): T {
    return (typeof p === "string" ? this.map(p) : p) as T;
  }
}

/** The host-to-environment path map of a session. */
export function hostPathsOf(s: { workspace: string; extra: Record<string, unknown> }): HostPaths {
  return new HostPaths(s.workspace, environmentRoot(s));
}

const trimSlash = (p: string) => (p.length > 1 ? p.replace(/\/+$/, "") : p);
