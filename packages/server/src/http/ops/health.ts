import type { TurnRunner } from "../../domain/turns/runner.js";
import type { CheckpointService } from "../../features/checkpoints/service.js";
import type { Cluster } from "../../platform/cluster/types.js";
import type { Engines } from "../../platform/engine/types.js";
import type { Sandboxes } from "../../platform/sandbox/sandboxes.js";
import type { App } from "../app-types.js";

/**
 * Liveness and engine state; open to everyone, so it tells nothing about any project's sessions (nor the model's
 * URL). 503 while this instance has fenced itself (it lost its database): a load balancer then sends requests
 * elsewhere. `degraded` (still 200: the instance serves every request, other instances would use the same model)
 * when its engines cannot reach their model: turns would wait for it and fail.
 */
/** What the health answer reads (the service's parts, as they report themselves). */
export interface HealthSources {
  cluster: Pick<Cluster, "healthy" | "stats">;
  engines: Pick<Engines, "model" | "stats">;
  runner: Pick<TurnRunner, "activeCount">;
  checkpoints: Pick<CheckpointService, "health" | "close">;
  sandboxes: Pick<Sandboxes, "stats"> | null;
}

export function healthRoutes(app: App, core: HealthSources): void {
  app.get("/health", async (_req, reply) => {
    if (!core.cluster.healthy) reply.code(503);
    const model = core.engines.model();
    return {
      status: !core.cluster.healthy ? "fenced" : model.reachable === false ? "degraded" : "ok",
      engines: core.engines
        .stats()
        .map((s) => ({ index: s.index, running: s.pid !== undefined, threads: s.threads, busy: s.busy })),
      // Whether the engines reach their model: {reachable: true | false | null (not known yet), reason, since}.
      model,
      active_turns: core.runner.activeCount(),
      // This instance among the others on its database (single: the embedded store); unhealthy while fenced.
      cluster: core.cluster.stats(),
      // Workspace checkpoints: totals only (stores, disk bytes measured in the background, turn-hook time).
      checkpoints: core.checkpoints.health(),
      // Where commands run; on the container backend, counts of containers only (no session ids: this is open).
      sandboxes: sandboxHealth(core),
    };
  });
  // Stops the checkpoint stores' housekeeping with the server (and waits for what runs).
  app.addHook("onClose", async () => {
    await core.checkpoints.close();
  });
}

function sandboxHealth(core: HealthSources) {
  if (!core.sandboxes) return { backend: "local" as const };
  const s = core.sandboxes.stats();
  return {
    backend: "container" as const,
    warm: s.warm,
    creating: s.creating,
    in_use: s.inUse,
    stopped: s.stopped,
  };
}
