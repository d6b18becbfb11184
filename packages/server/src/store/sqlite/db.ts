/** The SQLite connection with a statement cache, and helpers shared by the table modules. */
import type Database from "better-sqlite3";
import { render, type SqlDb, type SqlDialect } from "../sql/db.js";
import { EMPTY, raw, type Sql, sql } from "../sql/query.js";

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

/** SQLite's side of the SQL written once (store/sql/): `?` placeholders, JSON as text, booleans as 0/1. */
export const SQLITE: SqlDialect = {
  placeholder: () => "?",
  encode(p) {
    if (p.kind === "bool") return p.value ? 1 : 0;
    if (p.kind === "json?") return jsonOrNull(p.value);
    return json(p.value);
  },
  typedRows: false,
  jsonHas: (column, pairs) =>
    Object.entries(pairs ?? {}).map(
      ([k, v]) =>
        sql`EXISTS (SELECT 1 FROM json_each(${raw(column)}) AS m WHERE m.key = ${k} AND m.value = ${v})`,
    ),
  jsonText: (column, key) => sql`json_extract(${raw(column)}, ${`$.${key}`})`,
  forUpdate: () => EMPTY,
};

/** The connection's statements over {@link Sql} (synchronous underneath). */
export function sqlDb(db: SqliteDb): SqlDb {
  return {
    dialect: SQLITE,
    async rows<Row>(q: Sql) {
      const { text, params } = render(q, SQLITE);
      return db.all<Row>(text, ...params);
    },
    async row<Row>(q: Sql) {
      const { text, params } = render(q, SQLITE);
      return db.get<Row>(text, ...params);
    },
    async run(q) {
      const { text, params } = render(q, SQLITE);
      return db.run(text, ...params).changes;
    },
    async value<T>(q: Sql) {
      const { text, params } = render(q, SQLITE);
      return db.value<T>(text, ...params);
    },
  };
}
