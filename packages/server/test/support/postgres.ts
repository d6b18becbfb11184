/**
 * Throw-away PostgreSQL databases for tests: `pgTestUrl()` creates a uniquely named database on the server of
 * TEST_DATABASE_URL (default: the local PostgreSQL, user postgres) and returns its URL; `dropTestDatabase(url)`
 * removes it. No server answering is a failure with the way to start one, never a skip.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll } from "vitest";

export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

const HOW_TO_START =
  "start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start " +
  "(or point TEST_DATABASE_URL at a PostgreSQL server whose user may create databases)";

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw new Error(
      `PostgreSQL tests need a server at ${redact(ADMIN_URL)}, which did not answer ` +
        `(${(err as Error).message}); ${HOW_TO_START}`,
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const redact = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");

const nameOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

/** Creates an empty database `cas_test_<pid>_<random>` and returns its URL. */
export async function pgTestUrl(): Promise<string> {
  const name = `cas_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database made by {@link pgTestUrl} (closing any connection still open to it). */
export async function dropTestDatabase(url: string): Promise<void> {
  const name = nameOf(url);
  if (!name.startsWith("cas_test_")) throw new Error(`refusing to drop ${name}: not a test database`);
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
}

/** Fresh databases for one test file: each call makes one; all are dropped after the file's tests. */
export function freshDatabases(): () => Promise<string> {
  const made: string[] = [];
  afterAll(async () => {
    for (const u of made) await dropTestDatabase(u);
  });
  return async () => {
    const u = await pgTestUrl();
    made.push(u);
    return u;
  };
}
