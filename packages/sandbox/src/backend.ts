// The container backend: detects the host (probe.ts), owns the root directory (one state directory per sandbox),
// creates, adopts and lists sandboxes, keeps the warm pools filled and watches every running container's limits.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { hostnameFor, LABEL_KEY, LABEL_ROOT } from "./container.js";
import { destroyWorkspace, isMounted } from "./disk.js";
import { SandboxError } from "./errors.js";
import { type HostOptions, probeHost } from "./probe.js";
import { ContainerSandbox, readRecord, type SandboxContext } from "./sandbox.js";
import { validateLimits } from "./sizes.js";
import { validateSpec } from "./spec.js";
import type {
  Capabilities,
  PoolStats,
  Sandbox,
  SandboxBackend,
  SandboxLimits,
  SandboxRecord,
  SandboxSpec,
  WarmPoolSpec,
} from "./types.js";

export interface ContainerBackendOptions extends HostOptions {
  /** Warm pools kept filled in the background. */
  warm?: WarmPoolSpec[];
  /** Stop a claimed sandbox after this long without executor traffic and without running commands (0: never). */
  idleStopMs?: number;
  /** How often the containers' cgroups are read for OOM kills, refused forks and exits (default 1000 ms). */
  watchIntervalMs?: number;
  /** Container names start with this (default `codex-sbx-`): [a-z0-9-]. */
  namePrefix?: string;
}

function poolKey(image: string, limits: SandboxLimits, network: "none" | "proxy"): string {
  const l = limits;
  return JSON.stringify([image, l.cpus, l.memoryBytes, l.pids, l.diskBytes, l.tmpBytes, network]);
}

interface Pool {
  spec: { image: string; limits: SandboxLimits; network: "none" | "proxy"; count: number };
  ready: ContainerSandbox[];
  creating: number;
}

export class ContainerBackend implements SandboxBackend {
  readonly kind = "container" as const;
  private readonly active = new Map<string, ContainerSandbox>();
  private readonly pools = new Map<string, Pool>();
  private readonly sandboxesDir: string;
  private watcher: NodeJS.Timeout | null = null;
  private filling: Promise<void> | null = null;
  private fillBackoffUntil = 0;
  private closed = false;
  /** The last error of a warm sandbox creation (shown in stats). */
  lastPoolError: string | null = null;

  private constructor(
    private readonly ctx: SandboxContext,
    private readonly caps: Capabilities,
    private readonly opts: Required<
      Pick<ContainerBackendOptions, "image" | "namePrefix" | "idleStopMs" | "watchIntervalMs">
    > &
      ContainerBackendOptions,
    readonly rootDir: string,
    private readonly diskLoop: boolean,
  ) {
    this.sandboxesDir = join(rootDir, "sandboxes");
  }

  /** Detects the host, prepares the root directory, removes what a previous run left unclaimed, starts the pool. */
  static async open(options: ContainerBackendOptions): Promise<ContainerBackend> {
    const { ctx, caps, rootDir, image, loop } = await probeHost(options);
    const prefix = options.namePrefix ?? "codex-sbx-";
    if (!/^[a-z0-9][a-z0-9-]{0,30}$/.test(prefix))
      throw new SandboxError("invalid_spec", "namePrefix must be [a-z0-9-]");
    const backend = new ContainerBackend(
      ctx,
      caps,
      {
        ...options,
        image,
        namePrefix: prefix,
        idleStopMs: options.idleStopMs ?? 0,
        watchIntervalMs: options.watchIntervalMs ?? 1000,
      },
      rootDir,
      loop,
    );
    await mkdir(backend.sandboxesDir, { recursive: true, mode: 0o700 });
    await backend.reconcile();
    backend.watcher = setInterval(() => void backend.tick(), backend.opts.watchIntervalMs);
    backend.watcher.unref();
    backend.setWarm(options.warm ?? []);
    return backend;
  }

