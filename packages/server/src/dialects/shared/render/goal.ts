import type { GoalRecord } from "../../../model/records.js";

/** The goal as both dialects show it (`now` counts the run in progress). */
export function goalObject(g: GoalRecord, now: number) {
  const running = g.run_started_at !== null ? Math.max(0, now - g.run_started_at) : 0;
  return {
    object: "agent.session.goal",
    session_id: g.session_id,
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
