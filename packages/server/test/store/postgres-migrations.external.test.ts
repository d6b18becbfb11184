/**
 * PostgreSQL schema migrations (store/postgres/migrate.ts): several instances migrating one database at once, a
 * database migrated by builds before steps were files, one transaction per step, a newer database refused.
 * Needs a PostgreSQL server (TEST_DATABASE_URL, default the local one): see postgres.ts.
 */
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { MigrationStep } from "../../src/store/migration-files.js";
import {
  MIGRATION_STEPS,
  MIGRATIONS,
  migrate,
  PostgresStore,
  SCHEMA_VERSION,
} from "../../src/store/postgres/index.js";
import { freshDatabases } from "../support/postgres.js";
import { ids, session } from "./contract.js";

/** A fresh database (dropped at the end of the run). */
const freshDatabase = freshDatabases();

/** The rows of schema_version, [version, name]. */
async function recorded(db: pg.Pool | pg.Client): Promise<[number, string | null][]> {
  const res = await db.query<{ version: number; name: string | null }>(
    "SELECT version, name FROM schema_version ORDER BY version",
  );
  return res.rows.map((r) => [r.version, r.name]);
}

async function tableExists(db: pg.Pool, name: string): Promise<boolean> {
  const res = await db.query<{ t: string | null }>("SELECT to_regclass($1)::text AS t", [name]);
  return res.rows[0]?.t !== null;
}

/** The advisory locks held in the database (by any session). */
async function advisoryLocks(db: pg.Pool): Promise<number> {
  const res = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' " +
      "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
  );
  return res.rows[0]?.n ?? -1;
}

