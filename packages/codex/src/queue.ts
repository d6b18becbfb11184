/** Single-consumer async queue: push values, end it (optionally with an error), iterate once. */
export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private waiter: ((r: IteratorResult<T>) => void) | null = null;
  private failWaiter: ((e: Error) => void) | null = null;
  private ended = false;
  private error: Error | null = null;
  /** When set, pushed values are dropped (nobody will read them). */
  discard = false;

  constructor(private readonly onReturn?: () => void) {}

  push(value: T): void {
    if (this.ended || this.discard) return;
    if (this.waiter) {
      const w = this.waiter;
      this.clearWaiters();
      w({ value, done: false });
    } else {
      this.items.push(value);
    }
  }

  end(error?: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error ?? null;
    if (this.waiter) {
      const w = this.waiter;
      const f = this.failWaiter;
      this.clearWaiters();
      if (this.error && f) f(this.error);
      else w({ value: undefined, done: true });
    }
  }

  clear(): void {
    this.items.length = 0;
  }

  next(): Promise<IteratorResult<T>> {
    const value = this.items.shift();
    if (value !== undefined) return Promise.resolve({ value, done: false });
    if (this.ended) {
      if (this.error) {
        const e = this.error;
        this.error = null;
        return Promise.reject(e);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      this.waiter = resolve;
      this.failWaiter = reject;
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.items.length = 0;
    const wasEnded = this.ended;
    this.end();
    if (!wasEnded) this.onReturn?.();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  private clearWaiters(): void {
    this.waiter = null;
    this.failWaiter = null;
  }
}
