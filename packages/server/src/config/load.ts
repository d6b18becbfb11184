import { isIPv4 } from "node:net";
import { isAbsolute, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { SandboxMode } from "@codex-agent-api/codex";
import { DEFAULT_EXCLUDES, DEFAULT_MAX_FILE_BYTES } from "./checkpoint-defaults.js";

/** Everything the service needs to run, from flags and environment. */
export interface Config {
  host: string;
  port: number;
  /** Holds the SQLite database (unless `databaseUrl`) and the engine's CODEX_HOME. */
  dataDir: string;
  /**
   * A PostgreSQL database (postgres://…) instead of the embedded SQLite one: several instances may share it (each
   * with its own data dir, the same workspace root on shared storage).
   */
  databaseUrl: string | null;
  /**
   * With several instances: an instance whose heartbeat is older than this is dead and its running turns are taken
   * over; an instance that cannot heartbeat for about half of it fences itself (stops its engines).
   */
  clusterDeadAfterSeconds: number;
  /** Root of the session workspaces (the agent's cwd). */
  workspaceRoot: string;
  /**
   * Where sessions work unless they say: `auto` = the official dialect gives each session its own directory, the
   * template dialect shares the root (its contract); `session` / `shared` = that for both.
   */
  workspaceMode: "auto" | "shared" | "session";
  /** Default model for agents and sessions that do not name one. */
  model: string;
  provider:
    | { kind: "openai"; apiKey: string | null; baseUrl: string }
    | { kind: "custom"; apiKey: string | null; baseUrl: string }
    | { kind: "mock" };
  token: string | null;
  insecureNoAuth: boolean;
  /** Host names the Host header may carry (empty: any). Loopback binds always include the loopback names. */
  allowedHosts: string[];
  /** Browser origins allowed besides the service's own (`scheme://host[:port]`). */
  corsOrigins: string[];
  // Automations and webhooks.
  /** The key sealing secrets at rest (AGENT_SECRET_KEY: 32 bytes as base64 or hex), or a file holding it. */
  secretKey: string | null;
  secretKeyFile: string | null;
  /**
   * Whether the service may connect, on a client's behalf, to loopback, private, link-local and other non-public
   * addresses: webhook endpoints, HTTP MCP servers, OAuth token endpoints (platform/net/outbound-guard.ts). Off: refused.
   */
  allowPrivateTargets: boolean;
  /** Webhook URLs must be https:// unless this is set. */
  webhookAllowHttp: boolean;
  /** How long a failing webhook delivery is retried (seconds after its event). */
  webhookRetrySeconds: number;
  /** How often each instance looks for due automations and deliveries (ms). */
  automationPollMs: number;
  /** Requests per minute per API key (or client address without a key); 0 = no limit. */
  rateLimitPerMinute: number;
  maxSessions: number;
  /** Idle sessions older than this are deleted; 0 = never. */
  sessionTtlSeconds: number;
  turnTimeoutSeconds: number;
  enginePoolSize: number;
  /** An engine process with more loaded threads than this is recycled when idle. */
  maxThreadsPerEngine: number;
  sandbox: SandboxMode;
  /**
   * Whether clients may declare stdio MCP servers: commands the engine starts outside the agent's sandbox, with
   * the engine's rights. Off unless the operator trusts every client with the machine.
   */
  allowMcpStdio: boolean;
  bodyLimitBytes: number;
  /** How often an idle SSE stream gets a keep-alive comment. */
  sseKeepaliveMs: number;
  logLevel: string;
  codexPath: string | undefined;
  goals: GoalLimits;
  /** Workspace checkpoints (a shadow git store per workspace directory, outside it). */
  checkpoints: CheckpointSettings;
  /** Environments this server prepares (`openai_hosted`), self-hosted directories, vaults. */
  environments: EnvironmentSettings;
  /** The Files API: where uploaded files' contents live, and how large one may be. */
  files: FileSettings;
}

export interface FileSettings {
  /** Where the contents live (`<dir>/<project>/<file id>`); shared by every instance of a cluster. */
  dir: string;
  /** The largest upload (bytes): 413 beyond. */
  maxBytes: number;
}

export interface EnvironmentSettings {
  /** Directories a `self_hosted` environment's `workspace_directory` may be in (default: the workspace root). */
  selfHostedRoots: string[];
  /** The longest a setup command (or a package install) may run (seconds). */
  setupTimeoutSeconds: number;
  /** Whether setup commands and package installs have the network (the agent's own policy applies after them). */
  setupNetwork: boolean;
  /** The npm registry and pip index package installs use (null: the machine's configuration). */
  npmRegistry: string | null;
  pipIndexUrl: string | null;
  /** The Python that makes an environment's virtualenv. */
  python: string;
  /**
   * An operator's program installing `packages.system` (run outside the agent's sandbox, with the package names as
   * arguments); null: system packages are refused.
   */
  systemInstaller: string | null;
  /** Whether `environment_variable` vault credentials are given to the agent's commands (their value in `env`). */
  allowEnvCredentials: boolean;
  /** Keys sealing was done with before the current one (rotation): they still open, never seal. */
  previousSecretKeys: string | null;
  previousSecretKeysFile: string | null;
}

export interface CheckpointSettings {
  enabled: boolean;
  /** Where the stores live (one directory per workspace directory). */
  dir: string;
  /** Files larger than this are left out of checkpoints (and listed as such). */
  maxFileBytes: number;
  /** Gitignore-syntax patterns left out of every checkpoint, on top of the workspaces' own .gitignore files. */
  exclude: string[];
  /** Checkpoints kept per store (the newest; 0 = no limit). */
  keep: number;
  /** Checkpoints older than this are dropped (seconds; 0 = never). */
  maxAgeSeconds: number;
  /** The largest patch a diff returns (larger ones are cut and marked truncated). */
  maxPatchBytes: number;
  /** A store idle this long is pruned (retention) and repacked (seconds). */
  idleSeconds: number;
  /**
   * Whether official-dialect streams carry `agent.session.checkpoint.created` (an event the official SDKs' types do
   * not know: strict clients reject it); template streams always do.
   */
  officialEvents: boolean;
}

export interface GoalLimits {
  /** Defaults applied when a goal does not say. */
  defaultTokenBudget: number;
  defaultMaxTurns: number;
  defaultMaxDurationSeconds: number;
  /** Upper bounds for per-goal overrides. */
  maxTokenBudget: number;
  maxTurns: number;
  maxDurationSeconds: number;
}

export class ConfigError extends Error {}

const USAGE = `Usage: codex-agent-api serve [options]

Options (environment variable in brackets):
  --host <addr>              bind address (HOST, default 127.0.0.1)
  --port <n>                 port (PORT, default 9000)
  --data-dir <dir>           database + engine state (AGENT_DATA_DIR, default ./.data)
  --database-url <url>       PostgreSQL instead of the embedded SQLite database; several instances may share it
                             (DATABASE_URL, e.g. postgres://user@host/db)
  --workspace <dir>          workspace root, the agents' cwd (WORKSPACE, default <data-dir>/workspace)
  --workspace-mode <mode>    auto | session | shared (AGENT_WORKSPACE_MODE, default auto: a directory per
                             session in the official dialect, the shared root in the template dialect)
  --model <name>             default model (CODEX_MODEL, default gpt-5-codex; mock-model with --mock-model)
  --model-base-url <url>     any Responses-compatible API (OPENAI_BASE_URL); key from OPENAI_API_KEY
  --mock-model               start the scripted mock model in-process (offline demo, no key needed)
  --token <secret>           require this token (AGENT_API_TOKEN or EBX_SERVER_TOKEN)
  --insecure-no-auth         allow a non-loopback bind without a token
  --allowed-host <name>      also answer to this Host name, repeatable (AGENT_ALLOWED_HOSTS, comma-separated)
  --cors-origin <origin>     allow this browser origin, repeatable (AGENT_CORS_ORIGINS, comma-separated)
  --rate-limit <n>           requests per minute per API key, 0 = off (AGENT_RATE_LIMIT; default off on a
                             loopback bind, 600 otherwise)
  --secret-key-file <file>   the key sealing webhook signing secrets at rest: 32 bytes, base64 or hex
                             (AGENT_SECRET_KEY_FILE; or AGENT_SECRET_KEY holding the key itself); neither: one is
                             generated into <data-dir>/secret.key (mode 0600). Instances sharing a database need
                             the same key
  --allow-private-targets    let clients' webhooks, HTTP MCP servers and OAuth token endpoints be on loopback,
                             private, link-local and other non-public addresses (AGENT_ALLOW_PRIVATE_TARGETS=1;
                             default off: refused with a 400, checked on the address connected to;
                             --webhook-allow-private and AGENT_WEBHOOK_ALLOW_PRIVATE=1 are its former names)
  --webhook-allow-http       deliver webhooks to http:// URLs too, not only https:// (AGENT_WEBHOOK_ALLOW_HTTP=1)
  --webhook-retry-hours <n>  retry a failing webhook delivery this long after its event (AGENT_WEBHOOK_RETRY_HOURS,
                             default 72)
                             (AGENT_AUTOMATION_POLL_MS: how often due automations and deliveries are looked for,
                             default 1000)
  --max-sessions <n>         stored sessions cap, 429 beyond (AGENT_MAX_SESSIONS, default 1000)
  --session-ttl <seconds>    delete sessions idle this long, 0 = never (AGENT_SESSION_TTL, default 0)
  --turn-timeout <seconds>   per-turn timeout (AGENT_TURN_TIMEOUT, default 300)
  --engines <n>              app-server processes (AGENT_ENGINE_POOL_SIZE, default 1)
  --sandbox <mode>           read-only | workspace-write | danger-full-access (AGENT_SANDBOX, default workspace-write)
  --allow-mcp-stdio          let clients declare stdio MCP servers: commands run outside the sandbox with the
                             server's rights (AGENT_ALLOW_MCP_STDIO=1; default off)
  --log-level <level>        pino level (LOG_LEVEL, default info)
  --checkpoints <on|off>     workspace checkpoints per turn (AGENT_CHECKPOINTS, default on)
  --checkpoint-dir <dir>     where checkpoint stores live (AGENT_CHECKPOINT_DIR, default <data-dir>/checkpoints)
  --checkpoint-max-file-size <bytes>
                             files larger than this are left out of checkpoints and listed
                             (AGENT_CHECKPOINT_MAX_FILE_SIZE, default 10485760)
  --checkpoint-exclude <pattern>
                             gitignore pattern left out of checkpoints besides .gitignore and the defaults
                             (node_modules/, .venv/, dist/, build/, target/, …), repeatable
                             (AGENT_CHECKPOINT_EXCLUDE, comma-separated)
  --checkpoint-no-default-excludes
                             do not leave out the default directories (AGENT_CHECKPOINT_DEFAULT_EXCLUDES=0)
  --checkpoint-keep <n>      checkpoints kept per workspace, 0 = all (AGENT_CHECKPOINT_KEEP, default 100)
  --checkpoint-max-age <seconds>
                             drop checkpoints older than this, 0 = never (AGENT_CHECKPOINT_MAX_AGE, default
                             2592000: 30 days)
  --checkpoint-max-patch <bytes>
                             largest patch a diff returns (AGENT_CHECKPOINT_MAX_PATCH, default 1048576)
  --checkpoint-idle <seconds>
                             prune and repack a store idle this long (AGENT_CHECKPOINT_IDLE, default 30)
  --checkpoint-events <who>  template | all: which dialects' streams carry agent.session.checkpoint.created
                             (AGENT_CHECKPOINT_EVENTS, default template: the official SDKs do not know it)
  --self-hosted-root <dir>   a directory self_hosted environments may use (workspace_directory inside it), repeatable
                             (AGENT_SELF_HOSTED_ROOTS, comma-separated; default the workspace root)
  --environment-setup-timeout <seconds>
                             longest a setup command or package install of an environment may run
                             (AGENT_ENVIRONMENT_SETUP_TIMEOUT, default 600)
  --environment-setup-network <on|off>
                             whether setup commands and package installs have the network
                             (AGENT_ENVIRONMENT_SETUP_NETWORK, default on)
  --environment-npm-registry <url>
                             npm registry of package installs (AGENT_ENVIRONMENT_NPM_REGISTRY, default the
                             machine's npm configuration)
  --environment-pip-index-url <url>
                             pip index of package installs (AGENT_ENVIRONMENT_PIP_INDEX_URL, default pip's)
  --environment-python <cmd> the Python making environments' virtualenvs (AGENT_ENVIRONMENT_PYTHON, default python3)
  --environment-system-installer <program>
                             installs packages.system: run OUTSIDE the agent's sandbox with the package names as
                             arguments (AGENT_ENVIRONMENT_SYSTEM_INSTALLER; default none: system packages refused)
  --allow-env-credentials    give environment_variable vault credentials to the agent's commands as variables
                             (AGENT_ALLOW_ENV_CREDENTIALS=1; default off: such credentials are refused)
  --file-dir <dir>           where Files API uploads are kept (AGENT_FILE_DIR, default <data-dir>/files); instances
                             sharing a database need it on shared storage, like the workspace
  --file-size-limit <bytes>  largest Files API upload, 413 beyond (AGENT_FILE_SIZE_LIMIT, default 536870912: 512 MiB)
  --secret-keys-previous-file <file>
                             keys secrets were sealed with before the current one, one per line: they still open
                             and are re-sealed with the current key at start-up (AGENT_SECRET_KEYS_PREVIOUS_FILE;
                             or AGENT_SECRET_KEYS_PREVIOUS holding them, comma-separated)
`;

export function usage(): string {
  return USAGE;
}

function int(
  name: string,
  raw: string | undefined,
  fallback: number,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `between ${min} and ${max}`;
    throw new ConfigError(`${name} must be an integer ${range}, got "${raw}"`);
  }
  return n;
}

