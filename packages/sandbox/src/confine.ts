// Limits for a process tree on this host, without a container (the local backend's engines): a cgroup of its own
// under this process's cgroup (v1: one per controller; v2: a subtree delegated to this process) for memory, CPU and
// pids, and rlimits that every process it starts inherits (data segment: the most one process may allocate; file
// size; no core dumps). Each confined tree has a key (an engine slot): a respawned engine goes into the same group.
// What the host refuses is reported (`report()`), never fatal: the tree then runs with what could be applied.
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CgroupReader } from "./cgroup.js";
import { runCommand, which } from "./exec.js";
import { type CgroupVersion, cgroupVersion } from "./host.js";

export interface TreeLimits {
  /** Memory of the whole tree (the engine and its commands together). */
  memoryBytes: number;
  cpus: number;
  /** Processes and threads of the whole tree. */
  pids: number;
  /** RLIMIT_DATA of each process (what one process may allocate). */
  dataBytes: number;
  /** RLIMIT_FSIZE of each process (the largest file it may write). */
  fileBytes: number;
}

export interface ConfinementReport {
  /** The cgroup hierarchy used, or null when no group could be made here. */
  cgroup: CgroupVersion | null;
  /** The controllers whose limits hold (of memory, cpu, pids). */
  controllers: string[];
  /** Whether the rlimits are applied (prlimit present). */
  rlimits: boolean;
  /** Why a controller or the rlimits are not used. */
  problems: string[];
}

const WANTED = ["memory", "cpu", "pids"] as const;
type Controller = (typeof WANTED)[number];

/** This process's cgroup per v1 controller (`memory` → `/a/b`), and the v2 one under `""`. */
export function ownCgroups(procSelfCgroup = "/proc/self/cgroup"): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(procSelfCgroup, "utf8").split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    for (const c of m[1]!.split(",")) out.set(c, m[2]!);
  }
  return out;
}

export class TreeConfinement {
  private readonly dirs = new Map<Controller, string>();
  private readonly groups = new Map<string, Map<Controller, string>>();
  private readonly readers = new Map<string, CgroupReader>();
  private readonly problems: string[] = [];

  private constructor(
    private readonly version: CgroupVersion,
    private readonly limits: TreeLimits,
    private readonly prlimit: string | null,
    private readonly root: string,
  ) {}

