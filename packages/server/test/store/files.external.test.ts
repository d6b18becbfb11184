/**
 * The store contract of files (the Files API's metadata), against the embedded SQLite store and a PostgreSQL
 * database made for this run (see postgres.ts): the same answers from both.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/index.js";
import { SqliteStore } from "../../src/store/sqlite/index.js";
import type { FileRecord, Store } from "../../src/store/types.js";
import { dropTestDatabase, pgTestUrl } from "../support/postgres.js";

const P1 = "proj_1";
const P2 = "proj_2";

const file = (id: string, created_at = 1000, over: Partial<FileRecord> = {}): FileRecord => ({
  id,
  project_id: P1,
  created_at,
  bytes: 5,
  filename: `${id}.txt`,
  purpose: "user_data",
  expires_at: null,
  sha256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
  ...over,
});

const ids = <T extends { id: string }>(rows: T[]) => rows.map((r) => r.id);

function contract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract (files): ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    it("insert, get (every field round-trips, sizes beyond 32 bits too), delete", async () => {
      const big = file("file-big", 1000.25, {
        bytes: 6 * 1024 ** 3,
        filename: "résumé (final).pdf",
        purpose: "fine-tune",
        expires_at: 4600.5,
      });
      await store.insertFile(big);
      expect(await store.getFile("file-big")).toEqual(big);
      expect(await store.getFile("file-none")).toBeUndefined();
      expect(await store.deleteFile("file-big")).toBe(true);
      expect(await store.deleteFile("file-big")).toBe(false);
      expect(await store.getFile("file-big")).toBeUndefined();
    });

    it("lists a project's files newest first (or oldest), by cursor, by purpose, without the expired ones", async () => {
      await store.insertFile(file("file-a", 1000));
      await store.insertFile(file("file-b", 1001, { purpose: "batch", expires_at: 5000 }));
      await store.insertFile(file("file-c", 1002, { expires_at: 1500 }));
      await store.insertFile(file("file-d", 1003, { project_id: P2 }));
      expect(ids((await store.listFiles({ project_id: P1 })).data)).toEqual(["file-c", "file-b", "file-a"]);
      expect(ids((await store.listFiles({ project_id: P2 })).data)).toEqual(["file-d"]);
      const first = await store.listFiles({ project_id: P1, order: "asc", limit: 2 });
      expect(ids(first.data)).toEqual(["file-a", "file-b"]);
      expect(first.has_more).toBe(true);
      const next = await store.listFiles({ project_id: P1, order: "asc", limit: 2, after: "file-b" });
      expect(ids(next.data)).toEqual(["file-c"]);
      expect(next.has_more).toBe(false);
      // Another project's file is no cursor here.
      expect((await store.listFiles({ project_id: P1, after: "file-d" })).data).toEqual([]);
      expect(ids((await store.listFiles({ project_id: P1, purpose: "batch" })).data)).toEqual(["file-b"]);
      expect((await store.listFiles({ project_id: P1, purpose: "vision" })).data).toEqual([]);
      // At 1500 file-c has expired (expires_at <= now), file-b not yet.
      expect(ids((await store.listFiles({ project_id: P1, unexpired_at: 1500 })).data)).toEqual([
        "file-b",
        "file-a",
      ]);
      expect(ids((await store.listFiles({ project_id: P1, unexpired_at: 6000 })).data)).toEqual(["file-a"]);
    });

    it("lists expired files soonest first, across projects, for the purge", async () => {
      await store.insertFile(file("file-never", 1000));
      await store.insertFile(file("file-late", 1001, { expires_at: 3000 }));
      await store.insertFile(file("file-soon", 1002, { expires_at: 2000, project_id: P2 }));
      await store.insertFile(file("file-later", 1003, { expires_at: 9000 }));
      expect(await store.listExpiredFiles(1999, 10)).toEqual([]);
      expect(ids(await store.listExpiredFiles(2000, 10))).toEqual(["file-soon"]);
      expect(ids(await store.listExpiredFiles(3500, 10))).toEqual(["file-soon", "file-late"]);
      expect(ids(await store.listExpiredFiles(10_000, 1))).toEqual(["file-soon"]);
    });

    it("writes inside a transaction are kept or rolled back with it", async () => {
      await store.transaction(async (tx) => {
        await tx.insertFile(file("file-kept"));
      });
      await expect(
        store.transaction(async (tx) => {
          await tx.insertFile(file("file-undone"));
          throw new Error("abort");
        }),
      ).rejects.toThrow("abort");
      expect(await store.getFile("file-kept")).toBeDefined();
      expect(await store.getFile("file-undone")).toBeUndefined();
    });
  });
}

contract("sqlite", async () => SqliteStore.open(":memory:"));

const databases: string[] = [];
let runDatabase: Promise<string> | undefined;
contract("postgres", async () => {
  runDatabase ??= pgTestUrl().then((u) => {
    databases.push(u);
    return u;
  });
  const store = await PostgresStore.open(await runDatabase);
  await store.pool.query("TRUNCATE files RESTART IDENTITY");
  return store;
});
afterAll(async () => {
  for (const u of databases) await dropTestDatabase(u);
});
