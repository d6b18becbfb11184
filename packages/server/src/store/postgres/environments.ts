/**
 * What PostgreSQL does its own way for environments: a change of status is a webhook event written in the same
 * statement (one delivery per subscribed endpoint), once: the old status is read under the row lock (a racing
 * update waits, then sees the other's).
 */
import { environmentWebhookEvent } from "../outbox.js";
import { join, jsonParam, sql } from "../sql/query.js";
import { assignments, rows } from "../sql/table.js";
import { ENVIRONMENTS } from "../tables/environments.js";
import type { Queries } from "../types.js";
import { type PgDb, sqlDb } from "./db.js";

export function updateEnvironment(pg: PgDb): Queries["updateEnvironment"] {
  const db = sqlDb(pg);
  const environments = rows(db, ENVIRONMENTS);
  return async (id, patch) => {
    const set = assignments(ENVIRONMENTS, patch);
    // Its time is the environment's updated_at as stored (read back in the statement below).
    const hook = environmentWebhookEvent(id, patch.status, 0);
    if (set.length === 0 || !hook) return environments.update(id, patch);
    const cols = ENVIRONMENTS.columns;
    const [row] = environments.decode(
      await db.rows<unknown>(
        sql`WITH updated AS (UPDATE environments SET ${join(set, ", ")}
            FROM (SELECT id AS prev_id, status AS prev_status FROM environments WHERE id = ${id} FOR UPDATE) prev
            WHERE environments.id = prev.prev_id RETURNING ${cols}, prev.prev_status),
          hook AS (INSERT INTO webhook_deliveries (id, endpoint_id, project_id, session_id, event_id, event_type,
              event_created_at, data, created_at, status, next_attempt_at)
            SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), w.id, w.project_id, u.session_id,
              ${hook.event_id}, ${hook.type}, u.updated_at, ${jsonParam(hook.data)}, u.updated_at, 'pending', u.updated_at
            FROM updated u JOIN webhook_endpoints w ON w.project_id = u.project_id AND w.event_types ? ${hook.type}
            WHERE u.prev_status IS DISTINCT FROM u.status)
        SELECT ${cols} FROM updated`,
      ),
    );
    return row;
  };
}
