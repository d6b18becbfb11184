/**
 * The service's parts, built from one config and its infrastructure (store, engines, clock, logger): what the
 * HTTP layer and the CLI call. No globals; tests build it with an in-memory store or a stub engine.
 */

import { join } from "node:path";
import type { Logger } from "pino";
import { RepositoryOperations } from "../application/repositories.js";
import type { Config } from "../config/load.js";
import { AgentService } from "../domain/agents.js";
import { AutomationService } from "../domain/automations/service.js";
import { SessionEngines } from "../domain/environments/engines.js";
import { Provisioner } from "../domain/environments/provision.js";
import { SecretRedactor } from "../domain/environments/redaction.js";
import { EnvironmentService } from "../domain/environments/service.js";
import { attachFeatures, type Feature } from "../domain/feature.js";
import { FileService } from "../domain/files/service.js";
import { FileStorage } from "../domain/files/storage.js";
import { GoalBook } from "../domain/goals/book.js";
import { GoalService } from "../domain/goals/service.js";
import { KeyWatch } from "../domain/key-watch.js";
import { KeyService } from "../domain/keys.js";
import { MessageService } from "../domain/messages.js";
import { RepositoryService } from "../domain/repositories/service.js";
import { SandboxEngines } from "../domain/sandboxes/engines.js";
import { sandboxNetworkOf } from "../domain/sandboxes/policy.js";
import { ContainerWorkspaces, LocalWorkspaces, type Workspaces } from "../domain/sandboxes/workspaces.js";
import { SessionService } from "../domain/sessions/service.js";
import { ToolPolicy } from "../domain/tools.js";
import { TurnControl } from "../domain/turns/control.js";
import { TurnRunner } from "../domain/turns/runner.js";
import { Takeover } from "../domain/turns/takeover.js";
import { VaultService } from "../domain/vaults/service.js";
import type { Sealer } from "../domain/webhooks/events.js";
import { WebhookService } from "../domain/webhooks/service.js";
import { runAutomationsTool } from "../features/automations/agent-tool.js";
import { AutomationDeliverer } from "../features/automations/deliverer.js";
import { AutomationScheduler } from "../features/automations/scheduler.js";
import { CheckpointService } from "../features/checkpoints/service.js";
import { WebhookDeliverer } from "../features/webhooks/deliverer.js";
import { BackgroundWorkers } from "../features/workers.js";
import { type Clock, systemClock } from "../kernel/clock.js";
import { LazySecretKeyring, loadSecretKeyring } from "../kernel/secrets.js";
import { AUTOMATIONS_TOOL_NAME, hasAutomationsTool } from "../model/tools.js";
import { LocalCluster, localRollouts } from "../platform/cluster/local.js";
import type { Cluster, Rollouts } from "../platform/cluster/types.js";
import { engineSearchPath } from "../platform/engine/codex-home.js";
import type { LocalLimits } from "../platform/engine/local-limits.js";
import type { Engines } from "../platform/engine/types.js";
import { Mirrors } from "../platform/git-mirror/mirrors.js";
import { Spares } from "../platform/git-mirror/spares.js";
import { OutboundGuard } from "../platform/net/outbound-guard.js";
import type { Sandboxes } from "../platform/sandbox/sandboxes.js";
import { StreamClients } from "../platform/stream/clients.js";
import { EventHub } from "../platform/stream/hub.js";
import type { Store } from "../store/types.js";

export interface Infrastructure {
  store: Store;
  engines: Engines;
  logger: Logger;
  clock?: Clock;
  /** The other instances on the same database (default: none, the embedded store's single instance). */
  cluster?: Cluster;
  rollouts?: Rollouts;
  /** Seals secrets at rest (default: the service's secret key, see kernel/secrets.ts). */
  secrets?: Sealer;
  /** The container backend's sandboxes (default: none, the local backend: the engine's sandbox on this host). */
  sandboxes?: Sandboxes;
  /** The local backend's limits on the engines' process groups (default: none applied). */
  localLimits?: LocalLimits;
}

