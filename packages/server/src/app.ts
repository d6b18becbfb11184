import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Config } from "./config.js";
import type { AgentService } from "./domain/agents.js";
import { badRequest } from "./domain/errors.js";
import type { SessionService } from "./domain/sessions.js";
import type { EnginePool } from "./engine/pool.js";
import { installAuth } from "./http/auth.js";
import { installErrorHandling, sendError } from "./http/errors.js";
import { goalHandlers } from "./http/goals.js";
import { healthRoutes } from "./http/health.js";
import { openaiHandlers } from "./http/openai/index.js";
import { registerRoutes } from "./http/routes.js";
import { templateHandlers } from "./http/template/index.js";
import { installTrustBoundaries } from "./http/trust.js";
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

/** A `\uD800`-`\uDFFF` escape in the raw text: the only way a parsed body can hold an unpaired surrogate. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when some string (value or key) of a parsed JSON value holds an unpaired UTF-16 surrogate. */
function hasLoneSurrogate(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") {
      if (LONE_SURROGATE.test(v)) return true;
    } else if (Array.isArray(v)) {
      for (const child of v) stack.push(child);
    } else if (v && typeof v === "object") {
      for (const [k, child] of Object.entries(v)) {
        if (LONE_SURROGATE.test(k)) return true;
        stack.push(child);
      }
    }
  }
  return false;
}

function parseJson(body: string): unknown {
  if (body.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    throw badRequest(`Invalid JSON: ${(err as Error).message}`);
  }
  // Such text is not Unicode: the engine cannot parse a request carrying it and never answers, so a turn
  // started with it would hang its session for good.
  if (SURROGATE_ESCAPE.test(body) && hasLoneSurrogate(value)) {
    throw badRequest("Invalid JSON: a string contains an unpaired UTF-16 surrogate escape (\\uD800-\\uDFFF)");
  }
  return value;
}

export function buildApp(deps: AppDeps): FastifyInstance {
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: deps.config.bodyLimitBytes,
    return503OnClosing: true,
    forceCloseConnections: false,
    // Artifact ids are base64url paths: long paths must stay reachable (the default cap is 100).
    routerOptions: { maxParamLength: 4096 },
    // Malformed URLs and the like get the dialect's error shape too.
    frameworkErrors: (err, req, reply) => {
      sendError(req, reply, badRequest(err.message));
    },
  });
  // Only JSON reaches the parser (http/trust.ts answers 415 to anything else before the body is read).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, parseJson(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  installErrorHandling(app);
  installTrustBoundaries(app, {
    allowedHosts: new Set(deps.config.allowedHosts),
    corsOrigins: new Set(deps.config.corsOrigins),
  });
  installAuth(app, deps.config.token);
  healthRoutes(app, deps);
  registerRoutes(app, {
    template: { ...templateHandlers(deps), ...goalHandlers(deps) },
    openai: openaiHandlers(deps),
  });
  return app;
}
