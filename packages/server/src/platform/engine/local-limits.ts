/**
 * The local backend's limits: each engine process and everything its sessions run go into a group of their own on
 * this host (`TreeConfinement`: a cgroup with the memory, CPU and pids of the default sandbox size, capped by the
 * operator's maximums; rlimits each command inherits — its data segment at that memory plus the engine's allowance,
 * files at the workspace disk size, no core dumps). The sessions of one engine share its group: a runaway command
 * can starve them, never the service or the host. What the host refuses is logged once and reported; the engine
 * runs with the rest.
 */
import {
  type ContainerSize,
  limitsForSize,
  type SandboxLimits,
  TreeConfinement,
} from "@codex-agent-api/sandbox";
import type { Logger } from "pino";
import { pidAlive } from "../../kernel/process-tree.js";

/**
 * The engine is under the data rlimit its commands inherit: its own data segment (thread stacks and heap, ~250 MiB
 * after a few turns) must fit beside the size's memory. The group's memory limit is the one that holds the total.
 */
const ENGINE_DATA_ALLOWANCE = 1024 ** 3;

/**
 * The service's group under its own cgroup: `codex-agent-api-<pid>-<n>` (the n-th service of the process: several
 * services in one process, as in tests, never share a group).
 */
const GROUP_PREFIX = "codex-agent-api-";
const GROUP_NAME = /^codex-agent-api-(\d+)-\d+$/;
let opened = 0;

export interface LocalLimitsOptions {
  size: ContainerSize;
  maximums: Partial<SandboxLimits>;
  defaults: Partial<Pick<SandboxLimits, "pids" | "diskBytes">>;
  logger: Logger;
}

export interface EngineLimitsView {
  memoryBytes: number;
  cpus: number;
  pids: number;
  fileBytes: number;
}

/** How often the groups' counters are read (limit hits for /metrics). */
const WATCH_MS = 1000;

export class LocalLimits {
  private readonly warned = new Set<string>();
  private readonly limitListeners = new Set<(limit: "memory" | "pids", n: number) => void>();
  /** The counters last read per engine group. */
  private readonly seen = new Map<number, { oomKills: number; pidsLimitHits: number }>();
  private watcher: NodeJS.Timeout | null = null;

  private constructor(
    private readonly confinement: TreeConfinement,
    readonly limits: EngineLimitsView,
    private readonly logger: Logger,
  ) {}

  static async open(opts: LocalLimitsOptions): Promise<LocalLimits> {
    const l = limitsForSize(opts.size, { overrides: opts.defaults, maximums: opts.maximums });
    const limits = { memoryBytes: l.memoryBytes, cpus: l.cpus, pids: l.pids, fileBytes: l.diskBytes };
    const confinement = await TreeConfinement.open(
      `${GROUP_PREFIX}${process.pid}-${++opened}`,
      { ...limits, dataBytes: l.memoryBytes + ENGINE_DATA_ALLOWANCE },
      {
        stale: (name) => {
          const m = GROUP_NAME.exec(name);
          return m !== null && !pidAlive(Number(m[1]));
        },
      },
    );
    const local = new LocalLimits(confinement, limits, opts.logger);
    const report = confinement.report();
    if (report.problems.length > 0) {
      opts.logger.warn(
        { problems: report.problems },
        "the local backend's limits do not all hold on this host (codex-agent-api doctor says which)",
      );
    }
    return local;
  }

  /** Calls `fn` with the processes killed for memory and the forks refused at the pids limit, in any group. */
  onLimitHit(fn: (limit: "memory" | "pids", n: number) => void): void {
    this.limitListeners.add(fn);
    this.watcher ??= setInterval(() => void this.watch(), WATCH_MS);
    this.watcher.unref();
  }

  private async watch(): Promise<void> {
    for (const index of [...this.seen.keys()]) {
      const c = await this.confinement.reader(`engine-${index}`)?.read();
      const before = this.seen.get(index);
      if (!c || !before) continue;
      this.seen.set(index, { oomKills: c.oomKills, pidsLimitHits: c.pidsLimitHits });
      const hits = { memory: c.oomKills - before.oomKills, pids: c.pidsLimitHits - before.pidsLimitHits };
      for (const [limit, n] of Object.entries(hits) as Array<["memory" | "pids", number]>) {
        if (n > 0) for (const fn of this.limitListeners) fn(limit, n);
      }
    }
  }

  /** Puts a just-started engine (slot `index`) into its group. */
  async confine(pid: number, index: number): Promise<void> {
    const failed = await this.confinement.confine(pid, `engine-${index}`);
    const fresh = failed.filter((f) => !this.warned.has(f.split(":")[0]!));
    for (const f of fresh) this.warned.add(f.split(":")[0]!);
    if (fresh.length > 0)
      this.logger.warn({ engine: index, pid, failed: fresh }, "engine limits not applied");
    // (a respawned engine keeps its group and its counters: hits are counted from the group's first engine on)
    if (!this.seen.has(index)) {
      const c = await this.confinement.reader(`engine-${index}`)?.read();
      this.seen.set(index, { oomKills: c?.oomKills ?? 0, pidsLimitHits: c?.pidsLimitHits ?? 0 });
    }
  }

  /** The memory kills in engine `index`'s group so far and its limit, or null (no memory group here). */
  memoryKills(index: number): { kills: number; limitBytes: number; holder: "engine group" } | null {
    const kills = this.confinement.reader(`engine-${index}`)?.oomKillsNow() ?? null;
    return kills === null ? null : { kills, limitBytes: this.limits.memoryBytes, holder: "engine group" };
  }

  close(): void {
    if (this.watcher) clearInterval(this.watcher);
    this.watcher = null;
    this.confinement.close();
  }
}
