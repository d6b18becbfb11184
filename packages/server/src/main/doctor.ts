/**
 * `codex-agent-api doctor`: what this host and this configuration can run, check by check (ok, warning, error, each
 * with what to do), and what each sandbox backend guarantees here. It takes the options `serve` takes, so it checks
 * the configuration the operator is about to start, and it changes nothing: the data directory's lock is only
 * tried, a secret key is read but never generated, the database is opened read-only (SQLite) or connected to
 * (PostgreSQL), the model is probed with a TCP connect, and a cgroup is made and removed at once (whether the local
 * backend's engine groups can be).
 */
import { execFile } from "node:child_process";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { bwrapHelperDir, findSystemBwrap, resolveCodexBinary } from "@codex-agent-api/codex";
import type { Config } from "../config/load.js";
import { probeTcp } from "../platform/engine/model-health.js";
import { probeDatabase } from "../store/probe.js";
import { DirLockedError, lockDirectory } from "./dir-lock.js";
import {
  type Check,
  type CheckStatus,
  type DoctorReport,
  guarantees,
  type LocalConfinement,
  type SandboxHost,
} from "./doctor-report.js";

export type {
  Check,
  CheckStatus,
  DoctorReport,
  Guarantee,
  LocalConfinement,
  SandboxHost,
} from "./doctor-report.js";
export { formatReport } from "./doctor-report.js";

const run = promisify(execFile);

/** The engine version this build is pinned to (packages/codex's dependency). */
export const PINNED_ENGINE = "0.169.0";

const worst = (checks: readonly Check[]): CheckStatus =>
  checks.some((c) => c.status === "error")
    ? "error"
    : checks.some((c) => c.status === "warning")
      ? "warning"
      : "ok";

export interface DoctorDeps {
  /** The container backend's host facts (default: `@codex-agent-api/sandbox`'s `doctor()`). */
  sandboxHost?: () => Promise<SandboxHost>;
  /** What the local backend's engine groups can use (default: a group made and removed at once). */
  localConfinement?: () => Promise<LocalConfinement>;
}

export async function doctor(config: Config, deps: DoctorDeps = {}): Promise<DoctorReport> {
  const checks: Check[] = [];
  checks.push(nodeCheck());
  checks.push(await engineCheck());
  checks.push(bwrapCheck());
  checks.push(await engineSandboxCheck());
  const host = await (deps.sandboxHost ?? defaultSandboxHost)().catch((err: unknown): SandboxHost | Error =>
    err instanceof Error ? err : new Error(String(err)),
  );
  checks.push(...containerChecks(host, config));
  checks.push(dataDirCheck(config));
  checks.push(workspaceCheck(config));
  checks.push(await databaseCheck(config));
  checks.push(await modelCheck(config));
  checks.push(secretKeyCheck(config));
  const local = await (deps.localConfinement ?? defaultLocalConfinement)().catch(
    (err: unknown): LocalConfinement => ({
      cgroup: null,
      controllers: [],
      rlimits: false,
      problems: [String(err)],
    }),
  );
  return { status: worst(checks), checks, backends: guarantees(host, local) };
}

/**
 * The checks worth a line in the log when the service starts (it runs them once it listens, and logs those that
 * are not ok): the doctor's, for the backend this configuration uses only, without what starting has settled
 * already (the data directory and its lock, the database).
 */
export async function startUpChecks(config: Config, deps: DoctorDeps = {}): Promise<Check[]> {
  const checks: Check[] = [nodeCheck(), await engineCheck()];
  if (config.sandboxes.backend === "local") checks.push(bwrapCheck(), await engineSandboxCheck());
  else {
    const host = await (deps.sandboxHost ?? defaultSandboxHost)().catch(
      (err: unknown): SandboxHost | Error => (err instanceof Error ? err : new Error(String(err))),
    );
    checks.push(...containerChecks(host, config));
  }
  checks.push(workspaceCheck(config), await modelCheck(config), secretKeyCheck(config));
  return checks;
}

async function defaultSandboxHost(): Promise<SandboxHost> {
  const { doctor: sandboxDoctor } = await import("@codex-agent-api/sandbox");
  return sandboxDoctor();
}

/** Whether a group can be made here: one is made beside where the service's would be, and removed. */
async function defaultLocalConfinement(): Promise<LocalConfinement> {
  const { TreeConfinement } = await import("@codex-agent-api/sandbox");
  const probe = await TreeConfinement.open(`codex-agent-api-doctor-${process.pid}`, {
    memoryBytes: 1 << 30,
    cpus: 1,
    pids: 1024,
    dataBytes: 1 << 30,
    fileBytes: 1 << 30,
  });
  try {
    return probe.report();
  } finally {
    probe.close();
  }
}

function nodeCheck(): Check {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  const ok = major > 20 || (major === 20 && minor >= 12);
  return {
    name: "node",
    status: ok ? "ok" : "error",
    detail: `Node ${process.versions.node}`,
    ...(ok ? {} : { fix: "install Node 20.12 or later" }),
  };
}

