/**
 * PostgreSQL schema migrations: the numbered SQL files of packages/server/migrations/postgres/
 * (../migration-files.ts). Step N brings the database to version N, recorded as a row of `schema_version`
 * (version, name, applied_at) in the step's own transaction.
 *
 * The schema means what the SQLite one means (migrations/sqlite/ at its latest version); the differences are
 * PostgreSQL's: jsonb for JSON, double precision Unix seconds, bigserial rids, identifiers in the "C" collation
 * (byte order, as in SQLite), and the per-session log counters `last_seq` / `last_ordinal` kept on the sessions row,
 * whose row lock serialises appends to a session across instances (see append_events(), defined by steps 1 and 2).
 */
import type pg from "pg";
import { type MigrationStep, readMigrations } from "../migration-files.js";
import { checkedOut } from "./checkout.js";

/** The steps of this build, in order (read once, when the module loads). */
export const MIGRATION_STEPS: readonly MigrationStep[] = readMigrations(
  new URL("../../../migrations/postgres/", import.meta.url),
);

/** The SQL of each step: MIGRATIONS[i] brings the database to version i + 1. */
export const MIGRATIONS: readonly string[] = MIGRATION_STEPS.map((s) => s.sql);

/** The schema version this build expects. */
export const SCHEMA_VERSION = MIGRATION_STEPS.length;

/** The advisory lock every instance takes to migrate (a fixed key: "cas-migr"). */
export const MIGRATION_LOCK_KEY = 0x6361732d6d696772n;

export interface Migrated {
  /** The version found (0: an empty database). */
  from: number;
  to: number;
}

/**
 * Applies every pending step, each in its own transaction, while holding the migration lock (session level, on one
 * connection), so several instances starting at once migrate exactly once: the others wait, then find nothing to
 * do. Builds before this one take the same key as a transaction lock, which waits for this one all the same. A step
 * that fails leaves the steps before it applied and recorded. Refuses a database written by a newer build.
 * `steps`: this build's (tests pass others).
 */
export function migrate(pool: pg.Pool, steps: readonly MigrationStep[] = MIGRATION_STEPS): Promise<Migrated> {
  const key = MIGRATION_LOCK_KEY.toString();
  return checkedOut(pool, async (client, broken) => {
    await client.query("SELECT pg_advisory_lock($1)", [key]);
    try {
      await client.query(
        "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY, applied_at double precision NOT NULL)",
      );
      const from = await recordedVersion(client);
      if (from > steps.length) {
        throw new Error(
          `database schema version ${from} is newer than this build supports (${steps.length})`,
        );
      }
      // The name of each step, recorded since steps are files (rows written before have none).
      await client.query("ALTER TABLE schema_version ADD COLUMN IF NOT EXISTS name text");
      for (const step of steps.slice(from)) {
        await client.query("BEGIN");
        try {
          await client.query(step.sql);
          await client.query("INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)", [
            step.version,
            step.name,
            Date.now() / 1000,
          ]);
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK").catch((e: Error) => {
            broken.error ??= e;
          });
          throw err;
        }
      }
      return { from, to: steps.length };
    } finally {
      // A connection that cannot unlock is dropped (broken), which releases the lock.
      await client.query("SELECT pg_advisory_unlock($1)", [key]).catch((e: Error) => {
        broken.error ??= e;
      });
    }
  });
}

async function recordedVersion(client: pg.PoolClient): Promise<number> {
  const res = await client.query<{ v: number | null }>("SELECT max(version) AS v FROM schema_version");
  return res.rows[0]?.v ?? 0;
}
