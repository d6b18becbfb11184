/**
 * Where a session's conversation stood when a checkpoint was made, and how many of its engine thread's turns that
 * is now. A checkpoint records a point in terms of the service's own turns (the engine's turn ids are not known to
 * the turn hooks), written into its meta as `conv`:
 *
 *   base          the conversation the session started with (none; a forked session's inherited turns)
 *   before:T      everything before turn T
 *   after:T[:k]   through turn T (through its k-th engine turn: a goal's continuations are engine turns)
 *   upto:T        everything the thread still holds of turns up to T (the conversation as it was at the time,
 *                 after any earlier revert)
 *
 * The engine's turns are mapped to the service's turns through item ids: every engine item the service recorded
 * is stored under its turn (the user's message included), and the engine's summary of a turn lists its items.
 * An engine turn none of whose items are known inherits the owner of the turn before it (a continuation), or
 * none (turns a forked thread inherited from another session, which every point keeps).
 */
import { conflict, notFound } from "../../kernel/errors.js";
import type { Store } from "../../store/types.js";

export type ConvPoint =
  | { kind: "base" }
  | { kind: "before"; turn: string }
  | { kind: "after"; turn: string; engineTurn: number | null }
  | { kind: "upto"; turn: string };

export function formatConv(p: ConvPoint): string {
  switch (p.kind) {
    case "base":
      return "base";
    case "before":
      return `before:${p.turn}`;
    case "upto":
      return `upto:${p.turn}`;
    case "after":
      return p.engineTurn === null ? `after:${p.turn}` : `after:${p.turn}:${p.engineTurn}`;
  }
}

export function parseConv(raw: string | undefined): ConvPoint {
  const [kind, turn, k] = (raw ?? "base").split(":");
  if (turn && (kind === "before" || kind === "upto")) return { kind, turn };
  if (turn && kind === "after") {
    const n = Number(k);
    return { kind, turn, engineTurn: k !== undefined && Number.isInteger(n) && n > 0 ? n : null };
  }
  return { kind: "base" };
}

/** Where the session's conversation stands now: everything its thread holds of the turns so far. */
export async function currentConv(store: Store, sessionId: string): Promise<string> {
  const last = (await store.listTurns(sessionId, { order: "desc", limit: 1 })).data[0];
  return formatConv(last ? { kind: "upto", turn: last.id } : { kind: "base" });
}

/** An engine turn as the thread lists it. */
export interface EngineTurnRef {
  id: string;
  itemIds: string[];
}

/** The session's turns in order, and which turn (and where in the session's items) each stored item belongs to. */
async function ownership(store: Store, sessionId: string) {
  const order = new Map<string, number>();
  for (let after: string | undefined; ; ) {
    const page = await store.listTurns(sessionId, { order: "asc", limit: 1000, ...(after ? { after } : {}) });
    for (const t of page.data) order.set(t.id, order.size);
    const last = page.data.at(-1);
    if (!page.has_more || !last) break;
    after = last.id;
  }
  const itemOwner = new Map<string, { turn: string; ordinal: number }>();
  for (let after: string | undefined; ; ) {
    const page = await store.listItems(sessionId, {
      order: "asc",
      limit: 1000,
      lazy_data: true,
      ...(after ? { after } : {}),
    });
    for (const i of page.data) itemOwner.set(i.id, { turn: i.turn_id, ordinal: i.ordinal });
    const last = page.data.at(-1);
    if (!page.has_more || !last) break;
    after = last.id;
  }
  return { order, itemOwner };
}

/** The service turn each engine turn belongs to (see the module's comment), oldest first. */
function ownersOf(
  itemOwner: ReadonlyMap<string, { turn: string }>,
  engineTurns: readonly EngineTurnRef[],
): Array<string | null> {
  const owners: Array<string | null> = [];
  for (const t of engineTurns) {
    const known = t.itemIds.map((id) => itemOwner.get(id)?.turn).find((o) => o !== undefined) ?? null;
    owners.push(known ?? owners.at(-1) ?? null);
  }
  return owners;
}

/**
 * The history of the conversation made of the first `prefix` engine turns: the service turns they belong to, and
 * when the last of them is only partly in it (a fork from within a goal turn), the ordinal of its last item the
 * conversation holds (null: the turns' items, all of them).
 */
export async function conversationHistory(
  store: Store,
  sessionId: string,
  engineTurns: readonly EngineTurnRef[],
  prefix: number,
): Promise<{ turn_ids: string[]; through_ordinal: number | null }> {
  const { itemOwner } = await ownership(store, sessionId);
  const owners = ownersOf(itemOwner, engineTurns);
  const held = owners.slice(0, prefix);
  const turnIds = [...new Set(held.filter((o): o is string => o !== null))];
  const last = turnIds.at(-1);
  if (last === undefined || !owners.slice(prefix).includes(last)) {
    return { turn_ids: turnIds, through_ordinal: null };
  }
  let through = -1;
  for (const t of engineTurns.slice(0, prefix)) {
    for (const id of t.itemIds) {
      const o = itemOwner.get(id);
      if (o && o.turn === last) through = Math.max(through, o.ordinal);
    }
  }
  return { turn_ids: turnIds, through_ordinal: through };
}

/**
 * How many of the thread's engine turns (oldest first) the conversation at `point` holds. Conflict when that
 * conversation is gone (its turn was reverted away since).
 */
export async function conversationPrefix(
  store: Store,
  sessionId: string,
  point: ConvPoint,
  engineTurns: readonly EngineTurnRef[],
): Promise<number> {
  const { order, itemOwner } = await ownership(store, sessionId);
  const owners = ownersOf(itemOwner, engineTurns);
  const rank = (owner: string | null) => (owner === null ? -1 : (order.get(owner) ?? -1));
  const count = (keep: (r: number) => boolean) => owners.filter((o) => keep(rank(o))).length;
  const turnRank = (turn: string) => {
    const r = order.get(turn);
    if (r === undefined) throw notFound(`Turn ${turn} of this checkpoint is gone`, "turn_id");
    return r;
  };
  switch (point.kind) {
    case "base":
      return count((r) => r < 0);
    case "before": {
      const r = turnRank(point.turn);
      return count((x) => x < r);
    }
    case "upto": {
      const r = turnRank(point.turn);
      return count((x) => x <= r);
    }
    case "after": {
      const r = turnRank(point.turn);
      const own = owners.flatMap((o, i) => (o === point.turn ? [i] : []));
      if (own.length > 0) {
        const k = point.engineTurn === null ? own.length : Math.min(point.engineTurn, own.length);
        return (own[k - 1] as number) + 1;
      }
      // The turn never reached the engine (nothing of it is stored): the conversation stood as before it.
      if (![...itemOwner.values()].some((o) => o.turn === point.turn)) return count((x) => x <= r);
      throw conflict(
        `The conversation as it was after turn ${point.turn} is no longer in this session's thread (it was reverted ` +
          "since): restore the files only (conversation: keep), or first restore the checkpoint taken before that revert",
        "conversation_unavailable",
      );
    }
  }
}
