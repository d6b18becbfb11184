/**
 * Official environments (`client.beta.agents.environments.*`): environments this server prepares ahead of a
 * session, their files and templates (what a session's own `environment` gives it: application/session-environment.ts).
 */

import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { idempotent } from "../../http/idempotency.js";
import { ListQuery } from "../../http/validate.js";
import { badRequest } from "../../kernel/errors.js";
import { environmentFileObject, environmentInfoObject, templateObject } from "./render/environments.js";
import * as openai from "./render.js";

const EnvironmentParams = z.object({ environment_id: z.string() });
const TemplateParams = z.object({ environment_template_id: z.string() });

const EnvironmentCreate = z.object({
  environment: z.object({ type: z.literal("openai_hosted") }).loose(),
  vault_ids: z.array(z.string()).max(10).nullable().optional(),
});

const EnvironmentListQuery = ListQuery.extend({ type: z.literal("openai_hosted").optional() });

const FileCreate = z.discriminatedUnion("type", [
  z.object({ type: z.literal("inline"), path: z.string(), data: z.string() }).strict(),
  z.object({ type: z.literal("file_id"), path: z.string(), file_id: z.string() }).strict(),
]);

const FileListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional(),
  order: z.enum(["asc", "desc"]).optional(),
  page: z.string().min(1).optional(),
  path: z.string().min(1).optional(),
});

export function environmentRoutes(app: App, ops: Application): void {
  const { environments } = ops;

  app.post("/v1/agents/environments", { schema: { body: EnvironmentCreate } }, async (req, reply) => {
    const b = req.body;
    const plan = await ops.planEnvironmentAhead(req.scope, b.environment, b.vault_ids);
    return idempotent(ops.idempotency, `environments:${req.scope.projectId}`, req, reply, async () => ({
      status: 200,
      body: environmentInfoObject(await environments.createAhead(req.scope, plan)),
    }));
  });

  app.get("/v1/agents/environments", { schema: { querystring: EnvironmentListQuery } }, async (req) => {
    const q = req.query;
    const p = await environments.list(req.scope, {
      ...(q.limit ? { limit: q.limit } : {}),
      ...(q.after ? { after: q.after } : {}),
      ...(q.order ? { order: q.order } : {}),
    });
    return openai.page({ data: p.data.map(environmentInfoObject), has_more: p.has_more });
  });

  // Templates (before /:environment_id: a static segment wins).
  app.post("/v1/agents/environments/templates", async (req) =>
    templateObject(await environments.createTemplate(req.scope, req.body ?? {})),
  );

  app.get("/v1/agents/environments/templates", { schema: { querystring: ListQuery } }, async (req) => {
    const q = req.query;
    const p = await environments.listTemplates(req.scope, {
      ...(q.limit ? { limit: q.limit } : {}),
      ...(q.after ? { after: q.after } : {}),
      ...(q.order ? { order: q.order } : {}),
    });
    return openai.page({ data: p.data.map(templateObject), has_more: p.has_more });
  });

  app.get(
    "/v1/agents/environments/templates/:environment_template_id",
    { schema: { params: TemplateParams } },
    async (req) => templateObject(await environments.template(req.scope, req.params.environment_template_id)),
  );

  app.post(
    "/v1/agents/environments/templates/:environment_template_id",
    { schema: { params: TemplateParams } },
    async (req) =>
      templateObject(
        await environments.updateTemplate(req.scope, req.params.environment_template_id, req.body ?? {}),
      ),
  );

  app.delete(
    "/v1/agents/environments/templates/:environment_template_id",
    { schema: { params: TemplateParams } },
    async (req) => {
      await environments.deleteTemplate(req.scope, req.params.environment_template_id);
      return {
        id: req.params.environment_template_id,
        object: "agent.environment.template.deleted",
        deleted: true,
      };
    },
  );

  app.get("/v1/agents/environments/:environment_id", { schema: { params: EnvironmentParams } }, async (req) =>
    environmentInfoObject(await environments.get(req.scope, req.params.environment_id)),
  );

  app.post(
    "/v1/agents/environments/:environment_id/files",
    { schema: { params: EnvironmentParams, body: FileCreate } },
    async (req) => {
      const written = await environments.writeFile(req.scope, req.params.environment_id, req.body);
      return environmentFileObject(req.params.environment_id, written);
    },
  );

  app.get(
    "/v1/agents/environments/:environment_id/files",
    { schema: { params: EnvironmentParams, querystring: FileListQuery } },
    async (req) => {
      const env = await environments.get(req.scope, req.params.environment_id);
      const q = req.query;
      let after: string | null = null;
      if (q.page) {
        after = Buffer.from(q.page, "base64url").toString("utf8");
        if (!after.startsWith("/workspace/")) throw badRequest("'page' is not a cursor of this list", "page");
      }
      const page = environments.listFiles(env, {
        limit: q.limit ?? 20,
        order: q.order ?? "desc",
        after,
        path: q.path ?? null,
      });
      return {
        object: "list",
        data: page.data.map((f) => environmentFileObject(env.id, f)),
        has_more: page.next !== null,
        next: page.next === null ? null : Buffer.from(page.next).toString("base64url"),
      };
    },
  );
}
