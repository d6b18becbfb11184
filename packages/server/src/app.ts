import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Config } from "./config.js";
import type { AgentService } from "./domain/agents.js";
import { badRequest } from "./domain/errors.js";
import type { SessionService } from "./domain/sessions.js";
import type { EnginePool } from "./engine/pool.js";
import { installAuth } from "./http/auth.js";
import { installErrorHandling } from "./http/errors.js";
import { goalHandlers } from "./http/goals.js";
import { healthRoutes } from "./http/health.js";
import { openaiHandlers } from "./http/openai/index.js";
import { registerRoutes } from "./http/routes.js";
import { templateHandlers } from "./http/template/index.js";
import type { Store } from "./store/types.js";
import type { EventHub } from "./stream/hub.js";

/** Everything the HTTP layer needs, passed explicitly (no globals). */
export interface AppDeps {
  config: Config;
  logger: Logger;
  store: Store;
  hub: EventHub;
  pool: EnginePool;
  agents: AgentService;
  sessions: SessionService;
}

function parseJson(body: string): unknown {
  if (body.trim() === "") return {};
  try {
    return JSON.parse(body);
  } catch (err) {
    throw badRequest(`Invalid JSON: ${(err as Error).message}`);
  }
}

export function buildApp(deps: AppDeps): FastifyInstance {
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: deps.config.bodyLimitBytes,
    return503OnClosing: true,
    forceCloseConnections: false,
  });
  // Bodies are JSON whatever the Content-Type says (curl -d sends form encoding by default).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, parseJson(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  installErrorHandling(app);
  installAuth(app, deps.config.token);
  healthRoutes(app, deps);
  registerRoutes(app, {
    template: { ...templateHandlers(deps), ...goalHandlers(deps) },
    openai: openaiHandlers(deps),
  });
  return app;
}