/** A PostgreSQL connection URL, checked (null: not given). */
function databaseUrl(raw: string | undefined): string | null {
  if (raw === undefined || raw === "") return null;
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== "postgres:" && url.protocol !== "postgresql:")) {
    throw new ConfigError("--database-url takes a PostgreSQL URL like postgres://user@host:5432/db");
  }
  return raw;
}

/** Names a loopback bind always answers to (the Host header check against DNS rebinding). */
export const LOOPBACK_HOST_NAMES: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

const LOOPBACK = new Set(["localhost", "::1", "0:0:0:0:0:0:0:1"]);

/** Loopback addresses only: 127.0.0.0/8 (also IPv4-mapped), ::1, localhost. A host NAME like "127.x.com" is not. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (LOOPBACK.has(h)) return true;
  const v4 = h.startsWith("::ffff:") ? h.slice(7) : h;
  return isIPv4(v4) && v4.startsWith("127.");
}

export function loadConfig(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): Config {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: "string" },
      port: { type: "string" },
      "data-dir": { type: "string" },
      "database-url": { type: "string" },
      workspace: { type: "string" },
      "workspace-mode": { type: "string" },
      model: { type: "string" },
      "model-base-url": { type: "string" },
      "mock-model": { type: "boolean" },
      token: { type: "string" },
      "insecure-no-auth": { type: "boolean" },
      "allowed-host": { type: "string", multiple: true },
      "cors-origin": { type: "string", multiple: true },
      "secret-key-file": { type: "string" },
      "allow-private-targets": { type: "boolean" },
      "webhook-allow-private": { type: "boolean" },
      "webhook-allow-http": { type: "boolean" },
      "webhook-retry-hours": { type: "string" },
      "rate-limit": { type: "string" },
      "max-sessions": { type: "string" },
      "session-ttl": { type: "string" },
      "turn-timeout": { type: "string" },
      engines: { type: "string" },
      sandbox: { type: "string" },
      "allow-mcp-stdio": { type: "boolean" },
      "log-level": { type: "string" },
      "codex-path": { type: "string" },
      checkpoints: { type: "string" },
      "checkpoint-dir": { type: "string" },
      "checkpoint-max-file-size": { type: "string" },
      "checkpoint-exclude": { type: "string", multiple: true },
      "checkpoint-no-default-excludes": { type: "boolean" },
      "checkpoint-keep": { type: "string" },
      "checkpoint-max-age": { type: "string" },
      "checkpoint-max-patch": { type: "string" },
      "checkpoint-idle": { type: "string" },
      "checkpoint-events": { type: "string" },
      "self-hosted-root": { type: "string", multiple: true },
      "environment-setup-timeout": { type: "string" },
      "environment-setup-network": { type: "string" },
      "environment-npm-registry": { type: "string" },
      "environment-pip-index-url": { type: "string" },
      "environment-python": { type: "string" },
      "environment-system-installer": { type: "string" },
      "allow-env-credentials": { type: "boolean" },
      "secret-keys-previous-file": { type: "string" },
      "file-dir": { type: "string" },
      "file-size-limit": { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  });
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(cwd, p));
  const dataDir = abs(values["data-dir"] ?? env.AGENT_DATA_DIR ?? ".data");
  const mock = values["mock-model"] ?? env.AGENT_MOCK_MODEL === "1";
  const baseUrl = values["model-base-url"] ?? env.OPENAI_BASE_URL;
  const apiKey = env.OPENAI_API_KEY || null;
  const sandbox = (values.sandbox ?? env.AGENT_SANDBOX ?? "workspace-write") as SandboxMode;
  if (!["read-only", "workspace-write", "danger-full-access"].includes(sandbox)) {
    throw new ConfigError(
      `--sandbox must be read-only, workspace-write or danger-full-access, got "${sandbox}"`,
    );
  }
  const workspaceMode = values["workspace-mode"] ?? env.AGENT_WORKSPACE_MODE ?? "auto";
  if (workspaceMode !== "auto" && workspaceMode !== "shared" && workspaceMode !== "session") {
    throw new ConfigError(`--workspace-mode must be auto, session or shared, got "${workspaceMode}"`);
  }
  const host = values.host ?? env.HOST ?? "127.0.0.1";
  // An empty value means "not set" everywhere: `--token ""` must not silently disable a token set in the env.
  const token = values.token || env.AGENT_API_TOKEN || env.EBX_SERVER_TOKEN || null;
  const insecureNoAuth = values["insecure-no-auth"] ?? false;
  if (!isLoopback(host) && !token && !insecureNoAuth) {
    throw new ConfigError(
      `refusing to bind ${host} without a token: set AGENT_API_TOKEN (or --token), or pass --insecure-no-auth`,
    );
  }
  const list = (flag: string[] | undefined, raw: string | undefined) =>
    (flag ?? (raw ?? "").split(",")).map((v) => v.trim()).filter((v) => v !== "");
  const extraHosts = list(values["allowed-host"], env.AGENT_ALLOWED_HOSTS).map((h) => h.toLowerCase());
  for (const h of extraHosts) {
    if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)$/.test(h)) {
      throw new ConfigError(`--allowed-host takes a host name without scheme or port, got "${h}"`);
    }
  }
  const corsOrigins = list(values["cors-origin"], env.AGENT_CORS_ORIGINS);
  for (const o of corsOrigins) {
    let url: URL | null = null;
    try {
      url = new URL(o);
    } catch {
      url = null;
    }
    if (!url || url.origin !== o) {
      throw new ConfigError(`--cors-origin takes an origin like https://console.example.com, got "${o}"`);
    }
  }
  // A loopback bind answers to loopback names only (DNS rebinding); other binds to any name unless told.
  const allowedHosts =
    isLoopback(host) || extraHosts.length > 0 ? [...LOOPBACK_HOST_NAMES, ...extraHosts] : [];
  return {
    host,
    allowedHosts,
    corsOrigins,
    secretKey: env.AGENT_SECRET_KEY || null,
    secretKeyFile: (() => {
      const file = values["secret-key-file"] || env.AGENT_SECRET_KEY_FILE;
      return file ? abs(file) : null;
    })(),
    allowPrivateTargets:
      values["allow-private-targets"] ??
      values["webhook-allow-private"] ??
      (env.AGENT_ALLOW_PRIVATE_TARGETS === "1" || env.AGENT_WEBHOOK_ALLOW_PRIVATE === "1"),
    webhookAllowHttp: values["webhook-allow-http"] ?? env.AGENT_WEBHOOK_ALLOW_HTTP === "1",
    webhookRetrySeconds:
      3600 *
      int(
        "--webhook-retry-hours",
        values["webhook-retry-hours"] ?? env.AGENT_WEBHOOK_RETRY_HOURS,
        72,
        1,
        720,
      ),
    automationPollMs: int("AGENT_AUTOMATION_POLL_MS", env.AGENT_AUTOMATION_POLL_MS, 1000, 50, 60_000),
    rateLimitPerMinute: int(
      "--rate-limit",
      values["rate-limit"] ?? env.AGENT_RATE_LIMIT,
      isLoopback(host) ? 0 : 600,
      0,
    ),
    port: int("--port", values.port ?? env.PORT, 9000, 0, 65535),
    dataDir,
    databaseUrl: databaseUrl(values["database-url"] ?? env.DATABASE_URL),
    clusterDeadAfterSeconds: int("AGENT_CLUSTER_DEAD_AFTER", env.AGENT_CLUSTER_DEAD_AFTER, 7, 3, 600),
    workspaceRoot: abs(values.workspace ?? env.WORKSPACE ?? `${dataDir}/workspace`),
    workspaceMode,
    model: values.model ?? env.CODEX_MODEL ?? (mock ? "mock-model" : "gpt-5-codex"),
    provider: mock
      ? { kind: "mock" }
      : baseUrl
        ? { kind: "custom", apiKey, baseUrl }
        : { kind: "openai", apiKey, baseUrl: "https://api.openai.com/v1" },
    token,
    insecureNoAuth,
    maxSessions: int("AGENT_MAX_SESSIONS", values["max-sessions"] ?? env.AGENT_MAX_SESSIONS, 1000, 1),
    sessionTtlSeconds: int("AGENT_SESSION_TTL", values["session-ttl"] ?? env.AGENT_SESSION_TTL, 0),
    turnTimeoutSeconds: int("AGENT_TURN_TIMEOUT", values["turn-timeout"] ?? env.AGENT_TURN_TIMEOUT, 300, 1),
    enginePoolSize: int("AGENT_ENGINE_POOL_SIZE", values.engines ?? env.AGENT_ENGINE_POOL_SIZE, 1, 1),
    maxThreadsPerEngine: int("AGENT_MAX_THREADS_PER_ENGINE", env.AGENT_MAX_THREADS_PER_ENGINE, 100, 1),
    sandbox,
    allowMcpStdio: values["allow-mcp-stdio"] ?? env.AGENT_ALLOW_MCP_STDIO === "1",
    bodyLimitBytes: int("AGENT_BODY_LIMIT", env.AGENT_BODY_LIMIT, 10 * 1024 * 1024, 1024),
    sseKeepaliveMs: int("AGENT_SSE_KEEPALIVE_MS", env.AGENT_SSE_KEEPALIVE_MS, 15_000, 10),
    logLevel: values["log-level"] ?? env.LOG_LEVEL ?? "info",
    codexPath: values["codex-path"] ?? env.CODEX_PATH,
    goals: {
      defaultTokenBudget: int("AGENT_GOAL_TOKEN_BUDGET", env.AGENT_GOAL_TOKEN_BUDGET, 1_000_000, 1),
      defaultMaxTurns: int("AGENT_GOAL_MAX_TURNS", env.AGENT_GOAL_MAX_TURNS, 20, 1),
      defaultMaxDurationSeconds: int("AGENT_GOAL_MAX_DURATION", env.AGENT_GOAL_MAX_DURATION, 3600, 1),
      maxTokenBudget: int("AGENT_GOAL_MAX_TOKEN_BUDGET", env.AGENT_GOAL_MAX_TOKEN_BUDGET, 10_000_000, 1),
      maxTurns: int("AGENT_GOAL_MAX_TURNS_LIMIT", env.AGENT_GOAL_MAX_TURNS_LIMIT, 200, 1),
      maxDurationSeconds: int("AGENT_GOAL_MAX_DURATION_LIMIT", env.AGENT_GOAL_MAX_DURATION_LIMIT, 86_400, 1),
    },
    checkpoints: checkpointSettings(values, env, dataDir, abs),
    environments: environmentSettings(
      values,
      env,
      abs(values.workspace ?? env.WORKSPACE ?? `${dataDir}/workspace`),
      abs,
    ),
    files: fileSettings(
      values,
      env,
      dataDir,
      abs(values.workspace ?? env.WORKSPACE ?? `${dataDir}/workspace`),
      abs,
    ),
  };
}

/**
 * The Files API's storage (flags win over the environment). Its directory and the workspace root may not hold one
 * another: agents work in the workspace, and must not see any project's uploads.
 */
