import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { MockResponsesServer, scriptedModel } from "@codex-agent-api/testkit";
import type { FastifyInstance } from "fastify";
import pino, { type Logger } from "pino";
import { type AppDeps, buildApp } from "./app.js";
import type { Config } from "./config.js";
import { AgentService } from "./domain/agents.js";
import { SessionService } from "./domain/sessions.js";
import { prepareCodexHome } from "./engine/codex-home.js";
import { EnginePool } from "./engine/pool.js";
import { SqliteStore } from "./store/sqlite.js";
import { EventHub } from "./stream/hub.js";

export interface Service {
  app: FastifyInstance;
  deps: AppDeps;
  /** Base URL the server listens on. */
  url: string;
  /** The in-process scripted model (with --mock-model). */
  mock: MockResponsesServer | null;
  /** Graceful stop: stop accepting, end running turns, flush, close engines. */
  stop(): Promise<void>;
}

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "codex-agent-api" } });
}

/** Opens the store, starts the engine pool (and the mock model if asked) and listens. */
export async function startService(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
): Promise<Service> {
  mkdirSync(config.dataDir, { recursive: true });
  mkdirSync(config.workspaceRoot, { recursive: true });
  const mock =
    config.provider.kind === "mock" ? await MockResponsesServer.start({ fallback: scriptedModel() }) : null;
  // One commit per write: an event is durable before any client sees it, even across a SIGKILL.
  const store = SqliteStore.open(join(config.dataDir, "agents.db"), { groupCommit: false });
  const hub = new EventHub(store);
  const home = prepareCodexHome(config, mock?.url ?? null);
  const pool = new EnginePool({
    size: config.enginePoolSize,
    maxThreadsPerEngine: config.maxThreadsPerEngine,
    codexHome: home.codexHome,
    env: home.env,
    cwd: config.workspaceRoot,
    logger,
    ...(config.codexPath ? { codexPath: config.codexPath } : {}),
  });
  const agents = new AgentService(store, config.model);
  const sessions = new SessionService({ store, hub, pool, agents, config, logger });
  const recovered = sessions.recover();
  if (recovered)
    logger.warn({ sessions: recovered }, "marked turns interrupted by the last shutdown as failed");
  // Goals that were running come back paused. The engine keeps its own goal state and would restart an active
  // goal the moment its thread is resumed, so pause it there too before serving anything.
  for (const sessionId of sessions.goals.pauseAllActive("server_restart")) {
    const threadId = store.getSession(sessionId)?.thread_id;
    if (!threadId) continue;
    await pool.call("thread/goal/set", { threadId, status: "paused" }).catch((err: unknown) => {
      logger.warn({ session: sessionId, err: String(err) }, "could not pause the engine goal");
    });
    logger.warn({ session: sessionId }, "goal paused after restart");
  }
  const deps: AppDeps = { config, logger, store, hub, pool, agents, sessions };
  const app = buildApp(deps);
  await app.listen({ host: config.host, port: config.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  sessions.startExpiry();
  pool.warm().catch((err: unknown) => logger.error({ err: String(err) }, "engine failed to start"));
  let stopping: Promise<void> | null = null;
  return {
    app,
    deps,
    url: `http://${host}:${port}`,
    mock,
    stop() {
      stopping ??= (async () => {
        const closing = app.close();
        await sessions.shutdown();
        hub.closeAll();
        await closing;
        await pool.close();
        store.close();
        await mock?.close();
      })();
      return stopping;
    },
  };
}
