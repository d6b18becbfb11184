/** A session's subagents as its record holds them (domain/turns/subagents.ts records them). */
import type { SessionRecord, SubagentRecord } from "./records.js";

/** A subagent's id, from its thread id (stable across instances and restarts). */
export const subagentIdOf = (threadId: string) => `subagent_${threadId.replace(/-/g, "")}`;

/** The subagents recorded on a session. */
export function subagentsOf(s: SessionRecord): SubagentRecord[] {
  const map = s.extra.subagents;
  if (!map || typeof map !== "object") return [];
  return Object.values(map as Record<string, SubagentRecord>).sort((a, b) => a.opened_at - b.opened_at);
}
