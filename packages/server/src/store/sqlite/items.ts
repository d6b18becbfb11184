import { clampLimit, toPage } from "../paging.js";
import type { ItemRecord, ItemState, ItemWrite, Queries, StoredItem } from "../types.js";
import type { Counters } from "./counters.js";
import { json, parse, type SqliteDb } from "./db.js";

interface ItemRow {
  session_id: string;
  turn_id: string;
  ordinal: number;
  id: string;
  type: string;
  state: string;
  created_at: number;
  data: string;
}

const COLS = "session_id, turn_id, ordinal, id, type, state, created_at, data";

const fromRow = (r: ItemRow): ItemRecord => ({
  session_id: r.session_id,
  turn_id: r.turn_id,
  ordinal: r.ordinal,
  id: r.id,
  type: r.type,
  state: r.state as ItemState,
  created_at: r.created_at,
  data: parse<StoredItem>(r.data),
});

const LIST_COLS = "turn_id, ordinal, id, type, state, created_at, data";
const KEY_COLS = "turn_id, ordinal, id, type, state, created_at";
type ListRow = [string, number, string, string, string, number, string?];

const fromListRow = (sessionId: string, r: ListRow): ItemRecord => ({
  session_id: sessionId,
  turn_id: r[0],
  ordinal: r[1],
  id: r[2],
  type: r[3],
  state: r[4] as ItemState,
  created_at: r[5],
  data: parse<StoredItem>(r[6]!),
});

/** A listed item whose data is read (and parsed) on first access. */
function lazyItem(db: SqliteDb, sessionId: string, r: ListRow): ItemRecord {
  let data: StoredItem | undefined;
  const record = {
    session_id: sessionId,
    turn_id: r[0],
    ordinal: r[1],
    id: r[2],
    type: r[3],
    state: r[4] as ItemState,
    created_at: r[5],
  } as ItemRecord;
  Object.defineProperty(record, "data", {
    enumerable: true,
    get: () => {
      data ??= parse<StoredItem>(
        db.value<string>("SELECT data FROM items WHERE session_id = ? AND ordinal = ?", sessionId, r[1])!,
      );
      return data;
    },
  });
  return record;
}

