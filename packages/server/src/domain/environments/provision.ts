/**
 * Preparing an environment's directory, in order: its files (written by the server, confined to the directory),
 * its npm packages (into `.environment/npm`), its Python packages (a virtualenv, `.venv`), its system packages (only
 * through the operator's installer), then its setup commands. Every command runs in the engine's sandbox
 * (`command/exec` under the permission profile `agent_setup`: the system directories readable, the environment's
 * directory the only writable place, nothing of the server's — its data, the engine's state, other workspaces — in
 * sight; the network as the operator allows setup to have it), with a timeout each, a minimal environment (the
 * client's variables, never the server's) and its output in a per-environment log under the data directory (secret
 * values replaced). A failure stops there: its code and the tail of its output are what the client sees.
 *
 * On the container backend an environment's directory is its sandbox's workspace: the server writes the files on
 * this host, every command runs in the container (through its executor, `/workspace` as its commands see it), with
 * the network the operator allows setup (the environment's own policy otherwise, and always after setup).
 */
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, realpathSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Logger } from "pino";
import type { EnvironmentSettings } from "../../config/load.js";
import { endEverythingIn } from "../../kernel/process-tree.js";
import { SETUP_PERMISSION_PROFILE } from "../../platform/engine/codex-home.js";
import type { Engines, SecretSubstitution } from "../../platform/engine/types.js";
import type { Sandboxes } from "../../platform/sandbox/sandboxes.js";
import { writeUpload } from "../../platform/workspace/upload.js";
import type { EnvironmentError } from "../../store/types.js";
import { ContentMissingError, copyContents } from "../files/storage.js";
import { CONTAINER_PATH, SANDBOX_CWD } from "../sandboxes/paths.js";
import { networkOf } from "../sandboxes/policy.js";
import type { EnvironmentSpec, FileSpec } from "./spec.js";

/** Where an environment's packages go, inside its directory. */
export const NPM_PREFIX = ".environment/npm";
export const VENV = ".venv";

/** What an environment adds to its agent's commands (and setup commands): package directories and variables. */
export function packageLayout(
  directory: string,
  spec: Pick<EnvironmentSpec, "packages">,
): { env: Record<string, string>; path: string[] } {
  const env: Record<string, string> = {};
  const path: string[] = [];
  if (spec.packages.npm.length > 0) {
    path.push(join(directory, NPM_PREFIX, "bin"));
    env.NODE_PATH = join(directory, NPM_PREFIX, "lib", "node_modules");
  }
  if (spec.packages.python.length > 0) {
    path.push(join(directory, VENV, "bin"));
    env.VIRTUAL_ENV = join(directory, VENV);
  }
  return { env, path };
}

/** Writes one of the environment's files: inline bytes, or a copy of an uploaded file's contents. */
async function placeFile(directory: string, f: FileSpec): Promise<void> {
  if (f.source.type === "inline") {
    writeUpload(directory, { path: f.rel, content_base64: f.source.data.toString("base64") });
    return;
  }
  if (!f.source.resolved) throw new Error(`the uploaded file ${f.source.file_id} was not looked up`);
  await copyContents(f.source.resolved.content, directory, f.rel);
}

export interface ProvisionJob {
  id: string;
  directory: string;
  spec: EnvironmentSpec;
  /** More variables for setup (environment-variable credentials). */
  extraEnv: Record<string, string>;
  /** Replaces secret values in text that leaves the server's hands (the log, the error message). */
  redact: (text: string) => string;
  logFile: string;
  /** The sandbox whose workspace `directory` is (the container backend): setup runs there. */
  sandboxId?: string | null;
  /**
   * Clones the environment's repositories into its directory (first, before its files), outside every sandbox:
   * the service's git with the repositories' credentials (domain/repositories). null: none.
   */
  checkout?: (() => Promise<EnvironmentError | null>) | null;
  /** What the sandbox's egress endpoint puts in place of `extraEnv`'s placeholders. */
  substitutions?: SecretSubstitution[];
}

export type ProvisionResult = { ok: true } | { ok: false; error: EnvironmentError };

interface StepResult {
  exitCode: number;
  output: string;
  timedOut: boolean;
}

const TAIL_LINES = 20;
const TAIL_CHARS = 2000;
const OUTPUT_CAP = 4 * 1024 * 1024;

/** The last lines of some output (what a failure message carries). */
export function tail(output: string): string {
  const lines = output.replace(/\s+$/, "").split("\n").slice(-TAIL_LINES).join("\n");
  return lines.length > TAIL_CHARS ? `…${lines.slice(-TAIL_CHARS)}` : lines;
}