export interface Core {
  config: Config;
  logger: Logger;
  clock: Clock;
  store: Store;
  engines: Engines;
  hub: EventHub;
  /** The SSE streams open to clients, by the key that opened them. */
  streams: StreamClients;
  /** Ends the open streams of revoked keys. */
  keyWatch: KeyWatch;
  agents: AgentService;
  sessions: SessionService;
  runner: TurnRunner;
  /** Operations on running turns, wherever they run. */
  control: TurnControl;
  cluster: Cluster;
  /** Ends the turns of dead instances (several instances on one database). */
  takeover: Takeover;
  goals: GoalService;
  messages: MessageService;
  keys: KeyService;
  /** Schedules that start or notify sessions (official automations). */
  automations: AutomationService;
  /** Where sessions' lifecycle events are sent (official webhook endpoints). */
  webhooks: WebhookService;
  /** Firing automations, delivering their invocations and the webhook outbox (started by the service). */
  workers: BackgroundWorkers;
  /** Workspace checkpoints per turn (attached to the turn and session hooks). */
  checkpoints: CheckpointService;
  /** Environments this server prepares for sessions (official `openai_hosted`), their files and templates. */
  environments: EnvironmentService;
  /** Vaults and their credentials (MCP servers' authorization, environment variables, git). */
  vaults: VaultService;
  /** Repositories environments start from: mirrors, checkouts, commits, pushes and diffs. */
  repositories: RepositoryService;
  /** The repository operations the dialects offer (scope checks, then the service). */
  repositoryOps: RepositoryOperations;
  /** Where the service and its engines may connect on a client's behalf (webhooks, MCP servers, token endpoints). */
  outbound: OutboundGuard;
  /** The tool and stdio-MCP policy, applied wherever tools come in. */
  tools: ToolPolicy;
  /** Uploaded files (the official Files API), per project. */
  files: FileService;
  /** The sessions' containers (the container backend), or null (the local backend). */
  sandboxes: Sandboxes | null;
  /** The local backend's limits per engine process group, or null (the container backend, or none applied). */
  localLimits: LocalLimits | null;
}

export function createCore(config: Config, infra: Infrastructure): Core {
  const { store, logger } = infra;
  const clock = infra.clock ?? systemClock;
  const cluster = infra.cluster ?? new LocalCluster();
  const rollouts = infra.rollouts ?? localRollouts;
  // Secret values given to a session's agent are redacted from everything its log stores.
  const redactor = new SecretRedactor();
  const hub = new EventHub(redactor.wrap(store), { now: () => clock.now() });
  // One key ring for every secret at rest (vault credentials, environment values, webhook signing secrets).
  const keyring = secretKeyring(config, logger);
  const outbound = new OutboundGuard({ allowPrivate: config.allowPrivateTargets });
  const tools = new ToolPolicy({ allowStdio: config.allowMcpStdio, targets: outbound });
  const files = new FileService({ store, clock, logger, storage: new FileStorage(config.files.dir) });
  const sandboxes = infra.sandboxes ?? null;
  const workspaces = sandboxes ? new ContainerWorkspaces(sandboxes) : new LocalWorkspaces();
  // A sandboxed session's thread gets its container's executor, the container its network policy (and secrets),
  // once its environment is ready (the session engines wait for it first).
  const sandboxed = sandboxes
    ? new SandboxEngines(infra.engines, {
        sandboxes,
        networkOf: (session) => sandboxNetworkOf(store, session),
        logger,
      })
    : infra.engines;
  const { environments, vaults, engines, repositories } = environmentsAndVaults(config, {
    ...infra,
    engines: sandboxed,
    clock,
    cluster,
    hub,
    redactor,
    keyring,
    outbound,
    files,
    workspaces,
    sandboxes,
  });
  const runner = new TurnRunner({
    ...{ store, hub, engines, config, clock, logger, cluster, rollouts },
    memoryKills: ({ sandboxId, engine }) =>
      sandboxId
        ? (sandboxes?.memoryKills(sandboxId) ?? null)
        : engine !== null
          ? (infra.localLimits?.memoryKills(engine) ?? null)
          : null,
  });
  engines.stopWaitsOn(runner);
  const control = new TurnControl({ runner, cluster, store, logger });
  const agents = new AgentService(store, clock, config.model);
  const sessions = new SessionService({
    store,
    hub,
    engines,
    agents,
    runner,
    control,
    config,
    clock,
    logger,
    workspaces,
  });
  const book = new GoalBook(store, hub, clock, config.goals);
  const goals = new GoalService({ book, runner, control, engines, clock, logger });
  const takeover = new Takeover({ cluster, runner, book, logger });
  const messages = new MessageService({ store, runner, control, goals });
  const keys = new KeyService(store, clock);
  const streams = new StreamClients();
  const keyWatch = new KeyWatch({ store, streams, clock, logger });
  keys.onRevoke((id) => keyWatch.revoked(id));
  const {
    automations,
    webhooks,
    workers,
    feature: automationsFeature,
  } = automationsAndWebhooks(config, {
    ...infra,
    clock,
    cluster,
    runner,
    agents,
    sessions,
    keyring,
    outbound,
    tools,
  });
  const checkpoints = new CheckpointService({
    config,
    store,
    hub,
    runner,
    sessions,
    engines,
    clock,
    logger,
    cluster,
    rollouts,
    workspaces,
  });
  // The features attached to turns, sessions and the event log, in the order their hooks run.
  attachFeatures({ runner, sessions, hub }, [
    { name: "checkpoints", turns: checkpoints.turnHooks(), sessions: checkpoints.sessionHooks() },
    // After the checkpoint of the same engine turn: an output commits what that checkpoint recorded.
    { name: "repositories", turns: { afterEngineTurn: (s, t) => repositories.afterEngineTurn(s, t) } },
    {
      name: "environments",
      sessions: {
        afterDelete: async (s) => {
          redactor.forget(s.id);
          await environments.sessionDeleted(s);
        },
      },
    },
    automationsFeature,
  ]);
  return {
    config,
    logger,
    clock,
    store,
    engines,
    hub,
    streams,
    keyWatch,
    agents,
    sessions,
    runner,
    control,
    cluster,
    takeover,
    goals,
    messages,
    keys,
    automations,
    webhooks,
    workers,
    checkpoints,
    environments,
    vaults,
    repositories,
    repositoryOps: new RepositoryOperations({ sessions, repositories }),
    outbound,
    tools,
    files,
    sandboxes,
    localLimits: infra.localLimits ?? null,
  };
}

