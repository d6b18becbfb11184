import type { KeyRecord, Queries } from "../types.js";
import type { SqliteDb } from "./db.js";

interface KeyRow {
  id: string;
  project_id: string;
  hash: string;
  salt: string;
  admin: number;
  created_at: number;
  revoked_at: number | null;
}

const COLS = "id, project_id, hash, salt, admin, created_at, revoked_at";
const fromRow = (r: KeyRow): KeyRecord => ({ ...r, admin: r.admin === 1 });

export type KeyQueries = Pick<
  Queries,
  "insertKey" | "getKey" | "listKeys" | "revokeKey" | "hasKeys" | "inactiveKeys"
>;

export function keyQueries(db: SqliteDb): KeyQueries {
  return {
    async insertKey(k) {
      db.run(
        `INSERT INTO api_keys (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        k.id,
        k.project_id,
        k.hash,
        k.salt,
        k.admin ? 1 : 0,
        k.created_at,
        k.revoked_at,
      );
    },
    async getKey(id) {
      const row = db.get<KeyRow>(`SELECT ${COLS} FROM api_keys WHERE id = ?`, id);
      return row && fromRow(row);
    },
    async listKeys() {
      return db.all<KeyRow>(`SELECT ${COLS} FROM api_keys ORDER BY created_at ASC, id ASC`).map(fromRow);
    },
    async hasKeys() {
      return db.value<number>("SELECT EXISTS (SELECT 1 FROM api_keys)") === 1;
    },
    async inactiveKeys(ids) {
      if (ids.length === 0) return [];
      return db
        .rows(
          "SELECT j.value FROM json_each(?) AS j WHERE NOT EXISTS " +
            "(SELECT 1 FROM api_keys k WHERE k.id = j.value AND k.revoked_at IS NULL)",
          JSON.stringify(ids),
        )
        .map((r) => String(r[0]));
    },
    async revokeKey(id, at) {
      return (
        db.run("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", at, id).changes > 0
      );
    },
  };
}
