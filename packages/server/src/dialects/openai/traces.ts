import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { ListQuery, SessionParams } from "../../http/validate.js";

/**
 * `GET /v1/agents/sessions/{id}/traces` (the official SDK's `sessions.traces.list`): each ended turn's trace as
 * OTLP JSON, built from the stored events (the same after a restart and on every instance). Served to both
 * dialects in the official format, like turns.
 */
export function traceRoutes(app: App, { sessions, traces }: Application): void {
  app.get(
    "/v1/agents/sessions/:session_id/traces",
    { schema: { params: SessionParams, querystring: ListQuery } },
    async (req) => traces.list(await sessions.get(req.scope, req.params.session_id), req.query),
  );
}
