/**
 * A message to a session, the same operation for both dialects: it starts a turn when the session is idle; while
 * a turn runs it steers that turn or is refused, as the caller asks. A goal message starts a goal turn. Answers to
 * what a running turn waits for (tool results, approvals) go to that turn.
 */

import { conflict, notFound } from "../kernel/errors.js";
import type { ActionAnswer } from "../model/answers.js";
import type { GoalCaps } from "../model/goal-caps.js";
import type { TurnInput } from "../model/input.js";
import { lockOf } from "../model/session-lock.js";
import type { SessionRecord, Store, TurnRecord } from "../store/types.js";
import type { GoalService } from "./goals/service.js";
import type { TurnControl } from "./turns/control.js";
import type { TurnRunner } from "./turns/runner.js";

/** What a message does while a turn runs: join it (steer), or be refused (409). */
export type WhileBusy = "steer" | "refuse";

export interface Sent {
  turn: TurnRecord;
  /** True when the message joined the running turn. */
  steered: boolean;
}

export class MessageService {
  constructor(
    private readonly deps: { store: Store; runner: TurnRunner; control: TurnControl; goals: GoalService },
  ) {}

  /**
   * Sends the input. With `steer`, a message that meets a turn which is already ending (being cancelled, or whose
   * engine turn just finished) starts the next turn once that one has ended: a valid message is never lost to
   * that race.
   */
  async send(
    session: SessionRecord,
    input: TurnInput,
    opts: { whileBusy: WhileBusy; goal?: GoalCaps | null },
  ): Promise<Sent> {
    const { runner, goals } = this.deps;
    if (opts.goal) {
      if (runner.activeTurn(session.id) || session.active_turn_id) {
        throw conflict("Cannot start a goal while a turn is running", "session_busy");
      }
      return { turn: await goals.startWithInput(session, input, opts.goal), steered: false };
    }
    let current = session;
    for (;;) {
      // The running turn: here, or on another instance (the session says which).
      const lock = lockOf(runner.activeTurn(current.id)?.id ?? current.active_turn_id);
      if (!lock) return { turn: await runner.start(current, input), steered: false };
      if (lock.kind === "restore") {
        throw conflict(
          "The session is busy (a checkpoint is being restored): try again shortly",
          "session_busy",
        );
      }
      if (opts.whileBusy === "refuse") throw conflict("Session has an active turn");
      const steered = await this.deps.control.steer(current.id, input.items);
      if (steered) return { turn: steered, steered: true };
      await runner.waitFor(current.id, lock.id);
      current = await this.reload(current.id);
    }
  }

  /** Adds input to the running turn only; null when nothing runs. */
  steer(session: SessionRecord, input: TurnInput): Promise<TurnRecord | null> {
    return this.deps.control.steer(session.id, input.items);
  }

  /** Cancels the running turn (it ends `cancelled`); null when the session is idle. */
  cancel(session: SessionRecord): Promise<TurnRecord | null> {
    return this.deps.control.cancel(session.id);
  }

  /**
   * Answers a required action of the running turn (a function call's result, an approval decision); 400 "Unknown
   * pending tool call" when no such action waits (or `turnId` is not the running turn).
   */
  answer(session: SessionRecord, actionId: string, answer: ActionAnswer, turnId?: string): Promise<void> {
    return this.deps.control.answer(session.id, actionId, answer, turnId);
  }

  private async reload(id: string): Promise<SessionRecord> {
    const s = await this.deps.store.getSession(id);
    if (!s) throw notFound(`Session ${id} not found`, "session_id");
    return s;
  }
}
