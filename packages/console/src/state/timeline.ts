/**
 * A session's timeline: items in display order, live text streamed into them, turns with their usage, the
 * session snapshot and the goal. Pure: the session hook feeds it history pages and stream events.
 */
import type { AgentSession, Goal, Item, StreamEvent, TokenUsage, Turn } from "../api/types";

export interface Entry {
  item: Item;
  /** Text streamed for the item that its last snapshot does not hold yet (message text, command output). */
  live: string;
}

export interface TurnEntry {
  id: string;
  status: Turn["status"];
  usage: TokenUsage | null;
  error: string | null;
}

export interface Timeline {
  order: readonly string[];
  entries: ReadonlyMap<string, Entry>;
  turns: ReadonlyMap<string, TurnEntry>;
  session: AgentSession | null;
  /** undefined: not loaded yet; null: the session has no goal. */
  goal: Goal | null | undefined;
  /** Bumped by every turn end and goal change: what the goal and artifact panels re-read. */
  revision: number;
  error: string | null;
  /** How many items the last history page put in front (the view keeps its scroll position). */
  prepended: number;
}

export const emptyTimeline: Timeline = {
  order: [],
  entries: new Map(),
  turns: new Map(),
  session: null,
  goal: undefined,
  revision: 0,
  error: null,
  prepended: 0,
};

export type Action =
  | { type: "history"; items: Item[] }
  | { type: "event"; event: StreamEvent }
  | { type: "session"; session: AgentSession }
  | { type: "turn"; turn: Turn }
  | { type: "goal"; goal: Goal | null };

export const itemKey = (item: Item, fallback: string): string => item.id ?? fallback;

function turnEntry(turn: Turn, usage?: TokenUsage | null): TurnEntry {
  return {
    id: turn.id,
    status: turn.status,
    usage: usage ?? turn.usage,
    error: turn.error ? `${turn.error.code}: ${turn.error.message}` : null,
  };
}

function withTurn(t: Timeline, turn: Turn, usage?: TokenUsage | null): Timeline {
  const turns = new Map(t.turns);
  turns.set(turn.id, turnEntry(turn, usage));
  return { ...t, turns };
}

/** Inserts or replaces an item (a new one goes last); `live` is kept unless `done` says the item is final. */
function upsert(t: Timeline, item: Item, done: boolean): Timeline {
  const key = itemKey(item, `${item.turn_id}:${t.order.length}`);
  const entries = new Map(t.entries);
  const prev = entries.get(key);
  entries.set(key, { item, live: done ? "" : (prev?.live ?? "") });
  return { ...t, entries, order: prev ? t.order : [...t.order, key], prepended: 0 };
}

function appendLive(t: Timeline, itemId: string, delta: string): Timeline {
  const prev = t.entries.get(itemId);
  if (!prev) return t;
  const entries = new Map(t.entries);
  entries.set(itemId, { ...prev, live: prev.live + delta });
  return { ...t, entries, prepended: 0 };
}

function applyEvent(t: Timeline, e: StreamEvent): Timeline {
  switch (e.type) {
    case "agent.session.created":
    case "agent.session.idle":
    case "agent.session.in_progress":
    case "agent.session.requires_action":
    case "agent.session.failed":
      return { ...t, session: e.session };
    case "agent.session.turn.created":
    case "agent.session.turn.in_progress":
      return withTurn(t, e.turn);
    case "agent.session.turn.completed":
    case "agent.session.turn.failed":
    case "agent.session.turn.cancelled":
      return { ...withTurn(t, e.turn, e.usage), revision: t.revision + 1 };
    case "agent.session.turn.item.added":
      return upsert(t, e.item, false);
    case "agent.session.turn.item.done":
      return upsert(t, e.item, true);
    case "agent.session.turn.output_text.delta":
    case "agent.output.command_execution_output.delta":
    case "agent.session.turn.reasoning_summary_text.delta":
      return appendLive(t, e.item_id, e.delta);
    case "agent.session.goal.updated":
      return { ...t, goal: e.goal, revision: t.revision + 1 };
    case "error":
      return { ...t, error: e.error.message };
    default:
      return t;
  }
}

/** History pages come newest first from the API; `items` here is oldest first and goes in front. */
function prependHistory(t: Timeline, items: Item[]): Timeline {
  const entries = new Map(t.entries);
  const front: string[] = [];
  for (const [i, item] of items.entries()) {
    const key = itemKey(item, `history:${item.turn_id}:${i}:${t.order.length}`);
    if (entries.has(key)) continue;
    entries.set(key, { item, live: "" });
    front.push(key);
  }
  return { ...t, entries, order: [...front, ...t.order], prepended: front.length };
}

export function reduce(t: Timeline, a: Action): Timeline {
  switch (a.type) {
    case "history":
      return prependHistory(t, a.items);
    case "event":
      return applyEvent(t, a.event);
    case "session":
      return { ...t, session: a.session };
    case "turn":
      return t.turns.has(a.turn.id) ? t : withTurn(t, a.turn);
    case "goal":
      return { ...t, goal: a.goal };
  }
}

export type Row = { kind: "turn"; key: string; turnId: string } | { kind: "item"; key: string };

/** The rows to draw: each turn's items under a header row for the turn. */
export function rowsOf(t: Timeline): Row[] {
  const rows: Row[] = [];
  let turn: string | null = null;
  for (const key of t.order) {
    const entry = t.entries.get(key);
    if (!entry) continue;
    if (entry.item.turn_id !== turn) {
      turn = entry.item.turn_id;
      rows.push({ kind: "turn", key: `turn:${turn}:${key}`, turnId: turn });
    }
    rows.push({ kind: "item", key });
  }
  return rows;
}
