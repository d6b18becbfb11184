// One sandbox: its state directory (meta.json, the workspace image and mount, the egress and trust directories), its
// container, its executor bridge and its one pre-spawned exec-server. Lifecycle operations are serialized.
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { existsSync } from "node:fs";
import { copyFile, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { isAbsolute, join, posix } from "node:path";
import { ExecutorBridge } from "./bridge.js";
import { type CgroupCounters, CgroupReader } from "./cgroup.js";
import { type ContainerContext, execServerEnv, runArgs, WORKSPACE_PATH } from "./container.js";
import { createWorkspace, destroyWorkspace, mountWorkspace, workspaceUsage } from "./disk.js";
import { SandboxError } from "./errors.js";
import { ExecServerProcess } from "./exec-server.js";
import type { CgroupVersion } from "./host.js";
import type { Podman } from "./podman.js";
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

export interface SandboxContext extends ContainerContext {
  podman: Podman;
  cgroupVersion: CgroupVersion;
  stopTimeoutSec: number;
  /** The host's CA bundle, the base of a sandbox's bundle with the proxy's CA. */
  systemCaBundle: string | null;
}

export const newToken = (): string => randomBytes(32).toString("base64url");

export async function writeRecord(dir: string, record: SandboxRecord): Promise<void> {
  const tmp = join(dir, `meta.json.${process.pid}.tmp`);
  await writeFile(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, join(dir, "meta.json"));
}

export async function readRecord(dir: string): Promise<SandboxRecord | null> {
  try {
    const r = JSON.parse(await readFile(join(dir, "meta.json"), "utf8")) as SandboxRecord;
    return r.version === 1 ? r : null;
  } catch {
    return null;
  }
}

export class ContainerSandbox extends EventEmitter<SandboxEvents> implements Sandbox {
  private state: SandboxStatus = "stopped";
  private bridge: ExecutorBridge | null = null;
  private spare: ExecServerProcess | null = null;
  private cgroup: CgroupReader | null = null;
  private lock: Promise<unknown> = Promise.resolve();
  private busy = 0;
  private token = newToken();
  private last: CgroupCounters | null = null;
  private oomTotal = 0;
  private pidsHitsTotal = 0;
  private prevOom = 0;
  private prevPidsHits = 0;
  private replacementsCount = 0;
  private hasCa = false;
  lastActivity = Date.now();

  constructor(
    readonly dir: string,
    private record: SandboxRecord,
    private readonly ctx: SandboxContext,
    private readonly onDestroyed: (s: ContainerSandbox) => void,
  ) {
    super();
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
    const socketDir = this.socketDir()!;
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
    return this.busy > 0;
  }

  private socketDir(): string | null {
    const n = this.record.network;
    if (n.mode !== "proxy") return null;
    return n.socketDir ?? join(this.dir, "egress");
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(async () => {
      this.busy++;
      try {
        return await fn();
      } finally {
        this.busy--;
      }
    });
    this.lock = run.catch(() => {});
    return run;
  }

  // --- creation -------------------------------------------------------------------------------------------------
  /** Makes the workspace, the egress/trust directories, the container, the bridge and a spare exec-server. */
  async provision(): Promise<void> {
    await this.serial(async () => {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await writeRecord(this.dir, this.record);
      await createWorkspace(this.record.disk, this.record.limits.diskBytes, this.ctx);
      await this.prepareNetworkDirs();
      await this.runContainer();
      this.bridge = await ExecutorBridge.listen(this.host(), this.token);
      this.spawnSpare();
    });
  }

  /** After a restart: the workspace mounted again, the container's state found, a new bridge. */
  async reattach(): Promise<void> {
    await this.serial(async () => {
      await mountWorkspace(this.record.disk);
      await this.prepareNetworkDirs();
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
      await this.prepareNetworkDirs();
      await writeRecord(this.dir, this.record);
      this.token = newToken();
      this.bridge?.setToken(this.token);
      this.lastActivity = Date.now();
      if (this.spare && !this.spare.exited) this.spare.configure(this.env());
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
      await this.prepareNetworkDirs();
      await writeRecord(this.dir, this.record);
      this.bridge?.closeConnections();
      this.killSpare();
      await this.ctx.podman.tryRun(["rm", "-f", "-t", "0", this.record.containerName]);
      this.state = "stopped";
    });
  }

  private async prepareNetworkDirs(): Promise<void> {
    const n = this.record.network;
    if (n.mode !== "proxy") return;
    if (!n.socketDir) await mkdir(join(this.dir, "egress"), { recursive: true, mode: 0o755 });
    const trust = join(this.dir, "trust");
    await mkdir(trust, { recursive: true, mode: 0o755 });
    this.hasCa = false;
    if (n.caCertPath) {
      const ca = await readFile(n.caCertPath, "utf8").catch(() => {
        throw new SandboxError("invalid_spec", `network.caCertPath ${n.caCertPath} cannot be read`);
      });
      if (!ca.includes("-----BEGIN CERTIFICATE-----") || ca.includes("PRIVATE KEY")) {
        throw new SandboxError("invalid_spec", "network.caCertPath must hold a PEM certificate and no key");
      }
      const base = this.ctx.systemCaBundle
        ? await readFile(this.ctx.systemCaBundle, "utf8").catch(() => "")
        : "";
      await copyFile(n.caCertPath, join(trust, "ca.crt"));
      await writeFile(join(trust, "ca-bundle.crt"), `${base.trimEnd()}\n${ca.trim()}\n`, { mode: 0o644 });
      this.hasCa = true;
    }
  }

  get commandEnv(): Record<string, string> {
    return this.env();
  }

  private env(): Record<string, string> {
    return execServerEnv(this.record, this.hasCa);
  }

  private async runContainer(): Promise<void> {
    const out = await this.ctx.podman.run(
      runArgs(
        this.record,
        {
          workspace: this.record.disk.mountPath,
          socketDir: this.socketDir(),
          trustDir: this.record.network.mode === "proxy" ? join(this.dir, "trust") : null,
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

  private async inspect(
    name = this.record.containerName,
  ): Promise<{ status: string; exitCode: number | null; oomKilled: boolean; cgroupPath: string } | null> {
    const r = await this.ctx.podman.tryRun([
      "inspect",
      "--type",
      "container",
      "--format",
      "{{.State.Status}}|{{.State.ExitCode}}|{{.State.OOMKilled}}|{{.State.CgroupPath}}",
      name,
    ]);
    if (!r.ok) return null;
    const [status = "", code, oom, cg = ""] = r.out.trim().split("|");
    return {
      status,
      exitCode: code === undefined ? null : Number(code),
      oomKilled: oom === "true",
      cgroupPath: cg,
    };
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
    this.killSpare();
    const p = new ExecServerProcess(this.ctx.podman, this.record.containerName, {
      user: `${this.ctx.uid}:${this.ctx.gid}`,
      home: this.ctx.home,
    });
    p.once("exit", () => {
      if (this.spare === p) this.spare = null;
    });
    // A warm sandbox's spare waits for the session's variables (claim()); others start at once.
    if (this.record.id !== null) p.configure(this.env());
    this.spare = p;
  }

  private killSpare(): void {
    const p = this.spare;
    this.spare = null;
    p?.kill();
  }

  /** An exec-server for a new executor connection (the spare first). A stopped container is started. */
  private async acquire(): Promise<ExecServerProcess> {
    if (this.state === "destroyed") throw new SandboxError("closed", "sandbox destroyed");
    if (this.record.id === null) throw new SandboxError("conflict", "warm sandbox not claimed");
    await this.lock; // a stop, replace or resume in progress ends first
    if (this.state !== "running") await this.resume();
    const spare = this.spare;
    this.spare = null;
    if (spare && !spare.exited) {
      spare.configure(this.env());
      return spare;
    }
    const p = new ExecServerProcess(this.ctx.podman, this.record.containerName, {
      user: `${this.ctx.uid}:${this.ctx.gid}`,
      home: this.ctx.home,
    });
    p.configure(this.env());
    return p;
  }

  // --- lifecycle ------------------------------------------------------------------------------------------------
  oomKillsNow(): number | null {
    return this.state === "running" ? (this.cgroup?.oomKillsNow() ?? null) : null;
  }

  async handToAgent(paths: string[] = ["."]): Promise<void> {
    for (const p of paths) {
      if (isAbsolute(p) || p.split("/").includes("..")) {
        throw new SandboxError("invalid_spec", `not a workspace-relative path: ${p}`);
      }
    }
    const present = paths.filter((p) => existsSync(join(this.record.disk.mountPath, p)));
    if (present.length === 0) return;
    await this.lock; // a stop, replace or resume in progress ends first
    if (this.state !== "running") await this.resume();
    // The container drops every capability; this one process (ours, not the agent's) may change owners.
    await this.ctx.podman.run([
      "exec",
      "--privileged",
      "--user",
      "0:0",
      this.record.containerName,
      "chown",
      "-R",
      "--no-dereference",
      `${this.ctx.uid}:${this.ctx.gid}`,
      "--",
      ...present.map((p) => posix.join(WORKSPACE_PATH, p)),
    ]);
  }

  stop(): Promise<void> {
    return this.serial(async () => {
      if (this.state !== "running") return;
      this.bridge?.suspend();
      this.killSpare();
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
      this.killSpare();
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
      this.killSpare();
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
      this.killSpare();
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
    if (this.state !== "running" || this.busy) return;
    if (!this.cgroup) {
      await this.refreshCgroup();
      if (!this.cgroup) return;
    }
    const c = await this.cgroup.read();
    if (this.state !== "running" || this.busy) return;
    if (c === null) {
      const st = await this.inspect();
      if (this.state !== "running" || this.busy || st?.status === "running") return;
      this.state = "exited";
      this.killSpare();
      this.emit("exit", { exitCode: st?.exitCode ?? null, oomKilled: st?.oomKilled ?? false });
      return;
    }
    this.last = c;
    // A new cgroup (resume, replace) starts its counters at 0.
    if (c.oomKills < this.prevOom) this.prevOom = 0;
    if (c.pidsLimitHits < this.prevPidsHits) this.prevPidsHits = 0;
    const oom = c.oomKills - this.prevOom;
    const hits = c.pidsLimitHits - this.prevPidsHits;
    this.prevOom = c.oomKills;
    this.prevPidsHits = c.pidsLimitHits;
    if (oom > 0) {
      this.oomTotal += oom;
      this.emit("oom", { count: oom, total: this.oomTotal });
    }
    if (hits > 0) {
      this.pidsHitsTotal += hits;
      this.emit("pids-exhausted", {
        pidsCurrent: c.pidsCurrent,
        pidsMax: c.pidsMax,
        hits: this.pidsHitsTotal,
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
      oomKills: this.oomTotal,
      memoryCurrentBytes: c?.memoryCurrent ?? null,
      memoryMaxBytes: c?.memoryMax ?? null,
      memoryPeakBytes: c?.memoryPeak ?? null,
      pidsCurrent: c?.pidsCurrent ?? null,
      pidsMax: c?.pidsMax ?? null,
      pidsLimitHits: this.pidsHitsTotal,
      diskUsedBytes: disk?.used ?? null,
      diskMaxBytes: this.record.disk.kind === "loop" ? (disk?.max ?? null) : null,
      connections: this.connections,
      runningProcesses: this.runningProcesses(),
      replacements: this.replacementsCount,
    };
  }
}
