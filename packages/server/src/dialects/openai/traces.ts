import type { Observability } from "../../features/observability/index.js";
import { listTraces } from "../../features/observability/turn-traces.js";
import type { App } from "../../http/app-types.js";
import { ListQuery, SessionParams } from "../../http/validate.js";
import type { Core } from "../../main/compose.js";

/**
 * `GET /v1/agents/sessions/{id}/traces` (the official SDK's `sessions.traces.list`): each ended turn's trace as
 * OTLP JSON, built from the stored events (the same after a restart and on every instance). Served to both
 * dialects in the official format, like turns.
 */
export function traceRoutes(app: App, core: Core, obs: Observability): void {
  app.get(
    "/v1/agents/sessions/:session_id/traces",
    { schema: { params: SessionParams, querystring: ListQuery } },
    async (req) => {
      const s = await core.sessions.get(req.scope, req.params.session_id);
      return listTraces(core.store, obs.resource, s.id, req.query);
    },
  );
}
