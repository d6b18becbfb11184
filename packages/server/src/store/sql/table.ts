/**
 * A table described once (its name and each column's kind), and the operations every table has — insert, get,
 * update, delete, keyset-paged list — written once over it for both backends. What really differs between the
 * backends (the event log, claims with SKIP LOCKED, …) is hand-written beside each backend instead.
 */
import { clampLimit, toPage } from "../paging.js";
import type { ListOptions, Page } from "../types.js";
import type { SqlDb } from "./db.js";
import { EMPTY, join, type ParamKind, raw, type Sql, sql, Typed, where } from "./query.js";

/** `value`: stored as it is; `json`: JSON (null is JSON null); `json?`: JSON, or SQL NULL for null; `bool`. */
export type ColumnKind = "value" | ParamKind;

export interface Table<R> {
  readonly name: string;
  /** Every field of the record is a column. */
  readonly kinds: { readonly [K in keyof R]-?: ColumnKind };
  /** The column list, for SELECT and RETURNING (`list`: as text). */
  readonly columns: Sql;
  readonly list: string;
  /** The column list with each column prefixed by `alias.`. */
  qualified(alias: string): Sql;
  /** A row as the backend returns it → the record (`typed`: the backend's rows are typed already). */
  decode(row: unknown, typed: boolean): R;
}

export function table<R>(name: string, kinds: { readonly [K in keyof R]-?: ColumnKind }): Table<R> {
  const names = Object.keys(kinds) as (keyof R & string)[];
  const untyped = names.filter((c) => kinds[c] !== "value");
  return {
    name,
    kinds,
    columns: raw(names.join(", ")),
    list: names.join(", "),
    qualified: (alias) => raw(names.map((c) => `${alias}.${c}`).join(", ")),
    decode(row, typed) {
      if (typed || untyped.length === 0) return row as R;
      const r = row as Record<string, unknown>;
      for (const c of untyped) {
        const v = r[c];
        if (kinds[c] === "bool") r[c] = v === 1;
        else r[c] = typeof v === "string" ? JSON.parse(v) : null;
      }
      return r as R;
    },
  };
}

/** A value of column `c` as a parameter (JSON and booleans encoded by the backend). */
function param<R>(t: Table<R>, c: string, v: unknown): unknown {
  const kind = (t.kinds as Record<string, ColumnKind | undefined>)[c];
  if (kind === undefined) throw new Error(`unknown column ${t.name}.${c}`);
  return kind === "value" ? v : new Typed(kind, v);
}

/** `a = …, b = …` for the defined fields of a patch (and of `extra`, columns outside the record). */
export function assignments<R>(t: Table<R>, patch: Partial<R>, extra: Record<string, unknown> = {}): Sql[] {
  const out: Sql[] = [];
  for (const [c, v] of Object.entries(patch)) {
    if (v !== undefined) out.push(sql`${raw(c)} = ${param(t, c, v)}`);
  }
  for (const [c, v] of Object.entries(extra)) if (v !== undefined) out.push(sql`${raw(c)} = ${v}`);
  return out;
}

/** The operations every table has, over one backend's statements. */
export interface Rows<R> {
  /** Inserts the record (with `extra`: columns outside it; `tail`: e.g. ON CONFLICT …); how many rows it added. */
  insert(r: R, extra?: Record<string, unknown>, tail?: Sql): Promise<number>;
  get(id: string): Promise<R | undefined>;
  /** The rows matching the conditions, then `tail` (ORDER BY …, LIMIT …, FOR UPDATE …). */
  select(conds: readonly Sql[], tail?: Sql): Promise<R[]>;
  first(conds: readonly Sql[], tail?: Sql): Promise<R | undefined>;
  /** Sets the defined fields of the patch (plus `set`: other assignments) where `conds` hold; the row after it. */
  update(
    id: string,
    patch: Partial<R>,
    more?: { set?: readonly Sql[]; conds?: readonly Sql[] },
  ): Promise<R | undefined>;
  remove(id: string): Promise<boolean>;
  /** A keyset page ordered by (created_at, rid); `after` is an id of this table within `conds` (unknown: empty). */
  list(opts: ListOptions, conds: readonly Sql[]): Promise<Page<R>>;
  /** Rows as the backend returned them (a statement of one's own that selects {@link Table.columns}) → records. */
  decode(rows: unknown[]): R[];
}

export function rows<R>(db: SqlDb, t: Table<R>): Rows<R> {
  const from = raw(t.name);
  const typed = db.dialect.typedRows;
  const decode = (rs: unknown[]) => rs.map((r) => t.decode(r, typed));
  const one = async (q: Sql) => {
    const r = await db.row<unknown>(q);
    return r === undefined ? undefined : t.decode(r, typed);
  };
  const byId = (id: string) => sql`id = ${id}`;
  return {
    async insert(r, extra = {}, tail = EMPTY) {
      const entries = Object.keys(t.kinds).map((c) => param(t, c, (r as Record<string, unknown>)[c]));
      const cols = [...Object.keys(t.kinds), ...Object.keys(extra)];
      const values = join(
        [...entries, ...Object.values(extra)].map((v) => sql`${v}`),
        ", ",
      );
      return db.run(sql`INSERT INTO ${from} (${raw(cols.join(", "))}) VALUES (${values})${tail}`);
    },
    get: (id) => one(sql`SELECT ${t.columns} FROM ${from} WHERE id = ${id}`),
    async select(conds, tail = EMPTY) {
      return decode(await db.rows<unknown>(sql`SELECT ${t.columns} FROM ${from}${where(conds)}${tail}`));
    },
    first: (conds, tail = EMPTY) => one(sql`SELECT ${t.columns} FROM ${from}${where(conds)}${tail}`),
    async update(id, patch, more = {}) {
      const set = [...assignments(t, patch), ...(more.set ?? [])];
      const conds = [byId(id), ...(more.conds ?? [])];
      if (set.length === 0) return one(sql`SELECT ${t.columns} FROM ${from}${where(conds)}`);
      return one(sql`UPDATE ${from} SET ${join(set, ", ")}${where(conds)} RETURNING ${t.columns}`);
    },
    async remove(id) {
      return (await db.run(sql`DELETE FROM ${from} WHERE id = ${id}`)) > 0;
    },
    async list(opts, conds) {
      const limit = clampLimit(opts.limit);
      const desc = (opts.order ?? "desc") === "desc";
      const all = [...conds];
      if (opts.after !== undefined) {
        const cursor = sql`SELECT created_at, rid FROM ${from}${where([byId(opts.after), ...conds])}`;
        all.push(sql`(created_at, rid) ${raw(desc ? "<" : ">")} (${cursor})`);
      }
      const dir = raw(desc ? "DESC" : "ASC");
      const q = sql`SELECT ${t.columns} FROM ${from}${where(all)} ORDER BY created_at ${dir}, rid ${dir} LIMIT ${limit + 1}`;
      return toPage(decode(await db.rows<unknown>(q)), limit);
    },
    decode,
  };
}
