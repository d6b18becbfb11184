/** Processes below a pid (Linux /proc): an engine's helpers, sandboxes and the commands they run. */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** A process, told apart from a later one that reuses its pid by its start time (clock ticks after boot). */
export interface ProcessRef {
  pid: number;
  start: string;
}

/** "pid (comm) state ppid … starttime …" after the comm, which may hold spaces and parentheses. */
function statFields(pid: number | string): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null; // gone meanwhile
  }
}

/** Every descendant of `pid` (children before their own children), from one reading of /proc. */
export function descendantProcesses(pid: number): ProcessRef[] {
  const children = new Map<number, ProcessRef[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(entry);
    if (!fields) continue;
    // After the comm: state(0) ppid(1) … starttime(19).
    const ppid = Number(fields[1]);
    const list = children.get(ppid) ?? [];
    list.push({ pid: Number(entry), start: fields[19] ?? "" });
    children.set(ppid, list);
  }
  const out: ProcessRef[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      out.push(child);
      queue.push(child.pid);
    }
  }
  return out;
}

/**
 * The processes (other than this one) working inside `dir` or naming it on their command line: what a command that
 * ran there left behind, wherever it was reparented to (a sandbox's inner process outlives a killed wrapper when
 * its parent-death signal is lost in a race: it is then nobody's descendant).
 */
export function processesIn(dir: string): ProcessRef[] {
  const inside = (path: string) => path === dir || path.startsWith(`${dir}/`);
  const out: ProcessRef[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const fields = statFields(entry);
    if (!fields || fields[0] === "Z") continue;
    let cwd = "";
    let line = "";
    try {
      cwd = readlinkSync(`/proc/${entry}/cwd`);
      line = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    if (inside(cwd) || line.includes(dir)) out.push({ pid: Number(entry), start: fields[19] ?? "" });
  }
  return out;
}

/** Every descendant of `pid` (children before their own children). */
export function descendants(pid: number): number[] {
  return descendantProcesses(pid).map((p) => p.pid);
}

/** SIGKILLs `pid` and everything below it (collected first, so nothing is reparented out of reach). */
export function killTree(pid: number): void {
  for (const p of [pid, ...descendants(pid)]) {
    try {
      process.kill(p, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
}

/** SIGKILLs those of `procs` that still run (the same processes, not later ones with their pids). Returns how many. */
export function killRemaining(procs: readonly ProcessRef[]): number {
  let killed = 0;
  for (const p of procs) {
    if (!running(p)) continue;
    try {
      process.kill(p.pid, "SIGKILL");
      killed++;
    } catch {
      /* gone meanwhile */
    }
  }
  return killed;
}

/**
 * Ends everything working in `dir` (`processesIn`), sweeping again until a sweep has found nothing for `quietMs`
 * (a process a sandbox wrapper was starting when the first sweep ran appears only after it), or until `timeoutMs`.
 * Returns how many processes it ended.
 */
export async function endEverythingIn(dir: string, quietMs = 300, timeoutMs = 5000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let ended = 0;
  let lastSeen = Date.now();
  while (Date.now() < deadline) {
    const found = processesIn(dir);
    if (found.length > 0) {
      ended += killRemaining(found);
      lastSeen = Date.now();
    } else if (Date.now() - lastSeen >= quietMs) {
      break;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return ended;
}

/** Whether a process with this pid exists (one of another user's counts: signalling it is refused, not failed). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether the process still runs (a zombie has ended; a later process with its pid is another one). */
export function running(p: ProcessRef): boolean {
  const fields = statFields(p.pid);
  return fields !== null && fields[19] === p.start && fields[0] !== "Z";
}

/** Resolves once none of `procs` runs any more, or after `timeoutMs`; returns those still running then. */
export async function waitGone(procs: readonly ProcessRef[], timeoutMs: number): Promise<ProcessRef[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = procs.filter(running);
    if (left.length === 0 || Date.now() >= deadline) return left;
    await new Promise((r) => setTimeout(r, 10));
  }
}
