/** What SQLite does its own way for sessions: deleting one (with its idempotency rows and its log counters). */
import type { Queries } from "../types.js";
import type { Counters } from "./counters.js";
import type { SqliteDb } from "./db.js";

export function deleteSession(db: SqliteDb, counters: Counters): Queries["deleteSession"] {
  return async (id) => {
    const deleted = db.atomic(() => {
      db.run("DELETE FROM idempotency WHERE scope = ?", id);
      // turns, items, events and the goal go with it (ON DELETE CASCADE)
      return db.run("DELETE FROM sessions WHERE id = ?", id).changes > 0;
    });
    counters.forget(id);
    return deleted;
  };
}
