/**
 * Environments this server prepares for sessions, and their reusable templates. A change of an environment's
 * status is a webhook event written with it: each backend does that in its own way (updateEnvironment lives there).
 */
import type { SqlDb } from "../sql/db.js";
import { limitOf, sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { EnvironmentRecord, EnvironmentTemplateRecord, Queries } from "../types.js";

export const ENVIRONMENTS = table<EnvironmentRecord>("environments", {
  id: "value",
  project_id: "value",
  created_at: "value",
  updated_at: "value",
  type: "value",
  status: "value",
  session_id: "value",
  directory: "value",
  config: "json",
  secrets: "value",
  error: "json?",
  vault_ids: "json",
  owner_instance: "value",
});

const TEMPLATES = table<EnvironmentTemplateRecord>("environment_templates", {
  id: "value",
  project_id: "value",
  created_at: "value",
  updated_at: "value",
  name: "value",
  config: "json",
  secrets: "value",
});

export type EnvironmentQueries = Pick<
  Queries,
  | "insertEnvironment"
  | "getEnvironment"
  | "attachEnvironment"
  | "listEnvironments"
  | "listPendingEnvironments"
  | "insertEnvironmentTemplate"
  | "getEnvironmentTemplate"
  | "updateEnvironmentTemplate"
  | "deleteEnvironmentTemplate"
  | "listEnvironmentTemplates"
>;

export function environmentQueries(db: SqlDb): EnvironmentQueries {
  const environments = rows(db, ENVIRONMENTS);
  const templates = rows(db, TEMPLATES);
  return {
    async insertEnvironment(e) {
      await environments.insert(e);
    },
    getEnvironment: environments.get,
    attachEnvironment: (id, sessionId, at) =>
      environments.update(
        id,
        { session_id: sessionId, updated_at: at },
        { conds: [sql`session_id IS NULL`] },
      ),
    listEnvironments: (opts) => environments.list(opts, [sql`project_id = ${opts.project_id}`]),
    listPendingEnvironments: (limit) =>
      environments.select(
        [sql`status = 'pending'`],
        sql` ORDER BY created_at ASC, rid ASC LIMIT ${limitOf(limit)}`,
      ),
    async insertEnvironmentTemplate(t) {
      await templates.insert(t);
    },
    getEnvironmentTemplate: templates.get,
    updateEnvironmentTemplate: (id, patch) => templates.update(id, patch),
    deleteEnvironmentTemplate: templates.remove,
    listEnvironmentTemplates: (opts) => templates.list(opts, [sql`project_id = ${opts.project_id}`]),
  };
}