/**
 * Start-up recovery: what a crash left running is failed, goals that ran come back paused. With other instances on
 * the same database, only the turns of dead instances are (the takeover sweep); the others' are theirs.
 */
export async function recover(core: Core): Promise<void> {
  const { runner, goals, store, logger } = core;
  const failed = await core.environments.recover();
  if (failed)
    logger.warn({ environments: failed }, "environments being prepared at the last shutdown have failed");
  // Secrets sealed with a previous key are sealed again with the current one (in the background).
  void core.vaults
    .resealAll()
    .then((n) => n > 0 && logger.info({ secrets: n }, "re-sealed secrets with the current key"))
    .catch((err: unknown) => logger.error({ err: String(err) }, "re-sealing secrets failed"));
  if (core.cluster.stats().kind !== "single") {
    await core.takeover.sweep();
    return;
  }
  const fixed = await runner.recover();
  if (fixed) logger.warn({ sessions: fixed }, "marked turns interrupted by the last shutdown as failed");
  await goals.pauseAfterRestart(async (id) => (await store.getSession(id))?.thread_id ?? null);
}

/** Automations and webhooks: their API services and background workers, woken by what they wait for. */
/**
 * The service's secret key ring (kernel/secrets.ts): the current key (AGENT_SECRET_KEY, --secret-key-file, or one
 * generated into the data directory) and previous keys kept for rotation. Loaded on first use.
 */
function secretKeyring(config: Config, logger: Logger): LazySecretKeyring {
  return new LazySecretKeyring(
    () =>
      loadSecretKeyring({
        key: config.secretKey,
        keyFile: config.secretKeyFile,
        dataDir: config.dataDir,
        previousKeys: config.environments.previousSecretKeys,
        previousKeysFile: config.environments.previousSecretKeysFile,
      }),
    ({ origin, path, warning }) => {
      if (origin === "generated") {
        logger.warn(
          { path },
          "generated a secret key for secrets at rest (keep it: without it they are lost)",
        );
      }
      if (warning) logger.warn(warning);
      if (config.databaseUrl && (origin === "generated" || origin === "data-dir")) {
        logger.warn(
          "instances sharing a database must share the secret key: set the same AGENT_SECRET_KEY (or " +
            "--secret-key-file) on each",
        );
      }
    },
  );
}

