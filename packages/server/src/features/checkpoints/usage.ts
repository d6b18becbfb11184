/**
 * The checkpoint stores' disk usage, for /health: measured in the background (a walk of every store under the
 * checkpoint directory, tracked so that shutdown waits for it), again once a store changed (at most every 5 s)
 * and anyway every minute. Health answers the last measurement.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { CheckpointSettings } from "../../config/load.js";
import type { InFlight } from "../../kernel/in-flight.js";
import { diskUsageOf } from "../../platform/git-store/shadow-repo.js";

/** Disk usage is measured again at most this often once stores changed, and at least this often anyway. */
const USAGE_MIN_MS = 5_000;
const USAGE_MAX_MS = 60_000;

export class StoreUsage {
  private usage = { stores: 0, bytes: 0, at: 0 };
  /** A store changed since the last measurement. */
  private stale = true;
  private measuring: Promise<void> | null = null;

  constructor(
    private readonly settings: CheckpointSettings,
    /** The service's background work (close waits for it). */
    private readonly work: InFlight,
  ) {}

  /** Stores in the last measurement. */
  get stores(): number {
    return this.usage.stores;
  }

  /** Bytes on disk in the last measurement. */
  get bytes(): number {
    return this.usage.bytes;
  }

  /** A store changed: measured again once the last measurement is old enough. */
  changed(): void {
    this.stale = true;
  }

  /** Starts a measurement in the background when one is due (none runs, and the last one is too old). */
  refreshIfDue(): void {
    const age = Date.now() - this.usage.at;
    if (!this.measuring && (age > USAGE_MAX_MS || (this.stale && age > USAGE_MIN_MS))) {
      this.stale = false;
      this.measuring = this.work.track(
        this.measure().finally(() => {
          this.measuring = null;
        }),
      );
    }
  }

  /** Measures the stores' disk usage now. */
  async measure(): Promise<void> {
    const dir = this.settings.dir;
    const names = await readdir(dir).catch(() => [] as string[]);
    let bytes = 0;
    for (const name of names) bytes += await diskUsageOf(join(dir, name));
    this.usage = { stores: names.length, bytes, at: Date.now() };
  }
}
