/**
 * Official automations (`/v1/agents/automations`): schedules whose invocations start a new session or notify an
 * existing one. Shapes as the openai SDK 7.55.0 types them (beta/agents/automations); this server adds
 * `next_run_at` to automations (the next occurrence it will fire, null while paused or once completed).
 */

import type {
  Automation,
  AutomationAgentConfig,
  AutomationEnvironment,
  AutomationTarget as WireTarget,
} from "openai/resources/beta/agents/automations/automations";
import type { AutomationInvocation } from "openai/resources/beta/agents/automations/invocations";
import { z } from "zod";
import type {
  Application,
  AutomationCreate,
  AutomationUpdate,
  TargetParam,
} from "../../application/index.js";

import type { App } from "../../http/app-types.js";
import { idempotent } from "../../http/idempotency.js";
import { ListQuery, Metadata, UnixSeconds } from "../../http/validate.js";
import { badRequest } from "../../kernel/errors.js";
import type { AutomationRecord, AutomationTarget, InvocationRecord } from "../../model/records.js";
import { DEFAULT_SETTINGS, inlineAgentSettings, mergeSettings } from "../../model/settings.js";
import { Settings, Tools } from "./agents.js";
import * as openai from "./render.js";

const secs = (t: number) => Math.floor(t);
const secsOrNull = (t: number | null) => (t === null ? null : Math.floor(t));

const InlineAgent = z
  .object({
    model: z.string().min(1).optional(),
    instructions: z.string().nullable().optional(),
    tools: Tools,
    name: z.string().nullable().optional(),
    ...Settings,
  })
  .loose();

const Environment = z.object({ type: z.enum(["none", "self_hosted", "openai_hosted"]) }).loose();

const InputMessage = z
  .object({
    role: z.literal("user"),
    content: z.union([z.string(), z.array(z.unknown()).min(1)]),
    type: z.literal("message").optional(),
  })
  .loose();

const Target = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("new_session"),
    agent: InlineAgent.nullable().optional(),
    agent_id: z.string().min(1).nullable().optional(),
    environment: Environment,
    input: z.array(InputMessage).min(1),
    metadata: Metadata.nullable().optional(),
    vault_ids: z.array(z.string()).nullable().optional(),
  }),
  z.object({
    type: z.literal("existing_session"),
    session_id: z.string().min(1),
    instructions: z.string().min(1),
  }),
]);

/** `created_by` is recorded by the service: accepted by the schema only to be refused with a clear message. */
const Provenance = { created_by: z.unknown().optional() };

const Create = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("periodic"),
    name: z.string().min(1),
    expression: z.string().min(1),
    timezone: z.string().min(1),
    target: Target,
    metadata: Metadata.optional(),
    ...Provenance,
  }),
  z.object({
    type: z.literal("once"),
    name: z.string().min(1),
    run_at: UnixSeconds,
    target: Target,
    metadata: Metadata.optional(),
    ...Provenance,
  }),
]);

const Update = z.object({
  name: z.string().min(1).optional(),
  metadata: Metadata.optional(),
  expression: z.string().min(1).optional(),
  timezone: z.string().min(1).optional(),
  run_at: UnixSeconds.optional(),
  target: Target.optional(),
  ...Provenance,
});

const AutomationParams = z.object({ automation_id: z.string() });
const InvocationParams = z.object({ automation_id: z.string(), invocation_id: z.string() });
const AutomationListQuery = ListQuery.extend({ session_id: z.string().min(1).optional() });

function refuseProvenance(body: { created_by?: unknown }): void {
  if (body.created_by !== undefined) {
    throw badRequest("'created_by' is recorded by the service: callers cannot supply it", "created_by");
  }
}

function targetParam(t: z.infer<typeof Target>): TargetParam {
  return t.type === "existing_session"
    ? t
    : {
        type: "new_session",
        agent: t.agent ?? null,
        agent_id: t.agent_id ?? null,
        environment: t.environment,
        input: t.input,
        metadata: t.metadata ?? null,
        vault_ids: t.vault_ids ?? null,
      };
}

/** An inline agent as the official AutomationAgentConfig: its settings complete, its tools without secrets. */
function agentConfig(agent: Record<string, unknown>, defaultModel: string): AutomationAgentConfig {
  const shown = openai.agentObject({
    id: "",
    project_id: "",
    created_at: 0,
    updated_at: 0,
    name: null,
    model: typeof agent.model === "string" && agent.model ? agent.model : defaultModel,
    instructions: typeof agent.instructions === "string" ? agent.instructions : null,
    tools: Array.isArray(agent.tools) ? agent.tools : [],
    metadata: {},
    extra: { settings: mergeSettings(DEFAULT_SETTINGS, inlineAgentSettings(agent)) },
  });
  const { id: _id, object: _o, created_at: _c, updated_at: _u, name: _n, metadata: _m, ...config } = shown;
  return config as AutomationAgentConfig;
}

function environmentObject(env: { type: string } & Record<string, unknown>): AutomationEnvironment {
  if (env.type === "none") return { type: "none" };
  const dirs = env.capability_directories;
  return {
    type: "self_hosted",
    capability_directories: Array.isArray(dirs) ? dirs.filter((d): d is string => typeof d === "string") : [],
    environment_id: typeof env.environment_id === "string" ? env.environment_id : null,
    workspace_directory: typeof env.workspace_directory === "string" ? env.workspace_directory : "",
  };
}

