import type { FastifyInstance } from "fastify";
import type { AppDeps } from "../app.js";

export function healthRoutes(app: FastifyInstance, deps: AppDeps): void {
  app.get("/health", async () => ({
    status: "ok",
    engines: deps.pool
      .stats()
      .map((s) => ({ index: s.index, running: s.pid !== undefined, threads: s.threads })),
    active_turns: deps.sessions.runner.activeCount(),
  }));
}
