import type { Core } from "../../core.js";
import type { App } from "../app-types.js";

/** Liveness and engine state; open to everyone, so it tells nothing about any project's sessions. */
export function healthRoutes(app: App, core: Core): void {
  app.get("/health", async () => ({
    status: "ok",
    engines: core.engines
      .stats()
      .map((s) => ({ index: s.index, running: s.pid !== undefined, threads: s.threads })),
    active_turns: core.runner.activeCount(),
  }));
}
