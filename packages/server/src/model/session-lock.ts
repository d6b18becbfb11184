/**
 * Who holds a session: a turn, or a checkpoint restore, which claims the session the same way (store.claimSession:
 * one winner, whatever the instance) so that no turn starts meanwhile, but has no turn record and no events. The
 * store keeps the holder as the session's claim (`active_turn_id`): the turn's id, or `restore_…`; this module is
 * the one place that tells them apart.
 */
import { randomBytes } from "node:crypto";

export type SessionLock = { kind: "turn"; id: string } | { kind: "restore"; id: string };

const RESTORE_PREFIX = "restore_";

/** The lock a stored claim stands for (null: nobody holds the session). */
export function lockOf(claim: string | null): SessionLock | null {
  if (claim === null || claim === "") return null;
  return claim.startsWith(RESTORE_PREFIX) ? { kind: "restore", id: claim } : { kind: "turn", id: claim };
}

/** The running turn of a session, if a turn (not a restore) holds it. */
export function turnHolding(s: { active_turn_id: string | null }): string | null {
  const lock = lockOf(s.active_turn_id);
  return lock?.kind === "turn" ? lock.id : null;
}

/** A new restore's lock (its id is the claim stored while the restore runs). */
export function newRestoreLock(): SessionLock {
  return { kind: "restore", id: `${RESTORE_PREFIX}${randomBytes(12).toString("hex")}` };
}
