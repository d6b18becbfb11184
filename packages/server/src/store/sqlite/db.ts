/** The SQLite connection with a statement cache, and helpers shared by the table modules. */
import type Database from "better-sqlite3";
import { clampLimit, toPage } from "../paging.js";
import type { ListOptions, Page } from "../types.js";

export type Statement = Database.Statement<unknown[], unknown>;

export class SqliteDb {
  private readonly statements = new Map<string, Statement>();

  constructor(readonly raw: Database.Database) {}

  /** A prepared statement, prepared once per SQL text. */
  stmt(sql: string): Statement {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.raw.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  run(sql: string, ...params: unknown[]): Database.RunResult {
    return this.stmt(sql).run(...params);
  }

  get<Row>(sql: string, ...params: unknown[]): Row | undefined {
    return this.stmt(sql).get(...params) as Row | undefined;
  }

  all<Row>(sql: string, ...params: unknown[]): Row[] {
    return this.stmt(sql).all(...params) as Row[];
  }

  /** Rows as arrays of column values, in select order (a raw-mode copy of the statement, prepared once). */
  rows(sql: string, ...params: unknown[]): unknown[][] {
    const key = `raw:${sql}`;
    let st = this.statements.get(key);
    if (!st) {
      st = this.raw.prepare(sql).raw(true);
      this.statements.set(key, st);
    }
    return st.all(...params) as unknown[][];
  }

  /** A single value (first column of the first row), or null. */
  value<T>(sql: string, ...params: unknown[]): T | null {
    const row = this.stmt(sql)
      .raw(true)
      .get(...params) as unknown[] | undefined;
    return (row?.[0] as T | undefined) ?? null;
  }

  /** Runs fn (synchronous) atomically: its own transaction, or a savepoint inside an open one. */
  atomic<T>(fn: () => T): T {
    return this.raw.transaction(fn)();
  }

  clear(): void {
    this.statements.clear();
  }
}

/** JSON text for a TEXT column (undefined is stored as JSON null). */
export const json = (v: unknown): string => JSON.stringify(v) ?? "null";
export const jsonOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : json(v));
export const parse = <T>(s: string): T => JSON.parse(s) as T;
export const parseOrNull = <T>(s: string | null): T | null => (s === null ? null : (JSON.parse(s) as T));

interface CreatedCursor {
  created_at: number;
  rid: number;
}

/**
 * Keyset pagination ordered by (created_at, rid). `after` is an id of the same table (within `where`); an unknown
 * cursor gives an empty page.
 */
export function listByCreated<Row, T>(
  db: SqliteDb,
  q: {
    table: string;
    cols: string;
    where: string[];
    params: unknown[];
    opts: ListOptions;
    map: (row: Row) => T;
  },
): Page<T> {
  const limit = clampLimit(q.opts.limit);
  const order = q.opts.order ?? "desc";
  const conds = [...q.where];
  const args = [...q.params];
  if (q.opts.after !== undefined) {
    const scope = q.where.length ? ` AND ${q.where.join(" AND ")}` : "";
    const c = db.get<CreatedCursor>(
      `SELECT created_at, rid FROM ${q.table} WHERE id = ?${scope}`,
      q.opts.after,
      ...q.params,
    );
    if (!c) return { data: [], has_more: false };
    conds.push(order === "desc" ? "(created_at, rid) < (?, ?)" : "(created_at, rid) > (?, ?)");
    args.push(c.created_at, c.rid);
  }
  const dir = order === "desc" ? "DESC" : "ASC";
  const sql =
    `SELECT ${q.cols} FROM ${q.table}${conds.length ? ` WHERE ${conds.join(" AND ")}` : ""} ` +
    `ORDER BY created_at ${dir}, rid ${dir} LIMIT ?`;
  args.push(limit + 1);
  return toPage(db.all<Row>(sql, ...args).map(q.map), limit);
}

/** `SET a = ?, b = ?` for the defined keys of a patch, with `encode` per column. */
export function setClause(
  patch: Record<string, unknown>,
  encode: Record<string, (v: unknown) => unknown>,
): { sql: string; params: unknown[] } {
  const cols: string[] = [];
  const params: unknown[] = [];
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    const enc = encode[k];
    if (!enc) throw new Error(`unknown column ${k}`);
    cols.push(`${k} = ?`);
    params.push(enc(v));
  }
  return { sql: cols.join(", "), params };
}

export const asIs = (v: unknown) => v;