  /**
   * Finds where this process may make groups (`name`: this service's group under its own cgroup; made now and
   * removed by `close()`).
   */
  static async open(
    name: string,
    limits: TreeLimits,
    opts: {
      root?: string;
      procSelfCgroup?: string;
      version?: CgroupVersion;
      /** Groups beside `name` left by an earlier process (killed before its close()): removed when empty. */
      stale?: (name: string) => boolean;
    } = {},
  ): Promise<TreeConfinement> {
    const root = opts.root ?? "/sys/fs/cgroup";
    const c = new TreeConfinement(opts.version ?? cgroupVersion(), limits, await which("prlimit"), root);
    if (!c.prlimit) c.problems.push("rlimits: prlimit (util-linux) is not installed");
    let own: Map<string, string>;
    try {
      own = ownCgroups(opts.procSelfCgroup);
    } catch (err) {
      c.problems.push(`cgroups: this process's cgroup is unknown (${String(err)})`);
      return c;
    }
    for (const ctl of WANTED) {
      const base = c.version === "v2" ? join(root, own.get("") ?? "/") : join(root, ctl, own.get(ctl) ?? "/");
      if (c.version === "v2" && !delegated(base, ctl)) {
        c.problems.push(`${ctl}: not delegated to this process's cgroup (${base}/cgroup.subtree_control)`);
        continue;
      }
      if (opts.stale) sweep(base, opts.stale);
      const dir = join(base, name);
      try {
        mkdirSync(dir, { recursive: true });
        c.dirs.set(ctl, dir);
      } catch (err) {
        c.problems.push(`${ctl}: cannot make ${dir} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
      }
    }
    if (c.version === "v2" && c.dirs.size > 0) {
      // One directory for all controllers in v2: enable them for the groups below it.
      const dir = [...c.dirs.values()][0]!;
      try {
        writeFileSync(join(dir, "cgroup.subtree_control"), [...c.dirs.keys()].map((k) => `+${k}`).join(" "));
      } catch (err) {
        c.problems.push(`cgroups: cannot enable controllers in ${dir} (${String(err)})`);
        c.dirs.clear();
      }
    }
    return c;
  }

  report(): ConfinementReport {
    return {
      cgroup: this.dirs.size > 0 ? this.version : null,
      controllers: [...this.dirs.keys()],
      rlimits: this.prlimit !== null,
      problems: [...this.problems],
    };
  }

  /**
   * Puts a just-started process (with no children yet) into the group of `key` with the limits, and gives it the
   * rlimits its children inherit. Returns what could not be applied (empty: everything).
   */
  async confine(pid: number, key: string): Promise<string[]> {
    const failed: string[] = [];
    const group = this.group(key, failed);
    for (const [ctl, dir] of group) {
      try {
        writeFileSync(join(dir, "cgroup.procs"), String(pid));
      } catch (err) {
        failed.push(`${ctl}: cannot move ${pid} into ${dir} (${String(err)})`);
      }
    }
    if (this.prlimit) {
      const { dataBytes, fileBytes } = this.limits;
      const r = await runCommand(
        this.prlimit,
        [
          "--pid",
          String(pid),
          `--data=${dataBytes}:${dataBytes}`,
          `--fsize=${fileBytes}:${fileBytes}`,
          "--core=0:0",
        ],
        { timeoutMs: 10_000 },
      ).catch((err: unknown) => ({ code: -1, stderr: String(err) }));
      if (r.code !== 0) failed.push(`rlimits: prlimit failed (${r.stderr.trim()})`);
    }
    return failed;
  }

  /** The counters of `key`'s group (memory, OOM kills, pids), or null when it has no group (made by confine()). */
  reader(key: string): CgroupReader | null {
    const known = this.readers.get(key);
    if (known) return known;
    const group = this.groups.get(key);
    if (!group || group.size === 0) return null;
    const reader = new CgroupReader(this.version, "", this.root, Object.fromEntries(group));
    this.readers.set(key, reader);
    return reader;
  }

  /** Removes the groups (their processes must have ended: a group still in use is left to the kernel). */
  close(): void {
    for (const group of this.groups.values()) {
      for (const dir of new Set(group.values())) tryRmdir(dir);
    }
    this.groups.clear();
    this.readers.clear();
    for (const dir of new Set(this.dirs.values())) tryRmdir(dir);
  }

  private group(key: string, failed: string[]): Map<Controller, string> {
    const known = this.groups.get(key);
    if (known) return known;
    const group = new Map<Controller, string>();
    const { memoryBytes, cpus, pids } = this.limits;
    const period = 100_000;
    const quota = Math.max(1000, Math.round(cpus * period));
    const v2 = this.version === "v2";
    const files: Record<Controller, Array<[string, string]>> = v2
      ? {
          memory: [
            ["memory.max", String(memoryBytes)],
            ["memory.swap.max", "0"],
          ],
          cpu: [["cpu.max", `${quota} ${period}`]],
          pids: [["pids.max", String(pids)]],
        }
      : {
          memory: [["memory.limit_in_bytes", String(memoryBytes)]],
          cpu: [
            ["cpu.cfs_period_us", String(period)],
            ["cpu.cfs_quota_us", String(quota)],
          ],
          pids: [["pids.max", String(pids)]],
        };
    for (const [ctl, parent] of this.dirs) {
      const dir = join(parent, key);
      try {
        mkdirSync(dir, { recursive: true });
        for (const [file, value] of files[ctl]) {
          try {
            writeFileSync(join(dir, file), value);
          } catch (err) {
            // (memory.swap.max exists only with swap accounting: the memory limit holds without it.)
            if (file !== "memory.swap.max") throw err;
          }
        }
        group.set(ctl, dir);
      } catch (err) {
        failed.push(`${ctl}: cannot set the limits of ${dir} (${String(err)})`);
      }
    }
    this.groups.set(key, group);
    return group;
  }
}

function delegated(dir: string, ctl: Controller): boolean {
  try {
    return readFileSync(join(dir, "cgroup.subtree_control"), "utf8").split(/\s+/).includes(ctl);
  } catch {
    return false;
  }
}

/** Removes the empty groups (and their empty children) under `base` whose name `stale` picks. */
function sweep(base: string, stale: (name: string) => boolean): void {
  let names: string[];
  try {
    names = readdirSync(base, { withFileTypes: true })
      .filter((d) => d.isDirectory() && stale(d.name))
      .map((d) => d.name);
  } catch {
    return;
  }
  for (const name of names) {
    const dir = join(base, name);
    try {
      for (const child of readdirSync(dir, { withFileTypes: true })) {
        if (child.isDirectory()) tryRmdir(join(dir, child.name));
      }
    } catch {}
    tryRmdir(dir);
  }
}

function tryRmdir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {}
}
