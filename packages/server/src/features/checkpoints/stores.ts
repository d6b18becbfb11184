/**
 * The checkpoint stores of the server, one per workspace directory, under `<checkpoint dir>/<key>`: a session with
 * its own directory has its own store (key = session id), sessions sharing a directory share its store (key = hash
 * of the path), and the shared root leaves out the sessions' own directories (`/sess_*\/`). A store is opened on
 * first use; the sessions seen using each directory are remembered (housekeeping waits while one runs a turn).
 * When git is missing, opening fails for good and checkpoints are off from then on (`failure`).
 */
import { createHash } from "node:crypto";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import { ownsWorkspace } from "../../domain/sessions/workspace.js";
import type { Clock, Timer } from "../../kernel/clock.js";
import { conflict } from "../../kernel/errors.js";
import type { CheckpointOptions } from "../../model/checkpoints.js";
import { GitNotFoundError } from "../../platform/git-store/git.js";
import { ShadowRepo } from "../../platform/git-store/shadow-repo.js";
import type { SessionRecord } from "../../store/types.js";

/** One workspace directory and its store. */
export interface Workspace {
  key: string;
  dir: string;
  workspace: string;
  /** Several sessions may work here (the shared root, or any directory not a session's own). */
  shared: boolean;
  repo: Promise<ShadowRepo> | null;
  idle: Timer | null;
  /** Sessions seen using it (housekeeping waits while one of them runs a turn). */
  sessions: Set<string>;
}

export class CheckpointStores {
  private readonly workspaces = new Map<string, Workspace>();
  private failed: string | null = null;

  constructor(private readonly deps: { config: Config; clock: Clock; logger: Logger }) {}

  /** Why checkpoints do not work on this server (git is missing), once that is known. */
  get failure(): string | null {
    return this.failed;
  }

  /** Every workspace directory seen so far. */
  all(): IterableIterator<Workspace> {
    return this.workspaces.values();
  }

  /** The workspace directory of a session (registered when first seen), which the session is now seen using. */
  of(s: SessionRecord): Workspace {
    const { config } = this.deps;
    const workspace = resolve(s.workspace);
    const own = ownsWorkspace(s);
    const key = own ? s.id : `ws_${hash(workspace)}`;
    let ws = this.workspaces.get(key);
    if (!ws) {
      ws = {
        key,
        dir: join(config.checkpoints.dir, key),
        workspace,
        shared: !own,
        repo: null,
        idle: null,
        sessions: new Set(),
      };
      this.workspaces.set(key, ws);
    }
    ws.sessions.add(s.id);
    return ws;
  }

  /** Whether `ws` is still the directory registered under its key (not forgotten since). */
  isCurrent(ws: Workspace): boolean {
    return this.workspaces.get(ws.key) === ws;
  }

  /** Forgets a directory (its store is being destroyed). */
  forget(ws: Workspace): void {
    this.workspaces.delete(ws.key);
  }

  /** The options of a directory's store. */
  options(ws: Workspace): Partial<CheckpointOptions> {
    const { config, clock } = this.deps;
    // The shared root holds the sessions' own directories: they have their own stores.
    const root = resolve(config.workspaceRoot) === ws.workspace;
    return {
      maxFileBytes: config.checkpoints.maxFileBytes,
      exclude: [...config.checkpoints.exclude, ...(root ? ["/sess_*/"] : [])],
      now: () => clock.now(),
      watch: config.checkpoints.watch,
    };
  }

  /** A directory's store, opened on first use (a failed opening is tried again next time, unless git is missing). */
  repoOf(ws: Workspace): Promise<ShadowRepo> {
    if (!ws.repo) {
      const opening = ShadowRepo.open(ws.dir, ws.workspace, this.options(ws));
      ws.repo = opening;
      opening.catch((err: unknown) => {
        if (ws.repo === opening) ws.repo = null;
        if (err instanceof GitNotFoundError) {
          this.failed = err.message;
          this.deps.logger.error({ err: err.message }, "checkpoints are off: git is missing");
        }
      });
    }
    return ws.repo;
  }

  /** The store of a session's workspace, for an API call (clear errors when checkpoints cannot work). */
  async openFor(s: SessionRecord): Promise<ShadowRepo> {
    if (!this.deps.config.checkpoints.enabled) {
      throw conflict("Checkpoints are turned off on this server (--checkpoints off)", "checkpoints_disabled");
    }
    if (this.failed) throw conflict(`Checkpoints are unavailable: ${this.failed}`, "checkpoints_unavailable");
    try {
      return await this.repoOf(this.of(s));
    } catch (err) {
      throw conflict(
        `Checkpoints are unavailable for this session's workspace: ${err instanceof Error ? err.message : String(err)}`,
        "checkpoints_unavailable",
      );
    }
  }
}

const hash = (text: string): string => createHash("sha256").update(text).digest("hex").slice(0, 20);
