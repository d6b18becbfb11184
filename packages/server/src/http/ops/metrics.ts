import type { Metrics } from "../../features/observability/metrics.js";
import { forbidden } from "../../kernel/errors.js";
import type { App } from "../app-types.js";

/**
 * Prometheus metrics. They cover every project, so with authentication on they are the operator's: the service
 * token or an admin API key (a project's key gets 403); without authentication (loopback only) they are open.
 */
export function metricsRoutes(app: App, metrics: Metrics): void {
  app.get("/metrics", async (req, reply) => {
    if (!req.scope.admin) {
      throw forbidden("Metrics cover every project: use the service token or an admin API key");
    }
    const { contentType, body } = await metrics.render();
    return reply.type(contentType).send(body);
  });
}
