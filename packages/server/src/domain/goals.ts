import type { ThreadGoal } from "@codex-agent-api/codex";
import type { GoalLimits } from "../config.js";
import type { Store } from "../store/types.js";
import type { EventHub } from "../stream/hub.js";
import { badRequest } from "./errors.js";
import { EventType } from "./events.js";
import { nowSeconds } from "./ids.js";

/** Goal status as the API reports it: the engine's statuses in snake_case. */
export type GoalStatus = "active" | "paused" | "blocked" | "usage_limited" | "budget_limited" | "complete";

/** Why the goal last changed status. */
export type GoalReason =
  | "created"
  | "resumed"
  | "user_paused"
  | "interrupted"
  | "completed"
  | "blocked"
  | "turn_failed"
  | "token_budget"
  | "max_turns"
  | "max_duration"
  | "usage_limited"
  | "server_restart";

export interface Goal {
  objective: string;
  status: GoalStatus;
  status_reason: GoalReason;
  token_budget: number;
  max_turns: number;
  max_duration_seconds: number;
  /** Tokens the engine charged to this goal (input − cached + output, per the engine). */
  tokens_used: number;
  /** Wall-clock seconds spent running this goal (all runs). */
  time_used_seconds: number;
  /** Continuation turns the engine ran for this goal (the first turn of a user-started goal is not one). */
  turns_used: number;
  /** The logical turn that ran (or runs) the goal. */
  turn_id: string | null;
  created_at: number;
  updated_at: number;
  /** Start of the run in progress (unix seconds), null when not running. */
  run_started_at: number | null;
}

export interface GoalCaps {
  token_budget?: number;
  max_turns?: number;
  max_duration_seconds?: number;
}

const ENGINE_STATUS: Record<string, GoalStatus> = {
  active: "active",
  paused: "paused",
  blocked: "blocked",
  usageLimited: "usage_limited",
  budgetLimited: "budget_limited",
  complete: "complete",
};

/** Parses `goal: true | {token_budget, max_turns, max_duration_seconds}` as both dialects send it. */
export function parseGoalOption(raw: unknown, where = "goal"): GoalCaps | null {
  if (raw === undefined || raw === null || raw === false) return null;
  if (raw === true) return {};
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw badRequest(
      `'${where}' must be true or an object {token_budget, max_turns, max_duration_seconds}`,
      where,
    );
  }
  return parseCaps(raw as Record<string, unknown>, where);
}

export function parseCaps(o: Record<string, unknown>, where: string): GoalCaps {
  const caps: GoalCaps = {};
  for (const key of ["token_budget", "max_turns", "max_duration_seconds"] as const) {
    const v = o[key];
    if (v === undefined || v === null) continue;
    const min = key === "max_turns" ? 0 : 1;
    if (typeof v !== "number" || !Number.isInteger(v) || v < min) {
      throw badRequest(`'${where}.${key}' must be an integer >= ${min}`, `${where}.${key}`);
    }
    caps[key] = v;
  }
  return caps;
}

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
    private readonly limits: GoalLimits,
  ) {}

  get(sessionId: string): Goal | null {
    return (this.store.getGoal(sessionId)?.data as Goal | undefined) ?? null;
  }

  /** Applies server defaults and bounds; 400 when an override exceeds the server maximum. */
  resolveCaps(
    caps: GoalCaps,
    base?: Goal | null,
  ): Pick<Goal, "token_budget" | "max_turns" | "max_duration_seconds"> {
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
  create(
    sessionId: string,
    objective: string,
    caps: GoalCaps,
    status: GoalStatus,
    turnId: string | null,
  ): Goal {
    const now = nowSeconds();
    const goal: Goal = {
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
    this.save(sessionId, goal, turnId);
    return goal;
  }

  /** Changes fields, records the change and appends `goal.updated` when something visible changed. */
  update(sessionId: string, patch: Partial<Goal>, turnId: string | null = null): Goal | null {
    const goal = this.get(sessionId);
    if (!goal) return null;
    const next: Goal = { ...goal, ...patch, updated_at: nowSeconds() };
    if (goal.run_started_at !== null && next.status !== "active") {
      next.time_used_seconds = goal.time_used_seconds + Math.max(0, nowSeconds() - goal.run_started_at);
      next.run_started_at = null;
    }
    if (goal.run_started_at === null && next.status === "active") next.run_started_at = nowSeconds();
    this.save(
      sessionId,
      next,
      turnId,
      VISIBLE.some((k) => goal[k] !== next[k]),
    );
    return next;
  }

  /** Folds an engine goal update in; `pendingReason` explains a pause we asked for. */
  fromEngine(
    sessionId: string,
    engine: ThreadGoal,
    pendingReason: GoalReason | null,
    turnId: string | null,
  ): Goal | null {
    const goal = this.get(sessionId);
    if (!goal) return null;
    const status = ENGINE_STATUS[engine.status] ?? "paused";
    const patch: Partial<Goal> = { tokens_used: Math.max(goal.tokens_used, engine.tokensUsed) };
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

  delete(sessionId: string): boolean {
    const existed = this.store.deleteGoal(sessionId);
    if (existed)
      this.hub.append({ session_id: sessionId, type: EventType.GoalUpdated, data: { goal: null } });
    return existed;
  }

  /** Active goals of a crashed process come back paused (never auto-resumed). Returns their session ids. */
  pauseAllActive(reason: GoalReason): string[] {
    const paused: string[] = [];
    for (const g of this.store.listGoals()) {
      const goal = g.data as unknown as Goal;
      if (goal.status !== "active") continue;
      this.update(g.session_id, { status: "paused", status_reason: reason });
      paused.push(g.session_id);
    }
    return paused;
  }

  private save(sessionId: string, goal: Goal, turnId: string | null, announce = true): void {
    this.store.putGoal({
      session_id: sessionId,
      data: goal as unknown as Record<string, unknown>,
      updated_at: goal.updated_at,
    });
    if (announce)
      this.hub.append({
        session_id: sessionId,
        type: EventType.GoalUpdated,
        turn_id: turnId,
        data: { goal },
      });
  }
}

/** The goal as both dialects show it. */
export function goalObject(sessionId: string, g: Goal) {
  const running = g.run_started_at !== null ? Math.max(0, nowSeconds() - g.run_started_at) : 0;
  return {
    object: "agent.session.goal",
    session_id: sessionId,
    objective: g.objective,
    status: g.status,
    status_reason: g.status_reason,
    token_budget: g.token_budget,
    tokens_used: g.tokens_used,
    max_turns: g.max_turns,
    turns_used: g.turns_used,
    max_duration_seconds: g.max_duration_seconds,
    time_used_seconds: Math.round((g.time_used_seconds + running) * 1000) / 1000,
    turn_id: g.turn_id,
    created_at: Math.floor(g.created_at),
    updated_at: Math.floor(g.updated_at),
  };
}
