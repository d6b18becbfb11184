/**
 * The base of an engines decorator (environments and vaults, sandboxes): everything but `lease` goes to the engines
 * it wraps unchanged; a decorator overrides what it adds to.
 */
import type { ThreadOptions } from "@codex-agent-api/codex";
import type { Engines, Lease, LeaseOptions } from "./types.js";

export abstract class EnginesDecorator implements Engines {
  constructor(protected readonly inner: Engines) {}

  abstract lease(threadId: string | null, options: ThreadOptions, opts?: LeaseOptions): Promise<Lease>;

  call<T>(method: string, params: unknown): Promise<T> {
    return this.inner.call<T>(method, params);
  }

  forget(threadId: string): void {
    this.inner.forget(threadId);
  }

  killEngine(index: number, signal?: NodeJS.Signals): number | undefined {
    return this.inner.killEngine(index, signal);
  }

  killAll(): void {
    this.inner.killAll();
  }

  stats(): ReturnType<Engines["stats"]> {
    return this.inner.stats();
  }

  model(): ReturnType<Engines["model"]> {
    return this.inner.model();
  }

  warm(): Promise<void> {
    return this.inner.warm();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
