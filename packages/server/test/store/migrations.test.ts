/**
 * Schema migrations as files: the loader's checks of a migrations directory, the released steps pinned, and
 * SQLite's migrate (one transaction per step, a schema_version row each, user_version kept, the upgrade of a
 * database older than the table). PostgreSQL's: postgres-migrations.external.test.ts.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { type MigrationStep, readMigrations } from "../../src/store/migration-files.js";
import { MIGRATION_STEPS as PG_STEPS } from "../../src/store/postgres/index.js";
import {
  MIGRATION_STEPS,
  MIGRATIONS,
  migrate,
  SCHEMA_VERSION,
  SqliteStore,
} from "../../src/store/sqlite/index.js";

const tmpRoot = mkdtempSync(join(tmpdir(), "migrations-test-"));
afterAll(() => rmSync(tmpRoot, { recursive: true, force: true }));
let dirCounter = 0;

/** A migrations directory holding `files` (name → text). */
function migrationsDir(files: Record<string, string>): string {
  const dir = join(tmpRoot, `dir-${++dirCounter}`);
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

interface Row {
  version: number;
  name: string;
  applied_at: number;
}
const rows = (db: Database.Database) =>
  db.prepare("SELECT version, name, applied_at FROM schema_version ORDER BY version").all() as Row[];
const userVersion = (db: Database.Database) => db.pragma("user_version", { simple: true }) as number;
const tableNames = (db: Database.Database) =>
  db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
const recorded = (steps: readonly MigrationStep[]) => steps.map((s) => [s.version, s.name]);

describe("readMigrations", () => {
  it("reads the steps in number order, with their names and text", () => {
    const dir = migrationsDir({
      "010_ten.sql": "SELECT 10;",
      "002_two.sql": "SELECT 2;",
      "001_one.sql": "SELECT 1;",
      ...Object.fromEntries([3, 4, 5, 6, 7, 8, 9].map((n) => [`00${n}_step-${n}.sql`, `SELECT ${n};`])),
    });
    const steps = readMigrations(dir);
    expect(steps.map((s) => s.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(steps[0]).toEqual({ version: 1, name: "one", sql: "SELECT 1;" });
    expect(steps[9]).toEqual({ version: 10, name: "ten", sql: "SELECT 10;" });
    expect(readMigrations(new URL(`file://${dir}/`))).toEqual(steps);
  });

  it("refuses a gap in the numbering", () => {
    const dir = migrationsDir({ "001_a.sql": "SELECT 1;", "003_c.sql": "SELECT 3;" });
    expect(() => readMigrations(dir)).toThrow(/step 2 is missing \(the next is 003_c\.sql\)/);
    expect(() => readMigrations(migrationsDir({ "002_b.sql": "SELECT 2;" }))).toThrow(/step 1 is missing/);
  });

  it("refuses two steps with one number", () => {
    const dir = migrationsDir({
      "001_a.sql": "SELECT 1;",
      "002_b.sql": "SELECT 2;",
      "002_c.sql": "SELECT 3;",
    });
    expect(() => readMigrations(dir)).toThrow(/two steps numbered 2 \(002_b\.sql, 002_c\.sql\)/);
  });

  it("refuses a name that is not NNN_name.sql, an empty step, an empty or missing directory", () => {
    for (const bad of [
      "1_short.sql",
      "001-dash.sql",
      "001_.sql",
      "001_a.SQL",
      "001_a.sql.orig",
      "README.md",
    ]) {
      const dir = migrationsDir({ "001_a.sql": "SELECT 1;", [bad]: "SELECT 2;" });
      expect(() => readMigrations(dir), bad).toThrow(`${bad} is not a migration (a file named NNN_name.sql)`);
    }
    const withDir = migrationsDir({ "001_a.sql": "SELECT 1;" });
    mkdirSync(join(withDir, "002_b.sql"));
    expect(() => readMigrations(withDir)).toThrow(/002_b\.sql is not a migration/);
    expect(() => readMigrations(migrationsDir({ "001_a.sql": " \n" }))).toThrow(/001_a\.sql is empty/);
    expect(() => readMigrations(migrationsDir({}))).toThrow(/holds no migration/);
    expect(() => readMigrations(join(tmpRoot, "nowhere"))).toThrow(/cannot read the migrations directory/);
  });
});

describe("the released steps", () => {
  // A released step is never edited: a database migrated by an older build ran the text it had. A new step is a
  // new file, and its hash a new line here.
  const sha256 = (s: string) => createHash("sha256").update(s).digest("hex").slice(0, 16);
  it("are as they were released (SQLite)", () => {
    expect(MIGRATION_STEPS.map((s) => `${s.version} ${s.name} ${sha256(s.sql)}`)).toEqual([
      "1 initial dac26dd5c68824a6",
      "2 projects-keys-item-states 2e9293356dbef13f",
      "3 required-actions-leases f8c0f9ebdc2ba732",
      "4 automations-webhooks 15b055e6ae2a0dbc",
      "5 environments-vaults f45d91845ed968ad",
      "6 files 23b714c3360d3ae7",
      "7 whole-second-schedules d53f49284e9de4fe",
    ]);
  });
  it("are as they were released (PostgreSQL)", () => {
    expect(PG_STEPS.map((s) => `${s.version} ${s.name} ${sha256(s.sql)}`)).toEqual([
      "1 base a66d1d0808cafaa7",
      "2 automations-webhooks c30f806c57059307",
      "3 environments-vaults 1b44a98bdb40eb40",
      "4 files 8c49b70464d883cf",
      "5 whole-second-schedules 8224a6f528078a9d",
    ]);
  });
  it("are every file of the migrations directories", () => {
    const files = (backend: string) =>
      readdirSync(new URL(`../../migrations/${backend}/`, import.meta.url)).sort();
    const named = (steps: readonly MigrationStep[]) =>
      steps.map((s) => `${String(s.version).padStart(3, "0")}_${s.name}.sql`);
    expect(files("sqlite")).toEqual(named(MIGRATION_STEPS));
    expect(files("postgres")).toEqual(named(PG_STEPS));
    expect(MIGRATIONS).toEqual(MIGRATION_STEPS.map((s) => s.sql));
    expect(SCHEMA_VERSION).toBe(MIGRATION_STEPS.length);
  });
});

describe("SQLite migrate", () => {
  it("migrates an empty database: a row per step, user_version the latest", () => {
    const db = new Database(":memory:");
    const before = Date.now() / 1000;
    expect(migrate(db)).toBe(SCHEMA_VERSION);
    const after = Date.now() / 1000;
    expect(rows(db).map((r) => [r.version, r.name])).toEqual(recorded(MIGRATION_STEPS));
    expect(rows(db).every((r) => r.applied_at >= before && r.applied_at <= after)).toBe(true);
    expect(userVersion(db)).toBe(SCHEMA_VERSION);
    const again = rows(db);
    expect(migrate(db)).toBe(SCHEMA_VERSION);
    expect(rows(db)).toEqual(again);
    db.close();
  });

  it("upgrades a database older than schema_version (user_version 3, no table): rows 1 to the latest", async () => {
    const file = join(tmpRoot, "v3.db");
    const v3 = new Database(file);
    for (const sql of MIGRATIONS.slice(0, 3)) v3.exec(sql);
    v3.pragma("user_version = 3");
    v3.prepare(
      "INSERT INTO api_keys (id, project_id, hash, salt, admin, created_at) VALUES ('k1', 'p', 'h', 's', 0, 1)",
    ).run();
    expect(tableNames(v3)).not.toContain("schema_version");
    v3.close();

    const store = SqliteStore.open(file);
    expect(await store.getKey("k1")).toMatchObject({ id: "k1", project_id: "p" });
    await store.close();
    const db = new Database(file);
    expect(rows(db).map((r) => [r.version, r.name])).toEqual(recorded(MIGRATION_STEPS));
    expect(userVersion(db)).toBe(SCHEMA_VERSION);
    expect(tableNames(db)).toContain("files"); // step 6
    db.close();
  });

  it("upgrades a database at the latest version without the table: the rows only", () => {
    const db = new Database(":memory:");
    for (const sql of MIGRATIONS) db.exec(sql);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
    expect(migrate(db)).toBe(SCHEMA_VERSION);
    expect(rows(db).map((r) => [r.version, r.name])).toEqual(recorded(MIGRATION_STEPS));
    db.close();
  });

  it("a step that fails leaves the steps before it applied and recorded, each its own transaction", () => {
    const dir = migrationsDir({
      "001_one.sql": "CREATE TABLE one (x INTEGER);",
      "002_two.sql": "CREATE TABLE two (x INTEGER);\nINSERT INTO two VALUES (2);",
      "003_broken.sql": "CREATE TABLE three (x INTEGER);\nINSERT INTO nowhere VALUES (3);",
      "004_four.sql": "CREATE TABLE four (x INTEGER);",
    });
    const steps = readMigrations(dir);
    const db = new Database(":memory:");
    expect(() => migrate(db, steps)).toThrow(/no such table: nowhere/);
    expect(rows(db).map((r) => [r.version, r.name])).toEqual([
      [1, "one"],
      [2, "two"],
    ]);
    expect(userVersion(db)).toBe(2);
    // the failed step is rolled back whole: its first statement too
    expect(tableNames(db)).toEqual(["one", "schema_version", "two"]);
    expect(db.prepare("SELECT x FROM two").pluck().all()).toEqual([2]);

    // fixed, the next run starts at the step that failed
    const fixed = [
      ...steps.slice(0, 2),
      { version: 3, name: "fixed", sql: "CREATE TABLE three (x INTEGER);" },
    ];
    expect(migrate(db, [...fixed, steps[3]!])).toBe(4);
    expect(rows(db).map((r) => [r.version, r.name])).toEqual([
      [1, "one"],
      [2, "two"],
      [3, "fixed"],
      [4, "four"],
    ]);
    expect(userVersion(db)).toBe(4);
    db.close();
  });

  it("a failing first step of a database older than the table leaves it as it was (no table, no rows)", () => {
    const db = new Database(":memory:");
    db.exec(MIGRATIONS[0]!);
    db.pragma("user_version = 1");
    const broken = [
      MIGRATION_STEPS[0]!,
      { version: 2, name: "broken", sql: "INSERT INTO nowhere VALUES (1);" },
    ];
    expect(() => migrate(db, broken)).toThrow(/no such table/);
    expect(tableNames(db)).not.toContain("schema_version");
    expect(userVersion(db)).toBe(1);
    db.close();
  });

  it("refuses a database newer than the build, by its rows or its user_version", () => {
    const message = `database schema version ${SCHEMA_VERSION + 1} is newer than this build supports (${SCHEMA_VERSION})`;
    const byRow = new Database(":memory:");
    migrate(byRow);
    byRow
      .prepare("INSERT INTO schema_version (version, name, applied_at) VALUES (?, 'future', 0)")
      .run(SCHEMA_VERSION + 1);
    expect(() => migrate(byRow)).toThrow(message);
    byRow.close();

    const byPragma = new Database(":memory:");
    byPragma.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    expect(() => migrate(byPragma)).toThrow(message);
    expect(tableNames(byPragma)).toEqual([]);
    byPragma.close();
  });
});
