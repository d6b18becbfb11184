/**
 * Housekeeping of the checkpoint stores: a store idle for `idleSeconds` (no turn of a session using it running)
 * is pruned (retention: count and age) and repacked when worth it, in the background (tracked: shutdown waits for
 * it). A store whose sessions still run a turn waits another period; nothing is scheduled once the service closed.
 */
import type { Logger } from "pino";
import type { CheckpointSettings } from "../../config/load.js";
import type { TurnRunner } from "../../domain/turns/runner.js";
import type { Clock } from "../../kernel/clock.js";
import type { InFlight } from "../../kernel/in-flight.js";
import type { CheckpointStores, Workspace } from "./stores.js";
import type { StoreUsage } from "./usage.js";

export class Housekeeping {
  constructor(
    private readonly deps: {
      settings: CheckpointSettings;
      clock: Clock;
      logger: Logger;
      runner: Pick<TurnRunner, "isActive">;
      stores: CheckpointStores;
      /** Told that a store changed. */
      usage: StoreUsage;
      /** The service's background work (close waits for it). */
      work: InFlight;
      /** The service has closed: nothing starts any more. */
      closed: () => boolean;
    },
  ) {}

  /** Prune (retention) and repack once the store has been idle for a while. */
  scheduleIdle(ws: Workspace): void {
    if (this.deps.closed()) return;
    ws.idle?.cancel();
    ws.idle = this.deps.clock.after(this.deps.settings.idleSeconds * 1000, () => {
      ws.idle = null;
      void this.deps.work.track(this.housekeep(ws));
    });
  }

  private async housekeep(ws: Workspace): Promise<void> {
    if (this.deps.closed() || !ws.repo || !this.deps.stores.isCurrent(ws)) return;
    if ([...ws.sessions].some((id) => this.deps.runner.isActive(id))) {
      this.scheduleIdle(ws);
      return;
    }
    const { keep, maxAgeSeconds } = this.deps.settings;
    try {
      const repo = await ws.repo;
      const pruned = await repo.prune({
        ...(keep > 0 ? { keep } : {}),
        ...(maxAgeSeconds > 0 ? { olderThanSeconds: maxAgeSeconds } : {}),
      });
      const repacked = pruned > 0 || (await repo.repack());
      if (pruned > 0 || repacked) {
        this.deps.logger.info({ store: ws.key, pruned, repacked }, "checkpoint store tidied");
        this.deps.usage.changed();
      }
    } catch (err) {
      this.deps.logger.warn({ store: ws.key, err: String(err) }, "checkpoint housekeeping failed");
    }
  }
}
