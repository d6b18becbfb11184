/**
 * Ends the open streams of revoked API keys. A request with a revoked key is refused at once (auth reads the key on
 * every request), but a stream opened before the revocation would stay open: so the keys of open streams are
 * watched, wherever the revocation comes from.
 * - This process (KeyService.revoke): told directly.
 * - PostgreSQL, any process (another instance, the CLI): revokeKey NOTIFYs `cas_keys` and the cluster's LISTEN
 *   connection says so (`revoked(id)`); the keys are also read every `fallbackMs` (notifications are lost while that
 *   connection is down) and after a reconnect (`revoked(null)`).
 * - SQLite, the CLI (another process writing the same file): the store's change counter (`PRAGMA data_version`, no
 *   query) is read every `pollMs`; the keys are read when it moved.
 * The keys are also read once after new streams opened (a revocation between a request's authentication and its
 * stream's registration would otherwise be missed). Nothing runs while no stream opened with a key is open.
 */
import type { Logger } from "pino";
import type { Clock, Timer } from "../kernel/clock.js";
import type { StreamClients } from "../platform/stream/clients.js";
import type { Store } from "../store/types.js";

export interface KeyWatchOptions {
  store: Store;
  streams: StreamClients;
  clock: Clock;
  logger: Logger;
  /** How often the store's change counter is read. Default 200 ms. */
  pollMs?: number;
  /** How often the keys are read when the store has no change counter. Default 2000 ms. */
  fallbackMs?: number;
}

export class KeyWatch {
  /** Streams ended so far: on a notice (this process, NOTIFY) or after reading the keys (poll). */
  readonly ended = { notice: 0, read: 0 };
  private timer: Timer | null = null;
  private counter: number | null = null;
  private lastRead = 0;
  /** Streams were added (or a notification may have been lost) since the keys were last read. */
  private dirty = true;
  private running: Promise<void> | null = null;
  private rerun = false;
  private readonly pollMs: number;
  private readonly fallbackMs: number;

  constructor(private readonly deps: KeyWatchOptions) {
    this.pollMs = deps.pollMs ?? 200;
    this.fallbackMs = deps.fallbackMs ?? 2000;
    deps.streams.onAdd(() => {
      this.dirty = true;
      this.timer ??= deps.clock.every(this.pollMs, () => void this.tick());
    });
  }

  /** A key was revoked (null: some may have been, e.g. notifications were lost): end the streams it opened. */
  revoked(keyId: string | null): void {
    if (keyId === null) {
      this.dirty = true;
      void this.check();
      return;
    }
    this.end(keyId, "notice");
  }

  /** Reads the state of every key that has streams open and ends the streams of those no longer active. */
  check(): Promise<void> {
    if (this.running) {
      this.rerun = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.rerun = false;
          this.dirty = false;
          this.lastRead = performance.now();
          const ids = this.deps.streams.keyIds();
          if (ids.length === 0) break;
          for (const id of await this.deps.store.inactiveKeys(ids)) this.end(id, "read");
        } while (this.rerun);
      } catch (err) {
        this.dirty = true; // read again at the next tick
        this.deps.logger.warn({ err: String(err) }, "key watch: could not read the keys of open streams");
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  private end(keyId: string, how: "notice" | "read"): void {
    const n = this.deps.streams.endKey(keyId, "revoked");
    if (n === 0) return;
    this.ended[how] += n;
    this.deps.logger.info({ key: keyId, streams: n }, "key revoked: its open streams were ended");
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  private async tick(): Promise<void> {
    if (this.deps.streams.keyIds().length === 0) {
      this.stop();
      this.counter = null;
      this.dirty = true;
      return;
    }
    let counter: number | null = null;
    try {
      counter = await this.deps.store.changeCounter();
    } catch {
      this.dirty = true;
    }
    const moved = counter !== null && counter !== this.counter;
    this.counter = counter;
    const due = counter === null && performance.now() - this.lastRead >= this.fallbackMs;
    if (this.dirty || moved || due) await this.check();
  }
}
