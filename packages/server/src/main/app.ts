/** The HTTP app: trust boundaries, auth, error shapes, and one plugin per wire dialect. */
import Fastify, { type FastifyBaseLogger } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { createApplication } from "../application/index.js";
import { legacyErrors } from "../dialects/legacy/errors.js";
import { openaiErrors } from "../dialects/openai/errors.js";
import { traceRoutes } from "../dialects/openai/traces.js";
import { Observability } from "../features/observability/index.js";
import type { App } from "../http/app-types.js";
import { installAuth } from "../http/auth.js";
import { dialectConstraint } from "../http/dialect.js";
import { installErrorHandling, sendError } from "../http/errors.js";
import { parseJson } from "../http/json.js";
import { consoleRoutes } from "../http/ops/console.js";
import { healthRoutes } from "../http/ops/health.js";
import { metricsRoutes } from "../http/ops/metrics.js";
import { installOpenApi, openapiRoutes } from "../http/ops/openapi.js";
import { installRateLimit } from "../http/rate-limit.js";
import { RequestLog } from "../http/request-log.js";
import { installRequestTelemetry } from "../http/telemetry.js";
import { installTrustBoundaries } from "../http/trust.js";
import { validatorCompiler } from "../http/validate.js";
import { badRequest, notImplemented } from "../kernel/errors.js";
import type { Core } from "./compose.js";
import { dialectPlugins } from "./dialects.js";

/** Official endpoints this server does not provide yet: a clear error in the right shape, never a 404 page. */
const UNIMPLEMENTED = [
  "/v1/agents/environments",
  "/v1/agents/environments/*",
  "/v1/agents/automations",
  "/v1/agents/automations/*",
  "/v1/vaults",
  "/v1/vaults/*",
  "/v1/agents/sessions/:session_id/subagents",
  "/v1/agents/sessions/:session_id/subagents/*",
];

declare module "fastify" {
  interface FastifyInstance {
    /** Every route of the app, once per method and URL (both dialects' routes share URLs). */
    routeTable: Array<{ method: string; url: string }>;
  }
}

/** `observability`: the service's metrics and traces (default: metrics only, no trace export). */
export function buildApp(core: Core, observability = new Observability(core)): App {
  const app = Fastify({
    loggerInstance: core.logger as FastifyBaseLogger,
    // One line per answered request, without secrets in its URL.
    logController: new RequestLog(),
    bodyLimit: core.config.bodyLimitBytes,
    return503OnClosing: true,
    // On close, idle keep-alive connections are dropped at once; streams still being written end on their own.
    forceCloseConnections: "idle",
    // Artifact ids are base64url paths: long paths must stay reachable (the default cap is 100).
    routerOptions: { maxParamLength: 4096, constraints: { dialect: dialectConstraint } },
    // Malformed URLs and the like get the dialect's error shape too.
    frameworkErrors: (err, req, reply) => {
      sendError(req, reply, badRequest(err.message));
    },
  }).withTypeProvider<ZodTypeProvider>();
  app.decorate("routeTable", []);
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) {
      if (method === "HEAD" || app.routeTable.some((r) => r.method === method && r.url === route.url))
        continue;
      app.routeTable.push({ method, url: route.url });
    }
  });
  app.setValidatorCompiler(validatorCompiler);
  // Responses are plain JSON (the schemas document them; they are not re-validated on the way out).
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // Only JSON reaches the parser (http/trust.ts answers 415 to anything else before the body is read).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, parseJson(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  installErrorHandling(app, { openai: openaiErrors, template: legacyErrors });
  installRequestTelemetry(app, observability);
  installTrustBoundaries(app, {
    allowedHosts: new Set(core.config.allowedHosts),
    corsOrigins: new Set(core.config.corsOrigins),
  });
  installAuth(app, { token: core.config.token, keys: core.keys });
  installRateLimit(app, core.config.rateLimitPerMinute);
  // The OpenAPI documents collect routes as they are registered: every route comes after, in a plugin.
  installOpenApi(app);
  const application = createApplication(core, { resource: observability.resource });
  app.register(async (ops: App) => {
    healthRoutes(ops, core);
    metricsRoutes(ops, observability.metrics);
    openapiRoutes(ops);
    consoleRoutes(ops);
    traceRoutes(ops, application);
  });
  for (const plugin of dialectPlugins(application)) app.register(plugin);
  app.register(async (rest: App) => {
    for (const url of UNIMPLEMENTED) {
      rest.route({
        method: ["GET", "POST", "DELETE"],
        url,
        schema: { hide: true },
        handler: async (req) => {
          throw notImplemented(
            `${req.method} ${req.url.split("?")[0]} is not implemented by this server yet`,
          );
        },
      });
    }
  });
  return app;
}