function automationsAndWebhooks(
  config: Config,
  deps: Infrastructure & {
    clock: Clock;
    cluster: Cluster;
    runner: TurnRunner;
    agents: AgentService;
    sessions: SessionService;
    keyring: LazySecretKeyring;
    outbound: OutboundGuard;
    tools: ToolPolicy;
  },
) {
  const { store, clock, logger, cluster, runner, sessions } = deps;
  const secrets = deps.secrets ?? deps.keyring;
  const targets = { guard: deps.outbound, allowHttp: config.webhookAllowHttp };
  const pollMs = config.automationPollMs;
  const invocations = new AutomationDeliverer({
    store,
    clock,
    logger,
    config,
    sessions,
    runner,
    instanceId: cluster.instanceId,
    pollMs,
  });
  const scheduler = new AutomationScheduler({
    store,
    clock,
    logger,
    pollMs,
    onQueued: () => invocations.kick(),
  });
  const webhookDeliverer = new WebhookDeliverer({
    store,
    clock,
    logger,
    secrets,
    targets,
    instanceId: cluster.instanceId,
    pollMs,
    retrySeconds: config.webhookRetrySeconds,
  });

  const automations = new AutomationService({
    store,
    clock,
    agents: deps.agents,
    sessions,
    tools: deps.tools,
    onQueued: () => invocations.kick(),
  });
  const feature: Feature = {
    name: "automations and webhooks",
    // The agent's own automations tool: its calls are answered here, within the session's project.
    tools: [
      {
        name: AUTOMATIONS_TOOL_NAME,
        enabledFor: (session) => hasAutomationsTool(session.tools),
        call: (session, call) =>
          runAutomationsTool(automations, { ...call, sessionId: session.id, projectId: session.project_id }),
      },
    ],
    // A session became idle here: an invocation waiting for it is delivered now. A webhook event was written: sent now.
    idle: () => invocations.kick(),
    events: (e) => {
      if (e.type === "session.created" || e.type === "session.status") webhookDeliverer.kick();
    },
  };
  return {
    feature,
    automations,
    webhooks: new WebhookService({ store, clock, secrets, targets }),
    workers: new BackgroundWorkers(scheduler, invocations, webhookDeliverer),
  };
}

/**
 * Environments and vaults: their services, and the engines as the turns lease them (a session's environment is
 * waited for; its variables and its vaults' credentials are added to its thread).
 */
function environmentsAndVaults(
  config: Config,
  deps: Omit<Infrastructure, "sandboxes"> & {
    clock: Clock;
    cluster: Cluster;
    hub: EventHub;
    redactor: SecretRedactor;
    keyring: LazySecretKeyring;
    outbound: OutboundGuard;
    files: FileService;
    workspaces: Workspaces;
    sandboxes: Sandboxes | null;
  },
) {
  const { store, clock, logger, cluster, hub, redactor, outbound, files, workspaces, sandboxes } = deps;
  const keyring = deps.keyring;
  const vaults = new VaultService({
    store,
    clock,
    keyring,
    logger,
    allowEnvCredentials: config.environments.allowEnvCredentials,
    outbound,
  });
  const repositories = new RepositoryService({
    settings: config.repositories,
    mirrors: new Mirrors({
      dir: config.repositories.dir,
      maxBytes: config.repositories.maxBytes,
      totalMaxBytes: config.repositories.mirrorsMaxBytes,
      timeoutMs: config.repositories.timeoutSeconds * 1000,
    }),
    // (On the container backend a workspace is a file system of its own: a spare could not be renamed into it.)
    spares:
      config.repositories.spares > 0 && !sandboxes
        ? new Spares(join(config.repositories.dir, "spares"), config.repositories.spares, (err) =>
            logger.warn({ err: String(err) }, "a spare repository clone could not be made"),
          )
        : null,
    guard: outbound,
    hub,
    clock,
    logger,
    gitAuth: (project, id, url, where) => vaults.gitAuth(project, id, url, where),
    environment: async (id) => (await store.getEnvironment(id)) ?? null,
  });
  const provisioner = new Provisioner({
    engines: deps.engines,
    settings: config.environments,
    logger,
    searchPath: engineSearchPath(config.dataDir),
    sandboxes,
  });
  const environments = new EnvironmentService({
    store,
    hub,
    clock,
    logger,
    config,
    keyring,
    vaults,
    provisioner,
    repositories,
    files,
    instanceId: cluster.instanceId,
    workspaces,
  });
  const engines = new SessionEngines(deps.engines, {
    environments,
    vaults,
    redactor,
    logger,
    outbound,
    waitMs: config.turnTimeoutSeconds * 1000,
  });
  return { environments, vaults, engines, repositories };
}
