import type { FastifyRequest } from "fastify";
import { z } from "zod";
import type { AppDeps } from "../../app.js";
import * as template from "../../wire/template.js";
import type { Handlers } from "../routes.js";
import { Metadata, parse } from "../validate.js";
import { allPages } from "./all-pages.js";

export const AgentBody = z
  .object({
    model: z.string().optional(),
    instructions: z.string().nullable().optional(),
    tools: z.array(z.unknown()).nullable().optional(),
    name: z.string().nullable().optional(),
    metadata: Metadata.nullable().optional(),
  })
  .loose();

type Params = { agent_id: string };

export function templateAgentHandlers(deps: AppDeps): Handlers {
  const { agents } = deps;
  return {
    createAgent: async (req) => {
      const b = parse(AgentBody, req.body);
      return template.agentObject(
        agents.create({
          name: b.name ?? null,
          ...(b.model !== undefined ? { model: b.model } : {}),
          instructions: b.instructions ?? null,
          tools: b.tools ?? [],
          metadata: b.metadata ?? {},
        }),
      );
    },

    listAgents: async () => ({
      object: "list",
      data: allPages((o) => agents.list(o)).map(template.agentObject),
    }),

    getAgent: async (req: FastifyRequest<{ Params: Params }>) =>
      template.agentObject(agents.get(req.params.agent_id)),

    updateAgent: async (req: FastifyRequest<{ Params: Params }>) => {
      const b = parse(AgentBody, req.body);
      return template.agentObject(
        agents.update(req.params.agent_id, {
          ...(b.name !== undefined ? { name: b.name } : {}),
          ...(b.model !== undefined ? { model: b.model } : {}),
          ...(b.instructions !== undefined ? { instructions: b.instructions } : {}),
          ...(b.tools !== undefined ? { tools: b.tools ?? [] } : {}),
          ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
        }),
      );
    },

    deleteAgent: async (req: FastifyRequest<{ Params: Params }>) => {
      agents.delete(req.params.agent_id);
      return { id: req.params.agent_id, object: "agent", deleted: true };
    },
  };
}