describe("PostgreSQL migrations", () => {
  const stores: PostgresStore[] = [];
  const pools: pg.Pool[] = [];
  const track = async (p: Promise<PostgresStore>) => {
    const s = await p;
    stores.push(s);
    return s;
  };
  const pool = (url: string) => {
    const p = new pg.Pool({ connectionString: url });
    pools.push(p);
    return p;
  };
  afterEach(async () => {
    await Promise.all([...stores.splice(0).map((s) => s.close()), ...pools.splice(0).map((p) => p.end())]);
  });

  it("several instances starting at once on an empty database migrate exactly once, and all work", async () => {
    const fresh = await freshDatabase();
    const opened = await Promise.all([1, 2, 3, 4].map(() => track(PostgresStore.open(fresh))));
    expect(opened.map((s) => s.migrated.from).sort()).toEqual([
      0,
      SCHEMA_VERSION,
      SCHEMA_VERSION,
      SCHEMA_VERSION,
    ]);
    expect(opened.every((s) => s.migrated.to === SCHEMA_VERSION)).toBe(true);
    expect(await recorded(opened[0]!.pool)).toEqual(MIGRATION_STEPS.map((s) => [s.version, s.name]));

    // every instance reads what the others wrote
    await Promise.all(opened.map((s, i) => s.insertSession(session(`s${i}`, i))));
    for (const s of opened) {
      expect(await s.countSessions()).toBe(4);
      expect(ids((await s.listSessions({ project_id: "proj_1", order: "asc" })).data)).toEqual([
        "s0",
        "s1",
        "s2",
        "s3",
      ]);
    }

    const again = await track(PostgresStore.open(fresh));
    expect(again.migrated).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION });
  });

  it("brings schedule times stored before they were checked to whole seconds in range", async () => {
    const fresh = await freshDatabase();
    const step = MIGRATIONS.findIndex((m) => m.includes("253402300799"));
    expect(step).toBeGreaterThan(0);
    const client = new pg.Client({ connectionString: fresh });
    await client.connect();
    try {
      await client.query(
        "CREATE TABLE schema_version (version integer PRIMARY KEY, applied_at double precision NOT NULL)",
      );
      for (let v = 0; v < step; v++) {
        await client.query(MIGRATIONS[v]!);
        await client.query("INSERT INTO schema_version (version, applied_at) VALUES ($1, 0)", [v + 1]);
      }
      const insert = (id: string, runAt: number, nextRunAt: number | null) =>
        client.query(
          "INSERT INTO automations (id, project_id, created_at, updated_at, name, metadata, type, run_at, " +
            "status, next_run_at, target, created_by) VALUES ($1, 'p', 1, 1, 'n', '{}', 'once', $2, 'active', " +
            "$3, '{}', '{}')",
          [id, runAt, nextRunAt],
        );
      await insert("a_fraction", 1_900_000_000.7, 1_900_000_000.7);
      await insert("a_huge", 1e20, 9_007_199_254_740_992);
      await insert("a_fine", 1_900_000_000, null);
      await client.query(
        "INSERT INTO automation_invocations (id, automation_id, project_id, created_at, scheduled_at, source, " +
          "target, status, next_attempt_at) VALUES ('i1', 'a_fraction', 'p', 1, 1900000000.7, 'automation', " +
          "'{}', 'queued', 1)",
      );
    } finally {
      await client.end();
    }
    const store = await track(PostgresStore.open(fresh));
    expect(store.migrated).toEqual({ from: step, to: SCHEMA_VERSION });
    const times = async (id: string) => {
      const a = await store.getAutomation(id);
      return [a?.run_at, a?.next_run_at];
    };
    expect(await times("a_fraction")).toEqual([1_900_000_000, 1_900_000_000]);
    expect(await times("a_huge")).toEqual([253_402_300_799, 253_402_300_799]);
    expect(await times("a_fine")).toEqual([1_900_000_000, null]);
    expect((await store.getInvocation("i1"))?.scheduled_at).toBe(1_900_000_000);
    // the rows written before steps had names keep none
    expect(await recorded(store.pool)).toEqual(
      MIGRATION_STEPS.map((s) => [s.version, s.version <= step ? null : s.name]),
    );
  });

  it("refuses a database from a newer schema version", async () => {
    const fresh = await freshDatabase();
    const store = await track(PostgresStore.open(fresh));
    await store.pool.query("INSERT INTO schema_version (version, applied_at) VALUES ($1, 0)", [
      SCHEMA_VERSION + 1,
    ]);
    await expect(PostgresStore.open(fresh)).rejects.toThrow(/newer/);
  });

  it("a step that fails leaves the steps before it applied and recorded, each its own transaction", async () => {
    const fresh = await freshDatabase();
    const db = pool(fresh);
    const broken: MigrationStep = {
      version: 3,
      name: "broken",
      sql: "CREATE TABLE half_done (x integer);\nINSERT INTO nowhere VALUES (1);",
    };
    await expect(migrate(db, [...MIGRATION_STEPS.slice(0, 2), broken])).rejects.toThrow(
      /"nowhere" does not exist/,
    );
    expect(await recorded(db)).toEqual(MIGRATION_STEPS.slice(0, 2).map((s) => [s.version, s.name]));
    expect(await tableExists(db, "webhook_deliveries")).toBe(true); // step 2
    expect(await tableExists(db, "half_done")).toBe(false); // the failed step, rolled back whole
    // the lock went with the failure: the next run takes it, and starts at the step that failed
    expect(await advisoryLocks(db)).toBe(0);
    const store = await track(PostgresStore.open(fresh));
    expect(store.migrated).toEqual({ from: 2, to: SCHEMA_VERSION });
    expect(await recorded(db)).toEqual(MIGRATION_STEPS.map((s) => [s.version, s.name]));
  });

  it("takes the migration lock for the run only: a pooled connection gives it back", async () => {
    const fresh = await freshDatabase();
    const db = new pg.Pool({ connectionString: fresh, max: 1 });
    pools.push(db);
    expect(await migrate(db)).toEqual({ from: 0, to: SCHEMA_VERSION });
    expect(await advisoryLocks(db)).toBe(0);
    expect(await migrate(db)).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION });
  });
});
