/**
 * A look at a database without opening it as a store (no migration, no write): whether it is reachable and which
 * schema version it holds. For `doctor`.
 */
import { existsSync } from "node:fs";

export interface DatabaseProbe {
  kind: "sqlite" | "postgres";
  /** null: the database does not exist yet (made at the first start). */
  schema: number | null;
  error: string | null;
}

export async function probeDatabase(
  target: { sqliteFile: string } | { postgresUrl: string },
): Promise<DatabaseProbe> {
  if ("postgresUrl" in target) {
    const { default: pg } = await import("pg");
    const client = new pg.Client({ connectionString: target.postgresUrl, connectionTimeoutMillis: 5_000 });
    // A connection that breaks between statements is an error of the probe, not of the process.
    client.on("error", () => undefined);
    try {
      await client.connect();
      const schema = await client
        .query<{ v: number | null }>("SELECT max(version) AS v FROM schema_version")
        .then((r) => r.rows[0]?.v ?? null)
        .catch(() => null);
      return { kind: "postgres", schema, error: null };
    } catch (err) {
      return { kind: "postgres", schema: null, error: (err as Error).message };
    } finally {
      await client.end().catch(() => undefined);
    }
  }
  if (!existsSync(target.sqliteFile)) return { kind: "sqlite", schema: null, error: null };
  try {
    const { default: Database } = await import("better-sqlite3");
    const db = new Database(target.sqliteFile, { readonly: true, fileMustExist: true });
    try {
      return { kind: "sqlite", schema: Number(db.pragma("user_version", { simple: true })), error: null };
    } finally {
      db.close();
    }
  } catch (err) {
    return { kind: "sqlite", schema: null, error: (err as Error).message };
  }
}
