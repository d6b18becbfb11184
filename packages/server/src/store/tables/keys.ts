/** API keys, per project (only their salted hashes). */
import type { SqlDb } from "../sql/db.js";
import { isIn, sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { KeyRecord, Queries } from "../types.js";

const KEYS = table<KeyRecord>("api_keys", {
  id: "value",
  project_id: "value",
  hash: "value",
  salt: "value",
  admin: "bool",
  created_at: "value",
  revoked_at: "value",
});

export type KeyQueries = Pick<
  Queries,
  "insertKey" | "getKey" | "listKeys" | "revokeKey" | "hasKeys" | "inactiveKeys"
>;

export function keyQueries(db: SqlDb): KeyQueries {
  const keys = rows(db, KEYS);
  return {
    async insertKey(k) {
      await keys.insert(k);
    },
    getKey: keys.get,
    listKeys: () => keys.select([], sql` ORDER BY created_at ASC, id ASC`),
    async hasKeys() {
      return (await db.value<unknown>(sql`SELECT 1 FROM api_keys LIMIT 1`)) !== null;
    },
    async inactiveKeys(ids) {
      if (ids.length === 0) return [];
      const active = await db.rows<{ id: string }>(
        sql`SELECT id FROM api_keys WHERE ${isIn("id", ids)} AND revoked_at IS NULL`,
      );
      const live = new Set(active.map((r) => r.id));
      return ids.filter((id) => !live.has(id));
    },
    async revokeKey(id, at) {
      return (
        (await db.run(sql`UPDATE api_keys SET revoked_at = ${at} WHERE id = ${id} AND revoked_at IS NULL`)) >
        0
      );
    },
  };
}
