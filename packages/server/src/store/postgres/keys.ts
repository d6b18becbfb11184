import type { KeyRecord, Queries } from "../types.js";
import type { PgDb } from "./db.js";

const COLS = "id, project_id, hash, salt, admin, created_at, revoked_at";

export type KeyQueries = Pick<Queries, "insertKey" | "getKey" | "listKeys" | "revokeKey" | "hasActiveKeys">;

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
    async hasActiveKeys() {
      return (
        (await db.value<boolean>("SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL)")) === true
      );
    },
    async revokeKey(id, at) {
      return (
        (await db.run("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", [at, id])) >
        0
      );
    },
  };
}
