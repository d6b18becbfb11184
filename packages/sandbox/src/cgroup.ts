// Counters of a container's cgroup (v1 per-controller hierarchies, or the v2 unified one): memory use and limit, OOM
// kills of any process in it, pids and refused forks. Read from the files, no podman call.
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import type { CgroupVersion } from "./host.js";

export interface CgroupCounters {
  memoryCurrent: number | null;
  memoryMax: number | null;
  memoryPeak: number | null;
  oomKills: number;
  pidsCurrent: number | null;
  pidsMax: number | null;
  pidsLimitHits: number;
}

async function text(path: string | null): Promise<string | null> {
  if (path === null) return null;
  try {
    return await readFile(path, "utf8");
  } catch {
    return null;
  }
}

function num(s: string | null): number | null {
  if (s === null) return null;
  const t = s.trim();
  if (t === "max") return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/** `key value` lines (memory.events, memory.oom_control, pids.events). */
function keyed(s: string | null, key: string): number {
  if (s === null) return 0;
  for (const line of s.split("\n")) {
    const [k, v] = line.trim().split(/\s+/);
    if (k === key) return Number(v) || 0;
  }
  return 0;
}

/** v1: a memory limit this large means "no limit". */
const V1_UNLIMITED = 2 ** 62;

export class CgroupReader {
  constructor(
    private readonly version: CgroupVersion,
    /** The container's cgroup path, as podman reports it (`/libpod_parent/libpod-<id>`). */
    private readonly path: string,
    private readonly root = "/sys/fs/cgroup",
    /**
     * A group's directory per controller (`memory` → its absolute path), instead of `root` + `path`; a controller
     * it does not name has no files (its counters read as absent, never another group's).
     */
    private readonly dirs: Readonly<Record<string, string>> | null = null,
  ) {}

  private file(controller: string, name: string): string | null {
    if (this.dirs) {
      const dir = this.dirs[controller === "" ? "memory" : controller];
      return dir ? `${dir}/${name}` : null;
    }
    return this.version === "v2"
      ? `${this.root}${this.path}/${name}`
      : `${this.root}/${controller}${this.path}/${name}`;
  }

  /**
   * The processes OOM-killed in this cgroup so far, read now and synchronously (a command's end is explained as it
   * is recorded, before the next poll); null when the cgroup is gone.
   */
  oomKillsNow(): number | null {
    const f =
      this.version === "v2" ? this.file("", "memory.events") : this.file("memory", "memory.oom_control");
    if (f === null) return null;
    try {
      return keyed(readFileSync(f, "utf8"), "oom_kill");
    } catch {
      return null;
    }
  }

  /** The counters, or null when the cgroup is gone (the container is not running). */
  async read(): Promise<CgroupCounters | null> {
    if (this.version === "v2") {
      const [cur, max, peak, events, pcur, pmax, pevents] = await Promise.all([
        text(this.file("", "memory.current")),
        text(this.file("", "memory.max")),
        text(this.file("", "memory.peak")),
        text(this.file("", "memory.events")),
        text(this.file("", "pids.current")),
        text(this.file("", "pids.max")),
        text(this.file("", "pids.events")),
      ]);
      if (cur === null && pcur === null) return null;
      return {
        memoryCurrent: num(cur),
        memoryMax: num(max),
        memoryPeak: num(peak),
        oomKills: keyed(events, "oom_kill"),
        pidsCurrent: num(pcur),
        pidsMax: num(pmax),
        pidsLimitHits: keyed(pevents, "max"),
      };
    }
    const [cur, max, peak, oom, pcur, pmax, pevents] = await Promise.all([
      text(this.file("memory", "memory.usage_in_bytes")),
      text(this.file("memory", "memory.limit_in_bytes")),
      text(this.file("memory", "memory.max_usage_in_bytes")),
      text(this.file("memory", "memory.oom_control")),
      text(this.file("pids", "pids.current")),
      text(this.file("pids", "pids.max")),
      text(this.file("pids", "pids.events")),
    ]);
    if (cur === null && pcur === null) return null;
    const limit = num(max);
    return {
      memoryCurrent: num(cur),
      memoryMax: limit !== null && limit >= V1_UNLIMITED ? null : limit,
      memoryPeak: num(peak),
      oomKills: keyed(oom, "oom_kill"),
      pidsCurrent: num(pcur),
      pidsMax: num(pmax),
      pidsLimitHits: keyed(pevents, "max"),
    };
  }
}
