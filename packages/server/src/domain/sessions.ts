import { mkdirSync } from "node:fs";
import { goalObjective } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { EnginePool } from "../engine/pool.js";
import type { ListOptions, Page, SessionRecord, Store, TurnRecord, Usage } from "../store/types.js";
import type { EventHub } from "../stream/hub.js";
import type { AgentFields, AgentService } from "./agents.js";
import { badRequest, capacity, conflict, notFound } from "./errors.js";
import { EventType } from "./events.js";
import { type Goal, GoalBook, type GoalCaps } from "./goals.js";
import { newId, nowSeconds } from "./ids.js";
import type { TurnInput } from "./input.js";
import { TurnRunner } from "./turn-runner.js";

export const ZERO_USAGE: Usage = {
  input_tokens: 0,
  cached_input_tokens: 0,
  output_tokens: 0,
  reasoning_output_tokens: 0,
  total_tokens: 0,
};

export function addUsage(a: Usage, b: Usage | null): Usage {
  if (!b) return a;
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    reasoning_output_tokens: a.reasoning_output_tokens + b.reasoning_output_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
  };
}

/** A session's own settings: an agent's fields, optionally starting from a saved agent. */
export interface SessionFields extends AgentFields {
  agent_id?: string | null;
}

export interface SessionDeps {
  store: Store;
  hub: EventHub;
  pool: EnginePool;
  agents: AgentService;
  config: Config;
  logger: Logger;
}

/** How a turn runs a goal. */
export interface GoalRequest {
  mode: "input" | "objective" | "resume";
  caps: GoalCaps;
  objective?: string;
}

