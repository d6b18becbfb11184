/** Processes, memory, ports, temp dirs and the cleanup registry (Linux /proc for memory). */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Resident set size of a process in MiB (VmRSS of /proc/<pid>/status), or null when it is gone. */
export function rssMiB(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** CPU time (user + system) a process has used so far, in ms (/proc/<pid>/stat, 100 ticks per second). */
export function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // After "pid (comm) ": state(0) ppid(1) … utime(11) stime(12), in clock ticks (USER_HZ = 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** Pids of the direct children of `pid`. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The command line of a process (arguments joined by spaces), or "" when it is gone. */
export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}

/** Pids of every descendant of `pid`, children first. */
export function descendantPids(pid: number): number[] {
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of childPids(queue.shift()!)) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

/** True while `pid` runs (a zombie counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

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
