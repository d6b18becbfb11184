/** Time as the service sees it: injectable, so TTLs, durations and grace periods can be tested without waiting. */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Unix seconds (fractional). */
  now(): number;
  /** Calls fn after `ms` milliseconds (never keeps the process alive). */
  after(ms: number, fn: () => void): Timer;
  /** Calls fn every `ms` milliseconds (never keeps the process alive). */
  every(ms: number, fn: () => void): Timer;
}

/** The longest delay setTimeout takes (about 24.8 days): a longer one fires at once (Node's TimeoutOverflowWarning). */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now() / 1000,
  after(ms, fn) {
    // A long delay (a goal's or a turn's cap set in days) waits in steps no longer than setTimeout takes.
    let t: NodeJS.Timeout;
    const wait = (left: number) => {
      const step = Math.min(left, MAX_TIMEOUT_MS);
      t = setTimeout(() => (left > step ? wait(left - step) : fn()), step);
      t.unref();
    };
    wait(ms);
    return { cancel: () => clearTimeout(t) };
  },
  every(ms, fn) {
    const t = setInterval(fn, ms);
    t.unref();
    return { cancel: () => clearInterval(t) };
  },
};
