/**
 * Operations on a session's running turn — steer, cancel, abort, a client's answer to a required action, pausing
 * or clearing the goal it runs — wherever that turn runs: here (the runner does it), or on the instance that owns
 * it (sent there through the cluster, which runs it with `handle`). Nothing running: the local answer (null,
 * false, or "Unknown pending tool call").
 */
import type { InputItem } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import { ApiError, conflict, type ErrorKind } from "../../kernel/errors.js";
import type { ActionAnswer } from "../../model/answers.js";
import type { Cluster, ControlOp, ControlResult } from "../../platform/cluster/types.js";
import type { Store, TurnRecord } from "../../store/types.js";
import type { TurnRunner } from "./runner.js";

export class TurnControl {
  constructor(
    private readonly deps: { runner: TurnRunner; cluster: Cluster; store: Store; logger: Logger },
  ) {}

  /** Adds input to the running turn; null when nothing runs (or it is ending). */
  steer(sessionId: string, items: InputItem[]): Promise<TurnRecord | null> {
    return this.route(sessionId, { op: "steer", session_id: sessionId, items }, () =>
      this.deps.runner.steer(sessionId, items),
    );
  }

  /** Cancels the running turn (it ends `cancelled`); null when the session is idle. */
  cancel(sessionId: string): Promise<TurnRecord | null> {
    return this.route(sessionId, { op: "cancel", session_id: sessionId }, () =>
      this.deps.runner.cancel(sessionId),
    );
  }

  /** Ends the running turn (the session is being deleted). */
  async abort(sessionId: string, message: string): Promise<void> {
    await this.route(sessionId, { op: "abort", session_id: sessionId, message }, async () => {
      await this.deps.runner.abort(sessionId, message);
      return null;
    });
  }

  /** A client's answer to a required action of the running turn (400 "Unknown pending tool call" otherwise). */
  async answer(sessionId: string, actionId: string, answer: ActionAnswer, turnId?: string): Promise<void> {
    const op: ControlOp = {
      op: "answer",
      session_id: sessionId,
      action_id: actionId,
      answer,
      turn_id: turnId ?? null,
    };
    await this.route(sessionId, op, async () => {
      await this.deps.runner.answer(sessionId, actionId, answer, turnId);
      return null;
    });
  }

  /** Pauses the goal the running turn drives; false when no goal turn runs. */
  pauseGoal(sessionId: string): Promise<boolean> {
    return this.route(sessionId, { op: "goal_pause", session_id: sessionId }, () =>
      this.goalHere(sessionId, "pause"),
    );
  }

  /** Clears the goal the running turn drives (the engine's goal included); false when no goal turn runs. */
  clearGoal(sessionId: string): Promise<boolean> {
    return this.route(sessionId, { op: "goal_clear", session_id: sessionId }, () =>
      this.goalHere(sessionId, "clear"),
    );
  }

  private async goalHere(sessionId: string, what: "pause" | "clear"): Promise<boolean> {
    const run = await this.deps.runner.runningGoal(sessionId);
    if (!run) return false;
    if (what === "pause") await run.pause("user_paused");
    else await run.clear();
    return true;
  }

  /** Runs an operation another instance sent to this one (it owns the turn). */
  async handle(op: ControlOp): Promise<ControlResult> {
    try {
      const value = await this.local(op);
      return { ok: true, value: value ?? null };
    } catch (err) {
      const e =
        err instanceof ApiError
          ? err
          : new ApiError("unavailable", err instanceof Error ? err.message : String(err));
      return {
        ok: false,
        error: {
          kind: e.kind,
          message: e.message,
          param: e.param,
          code: e.code,
        },
      };
    }
  }

  private local(op: ControlOp): Promise<unknown> {
    const { runner } = this.deps;
    const id = op.session_id;
    switch (op.op) {
      case "steer":
        return runner.steer(id, op.items as InputItem[]);
      case "cancel":
        return runner.cancel(id);
      case "abort":
        return runner.abort(id, op.message);
      case "answer":
        return runner.answer(id, op.action_id, op.answer as ActionAnswer, op.turn_id ?? undefined);
      case "goal_pause":
        return this.goalHere(id, "pause");
      case "goal_clear":
        return this.goalHere(id, "clear");
    }
  }

  /**
   * Here when the turn runs here (or nothing runs); otherwise sent to the instance that owns the turn. An owner
   * that does not answer is about to be taken over: 409, try again.
   */
  private async route<T>(sessionId: string, op: ControlOp, local: () => Promise<T>): Promise<T> {
    const { runner, cluster, store } = this.deps;
    if (runner.isActive(sessionId)) return local();
    const s = await store.getSession(sessionId);
    const owner = s?.active_turn_id ? s.owner_instance : null;
    if (!owner || owner === cluster.instanceId) return local();
    const result = await cluster.send(owner, op);
    if (!result) {
      throw conflict(
        "The instance running this turn is not responding; its turn will be ended within seconds: try again",
        "owner_unavailable",
      );
    }
    if (!result.ok) {
      const e = result.error;
      throw new ApiError(e.kind as ErrorKind, e.message, e.param, e.code);
    }
    return result.value as T;
  }
}
