/** Saved agents, per project. */
import type { SqlDb } from "../sql/db.js";
import { sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { AgentRecord, Queries } from "../types.js";

export const AGENTS = table<AgentRecord>("agents", {
  id: "value",
  project_id: "value",
  created_at: "value",
  updated_at: "value",
  name: "value",
  model: "value",
  instructions: "value",
  tools: "json",
  metadata: "json",
  extra: "json",
});

export type AgentQueries = Pick<
  Queries,
  "insertAgent" | "getAgent" | "updateAgent" | "deleteAgent" | "listAgents"
>;

export function agentQueries(db: SqlDb): AgentQueries {
  const agents = rows(db, AGENTS);
  return {
    async insertAgent(a) {
      await agents.insert(a);
    },
    getAgent: agents.get,
    updateAgent: (id, patch) => agents.update(id, patch),
    deleteAgent: agents.remove,
    listAgents: (opts) => agents.list(opts, [sql`project_id = ${opts.project_id}`]),
  };
}
