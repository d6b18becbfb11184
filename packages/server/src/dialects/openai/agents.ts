import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { AgentParams, ListQuery, Metadata } from "../../http/validate.js";
import { APPROVAL_POLICIES, type SettingsPatch } from "../../model/settings.js";
import * as openai from "./render.js";

/** Model settings (`model/settings.ts`): each part may be partial; it is merged over the documented defaults. */
export const Settings = {
  reasoning: z
    .object({
      effort: z.enum(["none", "minimal", "low", "medium", "high", "xhigh", "max"]).nullable().optional(),
      summary: z.enum(["concise", "detailed", "auto"]).nullable().optional(),
    })
    .nullable()
    .optional(),
  text: z
    .object({
      format: z
        .discriminatedUnion("type", [
          z.object({ type: z.literal("text") }),
          z.object({ type: z.literal("json_schema"), schema: z.record(z.string(), z.unknown()) }),
        ])
        .optional(),
      verbosity: z.enum(["low", "medium", "high"]).optional(),
    })
    .nullable()
    .optional(),
  service_tier: z.enum(["auto", "default", "flex", "priority", "fast", "ultrafast"]).nullable().optional(),
  multi_agent: z
    .object({
      enabled: z.boolean().optional(),
      max_concurrent_subagents: z.number().int().min(1).nullable().optional(),
    })
    .nullable()
    .optional(),
  /** This server's extension (see model/settings.ts). */
  approval_policy: z.enum(APPROVAL_POLICIES).nullable().optional(),
  compaction: z.object({ async: z.boolean() }).nullable().optional(),
  experimental: z.object({ time_awareness: z.boolean() }).nullable().optional(),
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

/** The settings part of a body, as a patch (absent fields are left out). */
export function settingsPatch(b: Partial<z.infer<z.ZodObject<typeof Settings>>>): SettingsPatch {
  const patch: SettingsPatch = {};
  for (const key of Object.keys(Settings) as Array<keyof typeof Settings>) {
    if (b[key] !== undefined) Object.assign(patch, { [key]: b[key] });
  }
  return patch;
}

export function agentRoutes(app: App, { agents }: Application): void {
  app.post("/v1/agents", { schema: { body: AgentCreate } }, async (req) => {
    const b = req.body;
    return openai.agentObject(
      await agents.create(req.scope, {
        model: b.model,
        name: b.name ?? null,
        instructions: b.instructions ?? null,
        tools: { raw: b.tools ?? [], strict: true },
        metadata: b.metadata ?? {},
        settings: settingsPatch(b),
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
        ...(b.tools !== undefined ? { tools: { raw: b.tools ?? [], strict: true } } : {}),
        ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
        settings: settingsPatch(b),
      }),
    );
  });
  app.delete("/v1/agents/:agent_id", { schema: { params: AgentParams } }, async (req) => {
    await agents.delete(req.scope, req.params.agent_id);
    return { id: req.params.agent_id, object: "agent.deleted", deleted: true };
  });
}
