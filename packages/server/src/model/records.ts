/**
 * The records the store keeps, and the event log's vocabulary. Plain JSON-able data; timestamps are Unix
 * seconds (fractional where noted). Every agent and session (and so everything of a session) belongs to a project.
 */
import type { InputItem, ThreadItem } from "@codex-agent-api/codex";
import type { EnvironmentError, EnvironmentStatus } from "./environment-records.js";

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
  /** What the running turn waits for from the client (status `requires_action` while not empty). */
  required_actions: RequiredAction[];
  /** The instance running the active turn (null: none yet, or a single-instance store). */
  owner_instance: string | null;
  /** Fencing token of the turn's claim: bumped by every claim and takeover; writes of an older claim are refused. */
  lease_epoch: number;
  extra: Record<string, unknown>;
}

/** The model called one of the client's function tools: answered by a tool result. */
export interface FunctionCallAction {
  type: "function_call";
  /** The call id (also the action id). */
  id: string;
  turn_id: string;
  name: string;
  /** The arguments as a JSON string. */
  arguments: string;
  created_at: number;
}

/** What an approval request is about. */
export type ApprovalKind = "command_execution" | "file_change" | "mcp_tool_call" | "mcp_elicitation";

/** The engine asks before it acts (command, file change, MCP tool call) or an MCP server asks the user. */
export interface ApprovalAction {
  type: "approval_request";
  id: string;
  turn_id: string;
  kind: ApprovalKind;
  /** The item the approval is about, when there is one. */
  item_id: string | null;
  /** Human-readable summary (the command, the reason, the MCP server's message). */
  message: string;
  /** Details of the request (command and cwd, file changes, MCP tool and arguments, elicitation schema). */
  details: Record<string, unknown>;
  created_at: number;
}

export type RequiredAction = FunctionCallAction | ApprovalAction;

/** How a client decides an approval request. */
export type ApprovalDecision = "approve" | "approve_for_session" | "deny" | "cancel";

/**
 * Items this server adds to a session's history next to the engine's: the output a client returned for a function
 * call (the engine's own item carries it only in its internal form).
 */
export interface ClientToolResultItem {
  type: "clientToolResult";
  id: string;
  callId: string;
  success: boolean;
  contentItems: Array<{ type: "inputText"; text: string } | { type: "inputImage"; imageUrl: string }>;
}

/** A subagent of a session: a child thread the engine's multi-agent tools opened (kept in the session's extra). */
export interface SubagentRecord {
  id: string;
  /** The engine's child thread. */
  thread_id: string;
  /** What the parent asked it to do. */
  instructions: string | null;
  status: "active" | "closed";
  opened_at: number;
  closed_at: number | null;
}

/** An item of a session's history: the engine's, or one of this server's own. */
export type StoredItem = ThreadItem | ClientToolResultItem | RepositoryOutputItem;

/**
 * What the service committed (and pushed) of a repository of the session's environment: this server's own item,
 * written with the `repository.output` event. `push`: pushed to the remote, failed (`error` says why; the commit
 * stays in the service's record and the workspace's files are untouched), or not asked for.
 */
