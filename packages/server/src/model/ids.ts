import { randomBytes } from "node:crypto";

/** `prefix` + 24 lowercase hex characters, e.g. `sess_0f3a…`. */
export function newId(prefix: "agent_" | "sess_" | "turn_" | "key_" | "act_"): string {
  return prefix + randomBytes(12).toString("hex");
}
