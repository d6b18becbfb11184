/**
 * Turns nobody runs any more: the process running them died (start-up recovery) or their instance did (the
 * cluster's takeover, takeover.ts). Each is failed with the reason — `required_action_lost` when it waited for the
 * client, since the engine cannot keep what it waited for across a restart of its process —, the items clients saw
 * start are kept as incomplete, and the session is usable again.
 */
import type { Clock } from "../../kernel/clock.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { SessionRecord, Store, TurnRecord } from "../../store/types.js";

/** A turn ended while it waited for the client (tool result, approval): what it waited for cannot be answered. */
export const REQUIRED_ACTION_LOST = "required_action_lost";

/** Why a turn that waited for the client (the actions `actionIds`) ended with `required_action_lost`. */
export const lostActionsMessage = (why: string, actionIds: string[]) =>
  `${why.endsWith(".") ? why : `${why}.`} The turn was waiting for the client (${actionIds.join(", ")}), and the engine cannot keep a pending ` +
  "tool call or approval across a restart: send the input again.";

/** Ends the turns of every session the store has busy (start-up); returns how many sessions it fixed. */
export async function recoverOrphans(
  deps: { store: Store; hub: EventHub; clock: Clock },
  code: string,
  message: string,
): Promise<number> {
  const busy = await deps.store.listBusySessions();
  for (const s of busy) await endOrphan(deps, s, code, message);
  return busy.length;
}

/**
 * Ends the session's turn, failed with `code` (or `required_action_lost`), and makes the session idle. Returns the
 * failed turn (null: there was none to end).
 */
export async function endOrphan(
  deps: { hub: EventHub; clock: Clock },
  s: SessionRecord,
  code: string,
  message: string,
): Promise<TurnRecord | null> {
  const { hub, clock } = deps;
  let ended: TurnRecord | null = null;
  await hub.commit(s.id, async (tx, log) => {
    const turn = s.active_turn_id ? await tx.getTurn(s.id, s.active_turn_id) : undefined;
    if (turn && (turn.status === "in_progress" || turn.status === "queued")) {
      for (const item of await tx.closeOpenItems(s.id, turn.id, "failed")) {
        log({ type: "item.completed", data: { item: item.data, output_index: -1 } }, { turn_id: turn.id });
      }
      const waited = s.required_actions.length > 0;
      for (const a of s.required_actions) {
        log(
          { type: "action.resolved", data: { action_id: a.id, action_type: a.type, answer: null } },
          { turn_id: turn.id },
        );
      }
      const failed = await tx.updateTurn(s.id, turn.id, {
        status: "failed",
        completed_at: clock.now(),
        // The engine cannot keep a call it is waiting on across a restart of its process.
        error: waited
          ? {
              code: REQUIRED_ACTION_LOST,
              message: lostActionsMessage(
                message,
                s.required_actions.map((a) => a.id),
              ),
            }
          : { code, message },
      });
      if (failed) log({ type: "turn.failed", data: { turn: failed } }, { turn_id: turn.id });
      ended = failed ?? null;
    }
    const next = await tx.updateSession(s.id, {
      status: "idle",
      active_turn_id: null,
      required_actions: [],
      updated_at: clock.now(),
    });
    if (next) log({ type: "session.status", data: { session: next } });
  });
  return ended;
}