export interface RepositoryOutputItem {
  type: "repositoryOutput";
  id: string;
  /** Its place in the environment's `repositories`. */
  repository: number;
  url: string;
  /** Official path of the repository's root (`/workspace…`). */
  path: string;
  branch: string;
  commit: string;
  /** The commit it follows (the base, or the previous output), and the base the session started from. */
  parent: string;
  base: string;
  message: string;
  stats: { files: number; insertions: number; deletions: number };
  push: "pushed" | "failed" | "not_requested";
  error: string | null;
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
  /** The subagent that ran this turn (its own thread); null for the session's own (root) turns. */
  subagent_id: string | null;
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
  /** The engine item (protocol ThreadItem) as last seen, or one of this server's own items. */
  data: StoredItem;
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
  | { type: "item.started"; data: { item: StoredItem; output_index: number } }
  | { type: "item.delta"; data: { item_id: string; output_index: number; kind: DeltaKind; delta: string } }
  /** An engine item completed (its stored item is updated). */
  | { type: "item.completed"; data: { item: StoredItem; output_index: number } }
  /** An MCP server of the session's thread is starting, ready or failed (`error` says why). */
  | {
      type: "mcp_server.status";
      data: {
        server_label: string;
        status: "starting" | "ready" | "failed" | "cancelled";
        error: string | null;
      };
    }
  /** A subagent was opened (`created`), reopened (`active`) or closed. */
  | { type: "subagent.updated"; data: { subagent: SubagentRecord; change: "created" | "active" | "closed" } }
  /** The turn waits for the client (a function call's result, an approval). */
  | { type: "action.required"; data: { action: RequiredAction } }
  /** The client answered (or the turn ended without an answer: `answer` null). */
  | {
      type: "action.resolved";
      data: { action_id: string; action_type: RequiredAction["type"]; answer: ActionAnswerSummary | null };
    }
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
  /** The session's environment changed status (pending, ready, connected, failed, expired…); `error` says why. */
  | { type: "environment.updated"; data: { environment: EnvironmentState } }
  /** The goal changed (null: cleared). */
  | { type: "goal.updated"; data: { goal: GoalRecord | null } }
  /**
   * A workspace checkpoint was recorded (the checkpoint itself lives in the checkpoint store). `official`: the
   * official dialect shows it too (an extension event strict SDK clients do not know: the operator's choice).
   */
  | { type: "checkpoint.created"; data: { checkpoint: CheckpointSummary; official: boolean } }
  /** The service committed a repository's changes (and pushed them): the item says what and where. */
  | { type: "repository.output"; data: { item: RepositoryOutputItem } };

/** A workspace checkpoint as the event log tells of it. */
export interface CheckpointSummary {
  /** `ckpt_` + the checkpoint's commit id in its store. */
  id: string;
  /** baseline, turn, external, manual, before_restore, restore, fork. */
  kind: string;
  label: string;
  /** The session it is attributed to, and the turn it belongs to (if any). */
  session_id: string;
  turn_id: string | null;
  parent_id: string | null;
  /** Unix seconds. */
  created_at: number;
  /** Against its parent. */
  stats: { files: number; insertions: number; deletions: number };
  /** How many paths were left out (too large, excluded, unreadable). */
  skipped: number;
}

/** A session environment's state as the event log tells of it. */
export interface EnvironmentState {
  id: string;
  type: string;
  status: EnvironmentStatus;
  error: EnvironmentError | null;
}

/** What a client answered, as logged (never the tool output itself: that is the output item). */
export type ActionAnswerSummary = { success: boolean } | { decision: ApprovalDecision };

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
  | { kind: "start"; turn_id: string; item: StoredItem; created_at: number }
  | {
      kind: "finish";
      turn_id: string;
      item: StoredItem;
      created_at: number;
      state: "completed" | "incomplete";
    };

export interface NewEvent {
  event: LogEvent;
  turn_id: string | null;
  created_at: number;
  item?: ItemWrite;
}

/** What a turn's end logs (the store's `endTurn`). */
export interface TurnEndLog {
  /** The events' `created_at`. */
  at: number;
  /** Logged first: the actions nobody will answer now, the commands a stop ended (with their item writes). */
  before: NewEvent[];
  /** The `output_index` of the turn's items so far: an item closed here without one gets the next, in order. */
  outputIndex: ReadonlyMap<string, number>;
  /** The turn's terminal event (`turn.completed`, `turn.failed` or `turn.cancelled`), after the closed items'. */
  turn: LogEvent;
  /** The session as the caller expects the end to leave it: its status's webhook event is made from it. */
  webhook: SessionRecord;
}

/**
 * Bytes an engine appended to a thread's rollout file, from `start_offset` on: how a thread's conversation is shared
 * between instances (PostgreSQL's `rollout_chunks`, see platform/cluster/rollouts.ts).
 */
export interface RolloutChunk {
  thread_id: string;
  start_offset: number;
  data: Buffer;
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

export type * from "./automation-records.js";
export type * from "./environment-records.js";
