import type { EventRecord, LogEventType } from "./records.js";

/** The events that end a turn. */
export const TERMINAL_TURN_EVENTS: ReadonlySet<LogEventType> = new Set<LogEventType>([
  "turn.completed",
  "turn.failed",
  "turn.cancelled",
]);

export const isTurnEnd = (e: EventRecord, turnId: string): boolean =>
  e.turn_id === turnId && TERMINAL_TURN_EVENTS.has(e.type);
