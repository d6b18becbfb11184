/**
 * Keeping turns away from a session's workspace while the API works on it: a manual checkpoint, a restore or a
 * fork is refused while a turn runs (here, or anywhere by the session's stored claim), and a restore claims the
 * session like a turn does (store.claimSession: one winner, whatever the instance), so that no turn starts until
 * it releases the claim.
 */
import type { Logger } from "pino";
import type { TurnRunner } from "../../domain/turns/runner.js";
import type { Clock } from "../../kernel/clock.js";
import { conflict } from "../../kernel/errors.js";
import { newRestoreLock } from "../../model/session-lock.js";
import type { SessionRecord, Store } from "../../store/types.js";

export class SessionClaims {
  constructor(
    private readonly deps: {
      store: Store;
      runner: Pick<TurnRunner, "isActive">;
      clock: Clock;
      logger: Logger;
      cluster: { readonly instanceId: string; readonly healthy: boolean };
    },
  ) {}

  /** 409 while a turn (or another restore) has the session; `what` names what is refused. */
  async refuseBusy(s: SessionRecord, what: string): Promise<void> {
    const fresh = (await this.deps.store.getSession(s.id)) ?? s;
    if (this.deps.runner.isActive(s.id) || fresh.active_turn_id) {
      throw conflict(
        `Cannot ${what} while a turn runs (or another restore): wait for it to end or cancel it`,
        "session_busy",
      );
    }
  }

  /** Claims the session for a restore: the claimed record (409 when a turn has it, or this instance cannot claim). */
  async claimForRestore(s: SessionRecord): Promise<SessionRecord> {
    const { store, clock, cluster } = this.deps;
    if (!cluster.healthy)
      throw conflict("This instance cannot claim sessions right now: try again", "unavailable");
    const claimed = await store.claimSession(s.id, newRestoreLock().id, {
      owner_instance: cluster.instanceId,
      updated_at: clock.now(),
    });
    if (!claimed) throw conflict("Session has an active turn", "session_busy");
    return claimed;
  }

  /**
   * Releases a restore's claim, only while it still holds the session: a claim taken over meanwhile (this
   * instance was thought dead) and given to a turn is left alone. A failure is logged: the restore itself is done
   * or failed already.
   */
  async release(claimed: SessionRecord): Promise<void> {
    const { store, clock, logger } = this.deps;
    const lock = claimed.active_turn_id;
    if (lock === null) return;
    try {
      const released = await store.releaseSession(claimed.id, lock, { updated_at: clock.now() });
      if (!released) logger.warn({ session: claimed.id }, "a restore's claim was taken over before it ended");
    } catch (err) {
      logger.error({ session: claimed.id, err: String(err) }, "could not release a restore's claim");
    }
  }
}
