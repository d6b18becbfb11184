/**
 * The records the store keeps, and the event log's vocabulary. Plain JSON-able data; timestamps are Unix
 * seconds (fractional where noted). Every agent and session (and so everything of a session) belongs to a project.
 */
import type { InputItem, ThreadItem } from "@codex-agent-api/codex";

export type SessionStatus = "idle" | "in_progress" | "requires_action" | "failed";
export type TurnStatus = "queued" | "in_progress" | "completed" | "failed" | "cancelled" | "interrupted";

export interface Usage {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_output_tokens: number;
  total_tokens: number;
}

export interface AgentRecord {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string | null;
  model: string;
  instructions: string | null;
  tools: unknown[];
  metadata: Record<string, string>;
  /** Dialect-specific settings (reasoning, text, multi_agent, …), stored normalised. */
  extra: Record<string, unknown>;
}

export interface SessionRecord {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  last_active_at: number;
  status: SessionStatus;
  agent_id: string | null;
  name: string | null;
  model: string;
  instructions: string | null;
  tools: unknown[];
  metadata: Record<string, string>;
  /** Engine thread bound to this session; null until the first turn. */
  thread_id: string | null;
  /** Absolute workspace directory of the session (the agent's cwd). */
  workspace: string;
  usage: Usage;
  error: string | null;
  /** Id of the running turn, if any. */
  active_turn_id: string | null;
  extra: Record<string, unknown>;
}

export interface TurnError {
  code: string;
  message: string;
}

/** How a turn runs a goal (recorded on the turn). */
export interface TurnGoal {
  mode: "input" | "objective" | "resume";
  objective: string;
}

export interface TurnRecord {
  id: string;
  session_id: string;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  status: TurnStatus;
  /** The user input that started the turn (normalised input parts). */
  input: unknown;
  error: TurnError | null;
  usage: Usage | null;
  goal: TurnGoal | null;
}

/** `started`: seen on the stream, not finished; `completed`; `incomplete`: its turn ended before it did. */
export type ItemState = "started" | "completed" | "incomplete";

export interface ItemRecord {
  session_id: string;
  turn_id: string;
  /** Position in the session (0-based, increasing, in start order). */
  ordinal: number;
  /** Engine item id. */
  id: string;
  type: string;
  state: ItemState;
  created_at: number;
  /** The engine item (protocol ThreadItem), as last seen. */
  data: ThreadItem;
}

/** Which stream a delta belongs to. */
export type DeltaKind = "agent_message" | "reasoning" | "command_output" | "file_change";

/**
 * The event log's vocabulary (dialect-neutral). Every state change of a session is appended as one of these, with
 * a per-session sequence number, before anyone is told. The wire dialects render them.
 */
export type LogEvent =
  /** The session snapshot at creation. */
  | { type: "session.created"; data: { session: SessionRecord } }
  /** Status changed (in_progress / requires_action / idle). */
  | { type: "session.status"; data: { session: SessionRecord } }
  /** A turn waits behind the running one. */
  | { type: "turn.queued"; data: { turn: TurnRecord } }
  | { type: "turn.started"; data: { turn: TurnRecord } }
  /** An engine item started (also stored as an item). */
  | { type: "item.started"; data: { item: ThreadItem; output_index: number } }
  | { type: "item.delta"; data: { item_id: string; output_index: number; kind: DeltaKind; delta: string } }
  /** An engine item completed (its stored item is updated). */
  | { type: "item.completed"; data: { item: ThreadItem; output_index: number } }
  /** How a request of the engine (an approval, a question) was answered. */
  | {
      type: "server_request.answered";
      data: { request_method: string; request: unknown; response: unknown; defaulted: boolean };
    }
  /** Input added to the running turn. */
  | { type: "turn.steered"; data: { input: InputItem[] } }
  | { type: "turn.completed"; data: { turn: TurnRecord } }
  /** `turn.error` says why. */
  | { type: "turn.failed"; data: { turn: TurnRecord } }
  /** Cancelled or interrupted by the user. */
  | { type: "turn.cancelled"; data: { turn: TurnRecord } }
  /** The goal changed (null: cleared). */
  | { type: "goal.updated"; data: { goal: GoalRecord | null } };

export type LogEventType = LogEvent["type"];
export type LogEventOf<T extends LogEventType> = Extract<LogEvent, { type: T }>;

/** An event as stored: a {@link LogEvent} with its place in the session's log. */
export type EventRecord<E extends LogEvent = LogEvent> = E & {
  session_id: string;
  /** 1-based, strictly increasing per session, no gaps. */
  seq: number;
  turn_id: string | null;
  /** Unix seconds with millisecond precision. */
  created_at: number;
};

/**
 * An item write that goes with an event (same transaction): `start` inserts the item (`started`); `finish` updates
 * the turn's latest item with that id to its final data and state (inserting it if it never started).
 */
export type ItemWrite =
  | { kind: "start"; turn_id: string; item: ThreadItem; created_at: number }
  | {
      kind: "finish";
      turn_id: string;
      item: ThreadItem;
      created_at: number;
      state: "completed" | "incomplete";
    };

export interface NewEvent {
  event: LogEvent;
  turn_id: string | null;
  created_at: number;
  item?: ItemWrite;
}

/** What an append wrote: the stored event, and the item's ordinal when it inserted one. */
export interface Appended {
  event: EventRecord;
  ordinal: number | null;
}

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
  | "server_restart"
  | "owner_lost";

export interface GoalRecord {
  session_id: string;
  objective: string;
  status: GoalStatus;
  status_reason: GoalReason;
  token_budget: number;
  max_turns: number;
  max_duration_seconds: number;
  /** Tokens the engine charged to this goal (input − cached + output, per the engine). */
  tokens_used: number;
  /** Wall-clock seconds spent running this goal (all runs, not counting the run in progress). */
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

export interface IdempotencyRecord {
  scope: string;
  key: string;
  body_hash: string;
  status: number;
  response: unknown;
  created_at: number;
}

export interface KeyRecord {
  id: string;
  project_id: string;
  /** Hex SHA-256 of salt + secret. */
  hash: string;
  salt: string;
  admin: boolean;
  created_at: number;
  revoked_at: number | null;
}
