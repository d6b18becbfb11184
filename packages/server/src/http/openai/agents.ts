import type { FastifyRequest } from "fastify";
import { z } from "zod";
import type { AppDeps } from "../../app.js";
import * as openai from "../../wire/openai.js";
import type { Handlers } from "../routes.js";
import { ListQuery, Metadata, parse } from "../validate.js";

/** Settings we keep verbatim and echo back (the engine uses model, instructions and tools). */
const Settings = {
  reasoning: z
    .object({ effort: z.string().nullable().optional(), summary: z.string().nullable().optional() })
    .nullable()
    .optional(),
  text: z.object({}).loose().nullable().optional(),
  service_tier: z.string().nullable().optional(),
  multi_agent: z.object({ enabled: z.boolean() }).loose().nullable().optional(),
  compaction: z.object({}).loose().nullable().optional(),
  experimental: z.object({}).loose().nullable().optional(),
};

export const AgentCreate = z.object({
  model: z.string().min(1),
  name: z.string().nullable().optional(),
  instructions: z.string().nullable().optional(),
  tools: z
    .array(z.object({ type: z.string() }).loose())
    .nullable()
    .optional(),
  metadata: Metadata.nullable().optional(),
  ...Settings,
});
const AgentUpdate = AgentCreate.partial();

export function settingsOf(b: Partial<Record<keyof typeof Settings, unknown>>): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  for (const key of Object.keys(Settings) as Array<keyof typeof Settings>) {
    if (b[key] !== undefined) extra[key] = b[key] ?? undefined;
  }
  return extra;
}

type Params = { agent_id: string };

export function openaiAgentHandlers(deps: AppDeps): Handlers {
  const { agents } = deps;
  return {
    createAgent: async (req) => {
      const b = parse(AgentCreate, req.body);
      return openai.agentObject(
        agents.create({
          model: b.model,
          name: b.name ?? null,
          instructions: b.instructions ?? null,
          tools: b.tools ?? [],
          metadata: b.metadata ?? {},
          extra: settingsOf(b),
        }),
      );
    },
    listAgents: async (req) => {
      const q = parse(ListQuery, req.query, "query");
      const p = agents.list(q);
      return openai.page({ data: p.data.map(openai.agentObject), has_more: p.has_more });
    },
    getAgent: async (req: FastifyRequest<{ Params: Params }>) =>
      openai.agentObject(agents.get(req.params.agent_id)),
    updateAgent: async (req: FastifyRequest<{ Params: Params }>) => {
      const b = parse(AgentUpdate, req.body);
      return openai.agentObject(
        agents.update(req.params.agent_id, {
          ...(b.model !== undefined ? { model: b.model } : {}),
          ...(b.name !== undefined ? { name: b.name } : {}),
          ...(b.instructions !== undefined ? { instructions: b.instructions } : {}),
          ...(b.tools !== undefined ? { tools: b.tools ?? [] } : {}),
          ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
          extra: settingsOf(b),
        }),
      );
    },
    deleteAgent: async (req: FastifyRequest<{ Params: Params }>) => {
      agents.delete(req.params.agent_id);
      return { id: req.params.agent_id, object: "agent.deleted", deleted: true };
    },
  };
}
