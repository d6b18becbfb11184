/**
 * Where a session's (or an environment's) workspace is made, by sandbox backend:
 * - `local`: a directory on this host (the engine's sandbox confines commands to it);
 * - `container`: a sandbox of its own — a container with a workspace volume (loop-mounted ext4: its size is the disk
 *   limit), or, for a workspace shared by several sessions (the template dialect's shared root, a self-hosted
 *   directory), a container with that directory bind-mounted. The session records the sandbox's id
 *   (`extra.sandbox_id`) and the workspace's host path (checkpoints, artifacts and environment files use it).
 * Releasing a workspace destroys its sandbox (the volume with it; a shared directory stays).
 */
import { mkdirSync, rmSync } from "node:fs";
import type { ContainerSize } from "@codex-agent-api/sandbox";
import type { Sandboxes } from "../../platform/sandbox/sandboxes.js";

export interface WorkspaceRequest {
  /** The sandbox's id: the session's or the environment's id. */
  id: string;
  /** The directory a local workspace gets (`<root>/<id>`), or the shared one. */
  directory: string;
  /** Several sessions work in `directory` (never deleted with one of them). */
  shared: boolean;
  size?: ContainerSize | null;
}

export interface ProvidedWorkspace {
  /** The workspace on this host. */
  directory: string;
  /** The sandbox that holds it (null: the local backend). */
  sandboxId: string | null;
}

export interface Workspaces {
  readonly backend: "local" | "container";
  provide(req: WorkspaceRequest): Promise<ProvidedWorkspace>;
  /**
   * Files this server wrote into the workspace (workspace-relative `paths`, default all) become the agent's: on the
   * container backend its commands run as a user of their own, and what the server writes is root's otherwise.
   */
  handOver(ws: { sandboxId: string | null }, paths?: string[]): Promise<void>;
  /** The workspace is no longer anyone's: its sandbox and its own directory go (a shared one stays). */
  release(ws: { directory: string; sandboxId: string | null; shared: boolean }): Promise<void>;
}

export class LocalWorkspaces implements Workspaces {
  readonly backend = "local" as const;

  async provide(req: WorkspaceRequest): Promise<ProvidedWorkspace> {
    mkdirSync(req.directory, { recursive: true, mode: 0o700 });
    return { directory: req.directory, sandboxId: null };
  }

  async handOver(): Promise<void> {
    // The engine's commands run as this server's user: what it writes is theirs already.
  }

  async release(ws: { directory: string; shared: boolean }): Promise<void> {
    if (!ws.shared) rmSync(ws.directory, { recursive: true, force: true });
  }
}

export class ContainerWorkspaces implements Workspaces {
  readonly backend = "container" as const;

  constructor(private readonly sandboxes: Sandboxes) {}

  async provide(req: WorkspaceRequest): Promise<ProvidedWorkspace> {
    if (req.shared) mkdirSync(req.directory, { recursive: true, mode: 0o755 });
    const s = await this.sandboxes.create(req.id, {
      size: req.size ?? null,
      network: { access: "disabled" },
      ...(req.shared ? { workspaceDir: req.directory } : {}),
    });
    return { directory: s.hostPath, sandboxId: s.id };
  }

  async handOver(ws: { sandboxId: string | null }, paths?: string[]): Promise<void> {
    if (ws.sandboxId) await this.sandboxes.handToAgent(ws.sandboxId, paths);
  }

  async release(ws: { directory: string; sandboxId: string | null; shared: boolean }): Promise<void> {
    if (ws.sandboxId) await this.sandboxes.destroy(ws.sandboxId);
    else if (!ws.shared) rmSync(ws.directory, { recursive: true, force: true });
  }
}