const failure = (code: string, message: string): ProvisionResult => ({
  ok: false,
  error: { code, message, type: "environment_error" },
});

export class Provisioner {
  /** Running command ids per environment (to stop them). */
  private readonly running = new Map<string, Set<string>>();
  /** Setup commands running in sandboxes, per environment (to stop them). */
  private readonly aborts = new Map<string, AbortController>();
  private readonly cancelled = new Set<string>();

  constructor(
    private readonly deps: {
      engines: Engines;
      settings: EnvironmentSettings;
      logger: Logger;
      /** The PATH setup commands start from (the engine's: platform/engine/codex-home.ts `engineSearchPath`). */
      searchPath: string;
      /** The container backend's sandboxes (null: the local backend). */
      sandboxes?: Sandboxes | null;
    },
  ) {}

  /** Prepares the environment's directory; never throws (a failure is the result). */
  async run(job: ProvisionJob): Promise<ProvisionResult> {
    const sandboxes = this.deps.sandboxes;
    try {
      if (!job.sandboxId) return await this.steps(job);
      if (!sandboxes) throw new Error("this server has no container sandboxes");
      this.aborts.set(job.id, new AbortController());
      const own = networkOf(job.spec.network);
      const secrets = { headers: [], substitutions: job.substitutions ?? [] };
      await sandboxes.updateNetwork(
        job.sandboxId,
        this.deps.settings.setupNetwork ? { access: "enabled" } : own,
        secrets,
      );
      try {
        return await this.steps(job);
      } finally {
        await sandboxes.updateNetwork(job.sandboxId, own, secrets).catch(() => undefined);
      }
    } catch (err) {
      this.deps.logger.error({ environment: job.id, err: String(err) }, "environment preparation failed");
      return failure("internal_error", job.redact(`The environment could not be prepared: ${String(err)}`));
    } finally {
      this.running.delete(job.id);
      this.aborts.delete(job.id);
      this.cancelled.delete(job.id);
    }
  }

  /**
   * Stops an environment's preparation (its session is gone): the running command is terminated — again each second
   * until it has ended (a terminate that reaches the engine before the command has started finds nothing to end).
   */
  cancel(id: string): void {
    this.cancelled.add(id);
    this.aborts.get(id)?.abort();
    const terminate = () => {
      const ids = [...(this.running.get(id) ?? [])];
      for (const processId of ids) {
        this.deps.engines.call("command/exec/terminate", { processId }).catch(() => undefined);
      }
      return ids.length > 0;
    };
    if (!terminate()) return;
    const again = setInterval(() => {
      if (!terminate()) clearInterval(again);
    }, 1000);
    again.unref();
  }

