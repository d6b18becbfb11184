/**
 * Where features attach to the lifecycle of sessions and turns without the runner or the session service knowing
 * them (checkpoints, environments, observability, webhooks), and tools the server answers itself (the agent's
 * automations). Registered once at start-up (`runner.use`, `runner.serveTool`, `sessions.use`); hooks are called in
 * registration order.
 */
import type { SessionRecord, TurnRecord } from "../store/types.js";

export interface TurnHooks {
  /**
   * The session is claimed and its engine thread leased; the engine has not started the turn. A rejection fails
   * the turn (an {@link HookFailure} gives its code; any other error is `internal_error`).
   */
  beforeTurn?(session: SessionRecord, turn: TurnRecord): Promise<void>;
  /**
   * An engine turn of the logical turn has ended: between a goal's continuations (the next one waits for this),
   * and once after the last engine turn, before the turn's end is stored. Errors are logged, never fatal.
   */
  afterEngineTurn?(session: SessionRecord, turn: TurnRecord): Promise<void>;
  /** The turn's end is stored (the session is idle again). Errors are logged, never fatal. */
  afterTurn?(session: SessionRecord, turn: TurnRecord): Promise<void>;
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