  capabilities(): Capabilities {
    return structuredClone(this.caps);
  }

  // --- records on disk ------------------------------------------------------------------------------------------
  private async records(): Promise<Array<{ dir: string; record: SandboxRecord }>> {
    const out: Array<{ dir: string; record: SandboxRecord }> = [];
    for (const name of await readdir(this.sandboxesDir).catch(() => [] as string[])) {
      const dir = join(this.sandboxesDir, name);
      const record = await readRecord(dir);
      if (record) out.push({ dir, record });
    }
    return out;
  }

  async list(): Promise<SandboxRecord[]> {
    return (await this.records()).filter((r) => r.record.id !== null).map((r) => r.record);
  }

  /** Warm sandboxes of a previous run are removed (their spare exec-servers died with it); so are containers with this
   * root's label that have no state directory, and state directories without a record. */
  private async reconcile(): Promise<void> {
    const keys = new Set<string>();
    for (const name of await readdir(this.sandboxesDir).catch(() => [] as string[])) {
      const dir = join(this.sandboxesDir, name);
      const record = await readRecord(dir);
      if (record?.id != null) {
        keys.add(record.key);
        continue;
      }
      if (record) await this.ctx.podman.tryRun(["rm", "-f", "-t", "0", record.containerName]);
      const disk = record?.disk ?? {
        kind: "loop" as const,
        imagePath: join(dir, "disk.img"),
        mountPath: join(dir, "workspace"),
      };
      if (
        disk.kind === "loop" &&
        !(await isMounted(disk.mountPath)) &&
        !existsSync(disk.imagePath) &&
        !record
      ) {
        await rm(dir, { recursive: true, force: true });
        continue;
      }
      await destroyWorkspace(disk);
      await rm(dir, { recursive: true, force: true });
    }
    const r = await this.ctx.podman.tryRun([
      "ps",
      "-a",
      "--filter",
      `label=${LABEL_ROOT}=${this.ctx.rootLabel}`,
      "--format",
      `{{.Names}} {{index .Labels "${LABEL_KEY}"}}`,
    ]);
    for (const line of r.out.split("\n")) {
      const [name, key] = line.trim().split(" ");
      if (name && key && !keys.has(key)) await this.ctx.podman.tryRun(["rm", "-f", "-t", "0", name]);
    }
  }

  // --- create / adopt -------------------------------------------------------------------------------------------
  private validate(spec: SandboxSpec): SandboxSpec {
    return validateSpec(spec, this.opts.image);
  }

  private newRecord(
    id: string | null,
    image: string,
    limits: SandboxLimits,
    network: SandboxSpec["network"],
    env: Record<string, string>,
    fromPool: boolean,
    workspaceDir?: string,
  ): { dir: string; record: SandboxRecord } {
    const key = randomBytes(6).toString("hex");
    const dir = join(this.sandboxesDir, key);
    const mountPath = join(dir, "workspace");
    return {
      dir,
      record: {
        version: 1,
        key,
        id,
        containerName: `${this.opts.namePrefix}${key}`,
        hostname: id === null ? `sbx-${key}` : hostnameFor(id),
        image,
        limits,
        network,
        env,
        disk: workspaceDir
          ? { kind: "bind", mountPath: workspaceDir }
          : this.diskLoop
            ? { kind: "loop", imagePath: join(dir, "disk.img"), mountPath }
            : { kind: "dir", mountPath },
        fromPool,
        createdAt: new Date().toISOString(),
      },
    };
  }

  private sandbox(dir: string, record: SandboxRecord): ContainerSandbox {
    return new ContainerSandbox(dir, record, this.ctx, (s) => {
      if (s.sessionId !== null && this.active.get(s.sessionId) === s) this.active.delete(s.sessionId);
    });
  }

