/** Environments this server prepares for sessions, and their reusable templates. */
import { environmentWebhookEvent } from "../outbox.js";
import type { EnvironmentRecord, EnvironmentTemplateRecord, Queries } from "../types.js";
import { asIs, json, jsonOrNull, listByCreated, parse, parseOrNull, type SqliteDb, setClause } from "./db.js";

interface EnvironmentRow {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  type: string;
  status: string;
  session_id: string | null;
  directory: string;
  config: string;
  secrets: string | null;
  error: string | null;
  vault_ids: string;
  owner_instance: string | null;
}

const ENV_COLS =
  "id, project_id, created_at, updated_at, type, status, session_id, directory, config, secrets, error, vault_ids, " +
  "owner_instance";

const envFromRow = (r: EnvironmentRow): EnvironmentRecord => ({
  id: r.id,
  project_id: r.project_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  type: r.type as EnvironmentRecord["type"],
  status: r.status as EnvironmentRecord["status"],
  session_id: r.session_id,
  directory: r.directory,
  config: parse(r.config),
  secrets: r.secrets,
  error: parseOrNull(r.error),
  vault_ids: parse(r.vault_ids),
  owner_instance: r.owner_instance,
});

const ENV_ENCODE = {
  updated_at: asIs,
  status: asIs,
  session_id: asIs,
  directory: asIs,
  config: json,
  secrets: asIs,
  error: jsonOrNull,
  vault_ids: json,
  owner_instance: asIs,
};

interface TemplateRow {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string | null;
  config: string;
  secrets: string | null;
}

const TEMPLATE_COLS = "id, project_id, created_at, updated_at, name, config, secrets";

const templateFromRow = (r: TemplateRow): EnvironmentTemplateRecord => ({
  id: r.id,
  project_id: r.project_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  name: r.name,
  config: parse(r.config),
  secrets: r.secrets,
});

const TEMPLATE_ENCODE = { updated_at: asIs, name: asIs, config: json, secrets: asIs };

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

export function environmentQueries(db: SqliteDb): EnvironmentQueries {
  const get = (id: string) => {
    const row = db.get<EnvironmentRow>(`SELECT ${ENV_COLS} FROM environments WHERE id = ?`, id);
    return row && envFromRow(row);
  };
  const getTemplate = (id: string) => {
    const row = db.get<TemplateRow>(`SELECT ${TEMPLATE_COLS} FROM environment_templates WHERE id = ?`, id);
    return row && templateFromRow(row);
  };
  return {
    async insertEnvironment(e) {
      db.run(
        `INSERT INTO environments (${ENV_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
      );
    },
    async getEnvironment(id) {
      return get(id);
    },
    async updateEnvironment(id, patch) {
      const set = setClause(patch, ENV_ENCODE);
      if (set.params.length === 0) return get(id);
      return db.atomic(() => {
        const before = get(id);
        db.run(`UPDATE environments SET ${set.sql} WHERE id = ?`, ...set.params, id);
        const after = get(id);
        // A lifecycle change is a webhook event, written with it: one delivery per subscribed endpoint.
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
    },
    async attachEnvironment(id, sessionId, at) {
      const changed = db.run(
        "UPDATE environments SET session_id = ?, updated_at = ? WHERE id = ? AND session_id IS NULL",
        sessionId,
        at,
        id,
      ).changes;
      return changed > 0 ? get(id) : undefined;
    },
    async listEnvironments(opts) {
      return listByCreated(db, {
        table: "environments",
        cols: ENV_COLS,
        where: ["project_id = ?"],
        params: [opts.project_id],
        opts,
        map: envFromRow,
      });
    },
    async listPendingEnvironments(limit) {
      return db
        .all<EnvironmentRow>(
          `SELECT ${ENV_COLS} FROM environments WHERE status = 'pending' ORDER BY created_at ASC, rid ASC LIMIT ?`,
          Math.max(0, Math.trunc(limit)),
        )
        .map(envFromRow);
    },
    async insertEnvironmentTemplate(t) {
      db.run(
        `INSERT INTO environment_templates (${TEMPLATE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        t.id,
        t.project_id,
        t.created_at,
        t.updated_at,
        t.name,
        json(t.config),
        t.secrets,
      );
    },
    async getEnvironmentTemplate(id) {
      return getTemplate(id);
    },
    async updateEnvironmentTemplate(id, patch) {
      const set = setClause(patch, TEMPLATE_ENCODE);
      if (set.params.length > 0) {
        db.run(`UPDATE environment_templates SET ${set.sql} WHERE id = ?`, ...set.params, id);
      }
      return getTemplate(id);
    },
    async deleteEnvironmentTemplate(id) {
      return db.run("DELETE FROM environment_templates WHERE id = ?", id).changes > 0;
    },
    async listEnvironmentTemplates(opts) {
      return listByCreated(db, {
        table: "environment_templates",
        cols: TEMPLATE_COLS,
        where: ["project_id = ?"],
        params: [opts.project_id],
        opts,
        map: templateFromRow,
      });
    },
  };
}
