/**
 * A turn's end, in one write of the session's log (`Store.endTurn`): the required actions nobody will answer now are
 * resolved unanswered, the commands a stop ended say so, items left open are closed as incomplete, the turn gets its
 * one terminal state, the thread's new rollout bytes are stored and the session is idle again (usable after a failed
 * turn, its usage summed). When another instance has taken the turn over meanwhile (the write is fenced off), its
 * record of the end is the outcome.
 */
import type { TurnResult } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { Clock } from "../../kernel/clock.js";
import type { Rollouts } from "../../platform/cluster/types.js";
import type { EventHub } from "../../platform/stream/hub.js";
import {
  FencedError,
  type ItemWrite,
  type LogEvent,
  type NewEvent,
  type RolloutChunk,
  type SessionPatch,
  type Store,
  type StoredItem,
  type TurnError,
  type TurnRecord,
  type TurnStatus,
} from "../../store/types.js";
import { addUsage, toUsage } from "../usage.js";
import type { ActiveTurn, Stop } from "./running.js";

export interface EndDeps {
  hub: EventHub;
  store: Store;
  clock: Clock;
  logger: Logger;
  rollouts: Pick<Rollouts, "stored">;
}

/** The end this instance recorded, and the turn as it ended (another instance's record when it took the turn over). */
export interface TurnEnd {
  ended: TurnRecord;
  outcome: TurnRecord;
  /** Whether this instance's record is the one stored (false: another instance had taken the turn over). */
  recorded: boolean;
}

/**
 * Stores the turn's end and the session's new status, with the bytes the engine appended to the thread's rollout
 * (`rollout`); the session's fence is lifted whatever happens.
 */
export async function recordEnd(
  deps: EndDeps,
  active: ActiveTurn,
  result: TurnResult | null,
  failure: TurnError | null,
  rollout: RolloutChunk | null,
): Promise<TurnEnd> {
  const { hub, clock, logger } = deps;
  const sessionId = active.session.id;
  const usage = result?.usage ? toUsage(result.usage.turn) : null;
  const { status, error } = outcome(active.stop, failure, result);
  const turn: TurnRecord = { ...active.turn, status, error, usage, completed_at: clock.now() };
  const type =
    status === "completed" ? "turn.completed" : status === "failed" ? "turn.failed" : "turn.cancelled";
  const at = hub.now();
  const before: NewEvent[] = [];
  const log = (event: LogEvent, item?: ItemWrite) =>
    before.push({ event, turn_id: turn.id, created_at: at, ...(item ? { item } : {}) });
  // Whatever the turn still waited for will not be answered now.
  for (const a of active.actions.close()) {
    log({ type: "action.resolved", data: { action_id: a.id, action_type: a.type, answer: null } });
  }
  // The commands a stop ended say so, with the output they had streamed.
  if (active.stop) {
    for (const c of active.recorder.openCommands()) {
      const item = stoppedCommand(c.item, c.output, active.stop);
      log(
        { type: "item.completed", data: { item, output_index: active.recorder.indexOf(item.id) } },
        { kind: "finish", turn_id: turn.id, item, created_at: clock.now(), state: "incomplete" },
      );
    }
  }
  const now = clock.now();
  const session: SessionPatch = {
    // A failed turn does not fail the session: it stays usable; `error` keeps why the last turn failed.
    status: "idle",
    error: status === "failed" ? (error?.message ?? null) : null,
    active_turn_id: null,
    required_actions: [],
    // The session's usage as claimed: only a turn's end adds to it, and this turn has held the session since.
    usage: addUsage(active.session.usage, usage),
    last_active_at: now,
    updated_at: now,
  };
  // One write: the items the turn started but never finished (interrupted, failed) stay visible, marked incomplete
  // (each with its item.completed), the turn gets its terminal state and the session is idle (session.status).
  const committed = hub.write(sessionId, async (store, fence) => {
    const ended = await store.endTurn(
      sessionId,
      turn.id,
      {
        itemStatus: "failed",
        turn: { status, error, usage, completed_at: turn.completed_at },
        session,
        rollout,
      },
      {
        at,
        before,
        outputIndex: active.recorder.outputIndexes,
        turn: { type, data: { turn } },
        webhook: { ...active.session, ...session },
      },
      fence,
    );
    return { result: ended, appended: ended.appended };
  });
  let outcomeTurn = turn;
  let recorded = false;
  try {
    await committed;
    recorded = true;
    if (rollout) deps.rollouts.stored(rollout);
  } catch (err) {
    if (!(err instanceof FencedError)) throw err;
    // Another instance took the turn over (this one was thought dead): it has ended the turn already.
    logger.warn({ session: sessionId, turn: turn.id }, "turn was taken over by another instance");
    outcomeTurn = (await deps.store.getTurn(sessionId, turn.id)) ?? turn;
  } finally {
    hub.fence(sessionId, null);
  }
  return { ended: turn, outcome: outcomeTurn, recorded };
}

function outcome(
  stop: Stop | null,
  failure: TurnError | null,
  result: TurnResult | null,
): { status: TurnStatus; error: TurnError | null } {
  if (stop) {
    const error =
      stop.status === "failed" || stop.status === "cancelled"
        ? { code: stop.code, message: stop.message }
        : null;
    return { status: stop.status, error };
  }
  if (failure) return { status: "failed", error: failure };
  if (result?.status === "interrupted") {
    return { status: "cancelled", error: { code: "interrupted", message: "The turn was interrupted" } };
  }
  if (result?.status === "failed") {
    return {
      status: "failed",
      error: { code: "server_error", message: result.error?.message ?? "turn failed" },
    };
  }
  return { status: "completed", error: null };
}

/** A command item the turn's stop ended: failed, its output what it streamed plus a line saying why it stopped. */
function stoppedCommand(item: StoredItem, streamed: string, stop: Stop): StoredItem {
  if (item.type !== "commandExecution") return item;
  const output = streamed && !streamed.endsWith("\n") ? `${streamed}\n` : streamed;
  return { ...item, status: "failed", aggregatedOutput: `${output}[command stopped: ${stop.message}]` };
}