function targetObject(t: AutomationTarget, defaultModel: string): WireTarget {
  if (t.type === "existing_session") return t;
  return {
    type: "new_session",
    agent: t.agent ? agentConfig(t.agent, defaultModel) : null,
    agent_id: t.agent_id,
    environment: environmentObject(t.environment),
    input: t.input,
    metadata: t.metadata,
    vault_ids: t.vault_ids,
  };
}

/** An automation as the official types show it, plus `next_run_at` (this server's extension). */
export function automationObject(
  a: AutomationRecord,
  defaultModel: string,
): Automation & { next_run_at: number | null } {
  const common = {
    id: a.id,
    object: "agent.automation" as const,
    created_at: secs(a.created_at),
    created_by: a.created_by,
    metadata: a.metadata,
    name: a.name,
    target: targetObject(a.target, defaultModel),
    next_run_at: a.status === "active" ? secsOrNull(a.next_run_at) : null,
  };
  if (a.type === "periodic") {
    return {
      ...common,
      type: "periodic",
      expression: a.expression ?? "",
      timezone: a.timezone ?? "UTC",
      status: a.status === "paused" ? "paused" : "active",
    };
  }
  return { ...common, type: "once", run_at: secs(a.run_at ?? 0), status: a.status };
}

export function invocationObject(i: InvocationRecord, defaultModel: string): AutomationInvocation {
  return {
    id: i.id,
    object: "agent.automation.invocation",
    automation_id: i.automation_id,
    created_at: secs(i.created_at),
    error: i.error,
    scheduled_at: secsOrNull(i.scheduled_at),
    session_id: i.session_id,
    skip_reason: i.skip_reason,
    source:
      i.source === "automation" && i.snapshot
        ? { type: "automation", automation: automationObject(i.snapshot, defaultModel) }
        : { type: "manual" },
    status: i.status,
  };
}

export function automationRoutes(app: App, ops: Application): void {
  const { automations } = ops;
  const model = ops.settings.model;
  const path = "/v1/agents/automations";
  const one = `${path}/:automation_id`;

  app.post(path, { schema: { body: Create } }, async (req, reply) => {
    const b = req.body;
    refuseProvenance(b);
    const create: AutomationCreate = {
      name: b.name,
      metadata: b.metadata,
      schedule:
        b.type === "periodic"
          ? { type: "periodic", expression: b.expression, timezone: b.timezone }
          : { type: "once", run_at: b.run_at },
      target: targetParam(b.target),
    };
    return idempotent(ops.idempotency, `automations:${req.scope.projectId}`, req, reply, async () => ({
      status: 200,
      body: automationObject(await automations.create(req.scope, create), model),
    }));
  });

  app.get(path, { schema: { querystring: AutomationListQuery } }, async (req) => {
    const q = req.query;
    const p = await automations.list(req.scope, {
      ...(q.limit ? { limit: q.limit } : {}),
      ...(q.after ? { after: q.after } : {}),
      ...(q.order ? { order: q.order } : {}),
      ...(q.session_id ? { session_id: q.session_id } : {}),
    });
    return openai.page({ data: p.data.map((a) => automationObject(a, model)), has_more: p.has_more });
  });

  app.get(one, { schema: { params: AutomationParams } }, async (req) =>
    automationObject(await automations.get(req.scope, req.params.automation_id), model),
  );

  app.post(one, { schema: { params: AutomationParams, body: Update } }, async (req) => {
    const b = req.body;
    refuseProvenance(b);
    const update: AutomationUpdate = {
      name: b.name,
      metadata: b.metadata,
      expression: b.expression,
      timezone: b.timezone,
      run_at: b.run_at,
      target: b.target ? targetParam(b.target) : undefined,
    };
    return automationObject(await automations.update(req.scope, req.params.automation_id, update), model);
  });

  app.delete(one, { schema: { params: AutomationParams } }, async (req) => {
    await automations.delete(req.scope, req.params.automation_id);
    return { id: req.params.automation_id, object: "agent.automation.deleted", deleted: true };
  });

  app.post(`${one}/pause`, { schema: { params: AutomationParams } }, async (req) =>
    automationObject(await automations.pause(req.scope, req.params.automation_id), model),
  );

  app.post(`${one}/resume`, { schema: { params: AutomationParams } }, async (req) =>
    automationObject(await automations.resume(req.scope, req.params.automation_id), model),
  );

  app.post(`${one}/invocations`, { schema: { params: AutomationParams } }, async (req, reply) => {
    const a = await automations.get(req.scope, req.params.automation_id);
    return idempotent(ops.idempotency, `automations:${req.scope.projectId}`, req, reply, async () => ({
      status: 200,
      body: invocationObject(await automations.invoke(req.scope, a.id), model),
    }));
  });

  app.get(
    `${one}/invocations`,
    { schema: { params: AutomationParams, querystring: ListQuery } },
    async (req) => {
      const q = req.query;
      const p = await automations.invocations(req.scope, req.params.automation_id, {
        ...(q.limit ? { limit: q.limit } : {}),
        ...(q.after ? { after: q.after } : {}),
        ...(q.order ? { order: q.order } : {}),
      });
      return openai.page({ data: p.data.map((i) => invocationObject(i, model)), has_more: p.has_more });
    },
  );

  app.get(`${one}/invocations/:invocation_id`, { schema: { params: InvocationParams } }, async (req) =>
    invocationObject(
      await automations.invocation(req.scope, req.params.automation_id, req.params.invocation_id),
      model,
    ),
  );
}