  async create(input: SandboxSpec): Promise<Sandbox> {
    if (this.closed) throw new SandboxError("closed", "the sandbox backend is closed");
    const spec = this.validate(input);
    if (this.active.has(spec.id) || (await this.records()).some((r) => r.record.id === spec.id)) {
      throw new SandboxError("conflict", `a sandbox for ${spec.id} exists (adopt or destroy it)`);
    }
    const image = spec.image!;
    // A warm sandbox fits when image, limits and network mode match and the backend owns the egress directory.
    const net = spec.network;
    if (spec.workspaceDir === undefined && (net.mode === "none" || net.socketDir === undefined)) {
      const pool = this.pools.get(poolKey(image, spec.limits, net.mode));
      const warm = pool?.ready.shift();
      if (warm) {
        this.active.set(spec.id, warm);
        try {
          await warm.claim(spec);
        } catch (err) {
          this.active.delete(spec.id);
          void warm.destroy();
          throw err;
        } finally {
          this.fill();
        }
        return warm;
      }
    }
    const { dir, record } = this.newRecord(
      spec.id,
      image,
      spec.limits,
      spec.network,
      spec.env ?? {},
      false,
      spec.workspaceDir,
    );
    const sb = this.sandbox(dir, record);
    this.active.set(spec.id, sb);
    try {
      await sb.provision();
    } catch (err) {
      this.active.delete(spec.id);
      await sb.destroy().catch(() => {});
      throw err;
    }
    return sb;
  }

  async adopt(id: string, input?: SandboxSpec): Promise<Sandbox | null> {
    if (this.closed) throw new SandboxError("closed", "the sandbox backend is closed");
    const live = this.active.get(id);
    if (live) return live;
    const found = (await this.records()).find((r) => r.record.id === id);
    if (!found) return null;
    const sb = this.sandbox(found.dir, found.record);
    this.active.set(id, sb);
    try {
      await sb.reattach();
      if (input) {
        const spec = this.validate({ ...input, id });
        const r = found.record;
        const same =
          spec.image === r.image &&
          JSON.stringify({ ...spec.limits, diskBytes: r.limits.diskBytes }) === JSON.stringify(r.limits) &&
          JSON.stringify(spec.network) === JSON.stringify(r.network) &&
          JSON.stringify(spec.env) === JSON.stringify(r.env);
        if (!same) await sb.respec(spec);
      }
    } catch (err) {
      this.active.delete(id);
      throw err;
    }
    return sb;
  }

  get(id: string): Sandbox | undefined {
    return this.active.get(id);
  }

  // --- warm pool ------------------------------------------------------------------------------------------------
  setWarm(specs: WarmPoolSpec[]): void {
    const wanted = new Map<string, Pool["spec"]>();
    for (const s of specs) {
      const image = s.image ?? this.opts.image;
      const limits = validateLimits(s.limits);
      const network = s.network ?? "none";
      const count = Math.max(0, Math.floor(s.count));
      wanted.set(poolKey(image, limits, network), { image, limits, network, count });
    }
    for (const [key, pool] of this.pools) {
      const spec = wanted.get(key);
      pool.spec.count = spec?.count ?? 0;
      while (pool.ready.length > pool.spec.count) void pool.ready.pop()?.destroy();
      if (!spec && pool.creating === 0 && pool.ready.length === 0) this.pools.delete(key);
    }
    for (const [key, spec] of wanted)
      if (!this.pools.has(key)) this.pools.set(key, { spec, ready: [], creating: 0 });
    this.fillBackoffUntil = 0;
    this.fill();
  }

