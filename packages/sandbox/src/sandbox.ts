// One sandbox: its state directory (meta.json, the workspace image and mount, the egress and trust directories), its
// container, its executor bridge and its one pre-spawned exec-server. Lifecycle operations are serialized.
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { ExecutorBridge } from "./bridge.js";
import { type CgroupCounters, CgroupReader } from "./cgroup.js";
import { type ContainerContext, execServerEnv, runArgs, WORKSPACE_PATH } from "./container.js";
import { createWorkspace, destroyWorkspace, mountWorkspace, workspaceUsage } from "./disk.js";
import { SandboxError } from "./errors.js";
import type { ExecServerProcess } from "./exec-server.js";
import { chownArgs, presentPaths } from "./handover.js";
import type { CgroupVersion } from "./host.js";
import { type ContainerState, inspectContainer } from "./inspect.js";
import { KillTally } from "./kill-tally.js";
import { NetworkDirs } from "./network-dirs.js";
import type { Podman } from "./podman.js";
import { writeRecord } from "./record.js";
import { SerialLock } from "./serial.js";
import { SpareExecServer } from "./spare.js";
import type {
  Sandbox,
  SandboxEvents,
  SandboxExecutor,
  SandboxHealth,
  SandboxLimits,
  SandboxRecord,
  SandboxSpec,
  SandboxStatus,
  SandboxWorkspace,
} from "./types.js";

export { readRecord, writeRecord } from "./record.js";

export interface SandboxContext extends ContainerContext {
  podman: Podman;
  cgroupVersion: CgroupVersion;
  stopTimeoutSec: number;
  /** The host's CA bundle, the base of a sandbox's bundle with the proxy's CA. */
  systemCaBundle: string | null;
}

export const newToken = (): string => randomBytes(32).toString("base64url");

export class ContainerSandbox extends EventEmitter<SandboxEvents> implements Sandbox {
  private state: SandboxStatus = "stopped";
  private bridge: ExecutorBridge | null = null;
  private readonly spare: SpareExecServer;
  private readonly netDirs: NetworkDirs;
  private cgroup: CgroupReader | null = null;
  private readonly lock = new SerialLock();
  private token = newToken();
  private last: CgroupCounters | null = null;
  private readonly kills = new KillTally();
  private replacementsCount = 0;
  lastActivity = Date.now();

  constructor(
    readonly dir: string,
    private record: SandboxRecord,
    private readonly ctx: SandboxContext,
    private readonly onDestroyed: (s: ContainerSandbox) => void,
  ) {
    super();
    this.spare = new SpareExecServer(ctx.podman, { user: `${ctx.uid}:${ctx.gid}`, home: ctx.home });
    this.netDirs = new NetworkDirs(dir, ctx.systemCaBundle);
  }

  // --- identity -------------------------------------------------------------------------------------------------
  get id(): string {
    if (this.record.id === null) throw new SandboxError("conflict", "a warm sandbox has no session id yet");
    return this.record.id;
  }
  get sessionId(): string | null {
    return this.record.id;
  }
  get key(): string {
    return this.record.key;
  }
  get containerName(): string {
    return this.record.containerName;
  }
  get hostname(): string {
    return this.record.hostname;
  }
  get image(): string {
    return this.record.image;
  }
  get limits(): SandboxLimits {
    return { ...this.record.limits };
  }
  get fromPool(): boolean {
    return this.record.fromPool;
  }
  get recordCopy(): SandboxRecord {
    return structuredClone(this.record);
  }
  get network(): Sandbox["network"] {
    const n = this.record.network;
    if (n.mode === "none") return { mode: "none" };
    const socketDir = this.netDirs.socketDir(n)!;
    return { mode: "proxy", socketDir, socketPath: join(socketDir, "proxy.sock"), caCertPath: n.caCertPath };
  }
  get workspace(): SandboxWorkspace {
    return {
      hostPath: this.record.disk.mountPath,
      path: WORKSPACE_PATH,
      diskLimitEnforced: this.record.disk.kind === "loop",
    };
  }
  get executor(): SandboxExecutor {
    if (!this.bridge) throw new SandboxError("closed", "the sandbox has no executor (destroyed or closed)");
    return { url: this.bridge.url, token: this.token };
  }
  get connections(): number {
    return this.bridge?.connections ?? 0;
  }
  runningProcesses(): number {
    return this.bridge?.runningProcesses() ?? 0;
  }
  get lastCounters(): CgroupCounters | null {
    return this.last;
  }
  status(): SandboxStatus {
    return this.state;
  }
  /** True while a lifecycle operation runs (the watcher leaves it alone). */
  get inTransition(): boolean {
    return this.lock.busy;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.run(fn);
  }