  private async steps(job: ProvisionJob): Promise<ProvisionResult> {
    const { spec, directory } = job;
    mkdirSync(dirname(job.logFile), { recursive: true, mode: 0o700 });
    mkdirSync(directory, { recursive: true, mode: 0o700 });
    const log = (text: string) => appendFileSync(job.logFile, job.redact(text), { mode: 0o600 });
    if (job.checkout) {
      log("== repositories\n");
      const error = await job.checkout();
      if (error) {
        log(`== repositories: ${error.message}\n`);
        return { ok: false, error: { ...error, message: job.redact(error.message) } };
      }
      log("== repositories checked out\n");
    }
    for (const [i, f] of spec.files.entries()) {
      try {
        await placeFile(directory, f);
      } catch (err) {
        log(`== file ${i + 1}/${spec.files.length}: ${f.path}: ${String(err)}\n`);
        if (err instanceof ContentMissingError && f.source.type === "file_id") {
          return failure(
            "file_not_found",
            `file ${f.path}: the uploaded file ${f.source.file_id} was deleted before the environment was prepared`,
          );
        }
        return failure("file_write_failed", `file ${f.path} could not be written: ${(err as Error).message}`);
      }
    }
    if (spec.files.length > 0) log(`== ${spec.files.length} file(s) written\n`);
    // The directory as the commands see it (in a container: its workspace), and where they start from.
    const boxed = Boolean(job.sandboxId);
    // In a container, what the server wrote becomes the agent's (its commands run as a user of their own).
    if (boxed && (spec.files.length > 0 || job.checkout))
      await this.deps.sandboxes?.handToAgent(job.sandboxId!);
    const root = boxed ? SANDBOX_CWD : directory;
    const layout = packageLayout(root, spec);
    const baseEnv: Record<string, string> = {
      ...(boxed ? {} : { HOME: directory }),
      SHLVL: "1",
      PATH: [...layout.path, boxed ? CONTAINER_PATH : this.deps.searchPath].join(":"),
      ...layout.env,
      ...job.extraEnv,
      ...spec.env,
    };
    const steps: Array<{ what: string; code: string; run: () => Promise<StepResult> }> = [];
    const { settings } = this.deps;
    if (spec.packages.npm.length > 0) {
      steps.push({
        what: "npm install",
        code: "package_install_failed",
        run: () =>
          this.exec(
            job,
            "npm",
            [
              "npm",
              "install",
              "--global",
              "--prefix",
              join(root, NPM_PREFIX),
              "--no-audit",
              "--no-fund",
              "--loglevel=warn",
              ...spec.packages.npm,
            ],
            root,
            {
              ...baseEnv,
              npm_config_cache: "/tmp/.npm-cache",
              npm_config_update_notifier: "false",
              ...(settings.npmRegistry ? { npm_config_registry: settings.npmRegistry } : {}),
            },
          ),
      });
    }
    if (spec.packages.python.length > 0) {
      const pipEnv = {
        ...baseEnv,
        PIP_CACHE_DIR: "/tmp/.pip-cache",
        PIP_DISABLE_PIP_VERSION_CHECK: "1",
        ...(settings.pipIndexUrl ? { PIP_INDEX_URL: settings.pipIndexUrl } : {}),
      };
      steps.push({
        what: "python virtualenv",
        code: "package_install_failed",
        run: () =>
          this.exec(
            job,
            "venv",
            [boxed ? "python3" : settings.python, "-m", "venv", join(root, VENV)],
            root,
            pipEnv,
          ),
      });
      steps.push({
        what: "pip install",
        code: "package_install_failed",
        run: () =>
          this.exec(
            job,
            "pip",
            [
              join(root, VENV, "bin", "python"),
              "-m",
              "pip",
              "install",
              "--no-input",
              ...spec.packages.python,
            ],
            root,
            pipEnv,
          ),
      });
    }
    if (spec.packages.system.length > 0 && settings.systemInstaller) {
      const installer = settings.systemInstaller;
      steps.push({
        what: "system packages",
        code: "package_install_failed",
        run: () => this.operatorInstall(installer, spec.packages.system, directory),
      });
    }
    for (const [i, c] of spec.setup_commands.entries()) {
      steps.push({
        what: `setup command ${i + 1}/${spec.setup_commands.length}`,
        code: "setup_command_failed",
        run: () => {
          const cwd = join(directory, c.cwd);
          if (!existsSync(cwd) || !statSync(cwd).isDirectory()) {
            return Promise.resolve({
              exitCode: 1,
              output: `the working directory /workspace/${c.cwd} does not exist\n`,
              timedOut: false,
            });
          }
          return this.exec(
            job,
            `setup${i + 1}`,
            ["bash", "-c", `exec 2>&1\n${c.command}`],
            join(root, c.cwd),
            baseEnv,
          );
        },
      });
    }
    for (const step of steps) {
      if (this.cancelled.has(job.id))
        return failure("cancelled", "the environment's preparation was stopped");
      log(`== ${step.what}\n`);
      const r = await step.run();
      log(r.output.endsWith("\n") || r.output === "" ? r.output : `${r.output}\n`);
      log(`== ${step.what}: exit ${r.exitCode}${r.timedOut ? " (timed out)" : ""}\n`);
      if (r.exitCode !== 0) {
        const why = r.timedOut ? `timed out after ${settings.setupTimeoutSeconds} s` : `exited ${r.exitCode}`;
        const out = tail(job.redact(r.output));
        return failure(step.code, `${step.what} ${why}${out ? `:\n${out}` : ""}`);
      }
    }
    return { ok: true };
  }

  /** One command in the job's container, through its executor (cwd and env as the container sees them). */
  private async execInSandbox(
    job: ProvisionJob,
    sandboxId: string,
    command: string[],
    cwd: string,
    env: Record<string, string>,
  ): Promise<StepResult> {
    const sandboxes = this.deps.sandboxes;
    if (!sandboxes) throw new Error("this server has no container sandboxes");
    const signal = this.aborts.get(job.id)?.signal;
    const r = await sandboxes.run(sandboxId, command.map(shellQuote).join(" "), {
      cwd,
      env,
      timeoutMs: this.deps.settings.setupTimeoutSeconds * 1000,
      ...(signal ? { signal } : {}),
    });
    return {
      exitCode: r.exitCode ?? (r.timedOut ? 124 : -1),
      output: mergedOutput(r.stdout, r.stderr),
      timedOut: r.timedOut,
    };
  }

