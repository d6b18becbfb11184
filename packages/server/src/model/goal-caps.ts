/** The caps a client may give a goal (both dialects): `goal: true` or `{token_budget, max_turns, max_duration_seconds}`. */
import { badRequest } from "../kernel/errors.js";

export interface GoalCaps {
  token_budget?: number;
  max_turns?: number;
  max_duration_seconds?: number;
}

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
