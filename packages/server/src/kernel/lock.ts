/** A FIFO async mutex: `run(fn)` calls fn once every earlier holder has finished. */
export class AsyncLock {
  private tail: Promise<unknown> = Promise.resolve();
  private held = 0;

  get busy(): boolean {
    return this.held > 0;
  }

  run<T>(fn: () => Promise<T> | T): Promise<T> {
    this.held++;
    const result = this.tail.then(fn);
    const release = () => {
      this.held--;
    };
    this.tail = result.then(release, release);
    return result;
  }
}
