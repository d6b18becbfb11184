// The public shapes of the sandbox backend: what a caller asks for (SandboxSpec), what it gets back (Sandbox), what
// the host can enforce (Capabilities) and what the pool looks like (PoolStats).
import type { EventEmitter } from "node:events";

/** Resource limits of one sandbox. All enforced by the kernel where `capabilities()` says so. */
export interface SandboxLimits {
  /** CPU time, in CPUs (CFS quota): 1 = one core. */
  cpus: number;
  /** Memory (and memory + swap): commands over it are OOM-killed. */
  memoryBytes: number;
  /** Processes and threads in the container (cgroup pids controller). */
  pids: number;
  /** Size of the workspace file system (/workspace): writes past it get ENOSPC. */
  diskBytes: number;
  /** Size of /tmp and of the home directory (tmpfs; also counted against memory). */
  tmpBytes: number;
}

/**
 * `none`: no network at all (only `lo`, no DNS). `proxy`: still no network interface, but a bridge inside the container
 * from 127.0.0.1:3128 to the unix socket `proxy.sock` in a host directory (the egress proxy listens there), and the
 * proxy variables set for commands. There is no mode with the host's network.
 */
export type NetworkSpec =
  | { mode: "none" }
  | {
      mode: "proxy";
      /**
       * Host directory that holds (or will hold) the proxy's `proxy.sock`; bind-mounted read-only at /run/egress. The
       * socket must be connectable by the sandbox's uid (e.g. mode 0666). Omit it to let the backend make a directory
       * per sandbox (`sandbox.network.socketDir`) — required for a sandbox from the warm pool.
       */
      socketDir?: string;
      /** A CA certificate (PEM, no key) the commands trust, for a proxy that terminates TLS. */
      caCertPath?: string;
    };

export interface SandboxSpec {
  /** The session id: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}; unique among this backend's sandboxes. */
  id: string;
  /** Image name; default: the backend's image. */
  image?: string;
  limits: SandboxLimits;
  network: NetworkSpec;
  /** Extra variables for the exec-server and so for every command (names [A-Za-z_][A-Za-z0-9_]*, no newlines). */
  env?: Record<string, string>;
  /**
   * A directory of the caller's to mount at /workspace instead of a volume of the sandbox's own (several sandboxes
   * may share it; no disk limit; never deleted by the sandbox). It is made writable by the sandbox's user.
   */
  workspaceDir?: string;
}

/** `running`: container up. `stopped`: container stopped by stop() (resumed by resume() or by the next use).
 * `exited`: the container ended on its own (crash, OOM of its init, killed): replace() or resume(). */
export type SandboxStatus = "running" | "stopped" | "exited" | "destroyed";

export interface SandboxHealth {
  status: SandboxStatus;
  running: boolean;
  /** Processes the kernel OOM-killed in this sandbox since it was created (any process, not only PID 1). */
  oomKills: number;
  memoryCurrentBytes: number | null;
  memoryMaxBytes: number | null;
  memoryPeakBytes: number | null;
  pidsCurrent: number | null;
  pidsMax: number | null;
  /** Forks refused at the pids limit since the sandbox was created. */
  pidsLimitHits: number;
  diskUsedBytes: number | null;
  diskMaxBytes: number | null;
  /** Open executor connections (one exec-server each). */
  connections: number;
  /** Commands running through the executor. */
  runningProcesses: number;
  /** Containers replaced so far. */
  replacements: number;
}

export interface SandboxEvents {
  /** The kernel OOM-killed processes (`count` new kills, `total` so far). */
  oom: [{ count: number; total: number }];
  /** Forks were refused at the pids limit; a storm at the limit wedges the container: consider replace(). */
  "pids-exhausted": [{ pidsCurrent: number | null; pidsMax: number | null; hits: number }];
  /** The container ended without stop()/destroy() (exit code when podman knows it). */
  exit: [{ exitCode: number | null; oomKilled: boolean }];
}

export interface SandboxWorkspace {
  /** The workspace on the host (the mounted volume): checkpoints and artifacts read it here. */
  hostPath: string;
  /** Where commands see it. */
  path: "/workspace";
  /** Whether `limits.diskBytes` is enforced (a loop-mounted file system) or a plain directory. */
  diskLimitEnforced: boolean;
}

export interface SandboxExecutor {
  /** ws://127.0.0.1:PORT — stable for this Sandbox object's life, across stop/resume/replace. */
  url: string;
  /** Capability token: `Authorization: Bearer <token>` on the WebSocket upgrade. */
  token: string;
}

