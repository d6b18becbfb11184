/**
 * Work a module starts in the background (nobody awaits it where it starts: a hook after a turn, a timer's
 * housekeeping), kept so that a shutdown can wait until all of it has finished: nothing it started may still write
 * once the service says it has stopped.
 */
export class InFlight {
  private readonly pending = new Set<Promise<unknown>>();

  /** Keeps `work` until it settles; returns it (its rejection stays the caller's to handle). */
  track<T>(work: Promise<T>): Promise<T> {
    this.pending.add(work);
    const done = () => {
      this.pending.delete(work);
    };
    work.then(done, done);
    return work;
  }

  get size(): number {
    return this.pending.size;
  }

  /** Resolves once nothing tracked runs, work started meanwhile included. */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }
}
