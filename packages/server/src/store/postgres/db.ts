/**
 * The PostgreSQL side of the store: a query runner over the pool or over one transaction's client, named prepared
 * statements, type parsing and JSON encoding for jsonb columns, and the helpers shared by the table modules.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { render, type SqlDb, type SqlDialect } from "../sql/db.js";
import { jsonParam, raw, type Sql, sql } from "../sql/query.js";

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

/** PostgreSQL's side of the SQL written once (store/sql/): `$n` placeholders, jsonb, native booleans. */
export const POSTGRES: SqlDialect = {
  placeholder: (n, kind) => (kind === "json" || kind === "json?" ? `$${n}::jsonb` : `$${n}`),
  encode(p) {
    if (p.kind === "bool") return p.value === true;
    if (p.kind === "json?") return jsonOrNull(p.value);
    return json(p.value);
  },
  typedRows: true,
  jsonHas: (column, pairs) =>
    pairs && Object.keys(pairs).length > 0 ? [sql`${raw(column)} @> ${jsonParam(pairs)}`] : [],
  jsonText: (column, key) => sql`${raw(column)}->>${key}`,
  forUpdate: (skipLocked) => raw(skipLocked ? " FOR UPDATE SKIP LOCKED" : " FOR UPDATE"),
};

/** The pool's (or the transaction's) statements over {@link Sql}. */
export function sqlDb(db: PgDb): SqlDb {
  return {
    dialect: POSTGRES,
    rows<Row>(q: Sql) {
      const { text, params } = render(q, POSTGRES);
      return db.rows<Row & pg.QueryResultRow>(text, params);
    },
    row<Row>(q: Sql) {
      const { text, params } = render(q, POSTGRES);
      return db.row<Row & pg.QueryResultRow>(text, params);
    },
    run(q) {
      const { text, params } = render(q, POSTGRES);
      return db.run(text, params);
    },
    value<T>(q: Sql) {
      const { text, params } = render(q, POSTGRES);
      return db.value<T>(text, params);
    },
  };
}