  // --- creation -------------------------------------------------------------------------------------------------
  /** Makes the workspace, the egress/trust directories, the container, the bridge and a spare exec-server. */
  async provision(): Promise<void> {
    await this.serial(async () => {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await writeRecord(this.dir, this.record);
      await createWorkspace(this.record.disk, this.record.limits.diskBytes, this.ctx);
      await this.netDirs.prepare(this.record.network);
      await this.runContainer();
      this.bridge = await ExecutorBridge.listen(this.host(), this.token);
      this.spawnSpare();
    });
  }

  /** After a restart: the workspace mounted again, the container's state found, a new bridge. */
  async reattach(): Promise<void> {
    await this.serial(async () => {
      await mountWorkspace(this.record.disk);
      await this.netDirs.prepare(this.record.network);
      const st = await this.inspect();
      this.state = st?.status === "running" ? "running" : "stopped";
      if (this.state === "running") await this.refreshCgroup();
      this.bridge = await ExecutorBridge.listen(this.host(), this.token);
      if (this.state === "running") this.spawnSpare();
    });
  }

  /** A warm sandbox becomes a session's: its id, variables and CA; a new token; the spare gets the variables. */
  async claim(spec: SandboxSpec): Promise<void> {
    await this.serial(async () => {
      this.record = {
        ...this.record,
        id: spec.id,
        env: { ...spec.env },
        network:
          spec.network.mode === "proxy"
            ? { mode: "proxy", caCertPath: spec.network.caCertPath }
            : { mode: "none" },
      };
      await this.netDirs.prepare(this.record.network);
      await writeRecord(this.dir, this.record);
      this.token = newToken();
      this.bridge?.setToken(this.token);
      this.lastActivity = Date.now();
      this.spare.configure(this.env());
    });
  }

  /** Persisted changes of image, limits or network (adopt with a new spec): the container is made anew on resume. */
  async respec(spec: SandboxSpec): Promise<void> {
    await this.serial(async () => {
      this.record = {
        ...this.record,
        image: spec.image ?? this.record.image,
        limits: { ...spec.limits, diskBytes: this.record.limits.diskBytes },
        network: spec.network,
        env: { ...spec.env },
      };
      await this.netDirs.prepare(this.record.network);
      await writeRecord(this.dir, this.record);
      this.bridge?.closeConnections();
      this.spare.kill();
      await this.ctx.podman.tryRun(["rm", "-f", "-t", "0", this.record.containerName]);
      this.state = "stopped";
    });
  }

  get commandEnv(): Record<string, string> {
    return this.env();
  }

  private env(): Record<string, string> {
    return execServerEnv(this.record, this.netDirs.hasCa);
  }

  private async runContainer(): Promise<void> {
    const out = await this.ctx.podman.run(
      runArgs(
        this.record,
        {
          workspace: this.record.disk.mountPath,
          socketDir: this.netDirs.socketDir(this.record.network),
          trustDir: this.netDirs.trustDir(this.record.network),
        },
        this.ctx,
      ),
    );
    this.state = "running";
    this.lastActivity = Date.now();
    this.cgroup = null;
    this.last = null;
    void this.refreshCgroup(out.trim());
  }

  private async refreshCgroup(id?: string): Promise<void> {
    const st = await this.inspect(id);
    if (st?.cgroupPath) this.cgroup = new CgroupReader(this.ctx.cgroupVersion, st.cgroupPath);
  }

  private inspect(name = this.record.containerName): Promise<ContainerState | null> {
    return inspectContainer(this.ctx.podman, name);
  }

  private host() {
    return {
      acquire: () => this.acquire(),
      activity: () => {
        this.lastActivity = Date.now();
      },
    };
  }

  private spawnSpare(): void {
    // A warm sandbox's spare waits for the session's variables (claim()); others start at once.
    this.spare.spawn(this.record.containerName, this.record.id !== null ? this.env() : null);
  }

  /** An exec-server for a new executor connection (the spare first). A stopped container is started. */
  private async acquire(): Promise<ExecServerProcess> {
    if (this.state === "destroyed") throw new SandboxError("closed", "sandbox destroyed");
    if (this.record.id === null) throw new SandboxError("conflict", "warm sandbox not claimed");
    await this.lock.settled; // a stop, replace or resume in progress ends first
    if (this.state !== "running") await this.resume();
    return this.spare.take(this.record.containerName, this.env());
  }

  // --- lifecycle ------------------------------------------------------------------------------------------------
  oomKillsNow(): number | null {
    return this.state === "running" ? (this.cgroup?.oomKillsNow() ?? null) : null;
  }

