/** Goal limits (`Config.goals`): the defaults a goal gets when it does not say, and the most it may ask for. */
import { table, value } from "../option.js";
import { int } from "../schemas.js";

const atLeastOne = int({ min: 1 });

export const goals = table("goals", {
  defaultTokenBudget: value({ env: "AGENT_GOAL_TOKEN_BUDGET", schema: atLeastOne, default: 1_000_000 }),
  defaultMaxTurns: value({ env: "AGENT_GOAL_MAX_TURNS", schema: atLeastOne, default: 20 }),
  defaultMaxDurationSeconds: value({ env: "AGENT_GOAL_MAX_DURATION", schema: atLeastOne, default: 3600 }),
  /** Upper bounds for per-goal overrides. */
  maxTokenBudget: value({ env: "AGENT_GOAL_MAX_TOKEN_BUDGET", schema: atLeastOne, default: 10_000_000 }),
  maxTurns: value({ env: "AGENT_GOAL_MAX_TURNS_LIMIT", schema: atLeastOne, default: 200 }),
  maxDurationSeconds: value({ env: "AGENT_GOAL_MAX_DURATION_LIMIT", schema: atLeastOne, default: 86_400 }),
});