  /** One command in the engine's sandbox (`command/exec`), output merged, under the setup profile. */
  private async exec(
    job: ProvisionJob,
    name: string,
    command: string[],
    cwd: string,
    env: Record<string, string>,
  ): Promise<StepResult> {
    if (job.sandboxId) {
      return this.execInSandbox(job, job.sandboxId, command, cwd, env).catch((err) => ({
        exitCode: -1,
        output: `the sandbox could not run the command: ${(err as Error).message}\n`,
        timedOut: false,
      }));
    }
    const processId = `env-${job.id}-${name}`;
    const ids = this.running.get(job.id) ?? new Set<string>();
    ids.add(processId);
    this.running.set(job.id, ids);
    const timeoutMs = this.deps.settings.setupTimeoutSeconds * 1000;
    const started = Date.now();
    // As /proc shows working directories, read while the directory exists (a deleted session's goes meanwhile).
    const directory = realDirectory(job.directory);
    let timedOut = false;
    try {
      const r = await this.deps.engines.call<{ exitCode: number; stdout: string; stderr: string }>(
        "command/exec",
        {
          command,
          processId,
          cwd,
          env,
          timeoutMs,
          outputBytesCap: OUTPUT_CAP,
          // An experimental field of 0.169.0 (not in the generated types): the command's permission profile.
          permissionProfile: SETUP_PERMISSION_PROFILE,
        },
      );
      const output = mergedOutput(r.stdout, r.stderr);
      // The engine ends a command that runs out of time with exit code 124.
      timedOut = r.exitCode === 124 && Date.now() - started >= timeoutMs * 0.95;
      return { exitCode: r.exitCode, output, timedOut };
    } catch (err) {
      return {
        exitCode: -1,
        output: `the engine could not run the command: ${(err as Error).message}\n`,
        timedOut: false,
      };
    } finally {
      ids.delete(processId);
      // A terminate can make the call fail as well as return: either way nothing of the command may live on.
      if (directory && (timedOut || this.cancelled.has(job.id))) await this.endLeftovers(job, directory);
    }
  }

  /**
   * A stopped command (cancelled, timed out) must leave nothing running: the engine ends its sandbox wrapper, and the
   * sandbox's inner process dies with it by a parent-death signal, which a race can lose (seen under load: the inner
   * process and its `sleep` lived on, reparented, out of reach of the engine's own clean-up). Whatever still works in
   * the environment's directory is ended here.
   */
  private async endLeftovers(job: ProvisionJob, directory: string): Promise<void> {
    const left = await endEverythingIn(directory);
    if (left > 0) {
      this.deps.logger.warn(
        { environment: job.id, processes: left },
        "ending what a stopped setup command left",
      );
    }
  }

  /**
   * The operator's installer for system packages: outside the agent's sandbox, with the server's rights (the
   * operator's choice, documented), the validated package names as arguments, the environment's directory as cwd.
   */
  private operatorInstall(installer: string, packages: string[], directory: string): Promise<StepResult> {
    const timeoutMs = this.deps.settings.setupTimeoutSeconds * 1000;
    return new Promise((resolve) => {
      let output = "";
      let timedOut = false;
      const child = spawn(installer, packages, {
        cwd: directory,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: directory, LANG: "C.UTF-8" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill("SIGKILL");
      }, timeoutMs);
      const add = (d: Buffer) => {
        if (output.length < OUTPUT_CAP) output += d.toString("utf8");
      };
      child.stdout.on("data", add);
      child.stderr.on("data", add);
      child.on("error", (err) => {
        output += `${err.message}\n`;
      });
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ exitCode: timedOut ? 124 : (code ?? -1), output, timedOut });
      });
    });
  }
}

/** A directory's real path, or null if it is not there. */
function realDirectory(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/** A command's stdout, then its stderr on a line of its own. */
function mergedOutput(stdout: string, stderr: string): string {
  if (!stderr) return stdout;
  return `${stdout}${stdout.endsWith("\n") || !stdout ? "" : "\n"}${stderr}`;
}

/** One argument as the shell reads it back. */
function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
