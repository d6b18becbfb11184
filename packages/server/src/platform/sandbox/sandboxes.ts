/**
 * The container backend as the service uses it: one Podman container per workspace (a session's, or an environment
 * made ahead of its session), its egress through the service's proxy, and the executor the engine reaches it by.
 *
 * - Every sandbox is made with the egress socket mounted (`proxy` mode), so one warm pool serves every network
 *   policy: `disabled` opens no proxy endpoint (the socket never exists: no way out at all), `enabled` opens one that
 *   allows any public host, `restricted` one with the allow and block lists. The proxy never reaches loopback,
 *   link-local, private ranges or this service, whatever the DNS says, unless the operator lists private ranges.
 * - Secrets: vault credentials with a host list are headers the proxy injects; `environment_variable` credentials are
 *   placeholders in the agent's environment that the proxy replaces by the value in requests to their hosts. No
 *   secret enters a sandbox; the proxy's CA key never leaves the service (only its certificate is mounted).
 * - A sandbox is known by its id; after a restart it is adopted again (its container and workspace found, a new
 *   executor URL and token).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  CertificateAuthority,
  type EgressCredential,
  type EgressDecision,
  type EgressEndpoint,
  type EgressPolicy,
  EgressProxy,
  type EgressSubstitution,
  type Resolver,
} from "@codex-agent-api/egress";
import {
  type CommandResult,
  ContainerBackend,
  type ContainerSize,
  ExecutorClient,
  limitsForSize,
  type RunOptions,
  type Sandbox,
  type SandboxLimits,
} from "@codex-agent-api/sandbox";
import type { Logger } from "pino";

/** The official environment network policy, as the domain decided it. */
export type SandboxNetwork =
  | { access: "disabled" }
  | { access: "enabled" }
  | { access: "restricted"; allowed: string[]; blocked: string[] };

export interface SandboxSecrets {
  /** Headers injected into requests to these hosts. */
  headers: EgressCredential[];
  /** Placeholders the agent sees, replaced by their values in requests to their hosts. */
  substitutions: EgressSubstitution[];
}

export const NO_SECRETS: SandboxSecrets = { headers: [], substitutions: [] };

export interface SandboxesOptions {
  /** State: the backend's sandboxes, the proxy's CA. */
  rootDir: string;
  image?: string;
  /** Sandboxes of the default size kept started ahead of use. */
  warm: number;
  defaultSize: ContainerSize;
  /** Operator limits: the most a sandbox may get, and defaults for what the size does not say. */
  maximums: Partial<SandboxLimits>;
  defaults: Partial<Pick<SandboxLimits, "pids" | "diskBytes" | "tmpBytes">>;
  /** Stop a sandbox after this long without executor traffic and no command running (0: never). */
  idleStopMs: number;
  /** The service's own listeners: never reached through the proxy. */
  serviceAddresses: string[];
  /** Private ranges the proxy may reach (operator's internal mirrors; never from a client). */
  allowPrivate: string[];
  /** Names the proxy resolves to fixed addresses (checked like any other address). */
  hosts: Record<string, string>;
  logger: Logger;
  /** Every proxy decision (logs, traces, metrics). */
  onDecision?: (d: EgressDecision) => void;
  /** Upstream CA certificates to trust when re-originating TLS (default: the system store). */
  upstreamCa?: string[];
  namePrefix?: string;
}

/** A sandbox as the engine and the service use it. */
export interface SessionSandbox {
  id: string;
  /** The workspace on this host (checkpoints, artifacts, environment files are written there). */
  hostPath: string;
  /** The workspace inside: the thread's cwd. */
  cwd: "/workspace";
  /** What the engine is given with `environment/add`. */
  executor: { environmentId: string; url: string; token: string };
  limits: SandboxLimits;
  /** Variables every command there needs (its proxy, its trust store). */
  env: Record<string, string>;
  sandbox: Sandbox;
}

export interface SandboxRequest {
  size?: ContainerSize | null;
  network: SandboxNetwork;
  secrets?: SandboxSecrets;
  /** A directory to share instead of a workspace of its own (the template dialect's shared root). */
  workspaceDir?: string;
}

const CA_DIR = "egress-ca";

/** A limit a sandbox's commands ran into: memory (an OOM kill) or processes (a refused fork). */
export type SandboxLimitHit = "memory" | "pids";

export class Sandboxes {
  private readonly endpoints = new Map<string, EgressEndpoint>();
  /** Network changes per sandbox, one after the other (a turn's lease and an environment's setup may overlap). */
  private readonly networkChanges = new Map<string, Promise<void>>();
  /** Sandboxes whose limit events are counted (each once), and who is told of them. */
  private readonly watched = new WeakSet<Sandbox>();
  private readonly limitListeners = new Set<(limit: SandboxLimitHit) => void>();
  private closed = false;

