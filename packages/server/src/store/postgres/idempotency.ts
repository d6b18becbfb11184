import type { IdempotencyRecord, Queries } from "../types.js";
import { json, type PgDb } from "./db.js";

/** jsonb response comes back parsed: a row is an IdempotencyRecord. */
const COLS = "scope, key, body_hash, status, response, created_at";

export type IdempotencyQueries = Pick<Queries, "getIdempotency" | "putIdempotency" | "expireIdempotency">;

export function idempotencyQueries(db: PgDb): IdempotencyQueries {
  return {
    async getIdempotency(scope, key) {
      return db.row<IdempotencyRecord>(`SELECT ${COLS} FROM idempotency WHERE scope = $1 AND key = $2`, [
        scope,
        key,
      ]);
    },
    async putIdempotency(r) {
      await db.run(
        `INSERT INTO idempotency (${COLS}) VALUES ($1, $2, $3, $4, $5::jsonb, $6) ` +
          "ON CONFLICT (scope, key) DO UPDATE SET body_hash = excluded.body_hash, status = excluded.status, " +
          "response = excluded.response, created_at = excluded.created_at",
        [r.scope, r.key, r.body_hash, r.status, json(r.response), r.created_at],
      );
    },
    async expireIdempotency(before) {
      return db.run("DELETE FROM idempotency WHERE created_at < $1", [before]);
    },
  };
}
