import { clampLimit, toPage } from "../paging.js";
import { raw, type Sql, sql } from "../sql/query.js";
import type { ItemRecord, ItemState, NewEvent, Queries, StoredItem } from "../types.js";
import { type PgDb, sqlDb } from "./db.js";

/** jsonb data comes back parsed: a row is an ItemRecord. */
const COLS = "session_id, turn_id, ordinal, id, type, state, created_at, data";

/** A turn's items still `started` marked `incomplete`, `status` set on their data; the items (endTurn too). */
export function closeOpenItemsStatement(sessionId: string, turnId: string, status: string): Sql {
  return sql`UPDATE items SET state = 'incomplete', data = data || jsonb_build_object('status', ${status}::text)
    WHERE session_id = ${sessionId} AND turn_id = ${turnId} AND state = 'started' RETURNING ${raw(COLS)}`;
}

/** An item write as append_events() takes it (see migrations/postgres/, the latest step that defines it). */
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

export type ItemQueries = Pick<Queries, "listItems" | "closeOpenItems" | "copyHistory">;

/** The columns of a turn copied to another session (all but its session). */
const TURN_COPY_COLS = "created_at, started_at, completed_at, status, input, error, usage, goal, subagent_id";

/**
 * One statement (so one transaction): the items (root turns only), their turns (kept when the target has them),
 * the items after the target's last ordinal, and its counter moved past them (the target's row locked meanwhile).
 */
const COPY_HISTORY = `
  WITH base AS (SELECT last_ordinal FROM sessions WHERE id = $2 FOR UPDATE),
  src AS (
    SELECT turn_id, id, type, state, created_at, data, row_number() OVER (ORDER BY ordinal) AS n
    FROM items
    WHERE session_id = $1 AND ordinal <= $4
      AND turn_id IN (SELECT id FROM turns WHERE session_id = $1 AND subagent_id IS NULL AND id = ANY ($3::text[]))
  ),
  copied_turns AS (
    INSERT INTO turns (id, session_id, ${TURN_COPY_COLS})
    SELECT id, $2, ${TURN_COPY_COLS} FROM turns
    WHERE session_id = $1 AND id IN (SELECT turn_id FROM src)
    ORDER BY rid
    ON CONFLICT (session_id, id) DO NOTHING
    RETURNING 1
  ),
  copied AS (
    INSERT INTO items (session_id, ordinal, turn_id, id, type, state, created_at, data)
    SELECT $2, base.last_ordinal + src.n, src.turn_id, src.id, src.type, src.state, src.created_at, src.data
    FROM src, base
    RETURNING 1
  )
  UPDATE sessions SET last_ordinal = last_ordinal + (SELECT count(*) FROM copied)
  WHERE id = $2
  RETURNING (SELECT count(*) FROM copied) AS copied, (SELECT count(*) FROM copied_turns) AS turns`;

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
      if (opts.root_only) {
        where.push("turn_id NOT IN (SELECT id FROM turns WHERE session_id = $1 AND subagent_id IS NOT NULL)");
      }
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
      const closed = await sqlDb(db).rows<ItemRecord>(closeOpenItemsStatement(sessionId, turnId, status));
      return closed.sort((a, b) => a.ordinal - b.ordinal);
    },
    async copyHistory(fromSessionId, toSessionId, opts) {
      if (opts.turn_ids.length === 0) return 0;
      const n = await db.value<string | number>(COPY_HISTORY, [
        fromSessionId,
        toSessionId,
        [...opts.turn_ids],
        opts.through_ordinal ?? Number.MAX_SAFE_INTEGER,
      ]);
      return Number(n ?? 0);
    },
  };
}
