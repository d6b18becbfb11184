/**
 * The embedded SQLite store (better-sqlite3, WAL, foreign keys on; migrated on open). One module per table
 * (rows and mappers beside their queries); this file opens the database and composes them.
 *
 * The driver is synchronous, so every operation is atomic by itself. A transaction spans awaits, though: while one
 * is open, writes are queued behind it (one lock), so a write from elsewhere can never land in — and be rolled back
 * with — someone else's transaction. Reads are not queued (which operations read: `QUERY_ACCESS`, store/types.ts).
 */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { AsyncLock } from "../../kernel/lock.js";
import { type BackendQueries, endTurnInSteps, sharedQueries, startTurnInSteps } from "../tables/index.js";
import { QUERY_ACCESS, type Queries, type Store } from "../types.js";
import { SQLITE_CLAIMS } from "./claims.js";
import { Counters } from "./counters.js";
import { SqliteDb, sqlDb } from "./db.js";
import { updateEnvironment } from "./environments.js";
import { eventQueries } from "./events.js";
import { itemQueries } from "./items.js";
import { migrate } from "./migrate.js";
import { deleteSession } from "./sessions.js";

export { MIGRATION_STEPS, MIGRATIONS, migrate, SCHEMA_VERSION } from "./migrate.js";

type QueryName = keyof Queries;

/** The embedded store: the Store interface plus the file it lives in. */
export type SqliteStore = Store & { readonly file: string };

export const SqliteStore = {
  /** Opens (creating if needed) a database file, or ":memory:", and migrates it to the current schema. */
  open(file: string): SqliteStore {
    const memory = file === ":memory:" || file === "";
    if (!memory && !file.startsWith("file:")) mkdirSync(dirname(resolve(file)), { recursive: true });
    const raw = new Database(file, { timeout: 5000 });
    try {
      raw.pragma("journal_mode = WAL");
      raw.pragma("synchronous = NORMAL");
      raw.pragma("foreign_keys = ON");
      raw.pragma("busy_timeout = 5000");
      migrate(raw);
      return compose(raw, file);
    } catch (err) {
      raw.close();
      throw err;
    }
  },
};

function compose(raw: Database.Database, file: string): SqliteStore {
  const db = new SqliteDb(raw);
  const counters = new Counters(db);
  const lock = new AsyncLock();
  /** What SQLite does its own way (store/tables/index.ts). */
  const own: BackendQueries = {
    ...itemQueries(db, counters),
    ...eventQueries(db, counters),
    deleteSession: deleteSession(db, counters),
    updateEnvironment: updateEnvironment(db),
    endTurn: (...args) => endTurnInSteps(inner)(...args),
    startTurn: (...args) => startTurnInSteps(inner)(...args),
  };
  /** The operations as they run inside a transaction (no lock: the transaction holds it). */
  const inner: Queries = { ...sharedQueries(sqlDb(db), SQLITE_CLAIMS), ...own };
  const outer = { ...inner };
  for (const name of Object.keys(inner) as QueryName[]) {
    if (QUERY_ACCESS[name] === "read") continue;
    const op = inner[name] as (...args: unknown[]) => Promise<unknown>;
    (outer as Record<QueryName, unknown>)[name] = (...args: unknown[]) =>
      lock.busy ? lock.run(() => op(...args)) : op(...args);
  }
  const transaction = <T>(fn: (tx: Queries) => Promise<T>): Promise<T> =>
    lock.run(async () => {
      raw.exec("BEGIN IMMEDIATE");
      try {
        const result = await fn(inner);
        raw.exec("COMMIT");
        return result;
      } catch (err) {
        if (raw.inTransaction) raw.exec("ROLLBACK");
        counters.clear();
        throw err;
      }
    });
  return {
    ...outer,
    // Three steps with awaits between them: atomic only in a transaction of their own (inside one: the steps).
    startTurn: (...args) => transaction((tx) => tx.startTurn(...args)),
    endTurn: (...args) => transaction((tx) => tx.endTurn(...args)),
    kind: "sqlite",
    file,
    // Changes when another connection (another process: the CLI) has committed; this process has one connection.
    async changeCounter() {
      return raw.open ? (raw.pragma("data_version", { simple: true }) as number) : null;
    },
    transaction,
    async close() {
      await lock.run(() => undefined);
      if (!raw.open) return;
      db.clear();
      counters.clear();
      raw.close();
    },
  };
}
