import type { IdempotencyRecord, Queries } from "../types.js";
import { json, parse, type SqliteDb } from "./db.js";

interface IdempotencyRow {
  scope: string;
  key: string;
  body_hash: string;
  status: number;
  response: string;
  created_at: number;
}

const fromRow = (r: IdempotencyRow): IdempotencyRecord => ({ ...r, response: parse<unknown>(r.response) });

export type IdempotencyQueries = Pick<Queries, "getIdempotency" | "putIdempotency" | "expireIdempotency">;

export function idempotencyQueries(db: SqliteDb): IdempotencyQueries {
  return {
    async getIdempotency(scope, key) {
      const row = db.get<IdempotencyRow>(
        "SELECT scope, key, body_hash, status, response, created_at FROM idempotency WHERE scope = ? AND key = ?",
        scope,
        key,
      );
      return row && fromRow(row);
    },
    async putIdempotency(r) {
      db.run(
        "INSERT OR REPLACE INTO idempotency (scope, key, body_hash, status, response, created_at) " +
          "VALUES (?, ?, ?, ?, ?, ?)",
        r.scope,
        r.key,
        r.body_hash,
        r.status,
        json(r.response),
        r.created_at,
      );
    },
    async expireIdempotency(before) {
      return db.run("DELETE FROM idempotency WHERE created_at < ?", before).changes;
    },
  };
}
