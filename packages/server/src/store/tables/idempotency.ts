/** Stored responses of requests made with an Idempotency-Key, per scope. */
import type { SqlDb } from "../sql/db.js";
import { sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { IdempotencyRecord, Queries } from "../types.js";

const IDEMPOTENCY = table<IdempotencyRecord>("idempotency", {
  scope: "value",
  key: "value",
  body_hash: "value",
  status: "value",
  response: "json",
  created_at: "value",
});

export type IdempotencyQueries = Pick<Queries, "getIdempotency" | "putIdempotency" | "expireIdempotency">;

export function idempotencyQueries(db: SqlDb): IdempotencyQueries {
  const records = rows(db, IDEMPOTENCY);
  return {
    getIdempotency: (scope, key) => records.first([sql`scope = ${scope}`, sql`key = ${key}`]),
    async putIdempotency(r) {
      await records.insert(
        r,
        {},
        sql` ON CONFLICT (scope, key) DO UPDATE SET body_hash = excluded.body_hash, status = excluded.status,
          response = excluded.response, created_at = excluded.created_at`,
      );
    },
    expireIdempotency: (before) => db.run(sql`DELETE FROM idempotency WHERE created_at < ${before}`),
  };
}
