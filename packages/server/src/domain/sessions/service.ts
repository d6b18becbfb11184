/** Sessions: create, read, change, list, delete and expire them, within the caller's project. */
import { join } from "node:path";
import type { ContainerSize } from "@codex-agent-api/sandbox";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import type { Clock, Timer } from "../../kernel/clock.js";
import { badRequest, capacity, notFound } from "../../kernel/errors.js";
import { InFlight } from "../../kernel/in-flight.js";
import { newId } from "../../model/ids.js";
import type { Scope } from "../../model/scope.js";
import { DEFAULT_SETTINGS, mergeSettings, settingsOf } from "../../model/settings.js";
import { sameFunctionTools } from "../../model/tools.js";
import type { Engines } from "../../platform/engine/types.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { Page, SessionListOptions, SessionRecord, Store, TurnRecord } from "../../store/types.js";
import type { AgentFields, AgentService } from "../agents.js";
import type { SessionHooks } from "../feature.js";
import type { Workspaces } from "../sandboxes/workspaces.js";
import type { TurnControl } from "../turns/control.js";
import type { TurnRunner } from "../turns/runner.js";
import { ZERO_USAGE } from "../usage.js";
import { ownsWorkspace, sandboxIdOf } from "./workspace.js";

/** Where a session works: its own directory under the workspace root, or the root shared by such sessions. */
export type WorkspaceMode = "shared" | "session";

/** A session's own settings: an agent's fields, optionally starting from a saved agent. */
export interface SessionFields extends AgentFields {
  agent_id?: string | null;
}

export interface SessionDeps {
  store: Store;
  hub: EventHub;
  engines: Engines;
  agents: AgentService;
  runner: TurnRunner;
  control: TurnControl;
  config: Config;
  clock: Clock;
  logger: Logger;
  /** Where workspaces are made: a directory here, or a sandbox (the container backend). */
  workspaces: Workspaces;
}

export class SessionService {
  private ttlTimer: Timer | null = null;
  private readonly hooks: SessionHooks[] = [];
  /** Session hooks still running (they are not awaited where a session is created or deleted). */
  private readonly background = new InFlight();

  constructor(private readonly deps: SessionDeps) {}

  async create(
    scope: Scope,
    f: SessionFields,
    opts: {
      workspace: WorkspaceMode;
      startingTurn?: boolean;
      /** A directory chosen for it (an environment made ahead, a self-hosted directory) instead of its own. */
      directory?: string;
      /** The sandbox that already holds `directory` (an environment made ahead, on the container backend). */
      sandboxId?: string | null;
      /** The official `container_size` of its sandbox (the container backend). */
      size?: ContainerSize | null;
    },
  ): Promise<SessionRecord> {
    const { store, hub, config, clock } = this.deps;
    let base: SessionFields = {};
    let settings = DEFAULT_SETTINGS;
    if (f.agent_id) {
      const agent = await this.deps.agents.get(scope, f.agent_id);
      base = { name: agent.name, model: agent.model, instructions: agent.instructions, tools: agent.tools };
      settings = settingsOf(agent.extra);
    }
    if ((await store.countSessions()) >= config.maxSessions) {
      await this.expireIdle();
      if ((await store.countSessions()) >= config.maxSessions) throw capacity("Too many active sessions");
    }
    const now = clock.now();
    const id = newId("sess_");
    // Several sessions work in the shared root; a chosen directory is never deleted with the session.
    const shared = opts.directory !== undefined || opts.workspace === "shared";
    const ws =
      opts.sandboxId !== undefined && opts.directory !== undefined
        ? { directory: opts.directory, sandboxId: opts.sandboxId }
        : await this.deps.workspaces.provide({
            id,
            directory:
              opts.directory ??
              (opts.workspace === "session" ? join(config.workspaceRoot, id) : config.workspaceRoot),
            shared,
            size: opts.size ?? null,
          });
    const session: SessionRecord = {
      id,
      project_id: scope.projectId,
      created_at: now,
      updated_at: now,
      last_active_at: now,
      // A session created with input is shown busy from the start (its first turn follows at once).
      status: opts.startingTurn ? "in_progress" : "idle",
      agent_id: f.agent_id ?? null,
      name: f.name !== undefined ? f.name : (base.name ?? null),
      model: f.model || base.model || config.model,
      instructions: f.instructions !== undefined ? f.instructions : (base.instructions ?? null),
      tools: f.tools ?? base.tools ?? [],
      metadata: f.metadata ?? {},
      thread_id: null,
      workspace: ws.directory,
      usage: { ...ZERO_USAGE },
      error: null,
      active_turn_id: null,
      required_actions: [],
      owner_instance: null,
      lease_epoch: 0,
      extra: {
        ...f.extra,
        workspace_mode: opts.workspace,
        own_workspace: !shared,
        ...(ws.sandboxId ? { sandbox_id: ws.sandboxId } : {}),
        settings: mergeSettings(settings, f.settings ?? {}),
      },
    };
    await hub.commit(id, async (tx, log) => {
      await tx.insertSession(session);
      log({ type: "session.created", data: { session } });
    });
    this.runHooks("afterCreate", session);
    return session;
  }

