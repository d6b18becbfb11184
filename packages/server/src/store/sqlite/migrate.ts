/**
 * SQLite schema migrations: the numbered SQL files of packages/server/migrations/sqlite/ (../migration-files.ts).
 * Each pending step runs in a transaction of its own, which also records it: a row of `schema_version` (version,
 * name, applied_at) and `PRAGMA user_version`, which builds older than the table read to refuse a newer database.
 * A database older than the table (user_version N, no table) gets rows 1 to N in the first transaction.
 */
import type Database from "better-sqlite3";
import { type MigrationStep, readMigrations } from "../migration-files.js";

/** The steps of this build, in order (read once, when the module loads). */
export const MIGRATION_STEPS: readonly MigrationStep[] = readMigrations(
  new URL("../../../migrations/sqlite/", import.meta.url),
);

/** The SQL of each step: MIGRATIONS[i] brings the database to version i + 1. */
export const MIGRATIONS: readonly string[] = MIGRATION_STEPS.map((s) => s.sql);

/** The schema version this build expects. */
export const SCHEMA_VERSION = MIGRATION_STEPS.length;

interface Versions {
  /** The last step recorded in `schema_version`, 0 when it has no row; null: no such table. */
  recorded: number | null;
  /** `PRAGMA user_version`. */
  user: number;
}

function versions(db: Database.Database): Versions {
  const user = db.pragma("user_version", { simple: true }) as number;
  const table = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'")
    .get();
  if (table === undefined) return { recorded: null, user };
  const row = db.prepare("SELECT max(version) AS v FROM schema_version").get() as { v: number | null };
  return { recorded: row.v ?? 0, user };
}

/**
 * Applies every pending step, each in its own transaction, and returns the resulting version. A step that fails
 * leaves the steps before it applied and recorded. Refuses a database written by a newer build. `steps`: this
 * build's (tests pass others).
 */
export function migrate(db: Database.Database, steps: readonly MigrationStep[] = MIGRATION_STEPS): number {
  const at = versions(db);
  if (at.recorded === steps.length && at.user === steps.length) return steps.length;
  // IMMEDIATE: take the write lock first, then read the version (another process may have migrated meanwhile).
  const next = db.transaction(() => applyNext(db, steps));
  let done = false;
  while (!done) done = next.immediate();
  return steps.length;
}

/** One transaction: brings the table up to date and applies the next pending step. True when none is left. */
function applyNext(db: Database.Database, steps: readonly MigrationStep[]): boolean {
  const latest = steps.length;
  const { recorded, user } = versions(db);
  const highest = Math.max(recorded ?? 0, user);
  if (highest > latest) {
    throw new Error(`database schema version ${highest} is newer than this build supports (${latest})`);
  }
  const now = Date.now() / 1000;
  const record = (step: MigrationStep) =>
    db
      .prepare("INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)")
      .run(step.version, step.name, now);
  if (recorded === null) {
    db.exec(
      "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)",
    );
    for (const step of steps.slice(0, user)) record(step);
  }
  const current = recorded ?? user;
  if (current < latest) {
    const step = steps[current]!;
    db.exec(step.sql);
    record(step);
  }
  const reached = Math.min(current + 1, latest);
  if (user !== reached) db.pragma(`user_version = ${reached}`);
  return reached === latest;
}
