/** Environments this server prepares for sessions, and their reusable templates. */
import { environmentWebhookEvent } from "../outbox.js";
import type { EnvironmentRecord, EnvironmentTemplateRecord, Queries } from "../types.js";
import { asIs, asJson, asJsonOrNull, json, jsonOrNull, listByCreated, type PgDb, setClause } from "./db.js";

/** jsonb columns come back parsed: a row is the record. */
const ENV_COLS =
  "id, project_id, created_at, updated_at, type, status, session_id, directory, config, secrets, error, vault_ids, " +
  "owner_instance";

const ENV_ENCODE = {
  updated_at: asIs,
  status: asIs,
  session_id: asIs,
  directory: asIs,
  config: asJson,
  secrets: asIs,
  error: asJsonOrNull,
  vault_ids: asJson,
  owner_instance: asIs,
};

const TEMPLATE_COLS = "id, project_id, created_at, updated_at, name, config, secrets";

const TEMPLATE_ENCODE = { updated_at: asIs, name: asIs, config: asJson, secrets: asIs };

export type EnvironmentQueries = Pick<
  Queries,
  | "insertEnvironment"
  | "getEnvironment"
  | "updateEnvironment"
  | "attachEnvironment"
  | "listEnvironments"
  | "listPendingEnvironments"
  | "insertEnvironmentTemplate"
  | "getEnvironmentTemplate"
  | "updateEnvironmentTemplate"
  | "deleteEnvironmentTemplate"
  | "listEnvironmentTemplates"
>;

export function environmentQueries(db: PgDb): EnvironmentQueries {
  const get = (id: string) =>
    db.row<EnvironmentRecord>(`SELECT ${ENV_COLS} FROM environments WHERE id = $1`, [id]);
  const getTemplate = (id: string) =>
    db.row<EnvironmentTemplateRecord>(`SELECT ${TEMPLATE_COLS} FROM environment_templates WHERE id = $1`, [
      id,
    ]);
  return {
    async insertEnvironment(e) {
      await db.run(
        `INSERT INTO environments (${ENV_COLS}) ` +
          "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11::jsonb, $12::jsonb, $13)",
        [
          e.id,
          e.project_id,
          e.created_at,
          e.updated_at,
          e.type,
          e.status,
          e.session_id,
          e.directory,
          json(e.config),
          e.secrets,
          jsonOrNull(e.error),
          json(e.vault_ids),
          e.owner_instance,
        ],
      );
    },
    getEnvironment: get,
    async updateEnvironment(id, patch) {
      const set = setClause(patch, ENV_ENCODE, 2);
      if (set.params.length === 0) return get(id);
      // Its time is the environment's updated_at as stored (read back in the statement below).
      const hook = environmentWebhookEvent(id, patch.status, 0);
      if (!hook) {
        return db.row<EnvironmentRecord>(
          `UPDATE environments SET ${set.sql} WHERE id = $1 RETURNING ${ENV_COLS}`,
          [id, ...set.params],
        );
      }
      // A lifecycle change is a webhook event, written in the same statement (one delivery per subscribed
      // endpoint), once: the old status is read under the row lock (a racing update waits, then sees the other's).
      const n = set.params.length + 2;
      return db.row<EnvironmentRecord>(
        `WITH updated AS (UPDATE environments SET ${set.sql} ` +
          "FROM (SELECT id AS prev_id, status AS prev_status FROM environments WHERE id = $1 FOR UPDATE) prev " +
          `WHERE environments.id = prev.prev_id RETURNING ${ENV_COLS}, prev.prev_status), ` +
          "hook AS (INSERT INTO webhook_deliveries (id, endpoint_id, project_id, session_id, event_id, event_type, " +
          "event_created_at, data, created_at, status, next_attempt_at) " +
          `SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), w.id, w.project_id, u.session_id, ` +
          `$${n}, $${n + 1}, u.updated_at, $${n + 2}::jsonb, u.updated_at, 'pending', u.updated_at ` +
          `FROM updated u JOIN webhook_endpoints w ON w.project_id = u.project_id AND w.event_types ? $${n + 1} ` +
          "WHERE u.prev_status IS DISTINCT FROM u.status) " +
          `SELECT ${ENV_COLS} FROM updated`,
        [id, ...set.params, hook.event_id, hook.type, json(hook.data)],
      );
    },
    async attachEnvironment(id, sessionId, at) {
      return db.row<EnvironmentRecord>(
        "UPDATE environments SET session_id = $2, updated_at = $3 WHERE id = $1 AND session_id IS NULL " +
          `RETURNING ${ENV_COLS}`,
        [id, sessionId, at],
      );
    },
    async listEnvironments(opts) {
      return listByCreated<EnvironmentRecord, EnvironmentRecord>(db, {
        table: "environments",
        cols: ENV_COLS,
        where: ["project_id = $1"],
        params: [opts.project_id],
        opts,
        map: (r) => r,
      });
    },
    async listPendingEnvironments(limit) {
      return db.rows<EnvironmentRecord>(
        `SELECT ${ENV_COLS} FROM environments WHERE status = 'pending' ORDER BY created_at ASC, rid ASC LIMIT $1`,
        [Math.max(0, Math.trunc(limit))],
      );
    },
    async insertEnvironmentTemplate(t) {
      await db.run(
        `INSERT INTO environment_templates (${TEMPLATE_COLS}) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)`,
        [t.id, t.project_id, t.created_at, t.updated_at, t.name, json(t.config), t.secrets],
      );
    },
    getEnvironmentTemplate: getTemplate,
    async updateEnvironmentTemplate(id, patch) {
      const set = setClause(patch, TEMPLATE_ENCODE, 2);
      if (set.params.length === 0) return getTemplate(id);
      return db.row<EnvironmentTemplateRecord>(
        `UPDATE environment_templates SET ${set.sql} WHERE id = $1 RETURNING ${TEMPLATE_COLS}`,
        [id, ...set.params],
      );
    },
    async deleteEnvironmentTemplate(id) {
      return (await db.run("DELETE FROM environment_templates WHERE id = $1", [id])) > 0;
    },
    async listEnvironmentTemplates(opts) {
      return listByCreated<EnvironmentTemplateRecord, EnvironmentTemplateRecord>(db, {
        table: "environment_templates",
        cols: TEMPLATE_COLS,
        where: ["project_id = $1"],
        params: [opts.project_id],
        opts,
        map: (r) => r,
      });
    },
  };
}
