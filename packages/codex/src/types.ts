import type { ServerNotification } from "./generated/ServerNotification.js";
import type { AskForApproval } from "./generated/v2/AskForApproval.js";
import type { SandboxMode } from "./generated/v2/SandboxMode.js";
import type { ThreadGoal } from "./generated/v2/ThreadGoal.js";
import type { ThreadItem } from "./generated/v2/ThreadItem.js";
import type { TokenUsageBreakdown } from "./generated/v2/TokenUsageBreakdown.js";
import type { Turn as ProtocolTurn } from "./generated/v2/Turn.js";
import type { TurnError } from "./generated/v2/TurnError.js";
import type { TurnStatus } from "./generated/v2/TurnStatus.js";

export type {
  ThreadItem,
  TokenUsageBreakdown,
  TurnStatus,
  TurnError,
  ProtocolTurn,
  AskForApproval,
  SandboxMode,
};

/** One input part. Plain strings are shorthand for a single text part. */
export type InputItem =
  | { type: "text"; text: string }
  | { type: "image"; url: string; detail?: "auto" | "low" | "high" }
  | { type: "localImage"; path: string; detail?: "auto" | "low" | "high" };
export type Input = string | InputItem | InputItem[];

/** A request the engine sends to the client (approvals, user input). */
export interface ServerRequest {
  id: number | string;
  method: string;
  params: Record<string, unknown>;
}
/** Decides a server request; return the JSON-RPC result (e.g. `{decision: "accept"}`). */
export type ServerRequestHandler = (request: ServerRequest) => unknown | Promise<unknown>;

/** Synthetic event in a turn's stream: how a server request (approval, user input) was answered. */
export interface ServerRequestAnsweredEvent {
  method: "client/serverRequest/answered";
  params: {
    threadId: string;
    turnId: string | null;
    requestId: number | string;
    requestMethod: string;
    request: Record<string, unknown>;
    response: unknown;
    /** true when no handler was provided and the safe default (decline) was used. */
    defaulted: boolean;
  };
}

/** Goal turns only: an engine turn of the logical turn started (index 0 = the first, then continuations). */
export interface GoalEngineTurnStartedEvent {
  method: "client/goal/engineTurnStarted";
  params: { threadId: string; turnId: string; engineTurnId: string; index: number };
}

/** Goal turns only: the engine updated the goal (status, tokens used, time used). */
export interface GoalUpdatedEvent {
  method: "client/goal/updated";
  params: { threadId: string; turnId: string; goal: ThreadGoal };
}

/**
 * Something a subagent's thread did while this turn ran (the engine's multi-agent tools spawn child threads whose
 * notifications carry the child's thread and turn ids): the child's notification, as the engine sent it.
 */
export interface SubagentNotificationEvent {
  method: "client/subagent/notification";
  params: { threadId: string; turnId: string; childThreadId: string; notification: ServerNotification };
}

/** What a turn stream yields: engine notifications (turn ids re-addressed to the logical turn) + our own. */
export type TurnEvent =
  | ServerNotification
  | ServerRequestAnsweredEvent
  | GoalEngineTurnStartedEvent
  | GoalUpdatedEvent
  | SubagentNotificationEvent;

export interface GoalOptions {
  /** Engine-side token budget for the goal (positive). */
  tokenBudget?: number;
  /**
   * Drive the continuations instead of letting the engine run them: after each engine turn that completes with the
   * goal unfinished, the driver says whether one more continuation runs. The engine then never starts one by
   * itself, so caps are exact (a pause can never arrive too late).
   */
  drive?: GoalDriver;
}

/** Decides, after an engine turn of a goal turn, whether one more continuation runs. */
export type GoalDriver = (state: {
  turn: ProtocolTurn;
  goal: ThreadGoal;
  engineTurns: number;
}) => Promise<boolean> | boolean;

export interface TurnOptions {
  /** Run the input as a goal: the engine keeps continuing until the goal leaves `active`. */
  goal?: boolean | GoalOptions;
  model?: string;
  effort?: "none" | "minimal" | "low" | "medium" | "high" | "xhigh";
  /** Reasoning summaries the model should produce. */
  summary?: "auto" | "concise" | "detailed" | "none";
  /** JSON Schema the final message must follow. */
  outputSchema?: Record<string, unknown>;
  cwd?: string;
  approvalPolicy?: AskForApproval;
  /**
   * The execution environments of this turn and the thread's later ones (see `ThreadOptions.environments`): the
   * engine does not take them from a resumed thread's rollout, so a resumed thread needs them again.
   */
  environments?: ThreadEnvironmentParams[];
}

export interface ThreadOptions {
  model?: string;
  modelProvider?: string;
  cwd?: string;
  sandbox?: SandboxMode;
  approvalPolicy?: AskForApproval;
  baseInstructions?: string;
  developerInstructions?: string;
  ephemeral?: boolean;
  /** config.toml overrides for this thread. */
  config?: Record<string, unknown>;
  /**
   * Client-executed function tools, fixed for the thread's lifetime (ignored on resume): the engine asks the
   * thread's `onServerRequest` handler (`item/tool/call`) when the model calls one. Names the engine uses for its
   * own tools shadow these silently: check them first.
   */
  dynamicTools?: DynamicToolSpec[];
  /** Handles approvals / user-input requests of this thread (overrides the client-wide handler). */
  onServerRequest?: ServerRequestHandler;
  /**
   * Where the thread's commands and file operations run: execution environments of this engine process (added with
   * `Codex.addEnvironment`), each with the cwd inside it; `[]` for none. Sticky: kept in the thread's rollout.
   * (An experimental field of the pinned engine.)
   */
  environments?: ThreadEnvironmentParams[];
}

/** An execution environment of a thread: its id (`Codex.addEnvironment`) and the working directory inside it. */
export interface ThreadEnvironmentParams {
  environmentId: string;
  cwd: string;
}

/** An execution server (`codex exec-server`) the engine process may run threads' commands on. */
export interface ExecutionEnvironment {
  environmentId: string;
  /** `ws://` (loopback only when a token is sent) or `wss://`. */
  execServerUrl: string;
  /** Sent as `Authorization: Bearer …` on the connection (and its reconnects). */
  authBearerToken?: string;
}

export interface DynamicToolSpec {
  type: "function";
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  inputSchema: Record<string, unknown>;
}

/** What an `item/tool/call` handler answers. */
export interface DynamicToolResult {
  contentItems: Array<{ type: "inputText"; text: string } | { type: "inputImage"; imageUrl: string }>;
  success: boolean;
}

export interface TurnUsage {
  /** Last model response. */
  last: TokenUsageBreakdown;
  /** Whole thread, cumulative (as the engine reports it). */
  total: TokenUsageBreakdown;
  modelContextWindow: number | null;
  /** Attributable to this logical turn: `total` now minus `total` when the turn started. */
  turn: TokenUsageBreakdown;
}

export interface TurnResult {
  id: string;
  status: TurnStatus;
  items: ThreadItem[];
  /** Text of the last agent message that is not commentary, or null. */
  finalResponse: string | null;
  usage: TurnUsage | null;
  /** Unix seconds. */
  startedAt: number | null;
  completedAt: number | null;
  durationMs: number | null;
  error: TurnError | null;
  /** Number of engine turns this logical turn spanned (1 for plain turns). */
  engineTurns: number;
}
