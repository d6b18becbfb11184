// A clock for tests: real time plus an offset the test moves forward. Timers fire when real time reaches them or
// when `advance` moves past them, so TTLs, goal durations and grace periods are tested without waiting for them.
import type { Clock, Timer } from "../../src/kernel/clock.js";

interface Pending {
  due: number;
  /** The delay it was scheduled with. */
  ms: number;
  fn: () => void;
  every: number | null;
  handle: NodeJS.Timeout;
  cancelled: boolean;
}

export class TestClock implements Clock {
  private offset = 0;
  private readonly timers = new Set<Pending>();

  now(): number {
    return Date.now() / 1000 + this.offset;
  }

  after(ms: number, fn: () => void): Timer {
    return this.schedule(ms, fn, null);
  }

  every(ms: number, fn: () => void): Timer {
    return this.schedule(ms, fn, ms);
  }

  /** Moves time forward by `seconds`, firing (in due order) every timer that comes due. */
  advance(seconds: number): void {
    this.offset += seconds;
    const now = this.now() * 1000;
    const due = [...this.timers].filter((t) => t.due <= now).sort((a, b) => a.due - b.due);
    for (const t of due) this.fire(t);
  }

  /** Whether a one-shot timer scheduled with this delay is pending (e.g. a timeout the code under test armed). */
  armed(ms: number): boolean {
    return [...this.timers].some((t) => t.every === null && t.ms === ms);
  }

  private schedule(ms: number, fn: () => void, every: number | null): Timer {
    const t: Pending = {
      due: this.now() * 1000 + ms,
      ms,
      fn,
      every,
      handle: setTimeout(() => this.fire(t), ms),
      cancelled: false,
    };
    t.handle.unref();
    this.timers.add(t);
    return {
      cancel: () => {
        t.cancelled = true;
        clearTimeout(t.handle);
        this.timers.delete(t);
      },
    };
  }

  private fire(t: Pending): void {
    if (t.cancelled) return;
    clearTimeout(t.handle);
    this.timers.delete(t);
    if (t.every !== null) {
      const next = this.schedule(t.every, t.fn, t.every);
      void next;
    }
    t.fn();
  }
}