  private constructor(
    readonly backend: ContainerBackend,
    private readonly proxy: EgressProxy,
    private readonly caCertPath: string,
    private readonly opts: SandboxesOptions,
  ) {}

  static async open(opts: SandboxesOptions): Promise<Sandboxes> {
    mkdirSync(opts.rootDir, { recursive: true, mode: 0o700 });
    const { ca, certPath } = await loadCa(join(opts.rootDir, CA_DIR));
    const proxy = new EgressProxy({
      ca,
      serviceAddresses: opts.serviceAddresses,
      resolve: resolverWith(opts.hosts),
      ...(opts.upstreamCa ? { upstreamCa: opts.upstreamCa } : {}),
      ...(opts.onDecision ? { onDecision: opts.onDecision } : {}),
    });
    const limits = limitsFor(opts, opts.defaultSize);
    const backend = await ContainerBackend.open({
      rootDir: join(opts.rootDir, "backend"),
      ...(opts.image ? { image: opts.image } : {}),
      warm: opts.warm > 0 ? [{ limits, network: "proxy", count: opts.warm }] : [],
      idleStopMs: opts.idleStopMs,
      ...(opts.namePrefix ? { namePrefix: opts.namePrefix } : {}),
    });
    return new Sandboxes(backend, proxy, certPath, opts);
  }

  /** The limits of a size under the operator's settings. */
  limitsFor(size?: ContainerSize | null): SandboxLimits {
    return limitsFor(this.opts, size ?? this.opts.defaultSize);
  }

  /** A new sandbox for `id` (a warm one when the request fits the pool). */
  async create(id: string, req: SandboxRequest): Promise<SessionSandbox> {
    this.assertOpen();
    const sandbox = await this.backend.create({
      id,
      limits: this.limitsFor(req.size),
      network: { mode: "proxy", caCertPath: this.caCertPath },
      ...(req.workspaceDir ? { workspaceDir: req.workspaceDir } : {}),
    });
    try {
      await this.setNetwork(id, sandbox, req.network, req.secrets ?? NO_SECRETS);
    } catch (err) {
      await sandbox.destroy().catch(() => undefined);
      throw err;
    }
    return this.view(sandbox);
  }

  /** The live sandbox of `id`, or the one a previous run of the service left (adopted), or null. */
  async get(id: string, req?: SandboxRequest): Promise<SessionSandbox | null> {
    this.assertOpen();
    const live = this.backend.get(id);
    if (live) {
      if (req) await this.setNetwork(id, live, req.network, req.secrets ?? NO_SECRETS);
      return this.view(live);
    }
    const adopted = await this.backend.adopt(id);
    if (!adopted) return null;
    if (req) await this.setNetwork(id, adopted, req.network, req.secrets ?? NO_SECRETS);
    return this.view(adopted);
  }

  /** Opens, changes or closes the sandbox's proxy endpoint (at once for new requests). */
  async updateNetwork(
    id: string,
    network: SandboxNetwork,
    secrets: SandboxSecrets = NO_SECRETS,
  ): Promise<void> {
    const sandbox = this.backend.get(id);
    if (!sandbox) throw new Error(`no live sandbox ${id}`);
    await this.setNetwork(id, sandbox, network, secrets);
  }

  /** Runs a command in the sandbox (environment setup): through its executor, like the engine's commands. */
  async run(id: string, command: string, opts: RunOptions = {}): Promise<CommandResult> {
    const s = await this.get(id);
    if (!s) throw new Error(`no sandbox ${id}`);
    const client = await ExecutorClient.open(s.executor.url, s.executor.token);
    try {
      return await client.run(command, opts);
    } finally {
      client.close();
    }
  }

  /** What this host wrote into the sandbox's workspace (workspace-relative paths; default all) becomes the agent's. */
  async handToAgent(id: string, paths?: string[]): Promise<void> {
    this.assertOpen();
    const s = this.backend.get(id) ?? (await this.backend.adopt(id));
    if (!s) throw new Error(`no sandbox ${id}`);
    await s.handToAgent(paths);
  }

  /** The container, its workspace (unless shared) and its proxy endpoint are gone. */
  async destroy(id: string): Promise<void> {
    await this.endpoints.get(id)?.close();
    this.endpoints.delete(id);
    const s = this.backend.get(id) ?? (await this.backend.adopt(id).catch(() => null));
    await s?.destroy();
  }

  stats() {
    return this.backend.stats();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.proxy.close();
    this.endpoints.clear();
    await this.backend.close();
  }

