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

/** One {@link AsyncLock} per key (a directory, an id): `run(key, fn)` serialises the calls of the same key. */
export class KeyedLocks {
  private readonly locks = new Map<string, AsyncLock>();

  run<T>(key: string, fn: () => Promise<T> | T): Promise<T> {
    let lock = this.locks.get(key);
    if (!lock) {
      lock = new AsyncLock();
      this.locks.set(key, lock);
    }
    return lock.run(fn).finally(() => {
      if (!lock.busy && this.locks.get(key) === lock) this.locks.delete(key);
    });
  }
}
