import { clampLimit, toPage } from "../paging.js";
import type { ItemRecord, ItemState, NewEvent, Queries, StoredItem } from "../types.js";
import type { PgDb } from "./db.js";

/** jsonb data comes back parsed: a row is an ItemRecord. */
const COLS = "session_id, turn_id, ordinal, id, type, state, created_at, data";

/** An item write as append_events() takes it (see migrations.ts). */
export interface PlannedItem {
  /** Index of the event in the batch. */
  i: number;
  turn_id: string;
  id: string;
  type: string;
  state: ItemState;
  created_at: number;
  data: StoredItem;
  /** A finish of an item not written earlier in the batch: update the stored one, or insert. */
  lookup: boolean;
}

/**
 * The item writes of a batch, with every write that targets an item written earlier in the same batch folded into
 * that earlier write (a finish after a start in one batch inserts the item already finished; a second finish of a
 * finished one rewrites it). The database then needs no read of its own writes, so the batch is one statement.
 * The folded writes insert nothing (ordinal null), exactly as when the writes are applied one by one.
 */
export function planItemWrites(events: readonly NewEvent[]): PlannedItem[] {
  const planned: PlannedItem[] = [];
  /** The write that holds the latest item of (turn, id) within the batch. */
  const latest = new Map<string, PlannedItem>();
  events.forEach((e, i) => {
    const w = e.item;
    if (!w) return;
    const key = JSON.stringify([w.turn_id, w.item.id]);
    const prev = w.kind === "finish" ? latest.get(key) : undefined;
    if (prev && w.kind === "finish") {
      prev.type = w.item.type;
      prev.state = w.state;
      prev.data = w.item;
      return;
    }
    const p: PlannedItem = {
      i,
      turn_id: w.turn_id,
      id: w.item.id,
      type: w.item.type,
      state: w.kind === "finish" ? w.state : "started",
      created_at: w.created_at,
      data: w.item,
      lookup: w.kind === "finish",
    };
    planned.push(p);
    latest.set(key, p);
  });
  return planned;
}

export type ItemQueries = Pick<Queries, "listItems" | "closeOpenItems">;

export function itemQueries(db: PgDb): ItemQueries {
  return {
    async listItems(sessionId, opts) {
      const limit = clampLimit(opts.limit);
      const asc = (opts.order ?? "asc") === "asc";
      const where = ["session_id = $1"];
      const params: unknown[] = [sessionId];
      const add = (cond: (n: string) => string, value: unknown) => {
        params.push(value);
        where.push(cond(`$${params.length}`));
      };
      if (opts.turn_id !== undefined) add((n) => `turn_id = ${n}`, opts.turn_id);
      if (opts.turn_ids !== undefined) add((n) => `turn_id = ANY (${n}::text[])`, [...opts.turn_ids]);
      if (opts.exclude_types?.length) add((n) => `type <> ALL (${n}::text[])`, [...opts.exclude_types]);
      if (opts.states?.length) add((n) => `state = ANY (${n}::text[])`, [...opts.states]);
      if (opts.after !== undefined) {
        // Item ids are unique within a session in practice; a repeated id resolves to its last occurrence. An
        // unknown cursor compares with NULL: an empty page.
        add(
          (n) =>
            `ordinal ${asc ? ">" : "<"} (SELECT max(ordinal) FROM items WHERE session_id = $1 AND id = ${n})`,
          opts.after,
        );
      }
      params.push(limit + 1);
      const sql =
        `SELECT ${COLS} FROM items WHERE ${where.join(" AND ")} ` +
        `ORDER BY ordinal ${asc ? "ASC" : "DESC"} LIMIT $${params.length}`;
      return toPage(await db.rows<ItemRecord>(sql, params), limit);
    },
    async closeOpenItems(sessionId, turnId, status) {
      const closed = await db.rows<ItemRecord>(
        "UPDATE items SET state = 'incomplete', data = data || jsonb_build_object('status', $3::text) " +
          `WHERE session_id = $1 AND turn_id = $2 AND state = 'started' RETURNING ${COLS}`,
        [sessionId, turnId, status],
      );
      return closed.sort((a, b) => a.ordinal - b.ordinal);
    },
  };
}
