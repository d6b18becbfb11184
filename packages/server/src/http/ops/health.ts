import type { Core } from "../../core.js";
import type { App } from "../app-types.js";

/**
 * Liveness and engine state; open to everyone, so it tells nothing about any project's sessions. 503 while this
 * instance has fenced itself (it lost its database): a load balancer then sends requests elsewhere.
 */
export function healthRoutes(app: App, core: Core): void {
  app.get("/health", async (_req, reply) => {
    if (!core.cluster.healthy) reply.code(503);
    return {
      status: core.cluster.healthy ? "ok" : "fenced",
      engines: core.engines
        .stats()
        .map((s) => ({ index: s.index, running: s.pid !== undefined, threads: s.threads, busy: s.busy })),
      active_turns: core.runner.activeCount(),
      // This instance among the others on its database (single: the embedded store); unhealthy while fenced.
      cluster: core.cluster.stats(),
      // Workspace checkpoints: totals only (stores, disk bytes measured in the background, turn-hook time).
      checkpoints: core.checkpoints.health(),
    };
  });
  // Stops the checkpoint stores' housekeeping with the server (and waits for what runs).
  app.addHook("onClose", async () => {
    await core.checkpoints.close();
  });
}
