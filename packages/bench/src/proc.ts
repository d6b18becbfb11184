/** Processes, memory, ports, temp dirs and the cleanup registry (Linux /proc for memory). */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export { childPids, cmdline, cpuMs, descendantPids, isAlive, rssMiB } from "@codex-agent-api/testkit";

/** A TCP port free on 127.0.0.1 right now (bound and released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Milliseconds on a monotonic clock. */
export const now = () => performance.now();

/** Unix epoch milliseconds with sub-millisecond resolution (comparable with the server's Date.now()). */
export const epochMs = () => performance.timeOrigin + performance.now();

/** Waits until `check` returns a truthy value (polling), or throws after `timeoutMs`. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 30_000,
  intervalMs = 20,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

type Closer = () => void | Promise<void>;

/**
 * Everything the run created that must go away: temp dirs, child processes, servers. `runAll` runs them newest
 * first; it is called at the end, on error and on SIGINT/SIGTERM.
 */
export class Cleanup {
  private readonly closers: Array<{ name: string; fn: Closer }> = [];

  add(name: string, fn: Closer): () => void {
    const entry = { name, fn };
    this.closers.push(entry);
    return () => {
      const i = this.closers.indexOf(entry);
      if (i >= 0) this.closers.splice(i, 1);
    };
  }

  /** A new temp dir (removed by runAll, or by the returned function). */
  tempDir(prefix: string): { dir: string; remove: () => void } {
    const dir = mkdtempSync(join(tmpdir(), `cas-bench-${prefix}-`));
    const remove = () => rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    const unregister = this.add(`rm ${dir}`, remove);
    return {
      dir,
      remove: () => {
        unregister();
        remove();
      },
    };
  }

  async runAll(): Promise<void> {
    while (this.closers.length > 0) {
      const { name, fn } = this.closers.pop()!;
      try {
        await fn();
      } catch (err) {
        process.stderr.write(`cleanup "${name}" failed: ${String(err)}\n`);
      }
    }
  }
}
