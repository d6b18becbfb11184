/**
 * The service's observability, attached to a core: Prometheus metrics, trace export (when configured) and the
 * turn traces of `traces.list`. It only observes: stored events (`hub.onEvent`), the runner, engines and hub as
 * they report themselves, and HTTP requests (http/telemetry.ts).
 */
import type { Resource } from "@opentelemetry/resources";
import type { Logger } from "pino";
import { attachFeatures, type FeatureHost } from "../../domain/feature.js";
import type { SessionService } from "../../domain/sessions/service.js";
import type { TurnRunner } from "../../domain/turns/runner.js";
import type { Cluster } from "../../platform/cluster/types.js";
import type { LocalLimits } from "../../platform/engine/local-limits.js";
import type { Engines } from "../../platform/engine/types.js";
import type { Sandboxes } from "../../platform/sandbox/sandboxes.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { EventRecord, Store } from "../../store/types.js";

/** What observability watches: the service's parts as they report themselves. */
export interface Observed {
  logger: Logger;
  store: Store;
  cluster: Pick<Cluster, "instanceId">;
  runner: Pick<TurnRunner, "activeCount"> & FeatureHost["runner"];
  hub: Pick<EventHub, "subscriberCount" | "onEvent">;
  engines: Pick<Engines, "stats">;
  sessions: Pick<SessionService, "use">;
  sandboxes: Pick<Sandboxes, "stats" | "limitsFor" | "onLimitHit"> | null;
  localLimits: Pick<LocalLimits, "limits" | "onLimitHit"> | null;
}

import { Metrics } from "./metrics.js";
import { TurnOrigins } from "./origins.js";
import { serviceResource } from "./otlp.js";
import { type Env, Tracing, tracingConfig } from "./tracing.js";

export interface ObservabilityOptions {
  /** Where the OpenTelemetry settings (`OTEL_*`) are read. Default: none (no export); the service passes its env. */
  env?: Env;
  logger?: Logger;
}

export class Observability {
  readonly metrics: Metrics;
  readonly tracing: Tracing;
  /** The resource of the traces `traces.list` returns. */
  readonly resource: Resource;
  private readonly origins = new TurnOrigins();

  constructor(core: Observed, opts: ObservabilityOptions = {}) {
    const env = opts.env ?? {};
    const logger = opts.logger ?? core.logger;
    this.resource = serviceResource(env);
    this.metrics = new Metrics({
      activeTurns: () => core.runner.activeCount(),
      subscribers: () => core.hub.subscriberCount(),
      engines: () => core.engines.stats(),
      sandboxes: () => {
        if (!core.sandboxes) return null;
        const st = core.sandboxes.stats();
        const memoryBytes = st.sandboxes.reduce((sum, x) => sum + (x.memoryCurrentBytes ?? 0), 0);
        const { warm, creating, inUse, stopped } = st;
        return { warm, creating, inUse, stopped, memoryBytes, limits: core.sandboxes.limitsFor() };
      },
      localLimits: () => {
        const l = core.localLimits?.limits;
        return l ? { cpus: l.cpus, memoryBytes: l.memoryBytes, pids: l.pids, diskBytes: l.fileBytes } : null;
      },
    });
    core.sandboxes?.onLimitHit((limit) => this.metrics.sandboxLimitHit(limit));
    core.localLimits?.onLimitHit((limit, n) => this.metrics.sandboxLimitHit(limit, n));
    let config = null;
    try {
      config = tracingConfig(env);
    } catch (err) {
      logger.error({ err: String(err) }, "traces are not exported");
    }
    this.tracing = new Tracing(
      { store: core.store, logger, resource: serviceResource(env, core.cluster.instanceId) },
      config,
    );
    if (config) logger.info({ url: config.url, protocol: config.protocol }, "exporting traces (OTLP)");
    attachFeatures(core, [
      {
        name: "observability",
        events: (e) => this.event(e),
        sessions: { afterDelete: async (s) => this.metrics.sessionDeleted(s.id) },
      },
    ]);
  }

  private event(e: EventRecord): void {
    const turnId = e.turn_id;
    switch (e.type) {
      case "turn.queued":
      case "turn.started":
        this.metrics.event(e, this.origins.begin(e.data.turn.id).dialect);
        break;
      case "turn.completed":
      case "turn.failed":
      case "turn.cancelled": {
        const origin = this.origins.end(e.data.turn.id);
        this.metrics.event(e, origin.dialect);
        // A subagent's turns are exported within the trace of the root turn they ran in.
        if (!e.data.turn.subagent_id) this.tracing.turnEnded(e, e.data.turn, origin);
        break;
      }
      default:
        this.metrics.event(e, turnId ? this.origins.get(turnId).dialect : "unknown");
    }
  }

  /** Exports what is left and stops exporting. */
  async shutdown(): Promise<void> {
    await this.tracing.shutdown();
  }
}
