import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { AgentParams, Metadata } from "../../http/validate.js";
import { APPROVAL_POLICIES, type ApprovalPolicy } from "../../model/settings.js";
import { allPages } from "./all-pages.js";
import * as template from "./render.js";

export const AgentBody = z
  .object({
    model: z.string().optional(),
    instructions: z.string().nullable().optional(),
    tools: z.array(z.unknown()).nullable().optional(),
    name: z.string().nullable().optional(),
    metadata: Metadata.nullable().optional(),
    /** This server's extension: when the agent asks before it acts (model/settings.ts). */
    approval_policy: z.enum(APPROVAL_POLICIES).nullable().optional(),
  })
  .loose();

/** The settings a template body may carry (only this server's approval policy). */
export const approvalSetting = (b: { approval_policy?: ApprovalPolicy | null | undefined }) =>
  b.approval_policy !== undefined ? { settings: { approval_policy: b.approval_policy } } : {};

export function agentRoutes(app: App, { agents }: Application): void {
  app.post("/v1/agents", { schema: { body: AgentBody } }, async (req) => {
    const b = req.body;
    return template.agentObject(
      await agents.create(req.scope, {
        name: b.name ?? null,
        ...(b.model !== undefined ? { model: b.model } : {}),
        instructions: b.instructions ?? null,
        tools: { raw: b.tools ?? [], strict: false },
        metadata: b.metadata ?? {},
        ...approvalSetting(b),
      }),
    );
  });
  app.get("/v1/agents", async (req) => ({
    object: "list",
    data: (await allPages((o) => agents.list(req.scope, o))).map(template.agentObject),
  }));
  app.get("/v1/agents/:agent_id", { schema: { params: AgentParams } }, async (req) =>
    template.agentObject(await agents.get(req.scope, req.params.agent_id)),
  );
  app.post("/v1/agents/:agent_id", { schema: { params: AgentParams, body: AgentBody } }, async (req) => {
    const b = req.body;
    return template.agentObject(
      await agents.update(req.scope, req.params.agent_id, {
        ...(b.name !== undefined ? { name: b.name } : {}),
        ...(b.model !== undefined ? { model: b.model } : {}),
        ...(b.instructions !== undefined ? { instructions: b.instructions } : {}),
        ...(b.tools !== undefined ? { tools: { raw: b.tools ?? [], strict: false } } : {}),
        ...(b.metadata !== undefined ? { metadata: b.metadata ?? {} } : {}),
        ...approvalSetting(b),
      }),
    );
  });
  app.delete("/v1/agents/:agent_id", { schema: { params: AgentParams } }, async (req) => {
    await agents.delete(req.scope, req.params.agent_id);
    return { id: req.params.agent_id, object: "agent", deleted: true };
  });
}
