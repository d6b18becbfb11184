/**
 * The event log's vocabulary (dialect-neutral). Every state change of a session is appended as one of these,
 * with a per-session sequence number, before anyone is told. The wire dialects render them.
 */
export const EventType = {
  /** data: { session } — the session snapshot at creation. */
  SessionCreated: "session.created",
  /** data: { session } — status changed (in_progress / idle / failed). */
  SessionStatus: "session.status",
  /** data: { turn } */
  TurnStarted: "turn.started",
  /** data: { item } — an engine ThreadItem started. */
  ItemStarted: "item.started",
  /** data: { item_id, kind: "agent_message" | "reasoning" | "command_output" | "file_change", delta } */
  ItemDelta: "item.delta",
  /** data: { item, ordinal } — an engine ThreadItem completed (also stored as an item). */
  ItemCompleted: "item.completed",
  /** data: { request_method, request, response, defaulted } */
  ServerRequestAnswered: "server_request.answered",
  /** data: { input } — input added to the running turn. */
  TurnSteered: "turn.steered",
  /** data: { turn } — terminal: completed. */
  TurnCompleted: "turn.completed",
  /** data: { turn } — terminal: failed (turn.error says why). */
  TurnFailed: "turn.failed",
  /** data: { turn } — terminal: cancelled or interrupted by the user. */
  TurnCancelled: "turn.cancelled",
  /** data: { goal } */
  GoalUpdated: "goal.updated",
} as const;

export const TERMINAL_TURN_EVENTS: ReadonlySet<string> = new Set([
  EventType.TurnCompleted,
  EventType.TurnFailed,
  EventType.TurnCancelled,
]);
