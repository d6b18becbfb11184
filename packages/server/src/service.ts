/** The running service: opens the store, starts the engines (and the mock model if asked), recovers, listens. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { MockResponsesServer, scriptedModel } from "@codex-agent-api/mock-model";
import pino, { type Logger } from "pino";
import { buildApp } from "./app.js";
import type { Config } from "./config.js";
import { type Core, createCore, recover } from "./core.js";
import { isolated, PERMISSION_PROFILE, prepareCodexHome } from "./engine/codex-home.js";
import { EnginePool } from "./engine/pool.js";
import type { App } from "./http/app-types.js";
import { IDEMPOTENCY_TTL_SECONDS } from "./http/idempotency.js";
import { SqliteStore } from "./store/sqlite/index.js";
import type { Store } from "./store/types.js";
import { type Clock, systemClock } from "./util/clock.js";

export interface Service {
  app: App;
  core: Core;
  /** Base URL the server listens on. */
  url: string;
  /** The in-process scripted model (with --mock-model). */
  mock: MockResponsesServer | null;
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
}

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "codex-agent-api" } });
}

/** How often forgotten idempotency keys are deleted. */
const HOUSEKEEPING_MS = 3600_000;

export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const clock = opts.clock ?? systemClock;
  mkdirSync(config.dataDir, { recursive: true });
  mkdirSync(config.workspaceRoot, { recursive: true });
  const mock =
    config.provider.kind === "mock"
      ? await MockResponsesServer.start({ fallback: scriptedModel(), capture: opts.mockCapture ?? 0 })
      : null;
  const store = opts.store ?? SqliteStore.open(join(config.dataDir, "agents.db"));
  const home = prepareCodexHome(config, mock?.url ?? null);
  const engines = new EnginePool({
    size: config.enginePoolSize,
    maxThreadsPerEngine: config.maxThreadsPerEngine,
    codexHome: home.codexHome,
    env: home.env,
    cwd: config.workspaceRoot,
    logger,
    ...(isolated(config) ? { requiredProfile: PERMISSION_PROFILE } : {}),
    ...(config.codexPath ? { codexPath: config.codexPath } : {}),
  });
  const core = createCore(config, { store, engines, logger, clock });
  await recover(core);
  const app = buildApp(core);
  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  core.sessions.startExpiry();
  const housekeeping = clock.every(HOUSEKEEPING_MS, () => {
    store.expireIdempotency(clock.now() - IDEMPOTENCY_TTL_SECONDS).catch((err: unknown) => {
      logger.warn({ err: String(err) }, "idempotency expiry failed");
    });
  });
  engines.warm().catch((err: unknown) => logger.error({ err: String(err) }, "engine failed to start"));
  let stopping: Promise<void> | null = null;
  return {
    app,
    core,
    url: `http://${host}:${port}`,
    mock,
    stop() {
      stopping ??= (async () => {
        housekeeping.cancel();
        core.sessions.stopExpiry();
        const closing = app.close();
        await core.runner.abortAll("server shutting down");
        await core.hub.drain();
        core.hub.closeAll();
        // Every stream has ended; what is left are idle keep-alive connections (some opened after the close
        // began, answered 503): don't wait for their clients to hang up.
        app.server.closeAllConnections();
        await closing;
        await engines.close();
        await store.close();
        await mock?.close();
      })();
      return stopping;
    },
  };
}