  /** The session, if it belongs to the caller's project (another project's session is "not found" too). */
  async get(scope: Scope, id: string): Promise<SessionRecord> {
    const s = await this.deps.store.getSession(id);
    if (!s || s.project_id !== scope.projectId) throw notFound(`Session ${id} not found`, "session_id");
    return s;
  }

  async update(scope: Scope, id: string, f: SessionFields): Promise<SessionRecord> {
    const s = await this.get(scope, id);
    if (f.tools !== undefined && s.thread_id && !sameFunctionTools(s.tools, f.tools)) {
      // The engine fixes a thread's function tools when it starts: changing them would need a new conversation.
      throw badRequest(
        "A session's function tools cannot change once its conversation has started (the engine fixes them when " +
          "the conversation starts): start a new session to use other function tools",
        "tools",
      );
    }
    const now = this.deps.clock.now();
    const next = await this.deps.store.updateSession(id, {
      ...(f.name !== undefined ? { name: f.name } : {}),
      ...(f.model !== undefined ? { model: f.model || this.deps.config.model } : {}),
      ...(f.instructions !== undefined ? { instructions: f.instructions } : {}),
      ...(f.tools !== undefined ? { tools: f.tools } : {}),
      ...(f.metadata !== undefined ? { metadata: f.metadata } : {}),
      extra: { ...s.extra, ...f.extra, settings: mergeSettings(settingsOf(s.extra), f.settings ?? {}) },
      updated_at: now,
      last_active_at: now,
    });
    if (!next) throw notFound(`Session ${id} not found`, "session_id");
    return next;
  }

  /** A turn of the session (404 when it has no such turn). */
  async turn(session: SessionRecord, turnId: string): Promise<TurnRecord> {
    const t = await this.deps.store.getTurn(session.id, turnId);
    if (!t) throw notFound(`Turn ${turnId} not found`, "turn_id");
    return t;
  }

  list(scope: Scope, opts: Omit<SessionListOptions, "project_id">): Promise<Page<SessionRecord>> {
    return this.deps.store.listSessions({ ...opts, project_id: scope.projectId });
  }

  /** Attaches a feature to the sessions' lifecycle (see domain/feature.ts). */
  use(hooks: SessionHooks): void {
    this.hooks.push(hooks);
  }

  private runHooks(name: keyof SessionHooks, s: SessionRecord): void {
    for (const h of this.hooks) {
      const fn = h[name];
      if (!fn) continue;
      void this.background.track(
        fn
          .call(h, s)
          .catch((err: unknown) =>
            this.deps.logger.error({ session: s.id, hook: name, err: String(err) }, "session hook failed"),
          ),
      );
    }
  }

  /** Resolves once the session hooks started so far have run (shutdown). */
  hooksDone(): Promise<void> {
    return this.background.idle();
  }

  /** Deletes a session; a running turn is interrupted first. */
  async delete(scope: Scope, id: string): Promise<void> {
    const s = await this.get(scope, id);
    await this.deps.control.abort(id, "session deleted");
    await this.remove(s);
  }

  /** Deletes sessions idle for longer than the TTL (when one is configured). */
  async expireIdle(): Promise<number> {
    const ttl = this.deps.config.sessionTtlSeconds;
    if (ttl <= 0) return 0;
    const stale = await this.deps.store.listIdleSessionsBefore(this.deps.clock.now() - ttl, 1000);
    let expired = 0;
    for (const s of stale) {
      if (this.deps.runner.isActive(s.id)) continue;
      await this.remove(s);
      expired++;
      this.deps.logger.info({ session: s.id }, "session expired");
    }
    return expired;
  }

  startExpiry(): void {
    const ttl = this.deps.config.sessionTtlSeconds;
    if (ttl <= 0) return;
    this.ttlTimer = this.deps.clock.every(Math.min(60, Math.max(1, ttl / 2)) * 1000, () => {
      this.expireIdle().catch((err: unknown) =>
        this.deps.logger.error({ err: String(err) }, "expiry failed"),
      );
    });
  }

  stopExpiry(): void {
    this.ttlTimer?.cancel();
  }

  /** Drops an idle session: its subscribers, its engine thread, its records, its own workspace. */
  private async remove(s: SessionRecord): Promise<void> {
    this.deps.hub.closeSession(s.id);
    if (s.thread_id) this.deps.engines.forget(s.thread_id);
    await this.deps.store.deleteSession(s.id);
    const own = ownsWorkspace(s);
    const sandboxId = sandboxIdOf(s);
    // Its sandbox goes with it (an environment's made ahead expires with its session); a shared directory stays.
    await this.deps.workspaces.release({ directory: s.workspace, sandboxId, shared: !own });
    this.runHooks("afterDelete", s);
  }
}
