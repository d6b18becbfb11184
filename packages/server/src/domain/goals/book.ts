import type { ThreadGoal } from "@codex-agent-api/codex";
import type { GoalLimits } from "../../config/load.js";
import type { Clock } from "../../kernel/clock.js";
import { badRequest } from "../../kernel/errors.js";
import type { GoalCaps } from "../../model/goal-caps.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { GoalReason, GoalRecord, GoalStatus, Store } from "../../store/types.js";

export type ResolvedCaps = Pick<GoalRecord, "token_budget" | "max_turns" | "max_duration_seconds">;

const ENGINE_STATUS: Record<string, GoalStatus> = {
  active: "active",
  paused: "paused",
  blocked: "blocked",
  usageLimited: "usage_limited",
  budgetLimited: "budget_limited",
  complete: "complete",
};

/** Changes to these are announced on the event stream (time moves on by itself). */
const VISIBLE = [
  "objective",
  "status",
  "status_reason",
  "token_budget",
  "max_turns",
  "max_duration_seconds",
  "tokens_used",
  "turns_used",
  "turn_id",
] as const;

/** Goal records: caps (server defaults, bounded overrides), accounting, status changes on the event log. */
export class GoalBook {
  constructor(
    private readonly store: Store,
    private readonly hub: EventHub,
    private readonly clock: Clock,
    private readonly limits: GoalLimits,
  ) {}

  async get(sessionId: string): Promise<GoalRecord | null> {
    return (await this.store.getGoal(sessionId)) ?? null;
  }

  /** Applies server defaults and bounds; 400 when an override exceeds the server maximum. */
  resolveCaps(caps: GoalCaps, base?: GoalRecord | null): ResolvedCaps {
    const l = this.limits;
    const check = (name: keyof GoalCaps, v: number, max: number) => {
      if (v > max) throw badRequest(`'goal.${name}' must be at most ${max} on this server`, `goal.${name}`);
      return v;
    };
    return {
      token_budget: check(
        "token_budget",
        caps.token_budget ?? base?.token_budget ?? l.defaultTokenBudget,
        l.maxTokenBudget,
      ),
      max_turns: check("max_turns", caps.max_turns ?? base?.max_turns ?? l.defaultMaxTurns, l.maxTurns),
      max_duration_seconds: check(
        "max_duration_seconds",
        caps.max_duration_seconds ?? base?.max_duration_seconds ?? l.defaultMaxDurationSeconds,
        l.maxDurationSeconds,
      ),
    };
  }

  /** A new goal (replacing any previous one: nothing carries over). */
  async create(
    sessionId: string,
    objective: string,
    caps: GoalCaps,
    status: GoalStatus,
    turnId: string | null,
  ): Promise<GoalRecord> {
    const now = this.clock.now();
    const goal: GoalRecord = {
      session_id: sessionId,
      objective,
      status,
      status_reason: "created",
      ...this.resolveCaps(caps),
      tokens_used: 0,
      time_used_seconds: 0,
      turns_used: 0,
      turn_id: turnId,
      created_at: now,
      updated_at: now,
      run_started_at: status === "active" ? now : null,
    };
    await this.save(goal, turnId, true);
    return goal;
  }

  /** Changes fields, records the change and appends `goal.updated` when something visible changed. */
  async update(
    sessionId: string,
    patch: Partial<GoalRecord>,
    turnId: string | null = null,
  ): Promise<GoalRecord | null> {
    const goal = await this.get(sessionId);
    if (!goal) return null;
    const now = this.clock.now();
    const next: GoalRecord = { ...goal, ...patch, session_id: sessionId, updated_at: now };
    if (goal.run_started_at !== null && next.status !== "active") {
      next.time_used_seconds = goal.time_used_seconds + Math.max(0, now - goal.run_started_at);
      next.run_started_at = null;
    }
    if (goal.run_started_at === null && next.status === "active") next.run_started_at = now;
    await this.save(
      next,
      turnId,
      VISIBLE.some((k) => goal[k] !== next[k]),
    );
    return next;
  }

  /**
   * Folds an engine goal update in; `pendingReason` explains a pause we asked for. With `driven`, the server runs
   * the continuations and holds the engine's goal paused between them: only the statuses the model or the engine
   * decide (complete, blocked, budget or usage limited) are taken over, not active/paused.
   */
  async fromEngine(
    sessionId: string,
    engine: ThreadGoal,
    pendingReason: GoalReason | null,
    turnId: string | null,
    opts: { driven?: boolean } = {},
  ): Promise<GoalRecord | null> {
    const goal = await this.get(sessionId);
    if (!goal) return null;
    const mapped = ENGINE_STATUS[engine.status] ?? "paused";
    const status = opts.driven && (mapped === "active" || mapped === "paused") ? goal.status : mapped;
    // A driven goal's tokens are counted by the server (the engine charges only while its goal is active).
    const patch: Partial<GoalRecord> = opts.driven
      ? {}
      : { tokens_used: Math.max(goal.tokens_used, engine.tokensUsed) };
    if (status !== goal.status) {
      patch.status = status;
      patch.status_reason =
        status === "paused"
          ? (pendingReason ?? "user_paused")
          : status === "complete"
            ? "completed"
            : status === "budget_limited"
              ? "token_budget"
              : status === "usage_limited"
                ? "usage_limited"
                : status === "blocked"
                  ? (pendingReason ?? "blocked")
                  : "resumed";
    }
    return this.update(sessionId, patch, turnId);
  }

  async delete(sessionId: string): Promise<boolean> {
    return this.hub.commit(sessionId, async (tx, log) => {
      const existed = await tx.deleteGoal(sessionId);
      if (existed) log({ type: "goal.updated", data: { goal: null } });
      return existed;
    });
  }

  /** Active goals of a crashed process come back paused (never auto-resumed). Returns their session ids. */
  async pauseAllActive(reason: GoalReason): Promise<string[]> {
    const paused: string[] = [];
    for (const goal of await this.store.listGoals("active")) {
      await this.update(goal.session_id, { status: "paused", status_reason: reason });
      paused.push(goal.session_id);
    }
    return paused;
  }

  private save(goal: GoalRecord, turnId: string | null, announce: boolean): Promise<void> {
    return this.hub.commit(goal.session_id, async (tx, log) => {
      await tx.putGoal(goal);
      if (announce) log({ type: "goal.updated", data: { goal } }, { turn_id: turnId });
    });
  }
}
