/**
 * Schema migrations as files: each backend has a directory of numbered SQL steps, packages/server/migrations/<backend>/
 * (beside src/ and dist/, which are at the same depth, so the path from a backend's module is the same before and
 * after the build; the npm package ships the directory). `NNN_name.sql` is step NNN, numbered 1, 2, 3… without a
 * gap; step N brings the database to schema version N. A new step is a new file with the next number; a released
 * step is never edited (a database migrated by an older build ran the old text).
 */
import { type Dirent, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** One step of a backend's migrations. */
export interface MigrationStep {
  /** The schema version the step brings the database to (its file's number). */
  readonly version: number;
  /** The file's name without the number and the extension (`001_initial.sql`: "initial"). */
  readonly name: string;
  /** The file's text, run as it is. */
  readonly sql: string;
}

const FILE_NAME = /^(\d{3,})_([a-z0-9][a-z0-9_-]*)\.sql$/;

/**
 * Reads the steps of a migrations directory, in order. Throws when an entry is not a `NNN_name.sql` file, when a
 * file is empty, or when the numbers are not 1 to n (a gap, a duplicate, a start other than 1).
 */
export function readMigrations(dir: URL | string): readonly MigrationStep[] {
  const path = typeof dir === "string" ? dir : fileURLToPath(dir);
  let entries: Dirent[];
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch (err) {
    throw new Error(`cannot read the migrations directory ${path}: ${(err as Error).message}`);
  }
  const found: { version: number; name: string; file: string }[] = [];
  for (const e of entries) {
    const m = FILE_NAME.exec(e.name);
    if (!m || !e.isFile()) {
      throw new Error(
        `migrations directory ${path}: ${e.name} is not a migration (a file named NNN_name.sql)`,
      );
    }
    found.push({ version: Number(m[1]), name: m[2]!, file: e.name });
  }
  found.sort((a, b) => a.version - b.version || a.file.localeCompare(b.file));
  if (found.length === 0) throw new Error(`migrations directory ${path} holds no migration`);
  return found.map((f, i) => {
    const expected = i + 1;
    if (f.version !== expected) {
      const prev = found[i - 1];
      throw new Error(
        prev?.version === f.version
          ? `migrations directory ${path}: two steps numbered ${f.version} (${prev.file}, ${f.file})`
          : `migrations directory ${path}: step ${expected} is missing (the next is ${f.file}); steps are numbered ` +
              "1, 2, 3… without a gap",
      );
    }
    const sql = readFileSync(join(path, f.file), "utf8");
    if (sql.trim() === "") throw new Error(`migrations directory ${path}: ${f.file} is empty`);
    return { version: f.version, name: f.name, sql };
  });
}
