/** The running service: opens the store, starts the engines (and the mock model if asked), recovers, listens. */
import { mkdirSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join, relative } from "node:path";
import { MockResponsesServer, scriptedModel } from "@codex-agent-api/mock-model";
import type { Logger } from "pino";
import type { Config } from "../config/load.js";
import { Observability } from "../features/observability/index.js";
import { createLogger as createServiceLogger } from "../features/observability/logging.js";
import type { App } from "../http/app-types.js";
import { IDEMPOTENCY_TTL_SECONDS } from "../http/idempotency.js";
import { type Clock, systemClock } from "../kernel/clock.js";
import {
  isolated,
  missingModelReason,
  PERMISSION_PROFILE,
  prepareCodexHome,
} from "../platform/engine/codex-home.js";
import { LocalLimits } from "../platform/engine/local-limits.js";
import { EnginePool } from "../platform/engine/pool.js";
import { Sandboxes } from "../platform/sandbox/sandboxes.js";
import { SqliteStore } from "../store/sqlite/index.js";
import type { Store } from "../store/types.js";
import { buildApp } from "./app.js";
import { type Core, createCore, recover } from "./compose.js";

export interface Service {
  app: App;
  core: Core;
  /** Base URL the server listens on. */
  url: string;
  /** The in-process scripted model (with --mock-model). */
  mock: MockResponsesServer | null;
  /** The engine's home as prepared at start-up (where it is, and what was found of a system bubblewrap). */
  codexHome: Pick<ReturnType<typeof prepareCodexHome>, "codexHome" | "bwrap">;
  /** Graceful stop: stop accepting, end running turns, flush, close engines. */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  logger?: Logger;
  clock?: Clock;
  /** A store to use instead of the one the config names (tests). */
  store?: Store;
  /** Requests the in-process mock keeps (tests read them); default 0: none, it runs for days. */
  mockCapture?: number | boolean;
  /** Where the OpenTelemetry settings (OTEL_*: trace export) are read. Default: process.env. */
  telemetryEnv?: Record<string, string | undefined>;
}

/** Pretty lines on a terminal, JSON otherwise (`LOG_FORMAT=json|pretty` forces either). */
export function createLogger(level: string): Logger {
  return createServiceLogger(level);
}

/**
 * The database the config names: PostgreSQL with `--database-url`, else the embedded SQLite file. (The PostgreSQL
 * modules are loaded only then: an instance on SQLite starts without them.)
 */
export async function openStore(config: Config): Promise<Store> {
  if (!config.databaseUrl) return SqliteStore.open(join(config.dataDir, "agents.db"));
  const { PostgresStore } = await import("../store/postgres/index.js");
  return PostgresStore.open(config.databaseUrl);
}

/** On a PostgreSQL store, several instances may share the database: the cluster and the shared thread rollouts. */
async function sharedParts(store: Store, config: Config, codexHome: string, logger: Logger) {
  if (store.kind !== "postgres") return {};
  const [{ isPostgresStore }, { PgCluster }, { PgRollouts }] = await Promise.all([
    import("../store/postgres/index.js"),
    import("../platform/cluster/pg.js"),
    import("../platform/cluster/rollouts.js"),
  ]);
  if (!isPostgresStore(store)) return {};
  return {
    cluster: new PgCluster({
      pool: store.pool,
      connectionString: store.url,
      logger,
      deadAfterSeconds: config.clusterDeadAfterSeconds,
      // Well before the others consider it dead: a zombie stops its commands before its turns move.
      fenceAfterMs: Math.max(1500, (config.clusterDeadAfterSeconds - 3) * 1000),
    }),
    rollouts: new PgRollouts(store.pool, codexHome),
  };
}

/** The default size, the operator's maximums and the limits no size names (both backends). */
function sandboxSizing(config: Config) {
  const c = config.sandboxes;
  return {
    size: c.defaultSize,
    maximums: {
      ...(c.maxCpus !== undefined ? { cpus: c.maxCpus } : {}),
      ...(c.maxMemoryBytes !== undefined ? { memoryBytes: c.maxMemoryBytes } : {}),
    },
    defaults: { pids: c.pids, diskBytes: c.diskBytes },
  };
}

/**
 * The container backend's sandboxes (null: the local backend). A sandbox is a container on this host: instances
 * sharing a database each run their own sessions' containers, and a session's turns must run where its container
 * is — which the cluster does not yet route, so the container backend is refused with `--database-url`.
 */
async function openSandboxes(config: Config, logger: Logger): Promise<Sandboxes | null> {
  const c = config.sandboxes;
  if (c.backend !== "container") return null;
  const { size, maximums, defaults } = sandboxSizing(config);
  return Sandboxes.open({
    rootDir: c.dir,
    ...(c.image ? { image: c.image } : {}),
    warm: c.warm,
    defaultSize: size,
    maximums,
    defaults,
    idleStopMs: c.idleStopSeconds * 1000,
    serviceAddresses: serviceAddresses(config.host),
    allowPrivate: c.egressAllowPrivate,
    hosts: c.egressHosts,
    logger,
  });
}

