/**
 * What SQLite does its own way for environments: a change of status is a webhook event, written with the change in
 * one synchronous (so atomic) step — one delivery per subscribed endpoint.
 */
import { environmentWebhookEvent } from "../outbox.js";
import { render } from "../sql/db.js";
import { join, sql } from "../sql/query.js";
import { assignments } from "../sql/table.js";
import { ENVIRONMENTS } from "../tables/environments.js";
import type { EnvironmentRecord, Queries } from "../types.js";
import { SQLITE, type SqliteDb } from "./db.js";

export function updateEnvironment(db: SqliteDb): Queries["updateEnvironment"] {
  const get = (id: string): EnvironmentRecord | undefined => {
    const q = render(sql`SELECT ${ENVIRONMENTS.columns} FROM environments WHERE id = ${id}`, SQLITE);
    const row = db.get<unknown>(q.text, ...q.params);
    return row === undefined ? undefined : ENVIRONMENTS.decode(row, false);
  };
  return async (id, patch) => {
    const set = assignments(ENVIRONMENTS, patch);
    if (set.length === 0) return get(id);
    const update = render(sql`UPDATE environments SET ${join(set, ", ")} WHERE id = ${id}`, SQLITE);
    return db.atomic(() => {
      const before = get(id);
      db.run(update.text, ...update.params);
      const after = get(id);
      const hook =
        before && after && before.status !== after.status
          ? environmentWebhookEvent(id, after.status, after.updated_at)
          : null;
      if (after && hook) {
        db.run(
          "INSERT INTO webhook_deliveries (id, endpoint_id, project_id, session_id, event_id, event_type, " +
            "event_created_at, data, created_at, status, next_attempt_at) " +
            "SELECT 'whd_' || lower(hex(randomblob(16))), w.id, w.project_id, ?, ?, ?, ?, ?, ?, 'pending', ? " +
            "FROM webhook_endpoints w WHERE w.project_id = ? " +
            "AND EXISTS (SELECT 1 FROM json_each(w.event_types) AS t WHERE t.value = ?)",
          after.session_id,
          hook.event_id,
          hook.type,
          hook.created_at,
          JSON.stringify(hook.data),
          hook.created_at,
          hook.created_at,
          after.project_id,
          hook.type,
        );
      }
      return after;
    });
  };
}
