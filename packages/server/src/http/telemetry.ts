/**
 * What the service observes of HTTP requests: a span per request (when traces are exported), a count and a
 * duration per route, and the request's context around its handler (so that the turn it starts knows its dialect
 * and its span). Installed before auth, so refused requests are seen too.
 */

import type { Observability } from "../features/observability/index.js";
import type { RequestSpan } from "../features/observability/tracing.js";
import { runInRequest } from "../kernel/request-context.js";
import type { App } from "./app-types.js";
import { dialectOf } from "./dialect.js";

declare module "fastify" {
  interface FastifyRequest {
    /** The request's span (only when traces are exported). */
    telemetrySpan: RequestSpan | null;
  }
}

/** Probes and scrapes: counted, never traced. */
const UNTRACED = new Set(["/health", "/metrics"]);

const pathOf = (url: string) => url.split("?", 1)[0]!;

export function installRequestTelemetry(app: App, obs: Observability): void {
  const { metrics, tracing } = obs;
  app.decorateRequest("telemetrySpan", null);
  app.addHook("onRequest", (req, _reply, done) => {
    const path = pathOf(req.url);
    if (tracing.enabled && !UNTRACED.has(path)) {
      req.telemetrySpan = tracing.startRequest({
        method: req.method,
        route: req.routeOptions.url,
        path,
        headers: req.headers,
        dialect: dialectOf(req),
      });
    }
    done();
  });
  // Callback style: the rest of the request (its handler) runs inside the context.
  app.addHook("preHandler", (req, _reply, done) => {
    runInRequest({ dialect: dialectOf(req), span: req.telemetrySpan?.span.spanContext() ?? null }, done);
  });
  app.addHook("onResponse", (req, reply, done) => {
    metrics.request({
      dialect: dialectOf(req),
      method: req.method,
      route: req.routeOptions.url ?? "unmatched",
      status: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
    });
    if (req.telemetrySpan) tracing.endRequest(req.telemetrySpan, reply.statusCode);
    done();
  });
  app.addHook("onRequestAbort", (req, done) => {
    if (req.telemetrySpan) tracing.endRequest(req.telemetrySpan, null);
    done();
  });
}
