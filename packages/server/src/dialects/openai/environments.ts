/**
 * Official environments (`client.beta.agents.environments.*`): environments this server prepares ahead of a
 * session, their files and templates; and what a session's `environment` means when it is created (`none`,
 * `self_hosted`: this server's workspace or a directory the operator allows, `openai_hosted`: prepared here).
 */

import { join } from "node:path";
import type { ContainerSize } from "@codex-agent-api/sandbox";
import { z } from "zod";
import type { EnvironmentPlan } from "../../domain/environments/service.js";
import { HostedEnvironmentParam, parseWith } from "../../domain/environments/spec.js";
import type { WorkspaceMode } from "../../domain/sessions/service.js";
import { newObjectId } from "../../domain/vaults/service.js";
import type { App } from "../../http/app-types.js";
import { idempotent } from "../../http/idempotency.js";
import { ListQuery } from "../../http/validate.js";
import { badRequest } from "../../kernel/errors.js";
import type { Core } from "../../main/compose.js";
import type { SessionRecord } from "../../model/records.js";
import type { Scope } from "../../model/scope.js";
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

/** What a new session's `environment` gives it: fields of its record, where it works, what follows its creation. */
export interface SessionEnvironmentChoice {
  extra: Record<string, unknown>;
  workspace: WorkspaceMode | null;
  directory: string | null;
  /** The sandbox that holds `directory` (an environment made ahead, on the container backend). */
  sandboxId?: string;
  /** The official `container_size` of a new environment's sandbox. */
  size?: ContainerSize | null;
  /** The session exists: its environment is attached or made (and prepared in the background). */
  created(session: SessionRecord): Promise<void>;
  /** The session could not be made: give back what was reserved for it. */
  abandoned(): Promise<void>;
}

const nothing = async () => undefined;

/**
 * The session's environment (validated before anything is made): `none`; `self_hosted` (its own directory under
 * the workspace root as ever, or an allowed `workspace_directory`); `openai_hosted` inline (a new environment,
 * prepared here) or with `environment_id` (one made ahead, attached).
 */
export async function sessionEnvironment(
  core: Core,
  scope: Scope,
  raw: ({ type: string } & Record<string, unknown>) | null | undefined,
  vaultIds: string[],
): Promise<SessionEnvironmentChoice> {
  const base = {
    extra: { vault_ids: vaultIds },
    workspace: null,
    directory: null,
    created: nothing,
    abandoned: nothing,
  };
  if (raw?.type === "none") return { ...base, extra: { ...base.extra, environment: "none" } };
  // (no environment: this server's workspace, as a self-hosted environment, as ever)
  if (!raw || raw.type === "self_hosted") {
    const directory = core.environments.selfHostedDirectory(
      raw?.workspace_directory,
      "environment.workspace_directory",
    );
    return {
      ...base,
      // A directory the client chose is where its files are, to it too (environment-paths.ts).
      extra: {
        ...base.extra,
        environment: "self_hosted",
        ...(directory ? { workspace_directory: directory } : {}),
      },
      ...(directory ? { workspace: "shared" as const, directory } : {}),
    };
  }
  const hosted = parseWith(HostedEnvironmentParam, raw, "environment");
  if (hosted.environment_id !== undefined) {
    const extra = Object.keys(hosted).filter((k) => k !== "type" && k !== "environment_id");
    if (extra.length > 0) {
      throw badRequest(
        `'environment': an environment_id attaches an existing environment; ${extra.join(", ")} cannot be given with it`,
        `environment.${extra[0]}`,
      );
    }
    const env = await core.environments.reserve(scope, hosted.environment_id, "environment.environment_id");
    return {
      extra: { ...core.environments.attachedFields(env), vault_ids: vaultIds },
      workspace: "session",
      directory: env.directory,
      // On the container backend an environment made ahead has a sandbox of its own (its id is the environment's).
      ...(core.sandboxes ? { sandboxId: env.id } : {}),
      created: (session) => core.environments.attach(env, session),
      abandoned: () => core.environments.release(env.id),
    };
  }
  const plan: EnvironmentPlan = await core.environments.plan(scope, hosted, [], "environment");
  const id = newObjectId("env_");
  const directory = join(core.config.workspaceRoot, id);
  const fields = core.environments.sessionFields(id, plan, directory);
  return {
    extra: { ...fields, vault_ids: vaultIds },
    workspace: "session",
    directory,
    size: plan.size,
    created: async (session) => {
      await core.environments.createForSession(scope, session, fields, plan);
    },
    abandoned: nothing,
  };
}

export function environmentRoutes(app: App, core: Core): void {
  const { environments, vaults, store, clock } = core;

  app.post("/v1/agents/environments", { schema: { body: EnvironmentCreate } }, async (req, reply) => {
    const b = req.body;
    const hosted = parseWith(HostedEnvironmentParam, b.environment, "environment");
    if (hosted.environment_id !== undefined) {
      throw badRequest(
        "'environment.environment_id' is for sessions (it attaches an existing environment)",
        "environment.environment_id",
      );
    }
    const vaultIds = await vaults.checkVaultIds(req.scope, b.vault_ids, "vault_ids");
    const plan = await environments.plan(req.scope, hosted, vaultIds, "environment");
    return idempotent(store, clock, `environments:${req.scope.projectId}`, req, reply, async () => ({
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
