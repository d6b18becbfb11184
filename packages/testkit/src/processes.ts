/**
 * Inspecting the processes a test or benchmark spawned (the server, its engine children): Linux /proc only.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

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

/** Pids of the processes whose command line contains `needle`. */
export function pidsRunning(needle: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(needle) && isAlive(Number(entry))) {
        out.push(Number(entry));
      }
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * The running processes (this one aside) that work in `dir` or below it, or whose command line names it: what a
 * service using `dir` left behind once it says it has stopped (its engines' commands and sandboxes, git…).
 */
export function processesUsing(dir: string): Array<{ pid: number; cmdline: string }> {
  const out: Array<{ pid: number; cmdline: string }> = [];
  const inside = (path: string) => path === dir || path.startsWith(`${dir}/`);
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!/^\d+$/.test(entry) || pid === process.pid || !isAlive(pid)) continue;
    let cwd = "";
    try {
      cwd = readlinkSync(`/proc/${entry}/cwd`);
    } catch {
      // gone meanwhile, or not ours to read
    }
    const line = cmdline(pid);
    if (inside(cwd) || line.includes(dir)) out.push({ pid, cmdline: line });
  }
  return out;
}