function fileSettings(
  values: { "file-dir"?: string; "file-size-limit"?: string },
  env: NodeJS.ProcessEnv,
  dataDir: string,
  workspaceRoot: string,
  abs: (p: string) => string,
): FileSettings {
  const dir = abs(values["file-dir"] || env.AGENT_FILE_DIR || `${dataDir}/files`);
  const within = (outer: string, inner: string) => {
    const r = relative(outer, inner);
    return r === "" || (!r.startsWith("..") && !isAbsolute(r));
  };
  if (within(workspaceRoot, dir) || within(dir, workspaceRoot)) {
    throw new ConfigError(
      `--file-dir (${dir}) and the workspace root (${workspaceRoot}) cannot hold one another: agents would see ` +
        "uploaded files",
    );
  }
  return {
    dir,
    maxBytes: int(
      "--file-size-limit",
      values["file-size-limit"] ?? env.AGENT_FILE_SIZE_LIMIT,
      512 * 1024 * 1024,
      1,
    ),
  };
}

/** Environments, self-hosted directories and vaults (flags win over the environment). */
function environmentSettings(
  values: {
    "self-hosted-root"?: string[];
    "environment-setup-timeout"?: string;
    "environment-setup-network"?: string;
    "environment-npm-registry"?: string;
    "environment-pip-index-url"?: string;
    "environment-python"?: string;
    "environment-system-installer"?: string;
    "allow-env-credentials"?: boolean;
    "secret-keys-previous-file"?: string;
  },
  env: NodeJS.ProcessEnv,
  workspaceRoot: string,
  abs: (p: string) => string,
): EnvironmentSettings {
  const roots = (values["self-hosted-root"] ?? (env.AGENT_SELF_HOSTED_ROOTS ?? "").split(","))
    .map((r) => r.trim())
    .filter((r) => r !== "")
    .map(abs);
  const network = (
    values["environment-setup-network"] ??
    env.AGENT_ENVIRONMENT_SETUP_NETWORK ??
    "on"
  ).toLowerCase();
  if (!["on", "off", "1", "0", "true", "false"].includes(network)) {
    throw new ConfigError(`--environment-setup-network must be on or off, got "${network}"`);
  }
  const url = (flag: string, raw: string | undefined): string | null => {
    if (raw === undefined || raw === "") return null;
    try {
      new URL(raw);
    } catch {
      throw new ConfigError(`${flag} takes a URL, got "${raw}"`);
    }
    return raw;
  };
  const installer = values["environment-system-installer"] || env.AGENT_ENVIRONMENT_SYSTEM_INSTALLER;
  const previousFile = values["secret-keys-previous-file"] || env.AGENT_SECRET_KEYS_PREVIOUS_FILE;
  return {
    selfHostedRoots: roots.length > 0 ? roots : [workspaceRoot],
    setupTimeoutSeconds: int(
      "--environment-setup-timeout",
      values["environment-setup-timeout"] ?? env.AGENT_ENVIRONMENT_SETUP_TIMEOUT,
      600,
      1,
      86_400,
    ),
    setupNetwork: network === "on" || network === "1" || network === "true",
    npmRegistry: url(
      "--environment-npm-registry",
      values["environment-npm-registry"] ?? env.AGENT_ENVIRONMENT_NPM_REGISTRY,
    ),
    pipIndexUrl: url(
      "--environment-pip-index-url",
      values["environment-pip-index-url"] ?? env.AGENT_ENVIRONMENT_PIP_INDEX_URL,
    ),
    python: values["environment-python"] || env.AGENT_ENVIRONMENT_PYTHON || "python3",
    systemInstaller: installer ? abs(installer) : null,
    allowEnvCredentials: values["allow-env-credentials"] ?? env.AGENT_ALLOW_ENV_CREDENTIALS === "1",
    previousSecretKeys: env.AGENT_SECRET_KEYS_PREVIOUS || null,
    previousSecretKeysFile: previousFile ? abs(previousFile) : null,
  };
}

