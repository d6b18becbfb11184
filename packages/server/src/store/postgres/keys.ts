import type { KeyRecord, Queries } from "../types.js";
import type { PgDb } from "./db.js";

const COLS = "id, project_id, hash, salt, admin, created_at, revoked_at";

export type KeyQueries = Pick<
  Queries,
  "insertKey" | "getKey" | "listKeys" | "revokeKey" | "hasKeys" | "inactiveKeys"
>;

/** NOTIFY channel of revoked keys (payload: the key id): every instance ends the streams the key opened. */
export const KEYS_CHANNEL = "cas_keys";

/** Rows are KeyRecords as they are (admin is a boolean column). */
export function keyQueries(db: PgDb): KeyQueries {
  return {
    async insertKey(k) {
      await db.run(`INSERT INTO api_keys (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
        k.id,
        k.project_id,
        k.hash,
        k.salt,
        k.admin,
        k.created_at,
        k.revoked_at,
      ]);
    },
    async getKey(id) {
      return db.row<KeyRecord>(`SELECT ${COLS} FROM api_keys WHERE id = $1`, [id]);
    },
    async listKeys() {
      return db.rows<KeyRecord>(`SELECT ${COLS} FROM api_keys ORDER BY created_at ASC, id ASC`);
    },
    async hasKeys() {
      return (await db.value<boolean>("SELECT EXISTS (SELECT 1 FROM api_keys)")) === true;
    },
    async inactiveKeys(ids) {
      if (ids.length === 0) return [];
      const rows = await db.rows<{ id: string }>(
        "SELECT i.id FROM unnest($1::text[]) AS i(id) WHERE NOT EXISTS " +
          "(SELECT 1 FROM api_keys k WHERE k.id = i.id AND k.revoked_at IS NULL)",
        [ids],
      );
      return rows.map((r) => r.id);
    },
    async revokeKey(id, at) {
      // The notification goes out when this commits (with the surrounding transaction, if any).
      const rows = await db.rows(
        "WITH r AS (UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING id) " +
          `SELECT pg_notify('${KEYS_CHANNEL}', id) FROM r`,
        [at, id],
      );
      return rows.length > 0;
    },
  };
}