/** The addresses this service listens on (a wildcard: every address of this host), never reached by a sandbox. */
function serviceAddresses(host: string): string[] {
  if (host !== "0.0.0.0" && host !== "::" && host !== "") return [host];
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

/** What the container backend cannot do yet, refused before anything starts. */
export function checkSandboxConfig(config: Config): void {
  if (config.sandboxes.backend !== "container") return;
  if (config.databaseUrl) {
    throw new Error(
      "--sandbox-backend container runs each session's container on the instance that made it; instances sharing " +
        "a database (--database-url) cannot yet route a session's turns to it: use one instance, or the local backend",
    );
  }
}

/** How often forgotten idempotency keys are deleted. */
const HOUSEKEEPING_MS = 3600_000;

export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  checkSandboxConfig(config);
  const logger = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? systemClock;
  mkdirSync(config.dataDir, { recursive: true });
  mkdirSync(config.workspaceRoot, { recursive: true });
  const mock =
    config.provider.kind === "mock"
      ? await MockResponsesServer.start({ fallback: scriptedModel(), capture: opts.mockCapture ?? 0 })
      : null;
  const store = opts.store ?? (await openStore(config));
  if (config.databaseUrl && !relative(config.dataDir, config.files.dir).startsWith("..")) {
    logger.warn(
      { dir: config.files.dir },
      "uploaded files are kept under this instance's data directory: instances sharing a database need --file-dir " +
        "on storage they all see",
    );
  }
  const home = prepareCodexHome(config, mock?.url ?? null);
  if (home.bwrap?.helperDir) {
    logger.warn(
      { bwrap: home.bwrap.path, version: home.bwrap.version, helperDir: home.bwrap.helperDir },
      "a system bubblewrap without --argv0 is on PATH: the engine's sandbox helper is given codex-linux-sandbox " +
        "from the helper directory (without it every sandboxed command would fail)",
    );
  }
  // Several instances may share a PostgreSQL database; the embedded one has this instance alone.
  const shared = await sharedParts(store, config, home.codexHome, logger);
  // The local backend's limits: each engine process and its commands in a group of their own.
  const localLimits =
    config.sandboxes.backend === "local"
      ? await LocalLimits.open({ ...sandboxSizing(config), logger })
      : null;
  const engines = new EnginePool({
    size: config.enginePoolSize,
    maxThreadsPerEngine: config.maxThreadsPerEngine,
    codexHome: home.codexHome,
    env: home.env,
    cwd: config.workspaceRoot,
    logger,
    ...(isolated(config) ? { requiredProfile: PERMISSION_PROFILE } : {}),
    ...(config.codexPath ? { codexPath: config.codexPath } : {}),
    // Without a key no turn reaches the model anyway (each says so): nothing to probe.
    modelUrl: missingModelReason(config) ? null : home.modelUrl,
    ...(localLimits ? { confine: (pid: number, index: number) => localLimits.confine(pid, index) } : {}),
  });
  const sandboxes = await openSandboxes(config, logger).catch(async (err: unknown) => {
    await engines.close();
    localLimits?.close();
    await store.close();
    await mock?.close();
    throw err;
  });
  const core = createCore(config, {
    store,
    engines,
    logger,
    clock,
    ...shared,
    ...(sandboxes ? { sandboxes } : {}),
    ...(localLimits ? { localLimits } : {}),
  });
  // Metrics and traces observe from here on (the turns failed by recovery included).
  const observability = new Observability(core, { env: opts.telemetryEnv ?? process.env, logger });
  // Joined before anything is claimed: a claim by an instance the others do not know looks orphaned.
  await core.cluster.start({
    handle: (op) => core.control.handle(op),
    wake: (sessionId, seq) => (sessionId === "*" ? core.hub.wakeAll() : core.hub.notify(sessionId, seq)),
    fenced: () => engines.killAll(),
    revoked: (keyId) => core.keyWatch.revoked(keyId),
  });
  core.hub.onWrite((sessionId, seq) => core.cluster.published(sessionId, seq));
  await recover(core);
  if (shared.cluster) core.takeover.start();
  const app = buildApp(core, observability);
  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  core.sessions.startExpiry();
  // Automations and webhooks, on every instance: fire due occurrences, deliver invocations and the webhook outbox.
  core.workers.start();
  // Expired uploads (and what interrupted ones left) go now and every hour; until then they are already not found.
  const purgeFiles = () =>
    void core.files.purgeExpired().catch((err: unknown) => {
      logger.warn({ err: String(err) }, "purging expired files failed");
    });
  purgeFiles();
  const housekeeping = clock.every(HOUSEKEEPING_MS, () => {
    store.expireIdempotency(clock.now() - IDEMPOTENCY_TTL_SECONDS).catch((err: unknown) => {
      logger.warn({ err: String(err) }, "idempotency expiry failed");
    });
    purgeFiles();
  });
  engines.warm().catch((err: unknown) => logger.error({ err: String(err) }, "engine failed to start"));
  engines.model(); // the model's first probe, before /health is asked
  let stopping: Promise<void> | null = null;
  return {
    app,
    core,
    url: `http://${host}:${port}`,
    mock,
    codexHome: { codexHome: home.codexHome, bwrap: home.bwrap },
    stop() {
      stopping ??= (async () => {
        housekeeping.cancel();
        core.takeover.stop();
        core.sessions.stopExpiry();
        // No automation starts a turn and no webhook is sent from here on (what was in flight is redone later).
        await core.workers.stop();
        const closing = app.close();
        await core.runner.abortAll("server shutting down");
        // What the ended turns and the sessions started in the background finishes here, while the engines and
        // the store it uses are still up; nothing of it writes after the service has stopped.
        await Promise.all([core.runner.hooksDone(), core.sessions.hooksDone()]);
        await core.environments.close();
        await core.checkpoints.close();
        await core.hub.drain();
        await observability.shutdown();
        core.keyWatch.stop();
        core.hub.closeAll();
        // Every stream has ended; what is left are idle keep-alive connections (some opened after the close
        // began, answered 503): don't wait for their clients to hang up.
        app.server.closeAllConnections();
        await closing;
        await engines.close();
        localLimits?.close();
        // Containers keep running (sessions' sandboxes are adopted again at the next start); the proxy stops.
        await sandboxes?.close();
        await core.cluster.stop();
        await store.close();
        await mock?.close();
      })();
      return stopping;
    },
  };
}
