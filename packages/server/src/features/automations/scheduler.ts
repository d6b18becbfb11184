/**
 * Fires due automation occurrences, on every instance, driven by the service's clock. One occurrence is one
 * invocation, exactly once across restarts and instances:
 * - due automations are locked in a transaction (FOR UPDATE SKIP LOCKED on PostgreSQL: another instance's tick skips
 *   them and, once it commits, finds them no longer due; SQLite's transaction holds the write lock);
 * - the invocation is inserted with UNIQUE (automation, scheduled_at): a second insert for the same occurrence is a
 *   no-op whatever happened before;
 * - next_run_at moves past now in the same transaction (a one-time automation completes).
 *
 * Downtime: when the service was down (or paused its ticks) over several occurrences, only the latest one that is
 * due fires, once; the missed ones before it are not fired and not recorded (no backfill, no burst of runs).
 * An occurrence that fires while an earlier invocation of the automation still waits to be delivered is recorded
 * as skipped (`pending_delivery`).
 */
import type { Logger } from "pino";
import { newInvocationId } from "../../domain/automations/ids.js";
import { latestOccurrence, nextOccurrence } from "../../domain/automations/schedule.js";
import type { Clock } from "../../kernel/clock.js";
import { Poller } from "../../kernel/poller.js";
import type { AutomationRecord, InvocationRecord, Queries, Store } from "../../store/types.js";

/** Due automations handled per transaction. */
const BATCH = 50;

export interface SchedulerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  pollMs: number;
  /** Invocations were queued: deliver them. */
  onQueued: () => void;
}

export class AutomationScheduler {
  private readonly poller: Poller;

  constructor(private readonly deps: SchedulerDeps) {
    this.poller = new Poller(deps, "automation tick failed", async () => {
      if ((await this.tick()) > 0) this.deps.onQueued();
    });
  }

  start(): void {
    this.poller.start();
  }

  /** Stops ticking; resolves once a tick in progress has finished. */
  stop(): Promise<void> {
    return this.poller.stop();
  }

  /** Looks for due occurrences now (at most one tick at a time; a kick during one runs another after it). */
  kick(): void {
    this.poller.kick();
  }

  /** Fires every occurrence due now; returns how many invocations it queued. */
  async tick(): Promise<number> {
    const now = this.deps.clock.now();
    let queued = 0;
    for (;;) {
      const { due, fired } = await this.deps.store.transaction(async (tx) => {
        const list = await tx.lockDueAutomations(now, BATCH);
        let n = 0;
        for (const a of list) if (await this.fire(tx, a, now)) n++;
        return { due: list.length, fired: n };
      });
      queued += fired;
      if (due < BATCH) return queued;
    }
  }

  /** Records the automation's due occurrence and moves its schedule on; returns whether a delivery was queued. */
  private async fire(tx: Queries, a: AutomationRecord, now: number): Promise<boolean> {
    const next = this.plan(a, now);
    const pending = await tx.hasQueuedInvocation(a.id);
    const inv: InvocationRecord = {
      id: newInvocationId(),
      automation_id: a.id,
      project_id: a.project_id,
      created_at: now,
      scheduled_at: next.scheduledAt,
      source: "automation",
      snapshot: a,
      target: a.target,
      status: pending ? "skipped" : "queued",
      skip_reason: pending ? "pending_delivery" : null,
      session_id: null,
      error: null,
      claims: 0,
      next_attempt_at: now,
      lease_owner: null,
      lease_until: null,
      completed_at: pending ? now : null,
    };
    const inserted = await tx.insertInvocation(inv);
    await tx.updateAutomation(
      a.id,
      a.type === "once" ? { status: "completed", next_run_at: null } : { next_run_at: next.nextRunAt },
    );
    if (inserted) {
      this.deps.logger.info(
        { automation: a.id, invocation: inv.id, scheduled_at: next.scheduledAt, status: inv.status },
        "automation fired",
      );
    }
    return inserted && !pending;
  }

  /** Which occurrence fires now (the latest one due: no backfill) and the one after it. */
  private plan(a: AutomationRecord, now: number): { scheduledAt: number; nextRunAt: number | null } {
    const due = a.next_run_at ?? now;
    if (a.type === "once") return { scheduledAt: a.run_at ?? due, nextRunAt: null };
    const expression = a.expression ?? "";
    const timezone = a.timezone ?? "UTC";
    const latest = latestOccurrence(expression, timezone, now);
    return {
      scheduledAt: latest !== null && latest >= due ? latest : due,
      nextRunAt: nextOccurrence(expression, timezone, now),
    };
  }
}
