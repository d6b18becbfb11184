/**
 * PostgreSQL schema migrations: an ordered list of SQL steps. Step i (0-based) brings the database to version i + 1,
 * recorded as a row of `schema_version`. Only append new steps (at the end of migrations/recent.ts); never edit a
 * released one.
 *
 * The schema means what the SQLite one means (see ../sqlite/migrations.ts at its latest version); the differences
 * are PostgreSQL's: jsonb for JSON, double precision Unix seconds, bigserial rids, identifiers in the "C" collation
 * (byte order, as in SQLite), and the per-session log counters `last_seq` / `last_ordinal` kept on the sessions row,
 * whose row lock serialises appends to a session across instances (see append_events).
 */
import type pg from "pg";
import { checkedOut } from "./checkout.js";
import { AUTOMATIONS_WEBHOOKS_STEPS } from "./migrations/automations-webhooks.js";
import { BASE_STEPS } from "./migrations/base.js";
import { RECENT_STEPS } from "./migrations/recent.js";

/** Every step, in order: each module of ./migrations/ holds the steps of one era, oldest first. */
export const MIGRATIONS: readonly string[] = [...BASE_STEPS, ...AUTOMATIONS_WEBHOOKS_STEPS, ...RECENT_STEPS];

/** The schema version this build expects. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** The advisory lock every instance takes to migrate (a fixed key: "cas-migr"). */
export const MIGRATION_LOCK_KEY = 0x6361732d6d696772n;

export interface Migrated {
  /** The version found (0: an empty database). */
  from: number;
  to: number;
}

/**
 * Applies every pending step in one transaction, after taking the migration lock, so several instances starting
 * at once migrate exactly once (the others wait, then find nothing to do). Refuses a database written by a newer
 * build.
 */
export function migrate(pool: pg.Pool): Promise<Migrated> {
  return checkedOut(pool, async (client, broken) => {
    await client.query("BEGIN");
    try {
      await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK_KEY.toString()]);
      await client.query(
        "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY, applied_at double precision NOT NULL)",
      );
      const res = await client.query<{ v: number | null }>("SELECT max(version) AS v FROM schema_version");
      const from = res.rows[0]?.v ?? 0;
      if (from > MIGRATIONS.length) {
        throw new Error(
          `database schema version ${from} is newer than this build supports (${MIGRATIONS.length})`,
        );
      }
      for (let v = from; v < MIGRATIONS.length; v++) {
        await client.query(MIGRATIONS[v]!);
        await client.query("INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)", [
          v + 1,
          Date.now() / 1000,
        ]);
      }
      await client.query("COMMIT");
      return { from, to: MIGRATIONS.length };
    } catch (err) {
      await client.query("ROLLBACK").catch((e: Error) => {
        broken.error ??= e;
      });
      throw err;
    }
  });
}
