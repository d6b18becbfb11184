import type { AgentRecord, Queries } from "../types.js";
import { asIs, json, listByCreated, parse, type SqliteDb, setClause } from "./db.js";

interface AgentRow {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string | null;
  model: string;
  instructions: string | null;
  tools: string;
  metadata: string;
  extra: string;
}

const COLS = "id, project_id, created_at, updated_at, name, model, instructions, tools, metadata, extra";

const fromRow = (r: AgentRow): AgentRecord => ({
  id: r.id,
  project_id: r.project_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  name: r.name,
  model: r.model,
  instructions: r.instructions,
  tools: parse(r.tools),
  metadata: parse(r.metadata),
  extra: parse(r.extra),
});

const ENCODE = {
  updated_at: asIs,
  name: asIs,
  model: asIs,
  instructions: asIs,
  tools: json,
  metadata: json,
  extra: json,
};

export type AgentQueries = Pick<
  Queries,
  "insertAgent" | "getAgent" | "updateAgent" | "deleteAgent" | "listAgents"
>;

export function agentQueries(db: SqliteDb): AgentQueries {
  const get = (id: string) => {
    const row = db.get<AgentRow>(`SELECT ${COLS} FROM agents WHERE id = ?`, id);
    return row && fromRow(row);
  };
  return {
    async insertAgent(a) {
      db.run(
        `INSERT INTO agents (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        a.id,
        a.project_id,
        a.created_at,
        a.updated_at,
        a.name,
        a.model,
        a.instructions,
        json(a.tools),
        json(a.metadata),
        json(a.extra),
      );
    },
    async getAgent(id) {
      return get(id);
    },
    async updateAgent(id, patch) {
      const set = setClause(patch, ENCODE);
      if (set.params.length > 0) db.run(`UPDATE agents SET ${set.sql} WHERE id = ?`, ...set.params, id);
      return get(id);
    },
    async deleteAgent(id) {
      return db.run("DELETE FROM agents WHERE id = ?", id).changes > 0;
    },
    async listAgents(opts) {
      return listByCreated(db, {
        table: "agents",
        cols: COLS,
        where: ["project_id = ?"],
        params: [opts.project_id],
        opts,
        map: fromRow,
      });
    },
  };
}
