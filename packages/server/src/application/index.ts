/**
 * The application layer: the operations both dialects offer, dialect-neutral, each in the caller's project. A
 * dialect decodes a request, calls one of these and encodes the answer; it never sees the store, the engines or
 * the service's parts (`Core`). Policies decided here once: the tool and stdio-MCP policy (applied by agents.ts and sessions.ts), what a new
 * session's environment gives it and what is given back when it cannot be made (sessions.ts,
 * session-environment.ts), where a stream starts (streams.ts). Resources without a policy of their own here
 * (vaults, webhooks, automations, files, goals, checkpoints, environments' reads) are the domain's scoped services.
 */
import type { Resource } from "@opentelemetry/resources";
import type { AgentService } from "../domain/agents.js";
import type { AutomationService } from "../domain/automations/service.js";
import type { EnvironmentPlan, EnvironmentService } from "../domain/environments/service.js";
import type { FileService } from "../domain/files/service.js";
import type { GoalService } from "../domain/goals/service.js";
import type { MessageService } from "../domain/messages.js";
import type { SessionService } from "../domain/sessions/service.js";
import type { ToolPolicy } from "../domain/tools.js";
import type { TurnRunner } from "../domain/turns/runner.js";
import type { VaultService } from "../domain/vaults/service.js";
import type { WebhookService } from "../domain/webhooks/service.js";
import type { CheckpointService } from "../features/checkpoints/service.js";
import type { Clock } from "../kernel/clock.js";
import type { Scope } from "../model/scope.js";
import type { Sandboxes } from "../platform/sandbox/sandboxes.js";
import type { StreamClients } from "../platform/stream/clients.js";
import type { EventHub } from "../platform/stream/hub.js";
import type { Store } from "../store/types.js";
import { AgentOperations } from "./agents.js";
import { ArtifactOperations } from "./artifacts.js";
import { planAhead } from "./environments.js";
import { HistoryOperations } from "./history.js";
import type { RepositoryOperations } from "./repositories.js";
import { SessionOperations } from "./sessions.js";
import { StreamOperations } from "./streams.js";
import { TraceOperations } from "./traces.js";

/** Types of the operations' parameters, as the domain defines them. */
export type { AutomationCreate, AutomationUpdate } from "../domain/automations/service.js";
export type { TargetParam } from "../domain/automations/target.js";
export type { NewFile } from "../domain/files/service.js";
export type { FileStorage, Received } from "../domain/files/storage.js";

export interface Application {
  agents: AgentOperations;
  sessions: SessionOperations;
  streams: StreamOperations;
  history: HistoryOperations;
  artifacts: ArtifactOperations;
  traces: TraceOperations;
  repositories: RepositoryOperations;
  environments: EnvironmentService;
  /** Checks an `environments.create` request whole (nothing is made yet): the plan to make it from. */
  planEnvironmentAhead: (
    scope: Scope,
    raw: unknown,
    vaultIds: readonly string[] | null | undefined,
  ) => Promise<EnvironmentPlan>;
  vaults: VaultService;
  automations: AutomationService;
  webhooks: WebhookService;
  files: FileService;
  goals: GoalService;
  checkpoints: CheckpointService;
  /** Where answers to keyed (`Idempotency-Key`) requests are kept. */
  idempotency: { store: Pick<Store, "getIdempotency" | "putIdempotency">; clock: Clock };
  clock: Clock;
  /** What the dialects need to know of the operator's settings. */
  settings: {
    /** The model of an agent that names none. */
    model: string;
    /** The largest upload (the Files API). */
    maxFileBytes: number;
  };
}

/** The service's parts the application is made of (main/compose.ts `Core` is one). */
export interface ApplicationParts {
  config: {
    model: string;
    workspaceMode: "auto" | "shared" | "session";
    workspaceRoot: string;
    sseKeepaliveMs: number;
    files: { maxBytes: number };
  };
  clock: Clock;
  store: Store;
  hub: EventHub;
  streams: StreamClients;
  /** The tool policy (domain/tools.ts), the same the automations apply. */
  tools: ToolPolicy;
  agents: AgentService;
  sessions: SessionService;
  messages: MessageService;
  runner: TurnRunner;
  vaults: VaultService;
  environments: EnvironmentService;
  sandboxes: Sandboxes | null;
  repositoryOps: RepositoryOperations;
  automations: AutomationService;
  webhooks: WebhookService;
  files: FileService;
  goals: GoalService;
  checkpoints: CheckpointService;
}

export function createApplication(p: ApplicationParts, traces: { resource: Resource }): Application {
  const { config, store, clock } = p;
  const { tools } = p;
  return {
    agents: new AgentOperations({ agents: p.agents, tools }),
    sessions: new SessionOperations({
      sessions: p.sessions,
      messages: p.messages,
      runner: p.runner,
      vaults: p.vaults,
      tools,
      environments: {
        environments: p.environments,
        workspaceRoot: config.workspaceRoot,
        containers: p.sandboxes !== null,
      },
      workspaceMode: config.workspaceMode,
    }),
    streams: new StreamOperations({
      store,
      tail: { hub: p.hub, clients: p.streams, keepaliveMs: config.sseKeepaliveMs },
    }),
    history: new HistoryOperations({ store }),
    artifacts: new ArtifactOperations({ store, workspaceRoot: config.workspaceRoot }),
    traces: new TraceOperations({ store, resource: traces.resource }),
    repositories: p.repositoryOps,
    environments: p.environments,
    planEnvironmentAhead: (scope, raw, vaultIds) =>
      planAhead({ environments: p.environments, vaults: p.vaults }, scope, raw, vaultIds),
    vaults: p.vaults,
    automations: p.automations,
    webhooks: p.webhooks,
    files: p.files,
    goals: p.goals,
    checkpoints: p.checkpoints,
    idempotency: { store, clock },
    clock,
    settings: { model: config.model, maxFileBytes: config.files.maxBytes },
  };
}
