/**
 * The start of a turn: the store claims the session atomically (of two concurrent starts, on any instances, one
 * wins), the claim's lease epoch fences every write of the turn from then on, and the turn is recorded
 * (`turn.started`) with the session's new status — in one write (`startTurn`), or, for a goal, with the goal side
 * built between the claim and the record. A goal side that cannot be built gives the session back as it was; a
 * session deleted meanwhile is "not found".
 */
import type { Clock } from "../../kernel/clock.js";
import { conflict, notFound, unavailable } from "../../kernel/errors.js";
import { newId } from "../../model/ids.js";
import type { TurnInput } from "../../model/input.js";
import type { Cluster } from "../../platform/cluster/types.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { SessionRecord, Store, TurnRecord } from "../../store/types.js";
import type { GoalRun } from "../goals/run.js";

export interface StartOptions {
  /** The turn id, when the caller needed it first (a goal record names its turn). */
  turnId?: string;
  /** Builds the goal side of the turn, once the session is claimed. */
  goal?: (turnId: string) => Promise<GoalRun>;
}

export interface ClaimDeps {
  store: Store;
  hub: EventHub;
  clock: Clock;
  cluster: Pick<Cluster, "instanceId" | "healthy">;
}

/** A claimed session (as the claim left it) and its recorded turn. */
export interface Claim {
  session: SessionRecord;
  turn: TurnRecord;
  goal: GoalRun | null;
}

/** Claims the session and records its new turn; 409 when another turn has it, 503 when this instance runs none. */
export async function claimTurn(
  deps: ClaimDeps,
  session: SessionRecord,
  input: TurnInput,
  opts: StartOptions,
): Promise<Claim> {
  const { store, hub, clock, cluster } = deps;
  if (!cluster.healthy) {
    throw unavailable("This instance has lost its database and runs no turns right now: try again");
  }
  const now = clock.now();
  const turnId = opts.turnId ?? newId("turn_");
  const patch = {
    status: "in_progress" as const,
    error: null,
    last_active_at: now,
    updated_at: now,
    owner_instance: cluster.instanceId,
  };
  // A session deleted while its turn starts (after the claim) fails the writes that follow: it is "not found",
  // as it would have been a moment earlier.
  const deletedMeanwhile = async (err: unknown) =>
    (await store.getSession(session.id)) ? err : notFound(`Session ${session.id} not found`, "session_id");
  /** Why the claim did not take: another turn has the session, or it was deleted since it was read. */
  const notClaimed = () => deletedMeanwhile(conflict("Session has an active turn"));
  if (!opts.goal) {
    // No goal side to build in between: the claim, the turn and its first events are one write.
    const turn = newTurn(session.id, turnId, now, input, null);
    const claimed = await hub
      .write(session.id, async (s) => {
        const started = await s.startTurn(session, turn, patch, hub.now());
        return { result: started?.session, appended: started?.appended ?? [] };
      })
      .catch(async (err: unknown) => {
        throw await deletedMeanwhile(err);
      });
    if (!claimed) throw await notClaimed();
    // Every later write of this turn carries the claim's fencing token: refused once another instance has taken over.
    hub.fence(session.id, claimed.lease_epoch);
    return { session: claimed, turn, goal: null };
  }
  // A goal's side is built once the session is claimed: claim, build, then record the turn.
  const claimed = await store.claimSession(session.id, turnId, patch);
  if (!claimed) throw await notClaimed();
  hub.fence(session.id, claimed.lease_epoch);
  let goal: GoalRun;
  try {
    goal = await opts.goal(turnId);
  } catch (err) {
    hub.fence(session.id, null);
    await store.releaseSession(session.id, turnId, { status: session.status, error: session.error });
    throw await deletedMeanwhile(err);
  }
  const turn = newTurn(session.id, turnId, now, input, { mode: goal.mode, objective: goal.objective });
  try {
    await hub.commit(session.id, async (tx, log) => {
      await tx.insertTurn(turn);
      log({ type: "turn.started", data: { turn } }, { turn_id: turnId });
      log({ type: "session.status", data: { session: claimed } }, { turn_id: turnId });
    });
  } catch (err) {
    const gone = await deletedMeanwhile(err);
    if (gone !== err) hub.fence(session.id, null);
    throw gone;
  }
  return { session: claimed, turn, goal };
}

function newTurn(
  sessionId: string,
  id: string,
  now: number,
  input: TurnInput,
  goal: TurnRecord["goal"],
): TurnRecord {
  return {
    id,
    session_id: sessionId,
    created_at: now,
    started_at: now,
    completed_at: null,
    status: "in_progress",
    input: input.items,
    error: null,
    usage: null,
    goal,
    subagent_id: null,
  };
}
