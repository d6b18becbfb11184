import { z } from "zod";
import type { Core } from "../../core.js";
import * as openai from "../../wire/openai.js";
import type { App } from "../app-types.js";
import { AgentParams, ListQuery, Metadata } from "../validate.js";

/** Settings we keep and echo back (the engine uses model, instructions and tools). */
export const Settings = {
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

export const Tools = z
  .array(z.object({ type: z.string() }).loose())
  .nullable()
  .optional();

export const AgentCreate = z.object({
  model: z.string().min(1),
  name: z.string().nullable().optional(),
  instructions: z.string().nullable().optional(),
  tools: Tools,
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

export function agentRoutes(app: App, core: Core): void {
  const { agents } = core;
  app.post("/v1/agents", { schema: { body: AgentCreate } }, async (req) => {
    const b = req.body;
    return openai.agentObject(
      await agents.create(req.scope, {
        model: b.model,
        name: b.name ?? null,
        instructions: b.instructions ?? null,
        tools: b.tools ?? [],
        metadata: b.metadata ?? {},
        extra: settingsOf(b),
      }),
    );
  });
  app.get("/v1/agents", { schema: { querystring: ListQuery } }, async (req) => {
    const p = await agents.list(req.scope, req.query);
    return openai.page({ data: p.data.map(openai.agentObject), has_more: p.has_more });
  });
  app.get("/v1/agents/:agent_id", { schema: { params: AgentParams } }, async (req) =>
    openai.agentObject(await agents.get(req.scope, req.params.agent_id)),
  );
  app.post("/v1/agents/:agent_id", { schema: { params: AgentParams, body: AgentUpdate } }, async (req) => {
    const b = req.body;
    return openai.agentObject(
      await agents.update(req.scope, req.params.agent_id, {
        ...(b.model !== undefined ? { model: b.model } : {}),
        ...(b.name !== undefined ? { name: b.name } : {}),
        ...(b.instructions !== undefined ? { instructions: b.instructions } : {}),
        ...(b.tools !== undefined ? { tools: b.tools ?? [] } : {}),
        ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
        extra: settingsOf(b),
      }),
    );
  });
  app.delete("/v1/agents/:agent_id", { schema: { params: AgentParams } }, async (req) => {
    await agents.delete(req.scope, req.params.agent_id);
    return { id: req.params.agent_id, object: "agent.deleted", deleted: true };
  });
}
