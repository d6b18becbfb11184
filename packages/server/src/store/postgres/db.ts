/**
 * The PostgreSQL side of the store: a query runner over the pool or over one transaction's client, named prepared
 * statements, type parsing and JSON encoding for jsonb columns, and the helpers shared by the table modules.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { clampLimit, toPage } from "../paging.js";
import type { ListOptions, Page } from "../types.js";

/** int8 (bigserial rids, seq, ordinals, counts) as numbers: every value the store keeps is far below 2^53. */
const int8 = (s: string): number => Number(s);
/** int8[] (1016: not in the TypeId enum) as strings, mapped to numbers below. */
const int8Array = pg.types.getTypeParser(1016 as never, "text") as (s: string) => (string | null)[];

/** Type parsers for this store's pools only (the global pg.types is left alone). */
export const PG_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (format !== "binary") {
      if (oid === 20) return int8;
      if (oid === 1016) return (s: string) => int8Array(s).map((x) => (x === null ? null : Number(x)));
    }
    return pg.types.getTypeParser(oid as never, format);
  }) as pg.CustomTypesConfig["getTypeParser"],
};

/** Statement names by SQL text: each text is prepared once per connection. */
const names = new Map<string, string>();
function statementName(sql: string): string {
  let name = names.get(sql);
  if (!name) {
    name = `cas_${createHash("sha1").update(sql).digest("base64url").slice(0, 20)}`;
    names.set(sql, name);
  }
  return name;
}

/** PostgreSQL text cannot hold NUL: it becomes U+FFFD (JSON values are handled by {@link json}). */
const NUL = /\0/g;
function param(v: unknown): unknown {
  return typeof v === "string" && v.includes("\0") ? v.replace(NUL, "\uFFFD") : v;
}

/** Where queries go: the pool, or the client of one open transaction. */
export class PgDb {
  private tail: Promise<unknown> = Promise.resolve();
  private finished = false;

  /** `serial`: one client, so queries are queued here in call order (pg itself must not be handed two at once). */
  constructor(
    private readonly target: pg.Pool | pg.PoolClient,
    private readonly serial = false,
  ) {}

  query<Row extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<pg.QueryResult<Row>> {
    if (this.finished) return Promise.reject(new Error("the transaction is already finished"));
    const run = () =>
      this.target.query<Row>({ name: statementName(sql), text: sql, values: params.map(param) });
    if (!this.serial) return run();
    const result = this.tail.then(run);
    this.tail = result.catch(() => undefined);
    return result;
  }

  async rows<Row extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.query<Row>(sql, params)).rows;
  }

  async row<Row extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<Row | undefined> {
    return (await this.query<Row>(sql, params)).rows[0];
  }

  /** The first column of the first row, or null. */
  async value<T>(sql: string, params: unknown[] = []): Promise<T | null> {
    const row = await this.row<Record<string, unknown>>(sql, params);
    if (!row) return null;
    const first = Object.values(row)[0];
    return (first ?? null) as T | null;
  }

  /** How many rows the statement changed. */
  async run(sql: string, params: unknown[] = []): Promise<number> {
    return (await this.query(sql, params)).rowCount ?? 0;
  }

  /** Waits for every queued query, then refuses new ones (the transaction is over). */
  async finish(): Promise<void> {
    await this.tail;
    this.finished = true;
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const cleanString = (s: string) => s.replace(NUL, "\uFFFD").replace(LONE_SURROGATE, "\uFFFD");
const cleanValue = (_key: string, v: unknown) => (typeof v === "string" ? cleanString(v) : v);
/** Escapes jsonb refuses: \u0000 (no NUL in text) and unpaired surrogates. */
const UNSTORABLE = /\\u0000|\\ud[89a-f]/i;

/**
 * JSON text for a jsonb parameter (undefined is stored as JSON null). jsonb cannot hold NUL characters or unpaired
 * surrogates in strings; those (rare: binary command output) become U+FFFD, and keys with them are cleaned too.
 */
export function json(v: unknown): string {
  const text = JSON.stringify(v) ?? "null";
  if (!UNSTORABLE.test(text)) return text;
  return JSON.stringify(cleanKeys(JSON.parse(text, cleanValue)));
}

function cleanKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(cleanKeys);
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [cleanString(k), cleanKeys(x)]));
}

export const jsonOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : json(v));

/**
 * Keyset pagination ordered by (created_at, rid), in one statement. `after` is an id of the same table (within
 * `where`); an unknown cursor gives an empty page. `where` uses $1…$n for `params`.
 */
export async function listByCreated<Row extends pg.QueryResultRow, T>(
  db: PgDb,
  q: {
    table: string;
    cols: string;
    where: string[];
    params: unknown[];
    opts: ListOptions;
    map: (row: Row) => T;
  },
): Promise<Page<T>> {
  const limit = clampLimit(q.opts.limit);
  const desc = (q.opts.order ?? "desc") === "desc";
  const args = [...q.params];
  const conds = [...q.where];
  if (q.opts.after !== undefined) {
    args.push(q.opts.after);
    const scope = q.where.length ? ` AND ${q.where.join(" AND ")}` : "";
    conds.push(
      `(created_at, rid) ${desc ? "<" : ">"} ` +
        `(SELECT created_at, rid FROM ${q.table} WHERE id = $${args.length}${scope})`,
    );
  }
  args.push(limit + 1);
  const dir = desc ? "DESC" : "ASC";
  const sql =
    `SELECT ${q.cols} FROM ${q.table}${conds.length ? ` WHERE ${conds.join(" AND ")}` : ""} ` +
    `ORDER BY created_at ${dir}, rid ${dir} LIMIT $${args.length}`;
  return toPage((await db.rows<Row>(sql, args)).map(q.map), limit);
}

/** `a = $k, b = $k+1` for the defined keys of a patch (parameters numbered from `first`), with `encode` per column. */
export function setClause(
  patch: Record<string, unknown>,
  encode: Record<string, Encoder>,
  first: number,
): { sql: string; params: unknown[] } {
  const cols: string[] = [];
  const params: unknown[] = [];
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    const enc = encode[k];
    if (!enc) throw new Error(`unknown column ${k}`);
    params.push(enc.encode(v));
    cols.push(`${k} = $${first + params.length - 1}${enc.cast}`);
  }
  return { sql: cols.join(", "), params };
}

export interface Encoder {
  encode: (v: unknown) => unknown;
  /** A cast for the placeholder ("" or "::jsonb"). */
  cast: string;
}

export const asIs: Encoder = { encode: (v) => v, cast: "" };
export const asJson: Encoder = { encode: json, cast: "::jsonb" };
export const asJsonOrNull: Encoder = { encode: jsonOrNull, cast: "::jsonb" };