export interface Sandbox extends EventEmitter<SandboxEvents> {
  readonly id: string;
  readonly containerName: string;
  readonly hostname: string;
  readonly image: string;
  readonly limits: SandboxLimits;
  readonly network:
    | { mode: "none" }
    | { mode: "proxy"; socketDir: string; socketPath: string; caCertPath?: string };
  readonly workspace: SandboxWorkspace;
  readonly executor: SandboxExecutor;
  /**
   * Variables every command in the sandbox must have (the egress proxy's, the trust store's): the exec-server has
   * them, and a client that sends a command's whole environment (the engine does) adds them.
   */
  readonly commandEnv: Record<string, string>;
  /** Whether this sandbox was claimed from the warm pool. */
  readonly fromPool: boolean;
  status(): SandboxStatus;
  /** Fresh counters read from the container's cgroup and the workspace file system. */
  health(): Promise<SandboxHealth>;
  /**
   * Makes what this host wrote into the workspace the agent's: files the server writes there (an environment's
   * files, a checkpoint restored or forked) are root's, read-only to commands. Ownership goes to the commands'
   * uid:gid, changed from inside the container (a symbolic link the agent planted resolves in the container's file
   * system, never this host's). `paths` are workspace-relative, changed recursively (default: the whole
   * workspace); missing ones are skipped. A stopped container is started first.
   */
  handToAgent(paths?: string[]): Promise<void>;
  /** Processes OOM-killed in the running container so far (its cgroup, read now); null when it is not running. */
  oomKillsNow(): number | null;
  /**
   * Processes started through the executor and still running (the agent's commands, stdio MCP servers): while
   * there is one the container is not stopped for idleness.
   */
  runningProcesses(): number;
  /** Stops the container (files kept). Open executor connections stay; their next message resumes it. */
  stop(): Promise<void>;
  /** Starts a stopped or exited container again. */
  resume(): Promise<void>;
  /** Removes the container and starts a new one on the same workspace, behind the same executor URL. */
  replace(): Promise<void>;
  /** Container, workspace file system and state gone. */
  destroy(): Promise<void>;
}

export interface LimitSupport {
  enforced: boolean;
  /** How it is enforced, or why not. */
  detail: string;
}

export interface Capabilities {
  kind: "container";
  runtime: {
    podman: string;
    ociRuntime: string;
    cgroupManager: string;
    cgroupVersion: "v1" | "hybrid" | "v2";
    rootless: boolean;
    /** Global podman arguments this backend uses on this host. */
    podmanArgs: string[];
  };
  limits: {
    memory: LimitSupport;
    cpu: LimitSupport;
    pids: LimitSupport;
    disk: LimitSupport;
    tmp: LimitSupport;
    network: LimitSupport;
  };
  /** The uid:gid commands run as inside the container. */
  user: string;
  ulimits: { nofile: number; nproc: number };
}

/** One warm pool: `count` ready sandboxes of this image, limits and network mode. */
export interface WarmPoolSpec {
  image?: string;
  limits: SandboxLimits;
  network?: "none" | "proxy";
  count: number;
}

export interface PoolStats {
  /** Ready, unclaimed sandboxes. */
  warm: number;
  /** Being created for the pool. */
  creating: number;
  /** Claimed or cold-created sandboxes whose container runs. */
  inUse: number;
  /** Claimed or cold-created sandboxes whose container is stopped or exited. */
  stopped: number;
  pools: Array<{
    image: string;
    limits: SandboxLimits;
    network: "none" | "proxy";
    target: number;
    warm: number;
  }>;
  sandboxes: Array<{
    id: string | null;
    status: SandboxStatus | "warm";
    fromPool: boolean;
    memoryCurrentBytes: number | null;
    connections: number;
  }>;
}

/** What is persisted per sandbox (state dir `meta.json`), listed by `backend.list()`. */
export interface SandboxRecord {
  version: 1;
  key: string;
  /** The session id; null for a warm pool member. */
  id: string | null;
  containerName: string;
  hostname: string;
  image: string;
  limits: SandboxLimits;
  network: NetworkSpec;
  env: Record<string, string>;
  disk:
    | { kind: "loop"; imagePath: string; mountPath: string }
    | { kind: "dir"; mountPath: string }
    /** A directory of the caller's, bind-mounted (shared by several sandboxes; never deleted here). */
    | { kind: "bind"; mountPath: string };
  fromPool: boolean;
  createdAt: string;
}

export interface SandboxBackend {
  readonly kind: "container";
  capabilities(): Capabilities;
  /** A sandbox for this spec: claimed from the warm pool when one matches, else created. */
  create(spec: SandboxSpec): Promise<Sandbox>;
  /**
   * After a restart of the service (or of the host): the sandbox persisted for `id`, its workspace mounted again and
   * its container found (or created again when it is gone), with a new executor URL and token. Null when unknown.
   * A `spec` whose image, limits or network differ from the persisted ones replaces the container with the new ones.
   */
  adopt(id: string, spec?: SandboxSpec): Promise<Sandbox | null>;
  /** The live sandbox for a session id. */
  get(id: string): Sandbox | undefined;
  /** Sandboxes persisted under the root directory (claimed ones; for reconciliation after a restart). */
  list(): Promise<SandboxRecord[]>;
  stats(): PoolStats;
  /** Changes the warm pools (creates or removes warm sandboxes in the background). */
  setWarm(pools: WarmPoolSpec[]): void;
  /** Ends the watcher, the pool and all executor bridges. Claimed containers keep running unless `stop`. */
  close(opts?: { stop?: boolean }): Promise<void>;
}
