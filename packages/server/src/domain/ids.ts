import { randomBytes } from "node:crypto";

/** `prefix` + 24 lowercase hex characters, e.g. `sess_0f3a…`. */
export function newId(prefix: "agent_" | "sess_" | "turn_" | "goal_"): string {
  return prefix + randomBytes(12).toString("hex");
}

export const nowSeconds = (): number => Date.now() / 1000;
export const unixSeconds = (): number => Math.floor(Date.now() / 1000);
