/** What PostgreSQL does its own way for keys: a revocation is announced to every instance. */
import type { Queries } from "../types.js";
import type { PgDb } from "./db.js";

/** NOTIFY channel of revoked keys (payload: the key id): every instance ends the streams the key opened. */
export const KEYS_CHANNEL = "cas_keys";

export function revokeKey(db: PgDb): Queries["revokeKey"] {
  // The notification goes out when this commits (with the surrounding transaction, if any).
  return async (id, at) => {
    const rows = await db.rows(
      "WITH r AS (UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id) " +
        `SELECT pg_notify('${KEYS_CHANNEL}', id) FROM r`,
      [at, id],
    );
    return rows.length > 0;
  };
}
