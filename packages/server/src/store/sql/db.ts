/**
 * What the table modules written once (store/tables/) need of a backend: statements over {@link Sql}, and the few
 * places where the two SQL dialects differ.
 */
import { type ParamKind, type Sql, Typed } from "./query.js";

export interface SqlDialect {
  /** The placeholder of the n-th parameter (from 1), with the cast a typed one needs on this backend. */
  placeholder(n: number, kind: ParamKind | undefined): string;
  /** A typed value as the parameter the backend stores. */
  encode(p: Typed): unknown;
  /** Columns come back typed (PostgreSQL: jsonb parsed, booleans) or as SQLite stores them (JSON text, 0/1). */
  readonly typedRows: boolean;
  /** Conditions: `column` (a JSON object of strings) holds every pair of `pairs` (none: no condition). */
  jsonHas(column: string, pairs: Readonly<Record<string, string>> | undefined): Sql[];
  /** The text at `key` of the JSON object in `column`. */
  jsonText(column: string, key: string): Sql;
  /**
   * What locks the selected rows until the transaction ends (PostgreSQL: FOR UPDATE, `skipLocked`: passing over
   * rows another transaction holds; SQLite: nothing, a transaction holds the write lock already).
   */
  forUpdate(skipLocked: boolean): Sql;
}

/** Statements on the pool, on a connection or in one transaction. */
export interface SqlDb {
  readonly dialect: SqlDialect;
  rows<Row>(q: Sql): Promise<Row[]>;
  row<Row>(q: Sql): Promise<Row | undefined>;
  /** How many rows the statement changed. */
  run(q: Sql): Promise<number>;
  /** The first column of the first row, or null. */
  value<T>(q: Sql): Promise<T | null>;
}

/** The text and the parameters of a statement, in the dialect's placeholders. */
export function render(q: Sql, dialect: SqlDialect): { text: string; params: unknown[] } {
  let text = q.parts[0] ?? "";
  const params: unknown[] = [];
  for (let i = 0; i < q.values.length; i++) {
    const v = q.values[i];
    const typed = v instanceof Typed ? v : undefined;
    params.push(typed ? dialect.encode(typed) : v);
    text += dialect.placeholder(i + 1, typed?.kind) + (q.parts[i + 1] ?? "");
  }
  return { text, params };
}