async function engineCheck(): Promise<Check> {
  let binary: string;
  try {
    binary = resolveCodexBinary();
  } catch (err) {
    return {
      name: "engine",
      status: "error",
      detail: String(err),
      fix: "npm ci (the engine is @openai/codex)",
    };
  }
  try {
    const { stdout } = await run(binary, ["--version"], { timeout: 10_000 });
    const version = /(\d+\.\d+\.\d+)/.exec(stdout)?.[1] ?? stdout.trim();
    return version === PINNED_ENGINE
      ? { name: "engine", status: "ok", detail: `codex ${version} (${binary})` }
      : {
          name: "engine",
          status: "error",
          detail: `codex ${version} at ${binary}; this build speaks the protocol of ${PINNED_ENGINE}`,
          fix: "npm ci (installs the pinned @openai/codex)",
        };
  } catch (err) {
    return {
      name: "engine",
      status: "error",
      detail: `${binary} does not run: ${String(err)}`,
      fix: "npm ci",
    };
  }
}

function bwrapCheck(): Check {
  const bwrap = findSystemBwrap();
  if (!bwrap)
    return { name: "bubblewrap", status: "ok", detail: "none on PATH: the engine uses its bundled one" };
  if (bwrap.argv0) {
    return {
      name: "bubblewrap",
      status: "ok",
      detail: `${bwrap.path} ${bwrap.version ?? "?"}, used by the engine`,
    };
  }
  return {
    name: "bubblewrap",
    status: "warning",
    detail:
      `${bwrap.path} ${bwrap.version ?? "?"} has no --argv0: the service puts its helper directory ` +
      "(<data-dir>/engine-path) first on the engine's PATH so that sandboxed commands still run",
    fix: "nothing is needed; removing the distribution's bubblewrap (or installing 0.9.0 or later) avoids the helper",
  };
}