  /** Creates warm sandboxes one at a time (two cores are shared with everything else) until every pool is full. */
  private fill(): void {
    if (this.filling || this.closed) return;
    this.filling = (async () => {
      while (!this.closed && Date.now() >= this.fillBackoffUntil) {
        const pool = [...this.pools.values()].find((p) => p.ready.length + p.creating < p.spec.count);
        if (!pool) break;
        pool.creating++;
        const { image, limits, network } = pool.spec;
        const { dir, record } = this.newRecord(
          null,
          image,
          limits,
          network === "proxy" ? { mode: "proxy" } : { mode: "none" },
          {},
          true,
        );
        const sb = this.sandbox(dir, record);
        try {
          await sb.provision();
          if (this.closed || pool.ready.length >= pool.spec.count) await sb.destroy();
          else pool.ready.push(sb);
          this.lastPoolError = null;
        } catch (err) {
          this.lastPoolError = err instanceof Error ? err.message : String(err);
          await sb.destroy().catch(() => {});
          this.fillBackoffUntil = Date.now() + 5000;
          setTimeout(() => this.fill(), 5000).unref();
        } finally {
          pool.creating--;
        }
      }
    })().finally(() => {
      this.filling = null;
    });
  }

  /** Resolves when the pools are full (or the backend is closed); for callers that want a warm start now. */
  async waitWarm(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if ([...this.pools.values()].every((p) => p.ready.length >= p.spec.count) || this.closed) return;
      if (Date.now() > deadline)
        throw new SandboxError(
          "unavailable",
          `warm pool not full after ${timeoutMs} ms: ${this.lastPoolError ?? "still creating"}`,
        );
      await (this.filling ?? new Promise((r) => setTimeout(r, 100)));
      if (!this.filling) this.fill();
    }
  }

  stats(): PoolStats {
    const sandboxes: PoolStats["sandboxes"] = [];
    let warm = 0;
    let creating = 0;
    const pools: PoolStats["pools"] = [];
    for (const p of this.pools.values()) {
      warm += p.ready.length;
      creating += p.creating;
      pools.push({
        image: p.spec.image,
        limits: { ...p.spec.limits },
        network: p.spec.network,
        target: p.spec.count,
        warm: p.ready.length,
      });
      for (const s of p.ready) {
        sandboxes.push({
          id: null,
          status: "warm",
          fromPool: true,
          memoryCurrentBytes: s.lastCounters?.memoryCurrent ?? null,
          connections: 0,
        });
      }
    }
    let inUse = 0;
    let stopped = 0;
    for (const s of this.active.values()) {
      const st = s.status();
      if (st === "running") inUse++;
      else if (st !== "destroyed") stopped++;
      sandboxes.push({
        id: s.sessionId,
        status: st,
        fromPool: s.fromPool,
        memoryCurrentBytes: st === "running" ? (s.lastCounters?.memoryCurrent ?? null) : null,
        connections: s.connections,
      });
    }
    return { warm, creating, inUse, stopped, pools, sandboxes };
  }

  // --- watching -------------------------------------------------------------------------------------------------
  private ticking = false;
  private async tick(): Promise<void> {
    if (this.ticking || this.closed) return;
    this.ticking = true;
    try {
      const now = Date.now();
      for (const s of this.active.values()) {
        await s.poll().catch(() => {});
        if (
          this.opts.idleStopMs > 0 &&
          s.status() === "running" &&
          !s.inTransition &&
          s.runningProcesses() === 0 &&
          now - s.lastActivity >= this.opts.idleStopMs
        ) {
          void s.stop().catch(() => {});
        }
      }
      for (const p of this.pools.values()) {
        for (const s of [...p.ready]) {
          await s.poll().catch(() => {});
          if (s.status() !== "running") {
            p.ready.splice(p.ready.indexOf(s), 1);
            void s.destroy().catch(() => {});
            this.fill();
          }
        }
      }
    } finally {
      this.ticking = false;
    }
  }

  async close(opts: { stop?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.watcher) clearInterval(this.watcher);
    await this.filling;
    const warm = [...this.pools.values()].flatMap((p) => p.ready.splice(0));
    await Promise.all(warm.map((s) => s.destroy().catch(() => {})));
    await Promise.all([...this.active.values()].map((s) => s.detach(opts.stop ?? false).catch(() => {})));
    this.active.clear();
  }
}
