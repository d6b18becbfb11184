import type { AgentRecord, Queries } from "../types.js";
import { asIs, asJson, json, listByCreated, type PgDb, setClause } from "./db.js";

/** jsonb columns come back parsed: a row is an AgentRecord. */
const COLS = "id, project_id, created_at, updated_at, name, model, instructions, tools, metadata, extra";

const ENCODE = {
  updated_at: asIs,
  name: asIs,
  model: asIs,
  instructions: asIs,
  tools: asJson,
  metadata: asJson,
  extra: asJson,
};

export type AgentQueries = Pick<
  Queries,
  "insertAgent" | "getAgent" | "updateAgent" | "deleteAgent" | "listAgents"
>;

export function agentQueries(db: PgDb): AgentQueries {
  const get = (id: string) => db.row<AgentRecord>(`SELECT ${COLS} FROM agents WHERE id = $1`, [id]);
  return {
    async insertAgent(a) {
      await db.run(
        `INSERT INTO agents (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10::jsonb)`,
        [
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
        ],
      );
    },
    getAgent: get,
    async updateAgent(id, patch) {
      const set = setClause(patch, ENCODE, 2);
      if (set.params.length === 0) return get(id);
      return db.row<AgentRecord>(`UPDATE agents SET ${set.sql} WHERE id = $1 RETURNING ${COLS}`, [
        id,
        ...set.params,
      ]);
    },
    async deleteAgent(id) {
      return (await db.run("DELETE FROM agents WHERE id = $1", [id])) > 0;
    },
    async listAgents(opts) {
      return listByCreated<AgentRecord, AgentRecord>(db, {
        table: "agents",
        cols: COLS,
        where: ["project_id = $1"],
        params: [opts.project_id],
        opts,
        map: (r) => r,
      });
    },
  };
}