/** The checkpoint options (flags win over the environment). */
function checkpointSettings(
  values: {
    checkpoints?: string;
    "checkpoint-dir"?: string;
    "checkpoint-max-file-size"?: string;
    "checkpoint-exclude"?: string[];
    "checkpoint-no-default-excludes"?: boolean;
    "checkpoint-keep"?: string;
    "checkpoint-max-age"?: string;
    "checkpoint-max-patch"?: string;
    "checkpoint-idle"?: string;
    "checkpoint-events"?: string;
  },
  env: NodeJS.ProcessEnv,
  dataDir: string,
  abs: (p: string) => string,
): CheckpointSettings {
  const mode = (values.checkpoints ?? env.AGENT_CHECKPOINTS ?? "on").toLowerCase();
  if (!["on", "off", "1", "0", "true", "false"].includes(mode)) {
    throw new ConfigError(`--checkpoints must be on or off, got "${mode}"`);
  }
  const extra = (values["checkpoint-exclude"] ?? (env.AGENT_CHECKPOINT_EXCLUDE ?? "").split(","))
    .map((p) => p.trim())
    .filter((p) => p !== "");
  for (const p of extra) {
    if (/[\r\n\0]/.test(p))
      throw new ConfigError(`--checkpoint-exclude takes one pattern per line, got ${JSON.stringify(p)}`);
  }
  const events = values["checkpoint-events"] ?? env.AGENT_CHECKPOINT_EVENTS ?? "template";
  if (events !== "template" && events !== "all") {
    throw new ConfigError(`--checkpoint-events must be template or all, got "${events}"`);
  }
  const noDefaults =
    values["checkpoint-no-default-excludes"] ?? env.AGENT_CHECKPOINT_DEFAULT_EXCLUDES === "0";
  return {
    enabled: mode === "on" || mode === "1" || mode === "true",
    dir: abs(values["checkpoint-dir"] ?? env.AGENT_CHECKPOINT_DIR ?? `${dataDir}/checkpoints`),
    maxFileBytes: int(
      "--checkpoint-max-file-size",
      values["checkpoint-max-file-size"] ?? env.AGENT_CHECKPOINT_MAX_FILE_SIZE,
      DEFAULT_MAX_FILE_BYTES,
      0,
    ),
    exclude: [...(noDefaults ? [] : DEFAULT_EXCLUDES), ...extra],
    keep: int("--checkpoint-keep", values["checkpoint-keep"] ?? env.AGENT_CHECKPOINT_KEEP, 100, 0),
    maxAgeSeconds: int(
      "--checkpoint-max-age",
      values["checkpoint-max-age"] ?? env.AGENT_CHECKPOINT_MAX_AGE,
      30 * 86_400,
      0,
    ),
    maxPatchBytes: int(
      "--checkpoint-max-patch",
      values["checkpoint-max-patch"] ?? env.AGENT_CHECKPOINT_MAX_PATCH,
      1024 * 1024,
      1024,
    ),
    idleSeconds: int(
      "--checkpoint-idle",
      values["checkpoint-idle"] ?? env.AGENT_CHECKPOINT_IDLE,
      30,
      0,
      86_400,
    ),
    officialEvents: events === "all",
  };
}