/** Applies an item write of an appended event; returns the ordinal of an inserted item. */
export function writeItem(db: SqliteDb, counters: Counters, sessionId: string, w: ItemWrite): number | null {
  if (w.kind === "finish") {
    const updated = db.run(
      "UPDATE items SET state = ?, type = ?, data = ? WHERE session_id = ? AND ordinal = " +
        "(SELECT max(ordinal) FROM items WHERE session_id = ? AND turn_id = ? AND id = ?)",
      w.state,
      w.item.type,
      json(w.item),
      sessionId,
      sessionId,
      w.turn_id,
      w.item.id,
    );
    if (updated.changes > 0) return null;
  }
  const ordinal = counters.lastOrdinal(sessionId) + 1;
  db.run(
    `INSERT INTO items (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    sessionId,
    w.turn_id,
    ordinal,
    w.item.id,
    w.item.type,
    w.kind === "finish" ? w.state : "started",
    w.created_at,
    json(w.item),
  );
  counters.setOrdinal(sessionId, ordinal);
  return ordinal;
}

export type ItemQueries = Pick<Queries, "listItems" | "closeOpenItems" | "copyHistory">;

/** The columns of a turn copied to another session (all but its session). */
const TURN_COPY_COLS = "created_at, started_at, completed_at, status, input, error, usage, goal, subagent_id";

export function itemQueries(db: SqliteDb, counters: Counters): ItemQueries {
  return {
    async listItems(sessionId, opts) {
      const limit = clampLimit(opts.limit);
      const order = opts.order ?? "asc";
      const where = ["session_id = ?"];
      const params: unknown[] = [sessionId];
      if (opts.turn_id !== undefined) {
        where.push("turn_id = ?");
        params.push(opts.turn_id);
      }
      if (opts.turn_ids !== undefined) {
        where.push(opts.turn_ids.length ? `turn_id IN (${opts.turn_ids.map(() => "?").join(", ")})` : "0");
        params.push(...opts.turn_ids);
      }
      if (opts.root_only) {
        where.push("turn_id NOT IN (SELECT id FROM turns WHERE session_id = ? AND subagent_id IS NOT NULL)");
        params.push(sessionId);
      }
      if (opts.exclude_types?.length) {
        where.push(`type NOT IN (${opts.exclude_types.map(() => "?").join(", ")})`);
        params.push(...opts.exclude_types);
      }
      if (opts.states?.length) {
        where.push(`state IN (${opts.states.map(() => "?").join(", ")})`);
        params.push(...opts.states);
      }
      if (opts.after !== undefined) {
        // Item ids are unique within a session in practice; a repeated id resolves to its last occurrence.
        const ordinal = db.value<number>(
          "SELECT max(ordinal) FROM items WHERE session_id = ? AND id = ?",
          sessionId,
          opts.after,
        );
        if (ordinal === null) return { data: [], has_more: false };
        where.push(order === "asc" ? "ordinal > ?" : "ordinal < ?");
        params.push(ordinal);
      }
      const sql =
        `SELECT ${opts.lazy_data ? KEY_COLS : LIST_COLS} FROM items WHERE ${where.join(" AND ")} ` +
        `ORDER BY ordinal ${order === "asc" ? "ASC" : "DESC"} LIMIT ?`;
      params.push(limit + 1);
      // Rows as arrays (no per-row column objects): history pages read many items.
      const rows = db.rows(sql, ...params) as ListRow[];
      return toPage(
        rows.map((r) => (opts.lazy_data ? lazyItem(db, sessionId, r) : fromListRow(sessionId, r))),
        limit,
      );
    },
    async closeOpenItems(sessionId, turnId, status) {
      return db.atomic(() => closeOpenIn(db, sessionId, turnId, status));
    },
    async copyHistory(fromSessionId, toSessionId, opts) {
      if (opts.turn_ids.length === 0) return 0;
      const turns = JSON.stringify([...opts.turn_ids]);
      return db.atomic(() => {
        // Root turns only: a subagent's items are its own history.
        const rows = db.all<ItemRow>(
          `SELECT ${COLS} FROM items WHERE session_id = ? AND ordinal <= ? AND turn_id IN ` +
            "(SELECT id FROM turns WHERE session_id = ? AND subagent_id IS NULL AND id IN (SELECT value FROM json_each(?))) " +
            "ORDER BY ordinal",
          fromSessionId,
          opts.through_ordinal ?? Number.MAX_SAFE_INTEGER,
          fromSessionId,
          turns,
        );
        if (rows.length === 0) return 0;
        db.run(
          `INSERT OR IGNORE INTO turns (id, session_id, ${TURN_COPY_COLS}) ` +
            `SELECT id, ?, ${TURN_COPY_COLS} FROM turns WHERE session_id = ? AND id IN (SELECT value FROM json_each(?)) ` +
            "ORDER BY rid",
          toSessionId,
          fromSessionId,
          JSON.stringify([...new Set(rows.map((r) => r.turn_id))]),
        );
        let ordinal = counters.lastOrdinal(toSessionId);
        for (const r of rows) {
          ordinal += 1;
          db.run(
            `INSERT INTO items (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
            toSessionId,
            r.turn_id,
            ordinal,
            r.id,
            r.type,
            r.state,
            r.created_at,
            r.data,
          );
        }
        counters.setOrdinal(toSessionId, ordinal);
        return rows.length;
      });
    },
  };
}

function closeOpenIn(db: SqliteDb, sessionId: string, turnId: string, status: string): ItemRecord[] {
  const open = db
    .all<ItemRow>(
      `SELECT ${COLS} FROM items WHERE session_id = ? AND turn_id = ? AND state = 'started' ORDER BY ordinal`,
      sessionId,
      turnId,
    )
    .map(fromRow);
  const closed: ItemRecord[] = [];
  for (const item of open) {
    const data = { ...item.data, status } as StoredItem;
    db.run(
      "UPDATE items SET state = 'incomplete', data = ? WHERE session_id = ? AND ordinal = ?",
      json(data),
      sessionId,
      item.ordinal,
    );
    closed.push({ ...item, state: "incomplete", data });
  }
  return closed;
}
