/**
 * What the service needs from the other instances sharing its database: who is alive, a way to reach the instance
 * that owns a running turn, wake-ups when a session's log grows elsewhere, the turns of dead instances, and the
 * engine threads' rollouts. One implementation per store: PostgreSQL (several instances) and a single-instance one
 * for the embedded store.
 */
import type { RolloutChunk, SessionRecord } from "../../store/types.js";

/** An operation on a running turn, for the instance that owns it (JSON: it crosses the database). */
export type ControlOp =
  | { op: "steer"; session_id: string; items: unknown[] }
  | { op: "cancel"; session_id: string }
  | { op: "abort"; session_id: string; message: string }
  | { op: "answer"; session_id: string; action_id: string; answer: unknown; turn_id: string | null }
  | { op: "goal_pause"; session_id: string }
  | { op: "goal_clear"; session_id: string };

/** A domain error as it crosses instances (rebuilt on the other side). */
export interface RemoteError {
  kind: string;
  message: string;
  param: string | null;
  code: string | null;
}

export type ControlResult = { ok: true; value: unknown } | { ok: false; error: RemoteError };

export interface ClusterStats {
  kind: string;
  instance: string;
  healthy: boolean;
  /** Instances with a recent heartbeat (this one included). */
  live?: number;
  takeovers?: number;
}

export interface Cluster {
  /** This process's id (owner_instance of the turns it claims). */
  readonly instanceId: string;
  /** False while this instance has fenced itself (it cannot reach the database): it runs no turns. */
  readonly healthy: boolean;
  /**
   * Joins the cluster: `handle` answers the operations other instances send to this one; `wake` is told that a
   * session's log has grown to `seq` on another instance; `fenced` is called when this instance loses the database
   * for too long (it must stop its engines: its turns are about to be taken over); `revoked` is told that an API
   * key was revoked (by any process on the database; null: some may have been while notifications were lost).
   */
  start(opts: {
    handle: (op: ControlOp) => Promise<ControlResult>;
    wake: (sessionId: string, seq: number) => void;
    fenced: () => void;
    revoked?: (keyId: string | null) => void;
  }): Promise<void>;
  /** This process wrote a session's log up to `seq` (tell the others). */
  published(sessionId: string, seq: number): void;
  /** Sends an operation to the instance `target` and waits for its result; null when it is not alive. */
  send(target: string, op: ControlOp): Promise<ControlResult | null>;
  /**
   * Takes over the running turns whose owner is dead (its heartbeat is too old), each with a new lease epoch:
   * returns the sessions as they are now (this instance their owner). The caller ends their turns.
   */
  claimOrphans(): Promise<SessionRecord[]>;
  stats(): ClusterStats;
  stop(): Promise<void>;
}

/** Engine threads' rollout files, kept where every instance can read them. */
export interface Rollouts {
  /**
   * Before a turn on `threadId`: brings the local rollout file up to date. `moved`: it was (re)written from the
   * shared copy (the engine loses its goal state with a move); `stale`: an engine here may still hold an older copy
   * loaded, which must not be used.
   */
  prepare(threadId: string): Promise<{ moved: boolean; stale: boolean }>;
  /** After work on `threadId` outside a turn: stores what the engine appended to its rollout file. */
  save(threadId: string): Promise<void>;
  /**
   * After a turn on `threadId`: what the engine appended to its rollout file since it was last stored (null:
   * nothing, or rollouts are not shared), for the turn's end to store in its own write (`endTurn`).
   */
  unsaved(threadId: string): Promise<RolloutChunk | null>;
  /** The turn's end that carried `chunk` has committed. */
  stored(chunk: RolloutChunk): void;
}
