/**
 * Schema migrations as files: the loader's checks of a migrations directory.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readMigrations } from "../../src/store/migration-files.js";

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
