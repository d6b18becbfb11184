/**
 * Where features attach to the lifecycle of sessions and turns without the runner or the session service knowing
 * them (checkpoints, repositories, environments, observability, automations and webhooks): turn and session hooks,
 * tools the server answers itself (the agent's automations), listeners of stored events and of sessions becoming
 * idle. Each feature says what it attaches in one {@link Feature}; the service's list of them is attached once at
 * start-up (`attachFeatures`, main/compose.ts); hooks are called in the list's order.
 */
import type { EventRecord, SessionRecord, TurnRecord } from "../store/types.js";

export interface TurnHooks {
  /**
   * The session is claimed and its engine thread leased; the engine has not started the turn. A rejection fails
   * the turn (an {@link HookFailure} gives its code; any other error is `internal_error`).
   */
  beforeTurn?(session: SessionRecord, turn: TurnRecord): Promise<void>;
  /**
   * An engine turn of the logical turn has ended: between a goal's continuations (the next one waits for this),
   * and once after the last engine turn, before the turn's end is stored. `activity` is what the turn has done so
   * far, as this process recorded it. Errors are logged, never fatal.
   */
  afterEngineTurn?(session: SessionRecord, turn: TurnRecord, activity: TurnActivity): Promise<void>;
  /** The turn's end is stored (the session is idle again). Errors are logged, never fatal. */
  afterTurn?(session: SessionRecord, turn: TurnRecord): Promise<void>;
}

/** What a running turn has done so far, as the process running it recorded it (read from memory, not the store). */
export interface TurnActivity {
  /** The types of the items the turn has started or finished (its own: its subagents' turns have theirs). */
  readonly itemTypes: ReadonlySet<string>;
}

export interface SessionHooks {
  /** A session was created (its first turn, if any, has not started). Errors are logged, never fatal. */
  afterCreate?(session: SessionRecord): Promise<void>;
  /** A session and its records were deleted (by a client or by expiry). Errors are logged, never fatal. */
  afterDelete?(session: SessionRecord): Promise<void>;
}

/**
 * A tool this server answers itself: the engine calls it like a client's function tool (a dynamic tool), but the
 * call never becomes a required action (`runner.serveTool`). The thread must declare it (engine/thread-options).
 */
export interface ServerTool {
  name: string;
  /** Whether the session has the tool (a client's function tool of the same name is the client's otherwise). */
  enabledFor(session: SessionRecord): boolean;
  /** Answers one call; `success: false` tells the model what was wrong. A rejection fails the call the same way. */
  call(session: SessionRecord, call: ServerToolCall): Promise<ServerToolAnswer>;
}

export interface ServerToolCall {
  callId: string;
  arguments: unknown;
}

export interface ServerToolAnswer {
  success: boolean;
  text: string;
}

/** Fails a turn from a `beforeTurn` hook with this code and message. */
export class HookFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What one feature attaches to the service's lifecycle. */
export interface Feature {
  /** What it is (for the reader: main/compose.ts lists them). */
  name: string;
  turns?: TurnHooks;
  sessions?: SessionHooks;
  tools?: readonly ServerTool[];
  /** Every event the log stores, in order, once it is stored. */
  events?: (e: EventRecord) => void;
  /** A session's turn ended here and the session is idle again. */
  idle?: (sessionId: string) => void;
}

/** Where features attach: the turn runner, the session service and the event log. */
export interface FeatureHost {
  runner: {
    use(hooks: TurnHooks): void;
    serveTool(tool: ServerTool): void;
    onIdle(l: (sessionId: string) => void): void;
  };
  sessions: { use(hooks: SessionHooks): void };
  hub: { onEvent(l: (e: EventRecord) => void): void };
}

/** Attaches each feature's hooks, tools and listeners, in the list's order. */
export function attachFeatures(host: FeatureHost, features: readonly Feature[]): void {
  for (const f of features) {
    if (f.turns) host.runner.use(f.turns);
    if (f.sessions) host.sessions.use(f.sessions);
    for (const tool of f.tools ?? []) host.runner.serveTool(tool);
    if (f.events) host.hub.onEvent(f.events);
    if (f.idle) host.runner.onIdle(f.idle);
  }
}