  private setNetwork(
    id: string,
    sandbox: Sandbox,
    network: SandboxNetwork,
    secrets: SandboxSecrets,
  ): Promise<void> {
    const previous = this.networkChanges.get(id) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.applyNetwork(id, sandbox, network, secrets));
    const settled = next.catch(() => undefined);
    this.networkChanges.set(id, settled);
    void settled.then(() => {
      if (this.networkChanges.get(id) === settled) this.networkChanges.delete(id);
    });
    return next;
  }

  private async applyNetwork(
    id: string,
    sandbox: Sandbox,
    network: SandboxNetwork,
    secrets: SandboxSecrets,
  ): Promise<void> {
    const policy = this.policyOf(network);
    const existing = this.endpoints.get(id);
    if (!policy) {
      await existing?.close();
      this.endpoints.delete(id);
      return;
    }
    if (existing) {
      existing.update(policy, secrets.headers, secrets.substitutions);
      return;
    }
    if (sandbox.network.mode !== "proxy") throw new Error(`sandbox ${id} has no egress socket`);
    const endpoint = await this.proxy.open({
      id,
      socketPath: sandbox.network.socketPath,
      policy,
      credentials: secrets.headers,
      substitutions: secrets.substitutions,
      access: { uid: 1000, gid: 1000 },
    });
    this.endpoints.set(id, endpoint);
  }

  private policyOf(network: SandboxNetwork): EgressPolicy | null {
    const allowPrivate = this.opts.allowPrivate.length > 0 ? { allowPrivate: this.opts.allowPrivate } : {};
    switch (network.access) {
      case "disabled":
        return null;
      case "enabled":
        return { mode: "allow-public", ...allowPrivate };
      case "restricted":
        return { mode: "allowlist", allowed: network.allowed, blocked: network.blocked, ...allowPrivate };
    }
  }

  /**
   * The memory kills in a live sandbox so far and its memory limit (a command that ended by SIGKILL is explained
   * with them), or null (not live here, not running).
   */
  memoryKills(id: string): { kills: number; limitBytes: number; holder: "container" } | null {
    const s = this.backend.get(id);
    const kills = s?.oomKillsNow() ?? null;
    return s && kills !== null ? { kills, limitBytes: s.limits.memoryBytes, holder: "container" } : null;
  }

  /** Calls `fn` for each process the kernel killed for memory and each fork refused at the pids limit. */
  onLimitHit(fn: (limit: SandboxLimitHit) => void): void {
    this.limitListeners.add(fn);
  }

  private watch(sandbox: Sandbox): void {
    if (this.watched.has(sandbox)) return;
    this.watched.add(sandbox);
    const tell = (limit: SandboxLimitHit, times: number) => {
      for (let i = 0; i < times; i++) for (const fn of this.limitListeners) fn(limit);
    };
    let pidsHits = 0;
    sandbox.on("oom", ({ count }) => tell("memory", count));
    sandbox.on("pids-exhausted", ({ hits }) => {
      tell("pids", Math.max(0, hits - pidsHits));
      pidsHits = hits;
    });
  }

  private view(sandbox: Sandbox): SessionSandbox {
    this.watch(sandbox);
    return {
      id: sandbox.id,
      hostPath: sandbox.workspace.hostPath,
      cwd: "/workspace",
      executor: { environmentId: sandbox.id, url: sandbox.executor.url, token: sandbox.executor.token },
      limits: sandbox.limits,
      env: sandbox.commandEnv,
      sandbox,
    };
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("the sandboxes are closed");
  }
}

function limitsFor(opts: SandboxesOptions, size: ContainerSize): SandboxLimits {
  return limitsForSize(size, { overrides: opts.defaults, maximums: opts.maximums });
}

/** The proxy's CA, made once and kept (key 0600; only the certificate is mounted into sandboxes). */
async function loadCa(dir: string): Promise<{ ca: CertificateAuthority; certPath: string }> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const certPath = join(dir, "ca.crt");
  const keyPath = join(dir, "ca.key");
  if (existsSync(certPath) && existsSync(keyPath)) {
    return {
      ca: await CertificateAuthority.fromPem(readFileSync(certPath, "utf8"), readFileSync(keyPath, "utf8")),
      certPath,
    };
  }
  const ca = await CertificateAuthority.create({ commonName: "codex-agent-api egress CA" });
  const { certPem, keyPem } = ca.toPem();
  writeFileSync(keyPath, keyPem, { mode: 0o600 });
  writeFileSync(certPath, certPem, { mode: 0o644 });
  chmodSync(dir, 0o755);
  return { ca, certPath };
}

/** The system resolver, with the operator's fixed names first. */
function resolverWith(hosts: Record<string, string>): Resolver | undefined {
  const fixed = new Map(Object.entries(hosts).map(([k, v]) => [k.toLowerCase(), v]));
  if (fixed.size === 0) return undefined;
  return async (hostname) => {
    const address = fixed.get(hostname.toLowerCase().replace(/\.$/, ""));
    if (address) return [{ address, family: address.includes(":") ? 6 : 4 }];
    const { lookup } = await import("node:dns/promises");
    return lookup(hostname, { all: true, verbatim: true });
  };
}
