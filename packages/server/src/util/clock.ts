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

export const systemClock: Clock = {
  now: () => Date.now() / 1000,
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
  every(ms, fn) {
    const t = setInterval(fn, ms);
    t.unref();
    return { cancel: () => clearInterval(t) };
  },
};
