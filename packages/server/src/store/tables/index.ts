/**
 * The operations written once for both backends, over one backend's {@link SqlDb}. What each backend does its
 * own way — the event log and items (the hot path, with its counters), claims, deleting a session, an
 * environment's status change with its webhook event — it adds beside these (see {@link BackendQueries});
 * PostgreSQL also replaces revokeKey with one that announces the revocation to every instance.
 */
import type { SqlDb } from "../sql/db.js";
import type { ItemRecord, NewEvent, Queries, SessionRecord, TurnEndLog, TurnRecord } from "../types.js";
import { agentQueries } from "./agents.js";
import { automationQueries } from "./automations.js";
import { type ClaimStatements, claimQueries } from "./claims.js";
import { environmentQueries } from "./environments.js";
import { fileQueries } from "./files.js";
import { goalQueries } from "./goals.js";
import { idempotencyQueries } from "./idempotency.js";
import { keyQueries } from "./keys.js";
import { sessionQueries } from "./sessions.js";
import { turnQueries } from "./turns.js";
import { vaultQueries } from "./vaults.js";
import { webhookQueries } from "./webhooks.js";

/** `claims`: the backend's claim statements (run and ordered here). */
export function sharedQueries(db: SqlDb, claims: ClaimStatements) {
  return {
    ...claimQueries(db, claims),
    ...keyQueries(db),
    ...agentQueries(db),
    ...sessionQueries(db),
    ...turnQueries(db),
    ...goalQueries(db),
    ...idempotencyQueries(db),
    ...environmentQueries(db),
    ...vaultQueries(db),
    ...automationQueries(db),
    ...webhookQueries(db),
    ...fileQueries(db),
  };
}

/** The events a turn's start appends (see `startTurn`): the turn, then the session as claimed. */
export function startEvents(turn: TurnRecord, claimed: SessionRecord, at: number): NewEvent[] {
  return [
    { event: { type: "turn.started", data: { turn } }, turn_id: turn.id, created_at: at },
    { event: { type: "session.status", data: { session: claimed } }, turn_id: turn.id, created_at: at },
  ];
}

/** `startTurn` as its three steps, one after the other (inside a transaction: SQLite's `startTurn` opens one). */
export function startTurnInSteps(
  q: Pick<Queries, "claimSession" | "insertTurn" | "appendEvents">,
): Queries["startTurn"] {
  return async (session, turn, patch, at) => {
    const claimed = await q.claimSession(session.id, turn.id, patch);
    if (!claimed) return undefined;
    await q.insertTurn(turn);
    const appended = await q.appendEvents(session.id, startEvents(turn, claimed, at), claimed.lease_epoch);
    return { session: claimed, appended };
  };
}

/**
 * The `output_index` of each item a turn's end closed, in order: the index the turn gave it, or (an item it never
 * gave one) the next free ones.
 */
export function closedIndexes(
  outputIndex: ReadonlyMap<string, number>,
  closed: readonly ItemRecord[],
): number[] {
  let next = outputIndex.size;
  return closed.map((item) => outputIndex.get(item.id) ?? next++);
}

/** The events a turn's end appends (see `endTurn`), given the items it closed and the session it left. */
export function endEvents(
  turnId: string,
  log: TurnEndLog,
  closed: readonly ItemRecord[],
  session: SessionRecord,
): NewEvent[] {
  const indexes = closedIndexes(log.outputIndex, closed);
  const at = (event: NewEvent["event"]): NewEvent => ({ event, turn_id: turnId, created_at: log.at });
  return [
    ...log.before,
    ...closed.map((item, i) =>
      at({ type: "item.completed", data: { item: item.data, output_index: indexes[i]! } }),
    ),
    at(log.turn),
    at({ type: "session.status", data: { session } }),
  ];
}

/** `endTurn` as its steps, one after the other (inside a transaction: SQLite's `endTurn` opens one). */
export function endTurnInSteps(
  q: Pick<Queries, "closeOpenItems" | "updateTurn" | "updateSession" | "appendEvents">,
): Queries["endTurn"] {
  return async (sessionId, turnId, end, log, fence) => {
    if (end.rollout) throw new Error("this store shares no rollouts: they are kept by the PostgreSQL store");
    const closed = await q.closeOpenItems(sessionId, turnId, end.itemStatus);
    await q.updateTurn(sessionId, turnId, end.turn);
    const session = await q.updateSession(sessionId, end.session);
    if (!session) return { closed, session, appended: [] };
    const appended = await q.appendEvents(sessionId, endEvents(turnId, log, closed, session), fence);
    return { closed, session, appended };
  };
}

/** The operations each backend writes itself. */
export type BackendQueries = Omit<Queries, keyof ReturnType<typeof sharedQueries>>;
