// The lifecycle lock of one sandbox: its operations (provision, claim, stop, resume, replace, destroy…) run one at a
// time, in the order they were asked for; one that fails does not stop the next.
export class SerialLock {
  private tail: Promise<unknown> = Promise.resolve();
  private running = 0;

  /** Runs `fn` after every operation asked for before it has ended. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(async () => {
      this.running++;
      try {
        return await fn();
      } finally {
        this.running--;
      }
    });
    this.tail = run.catch(() => {});
    return run;
  }

  /** Settles when every operation asked for so far has ended. */
  get settled(): Promise<unknown> {
    return this.tail;
  }

  /** True while an operation runs. */
  get busy(): boolean {
    return this.running > 0;
  }
}