/** Sessions and their turns: the state machine every dialect drives. */
export class SessionService {
  readonly runner: TurnRunner;
  readonly goals: GoalBook;
  private ttlTimer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: SessionDeps) {
    this.goals = new GoalBook(deps.store, deps.hub, deps.config.goals);
    this.runner = new TurnRunner(deps, this);
  }

  get store(): Store {
    return this.deps.store;
  }

  create(f: SessionFields, opts: { startingTurn?: boolean } = {}): SessionRecord {
    const { store, config } = this.deps;
    let base: SessionFields = {};
    if (f.agent_id) {
      const agent = this.deps.agents.get(f.agent_id);
      base = { name: agent.name, model: agent.model, instructions: agent.instructions, tools: agent.tools };
    }
    if (store.countSessions() >= config.maxSessions) {
      this.expireIdle();
      if (store.countSessions() >= config.maxSessions) throw capacity("Too many active sessions");
    }
    const now = nowSeconds();
    const session: SessionRecord = {
      id: newId("sess_"),
      created_at: now,
      updated_at: now,
      last_active_at: now,
      status: opts.startingTurn ? "in_progress" : "idle",
      agent_id: f.agent_id ?? null,
      name: f.name !== undefined ? f.name : (base.name ?? null),
      model: f.model || base.model || config.model,
      instructions: f.instructions !== undefined ? f.instructions : (base.instructions ?? null),
      tools: f.tools ?? base.tools ?? [],
      metadata: f.metadata ?? {},
      thread_id: null,
      workspace: config.workspaceRoot,
      usage: { ...ZERO_USAGE },
      error: null,
      active_turn_id: null,
      extra: f.extra ?? {},
    };
    mkdirSync(session.workspace, { recursive: true });
    store.transaction(() => {
      store.insertSession(session);
      this.deps.hub.append({ session_id: session.id, type: EventType.SessionCreated, data: { session } });
    });
    return session;
  }

  get(id: string): SessionRecord {
    const s = this.deps.store.getSession(id);
    if (!s) throw notFound(`Session ${id} not found`, "session_id");
    return s;
  }

  update(id: string, f: SessionFields): SessionRecord {
    const s = this.get(id);
    const next: SessionRecord = {
      ...s,
      ...(f.name !== undefined ? { name: f.name } : {}),
      ...(f.model !== undefined ? { model: f.model || this.deps.config.model } : {}),
      ...(f.instructions !== undefined ? { instructions: f.instructions } : {}),
      ...(f.tools !== undefined ? { tools: f.tools } : {}),
      ...(f.metadata !== undefined ? { metadata: f.metadata } : {}),
      extra: { ...s.extra, ...f.extra },
      updated_at: nowSeconds(),
      last_active_at: nowSeconds(),
    };
    this.deps.store.updateSession(next);
    return next;
  }

  list(opts: ListOptions & { agent_id?: string; metadata?: Record<string, string> }): Page<SessionRecord> {
    return this.deps.store.listSessions(opts);
  }

  /** Deletes a session; a running turn is interrupted first. */
  async delete(id: string): Promise<void> {
    const s = this.get(id);
    await this.runner.abort(id, "session deleted");
    this.remove(s);
  }

  /** Drops an idle session: its subscribers, its engine thread, its records. */
  private remove(s: SessionRecord): void {
    this.deps.hub.closeSession(s.id);
    if (s.thread_id) this.deps.pool.forget(s.thread_id);
    this.deps.store.deleteSession(s.id);
  }

  /** 409 when the session has a running turn. */
  assertIdle(session: SessionRecord): void {
    if (session.active_turn_id || this.runner.isActive(session.id))
      throw conflict("Session has an active turn");
  }

  /**
   * Starts a turn now; it runs in the background. 409 when one is running. With `goal`, the turn runs a goal:
   * from the input (`input`), from an objective alone (`objective`), or resuming the session's paused goal.
   */
  startTurn(sessionId: string, input: TurnInput, opts: { goal?: GoalRequest | null } = {}): TurnRecord {
    const session = this.get(sessionId);
    this.assertIdle(session);
    const now = nowSeconds();
    const turnId = newId("turn_");
    const goal = opts.goal ? this.prepareGoal(sessionId, input, opts.goal, turnId) : null;
    const turn: TurnRecord = {
      id: turnId,
      session_id: sessionId,
      created_at: now,
      started_at: now,
      completed_at: null,
      status: "in_progress",
      input: input.items,
      error: null,
      usage: null,
      goal: goal ? { mode: opts.goal!.mode, objective: goal.objective } : null,
    };
    const next: SessionRecord = {
      ...session,
      status: "in_progress",
      active_turn_id: turn.id,
      error: null,
      last_active_at: now,
      updated_at: now,
    };
    const { store, hub } = this.deps;
    store.transaction(() => {
      store.insertTurn(turn);
      store.updateSession(next);
      hub.append({ session_id: sessionId, type: EventType.TurnStarted, turn_id: turn.id, data: { turn } });
      hub.append({
        session_id: sessionId,
        type: EventType.SessionStatus,
        turn_id: turn.id,
        data: { session: next },
      });
    });
    this.runner.launch(next, turn, input, opts.goal ? { ...opts.goal, objective: goal!.objective } : null);
    return turn;
  }

  /** Validates and records the goal a turn is about to run (the goal record exists before the turn starts). */
  private prepareGoal(sessionId: string, input: TurnInput, req: GoalRequest, turnId: string): Goal {
    if (req.mode === "resume") {
      const existing = this.goals.get(sessionId);
      if (!existing) throw notFound("Session has no goal to resume", "goal");
      if (existing.status === "complete" && !req.objective) throw conflict("The goal is already complete");
      const caps = this.goals.resolveCaps(req.caps, existing);
      const reached =
        existing.turns_used >= caps.max_turns
          ? "max_turns"
          : existing.tokens_used >= caps.token_budget
            ? "token_budget"
            : existing.time_used_seconds >= caps.max_duration_seconds
              ? "max_duration_seconds"
              : null;
      if (reached) throw conflict(`The goal has used its ${reached}: raise it to resume`, "goal_cap_reached");
      return this.goals.update(sessionId, {
        ...caps,
        status: "active",
        status_reason: "resumed",
        turn_id: turnId,
      })!;
    }
    let objective = req.objective ?? "";
    if (req.mode === "input") {
      try {
        objective = goalObjective(input.items);
      } catch (err) {
        throw badRequest((err as Error).message, "input");
      }
    }
    if (!objective.trim()) throw badRequest("goal objective must not be empty", "objective");
    return this.goals.create(sessionId, objective.trim(), req.caps, "active", turnId);
  }

  /** Adds input to the running turn; null when the session is idle. */
  steer(sessionId: string, input: TurnInput): Promise<TurnRecord | null> {
    this.get(sessionId);
    return this.runner.steer(sessionId, input.items);
  }

  /** Cancels the running turn (it ends `cancelled`); null when the session is idle. */
  cancel(sessionId: string): Promise<TurnRecord | null> {
    this.get(sessionId);
    return this.runner.cancel(sessionId);
  }

  getTurn(sessionId: string, turnId: string): TurnRecord {
    this.get(sessionId);
    const t = this.deps.store.getTurn(sessionId, turnId);
    if (!t) throw notFound(`Turn ${turnId} not found`, "turn_id");
    return t;
  }

  /** Resolves when the turn has reached a terminal state. */
  waitForTurn(sessionId: string, turnId: string): Promise<TurnRecord> {
    return this.runner.waitFor(sessionId, turnId);
  }

  /** Marks turns that were running when the process died as failed; sessions become usable again. */
  recover(): number {
    const { store, hub } = this.deps;
    const busy = store.listBusySessions();
    for (const s of busy) {
      store.transaction(() => {
        const turn = s.active_turn_id ? store.getTurn(s.id, s.active_turn_id) : undefined;
        if (turn && (turn.status === "in_progress" || turn.status === "queued")) {
          const failed: TurnRecord = {
            ...turn,
            status: "failed",
            completed_at: nowSeconds(),
            error: { code: "server_restart", message: "The server stopped while this turn was running." },
          };
          store.updateTurn(failed);
          hub.append({
            session_id: s.id,
            type: EventType.TurnFailed,
            turn_id: turn.id,
            data: { turn: failed },
          });
        }
        const next: SessionRecord = { ...s, status: "idle", active_turn_id: null, updated_at: nowSeconds() };
        store.updateSession(next);
        hub.append({ session_id: s.id, type: EventType.SessionStatus, data: { session: next } });
      });
    }
    return busy.length;
  }

  /** Deletes sessions idle for longer than the TTL (when one is configured). */
  expireIdle(): number {
    const ttl = this.deps.config.sessionTtlSeconds;
    if (ttl <= 0) return 0;
    const stale = this.deps.store.listIdleSessionsBefore(nowSeconds() - ttl, 1000);
    for (const s of stale) {
      if (this.runner.isActive(s.id)) continue;
      this.remove(s);
      this.deps.logger.info({ session: s.id }, "session expired");
    }
    return stale.length;
  }

  startExpiry(): void {
    const ttl = this.deps.config.sessionTtlSeconds;
    if (ttl <= 0) return;
    this.ttlTimer = setInterval(() => this.expireIdle(), Math.min(60, Math.max(1, ttl / 2)) * 1000);
    this.ttlTimer.unref();
  }

  /** Ends running turns (interrupting the engine) and waits for them to be recorded. */
  async shutdown(reason = "server shutting down"): Promise<void> {
    if (this.ttlTimer) clearInterval(this.ttlTimer);
    await this.runner.abortAll(reason);
  }
}