/** The local backend's sandbox, for real: one command in the engine's Linux sandbox. */
async function engineSandboxCheck(): Promise<Check> {
  const home = mkdtempSync(join(tmpdir(), "cas-doctor-"));
  try {
    // As the service runs it: with the helper directory first on PATH when the system bubblewrap needs it.
    const binary = resolveCodexBinary();
    mkdirSync(join(home, "codex-home"));
    const helper = bwrapHelperDir(home, binary, findSystemBwrap());
    const path = [helper, process.env.PATH ?? "/usr/bin:/bin"].filter(Boolean).join(delimiter);
    const { stdout } = await run(
      binary,
      [
        "sandbox",
        "--",
        "sh",
        "-c",
        "touch /etc/cas-doctor-probe 2>/dev/null && echo writable || echo confined",
      ],
      { timeout: 20_000, env: { PATH: path, CODEX_HOME: join(home, "codex-home"), HOME: home } },
    );
    return stdout.trim() === "confined"
      ? {
          name: "engine sandbox",
          status: "ok",
          detail: "a command in the engine's Linux sandbox ran confined",
        }
      : {
          name: "engine sandbox",
          status: "error",
          detail: `a sandboxed command could write /etc (${stdout.trim()})`,
          fix: "do not run the local backend here; use --sandbox-backend container",
        };
  } catch (err) {
    const e = err as { stderr?: string; message?: string };
    return {
      name: "engine sandbox",
      status: "error",
      detail: `the engine's Linux sandbox does not start: ${(e.stderr || e.message || "").trim().slice(0, 300)}`,
      fix: "the local backend needs user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)",
    };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

function containerChecks(host: SandboxHost | Error, config: Config): Check[] {
  const wanted = config.sandboxes.backend === "container";
  const missing: CheckStatus = wanted ? "error" : "warning";
  if (host instanceof Error) {
    return [{ name: "podman", status: missing, detail: host.message, fix: "apt-get install -y podman runc" }];
  }
  const out: Check[] = [];
  out.push(
    host.podman.present
      ? {
          name: "podman",
          status: "ok",
          detail: `podman ${host.podman.version ?? "?"} (${host.rootful ? "rootful" : "rootless"})`,
        }
      : {
          name: "podman",
          status: missing,
          detail: "not installed",
          fix: "apt-get install -y podman runc catatonit",
        },
  );
  const runtime = host.runtimes.podmanDefault ?? host.runtimes.runc ?? host.runtimes.crun;
  out.push({
    name: "cgroups",
    status:
      host.cgroup.controllers.includes("memory") && host.cgroup.controllers.includes("pids") ? "ok" : missing,
    detail: `${host.cgroup.version}: ${host.cgroup.controllers.join(", ") || "no controllers"}; runtime ${runtime ?? "none"}`,
    ...(host.cgroup.version === "hybrid" && !host.runtimes.runc
      ? { fix: "hybrid cgroups need runc (crun refuses them): apt-get install -y runc" }
      : {}),
  });
  out.push(
    host.loop.usable
      ? {
          name: "workspace disk limits",
          status: "ok",
          detail: "loop devices usable (one ext4 image per workspace)",
        }
      : {
          name: "workspace disk limits",
          status: "warning",
          detail: "no loop devices: container workspaces are plain directories without a size limit",
        },
  );
  out.push(
    host.image.present && host.image.current
      ? { name: "sandbox image", status: "ok", detail: host.image.name }
      : {
          name: "sandbox image",
          status: host.podman.present ? missing : "warning",
          detail: `${host.image.name} ${host.image.present ? "is out of date" : "is not built"}`,
          fix: "bash packages/sandbox/scripts/build-image.sh",
        },
  );
  for (const p of host.problems) out.push({ name: "container host", status: missing, detail: p });
  for (const w of host.warnings) out.push({ name: "container host", status: "warning", detail: w });
  return out;
}

function dataDirCheck(config: Config): Check {
  if (!existsSync(config.dataDir)) {
    return { name: "data directory", status: "ok", detail: `${config.dataDir} (made at the first start)` };
  }
  try {
    accessSync(config.dataDir, constants.R_OK | constants.W_OK);
  } catch {
    return {
      name: "data directory",
      status: "error",
      detail: `${config.dataDir} is not writable by this user`,
      fix: "run the service as the directory's owner, or choose another --data-dir",
    };
  }
  try {
    lockDirectory(config.dataDir).release();
    return { name: "data directory", status: "ok", detail: `${config.dataDir}, not in use` };
  } catch (err) {
    if (!(err instanceof DirLockedError)) throw err;
    return {
      name: "data directory",
      status: "warning",
      detail: err.message,
      fix: "stop that instance first, or give this one its own --data-dir",
    };
  }
}

function workspaceCheck(config: Config): Check {
  const dir = config.workspaceRoot;
  if (!existsSync(dir))
    return { name: "workspace", status: "ok", detail: `${dir} (made at the first start)` };
  try {
    accessSync(dir, constants.W_OK);
    return { name: "workspace", status: "ok", detail: dir };
  } catch {
    return {
      name: "workspace",
      status: "error",
      detail: `${dir} is not writable`,
      fix: "choose another --workspace",
    };
  }
}

async function databaseCheck(config: Config): Promise<Check> {
  const file = join(config.dataDir, "agents.db");
  const probe = await probeDatabase(
    config.databaseUrl ? { postgresUrl: config.databaseUrl } : { sqliteFile: file },
  );
  const what = probe.kind === "postgres" ? "PostgreSQL" : `SQLite ${file}`;
  if (probe.error) {
    return {
      name: "database",
      status: "error",
      detail: `${what}: ${probe.error}`,
      ...(probe.kind === "postgres"
        ? { fix: "check --database-url / DATABASE_URL and that the server accepts this host" }
        : {}),
    };
  }
  return {
    name: "database",
    status: "ok",
    detail: probe.schema === null ? `${what} (made at the first start)` : `${what}, schema ${probe.schema}`,
  };
}

async function modelCheck(config: Config): Promise<Check> {
  if (config.provider.kind === "mock")
    return { name: "model", status: "ok", detail: "the built-in scripted model" };
  if (!config.provider.apiKey) {
    return {
      name: "model",
      status: "error",
      detail: "no model key: every turn would fail",
      fix: "set OPENAI_API_KEY (and OPENAI_BASE_URL for another Responses-compatible API), or use --mock-model",
    };
  }
  const failure = await probeTcp(config.provider.baseUrl);
  return failure === null
    ? { name: "model", status: "ok", detail: `${new URL(config.provider.baseUrl).host} reachable` }
    : {
        name: "model",
        status: "error",
        detail: `${new URL(config.provider.baseUrl).host}: ${failure}`,
        fix: "check --model-base-url / OPENAI_BASE_URL and this host's network",
      };
}

function secretKeyCheck(config: Config): Check {
  if (config.secretKey) return { name: "secret key", status: "ok", detail: "AGENT_SECRET_KEY" };
  const path = config.secretKeyFile ?? join(config.dataDir, "secret.key");
  if (!existsSync(path)) {
    return config.secretKeyFile
      ? {
          name: "secret key",
          status: "error",
          detail: `${path} does not exist`,
          fix: "create it or drop --secret-key-file",
        }
      : {
          name: "secret key",
          status: config.databaseUrl ? "warning" : "ok",
          detail: `none yet: one is generated into ${path} when a secret is first stored`,
          ...(config.databaseUrl
            ? {
                fix: "instances sharing a database need the same key: set AGENT_SECRET_KEY or --secret-key-file",
              }
            : {}),
        };
  }
  const mode = statSync(path).mode & 0o777;
  const content = readFileSync(path, "utf8").trim();
  const size = /^[0-9a-f]{64}$/i.test(content) ? 32 : Buffer.from(content, "base64").length;
  if (size !== 32) {
    return { name: "secret key", status: "error", detail: `${path} does not hold a 32-byte key` };
  }
  return mode & 0o077
    ? {
        name: "secret key",
        status: "warning",
        detail: `${path} is readable by others (mode ${mode.toString(8)})`,
        fix: `chmod 600 ${path}`,
      }
    : { name: "secret key", status: "ok", detail: path };
}
