import { randomBytes } from "node:crypto";

/** `prefix` + 24 lowercase hex characters, e.g. `sess_0f3a…`. */
export function newId(prefix: "agent_" | "sess_" | "turn_" | "key_" | "act_"): string {
  return prefix + randomBytes(12).toString("hex");
}

/**
 * Whether a session's claim (`active_turn_id`) is a turn. Other operations claim a session the same way so that no
 * turn starts meanwhile (a checkpoint restore: `restore_…`), but have no turn record or events.
 */
export const isTurnId = (claim: string) => claim.startsWith("turn_");
