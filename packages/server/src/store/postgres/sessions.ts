/** What PostgreSQL does its own way for sessions: deleting one, with its idempotency rows, in one statement. */
import type { Queries } from "../types.js";
import type { PgDb } from "./db.js";

export function deleteSession(db: PgDb): Queries["deleteSession"] {
  // One statement (atomic on its own); turns, items, events and the goal go with it (ON DELETE CASCADE).
  return async (id) =>
    (await db.run(
      "WITH idem AS (DELETE FROM idempotency WHERE scope = $1) DELETE FROM sessions WHERE id = $1",
      [id],
    )) > 0;
}