  async handToAgent(paths: string[] = ["."]): Promise<void> {
    const present = presentPaths(this.record.disk.mountPath, paths);
    if (present.length === 0) return;
    await this.lock.settled; // a stop, replace or resume in progress ends first
    if (this.state !== "running") await this.resume();
    // The container drops every capability; this one process (ours, not the agent's) may change owners.
    await this.ctx.podman.run(
      chownArgs(this.record.containerName, `${this.ctx.uid}:${this.ctx.gid}`, present),
    );
  }

  stop(): Promise<void> {
    return this.serial(async () => {
      if (this.state !== "running") return;
      this.bridge?.suspend();
      this.spare.kill();
      try {
        await this.ctx.podman.run(["stop", "-t", String(this.ctx.stopTimeoutSec), this.record.containerName]);
      } finally {
        this.state = "stopped";
      }
    });
  }

  resume(): Promise<void> {
    return this.serial(async () => {
      if (this.state === "destroyed") throw new SandboxError("closed", "sandbox destroyed");
      if (this.state === "running") return;
      await mountWorkspace(this.record.disk);
      const st = await this.inspect();
      if (st === null) {
        await this.runContainer();
      } else {
        await this.ctx.podman.run(["start", this.record.containerName]);
        this.state = "running";
        this.lastActivity = Date.now();
        await this.refreshCgroup();
      }
      this.spawnSpare();
    });
  }

  replace(): Promise<void> {
    return this.serial(async () => {
      if (this.state === "destroyed") throw new SandboxError("closed", "sandbox destroyed");
      this.bridge?.closeConnections();
      this.spare.kill();
      this.state = "stopped";
      await this.ctx.podman.run(["rm", "-f", "-t", "0", this.record.containerName]);
      await mountWorkspace(this.record.disk);
      await this.runContainer();
      this.replacementsCount++;
      this.spawnSpare();
    });
  }

  destroy(): Promise<void> {
    return this.serial(async () => {
      if (this.state === "destroyed") return;
      this.state = "destroyed";
      this.spare.kill();
      await this.bridge?.close();
      await this.ctx.podman.tryRun(["rm", "-f", "-t", "0", this.record.containerName]);
      await destroyWorkspace(this.record.disk);
      await rm(this.dir, { recursive: true, force: true });
      this.onDestroyed(this);
    });
  }

  /** Closes the bridge (service shutdown); the container stays unless `stop`. */
  detach(stop: boolean): Promise<void> {
    return this.serial(async () => {
      this.spare.kill();
      await this.bridge?.close();
      this.bridge = null;
      if (stop && this.state === "running") {
        await this.ctx.podman.tryRun([
          "stop",
          "-t",
          String(this.ctx.stopTimeoutSec),
          this.record.containerName,
        ]);
        this.state = "stopped";
      }
    });
  }

  // --- watching -------------------------------------------------------------------------------------------------
  /** Reads the cgroup counters; emits oom / pids-exhausted on new kills or refused forks, exit when it ended. */
  async poll(): Promise<void> {
    if (this.state !== "running" || this.lock.busy) return;
    if (!this.cgroup) {
      await this.refreshCgroup();
      if (!this.cgroup) return;
    }
    const c = await this.cgroup.read();
    if (this.state !== "running" || this.lock.busy) return;
    if (c === null) {
      const st = await this.inspect();
      if (this.state !== "running" || this.lock.busy || st?.status === "running") return;
      this.state = "exited";
      this.spare.kill();
      this.emit("exit", { exitCode: st?.exitCode ?? null, oomKilled: st?.oomKilled ?? false });
      return;
    }
    this.last = c;
    const { oom, hits } = this.kills.add(c);
    if (oom > 0) this.emit("oom", { count: oom, total: this.kills.oomKills });
    if (hits > 0) {
      this.emit("pids-exhausted", {
        pidsCurrent: c.pidsCurrent,
        pidsMax: c.pidsMax,
        hits: this.kills.pidsLimitHits,
      });
    }
  }

  async health(): Promise<SandboxHealth> {
    await this.poll();
    const c = this.state === "running" ? this.last : null;
    const disk = await workspaceUsage(this.record.disk);
    return {
      status: this.state,
      running: this.state === "running",
      oomKills: this.kills.oomKills,
      memoryCurrentBytes: c?.memoryCurrent ?? null,
      memoryMaxBytes: c?.memoryMax ?? null,
      memoryPeakBytes: c?.memoryPeak ?? null,
      pidsCurrent: c?.pidsCurrent ?? null,
      pidsMax: c?.pidsMax ?? null,
      pidsLimitHits: this.kills.pidsLimitHits,
      diskUsedBytes: disk?.used ?? null,
      diskMaxBytes: this.record.disk.kind === "loop" ? (disk?.max ?? null) : null,
      connections: this.connections,
      runningProcesses: this.runningProcesses(),
      replacements: this.replacementsCount,
    };
  }
}
