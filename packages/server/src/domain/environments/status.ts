/**
 * An environment's status (pending → ready → connected, or failed; expired with its session): a change is stored,
 * and logged on the environment's session (`environment.updated`) in the same transaction when it has one. Waiting
 * for an environment to be prepared follows that log, so it works wherever the environment is being prepared.
 */
import type { Clock } from "../../kernel/clock.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type {
  EnvironmentError,
  EnvironmentRecord,
  EnvironmentState,
  EnvironmentStatus,
  Store,
} from "../../store/types.js";

const TERMINAL: ReadonlySet<EnvironmentStatus> = new Set(["ready", "connected", "failed", "expired"]);

export const stateOf = (e: EnvironmentRecord): EnvironmentState => ({
  id: e.id,
  type: e.type,
  status: e.status,
  error: e.error,
});

export class EnvironmentStatuses {
  constructor(private readonly deps: { store: Store; hub: EventHub; clock: Clock }) {}

  /** A status change: stored, and on the session's log when it has one (in the same transaction). */
  async set(
    env: EnvironmentRecord,
    sessionId: string | null,
    status: EnvironmentStatus,
    error: EnvironmentError | null,
    turnId: string | null,
  ): Promise<void> {
    const patch = { status, error, updated_at: this.deps.clock.now(), owner_instance: null };
    if (!sessionId) {
      await this.deps.store.updateEnvironment(env.id, patch);
      return;
    }
    await this.deps.hub.commit(sessionId, async (tx, log) => {
      const next = await tx.updateEnvironment(env.id, patch);
      if (next)
        log({ type: "environment.updated", data: { environment: stateOf(next) } }, { turn_id: turnId });
    });
  }

  /** Waits until the environment is prepared (at most `timeoutMs`); returns it as it is then. */
  async settled(
    sessionId: string,
    id: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<EnvironmentRecord | undefined> {
    const { store, hub } = this.deps;
    const from = await store.lastEventSeq(sessionId);
    const env = await store.getEnvironment(id);
    if (!env || TERMINAL.has(env.status)) return env;
    const sub = hub.subscribe(sessionId, {
      afterSeq: from,
      until: (e) =>
        e.type === "environment.updated" &&
        e.data.environment.id === id &&
        TERMINAL.has(e.data.environment.status),
    });
    const timer = setTimeout(() => sub.close(), timeoutMs);
    const stop = () => sub.close();
    signal?.addEventListener("abort", stop);
    try {
      for await (const e of sub) {
        if (
          e.type === "environment.updated" &&
          e.data.environment.id === id &&
          TERMINAL.has(e.data.environment.status)
        )
          break;
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
      sub.close();
    }
    return store.getEnvironment(id);
  }
}
