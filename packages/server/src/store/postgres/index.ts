/**
 * The PostgreSQL store (`pg`; migrated on open). One module per table, as for SQLite; this file opens the pool and
 * composes them. Several instances may share one database:
 * - migrations run under an advisory lock (exactly once, see migrate.ts);
 * - seq and ordinal come from counters on the sessions row, bumped by append_events() under the row lock, so
 *   appends to one session are serialised across instances and numbered without gaps or duplicates;
 * - claimSession is one conditional UPDATE.
 * Operations outside a transaction run on the pool (each statement its own transaction); `transaction(fn)` runs fn
 * on one client between BEGIN and COMMIT/ROLLBACK. Unlike SQLite, writes from outside are not queued behind an open
 * transaction: they run beside it (READ COMMITTED), and row locks order conflicting writes.
 */
import pg from "pg";
import { type BackendQueries, sharedQueries } from "../tables/index.js";
import type { Queries, Store } from "../types.js";
import { checkedOut } from "./checkout.js";
import { POSTGRES_CLAIMS } from "./claims.js";
import { PG_TYPES, PgDb, sqlDb } from "./db.js";
import { updateEnvironment } from "./environments.js";
import { eventQueries } from "./events.js";
import { itemQueries } from "./items.js";
import { revokeKey } from "./keys.js";
import { type Migrated, migrate } from "./migrate.js";
import { deleteSession } from "./sessions.js";
import { endTurn } from "./turn-end.js";
import { startTurn } from "./turn-start.js";

export {
  MIGRATION_LOCK_KEY,
  MIGRATION_STEPS,
  MIGRATIONS,
  type Migrated,
  migrate,
  SCHEMA_VERSION,
} from "./migrate.js";

export interface PostgresStoreOptions {
  /** Pool settings (max connections, timeouts, …); the connection string and type parsers are the store's. */
  pool?: Omit<pg.PoolConfig, "connectionString" | "types">;
  /** Errors of idle pooled connections (the pool replaces them); ignored by default. */
  onPoolError?: (err: Error) => void;
}

/** The scale-out store: the Store interface, the pool (for operations and tests) and what opening migrated. */
export type PostgresStore = Store & {
  readonly pool: pg.Pool;
  readonly migrated: Migrated;
  /** The connection URL (for connections outside the pool, e.g. LISTEN). */
  readonly url: string;
};

export const isPostgresStore = (s: Store): s is PostgresStore => s.kind === "postgres" && "pool" in s;

function queries(db: PgDb): Queries {
  /** What PostgreSQL does its own way (store/tables/index.ts). */
  const own: BackendQueries = {
    ...itemQueries(db),
    ...eventQueries(db),
    deleteSession: deleteSession(db),
    updateEnvironment: updateEnvironment(db),
    endTurn: endTurn(db),
    startTurn: startTurn(db),
  };
  return { ...sharedQueries(sqlDb(db), POSTGRES_CLAIMS), ...own, revokeKey: revokeKey(db) };
}

export const PostgresStore = {
  /** Connects to `url` (postgres://…) and migrates the database to the current schema. */
  async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({ ...opts.pool, connectionString: url, types: PG_TYPES });
    pool.on("error", opts.onPoolError ?? (() => undefined));
    let migrated: Migrated;
    try {
      migrated = await migrate(pool);
    } catch (err) {
      await pool.end();
      throw err;
    }
    return compose(pool, migrated, url);
  },
};

function compose(pool: pg.Pool, migrated: Migrated, url: string): PostgresStore {
  let closed: Promise<void> | undefined;
  return {
    ...queries(new PgDb(pool)),
    kind: "postgres",
    async changeCounter() {
      return null;
    },
    pool,
    migrated,
    url,
    transaction<T>(fn: (tx: Queries) => Promise<T>): Promise<T> {
      return checkedOut(pool, async (client, broken) => {
        const db = new PgDb(client, true);
        try {
          await client.query("BEGIN");
          let result: T;
          try {
            result = await fn(queries(db));
            await db.finish();
          } catch (err) {
            await db.finish();
            await client.query("ROLLBACK").catch((e: Error) => {
              broken.error ??= e;
            });
            throw err;
          }
          await client.query("COMMIT");
          return result;
        } catch (err) {
          // a failed BEGIN/COMMIT leaves the connection in doubt: drop it rather than reuse it
          if (client.getTransactionStatus() !== "I")
            broken.error ??= err instanceof Error ? err : new Error(String(err));
          throw err;
        }
      });
    },
    close() {
      closed ??= pool.end();
      return closed;
    },
  };
}
