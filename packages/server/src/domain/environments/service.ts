/**
 * Environments this server prepares (`openai_hosted`): a directory of its own per environment (the session's
 * workspace), prepared once, before the agent's first command (see provision.ts), and its lifecycle on the
 * session's log (`environment.updated`: pending → ready → connected when the session's engine thread binds, or
 * failed; expired when its session is deleted). Also: environments made ahead of a session (environments.create,
 * attached by `environment_id`), their files, templates, and the directories `self_hosted` sessions may use.
 *
 * Write-only inputs — variable values, setup commands, inline file contents of templates — are sealed at rest with
 * the service's key ring; variable values are opened only to be given to the engine thread and to setup commands.
 *
 * Files API references (`{type: "file_id", file_id, path}`) are files of the caller's project (another project's,
 * or a deleted one, is 404): an environment's are looked up when it is planned and their contents copied into its
 * directory when it is prepared (a snapshot: deleting the file later changes nothing there); a template keeps the
 * reference, checked when it is saved and looked up again for each session made from it.
 *
 * The service is what the rest of the server calls; its separate jobs are modules of their own: the status and
 * waiting for it (status.ts), preparing in the background, the shutdown and start-up recovery (preparation.ts),
 * files (files.ts), templates (templates.ts), sealing (sealing.ts), `self_hosted` directories (self-hosted.ts).
 */
import { rmSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { ContainerSize } from "@codex-agent-api/sandbox";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import type { Clock } from "../../kernel/clock.js";
import { conflict, notFound } from "../../kernel/errors.js";
import type { Scope } from "../../model/scope.js";
import { isolated } from "../../platform/engine/codex-home.js";
import type { EventHub } from "../../platform/stream/hub.js";
import { isInside } from "../../platform/workspace/paths.js";
import type {
  EnvironmentRecord,
  EnvironmentTemplateRecord,
  ListOptions,
  SessionRecord,
  Store,
} from "../../store/types.js";
import type { FileService } from "../files/service.js";
import type { RepositoryService } from "../repositories/service.js";
import { SANDBOX_CWD } from "../sandboxes/paths.js";
import type { Workspaces } from "../sandboxes/workspaces.js";
import { sandboxIdOf } from "../sessions/workspace.js";
import type { EnvironmentThread } from "../turns/thread-options.js";
import { type Keyring, newObjectId, type VaultService } from "../vaults/service.js";
import { listEnvironmentFiles, resolveFiles, writeEnvironmentFile } from "./files.js";
import { Preparations } from "./preparation.js";
import { type Provisioner, packageLayout } from "./provision.js";
import { EnvironmentSealing } from "./sealing.js";
import { selfHostedDirectory } from "./self-hosted.js";
import {
  checkEnforceable,
  type EnvironmentSpec,
  type HostedEnvironmentInput,
  merge,
  parsePartial,
  publicConfig,
  templatePartial,
  unsupported,
} from "./spec.js";
import { EnvironmentStatuses, stateOf } from "./status.js";
import { EnvironmentTemplates } from "./templates.js";

export { stateOf } from "./status.js";

/** An environment decided (validated, template merged) but not made yet. */
export interface EnvironmentPlan {
  spec: EnvironmentSpec;
  vaultIds: string[];
  /** The official `container_size` (the container backend's limits; null: the operator's default size). */
  size: ContainerSize | null;
}

/** What a session made with an environment keeps about it (its `extra`). */
export interface SessionEnvironment {
  environment: "openai_hosted";
  environment_id: string;
  environment_view: EnvironmentRecord["config"];
  environment_thread: EnvironmentThread;
}

export interface EnvironmentDeps {
  store: Store;
  hub: EventHub;
  clock: Clock;
  logger: Logger;
  config: Config;
  keyring: Keyring;
  vaults: VaultService;
  provisioner: Provisioner;
  /** Repositories environments start from (checked, cloned, forgotten with the environment). */
  repositories: RepositoryService;
  /** Files API uploads (what `file_id` references name). */
  files: FileService;
  instanceId: string;
  /**
   * Where environments made ahead get their workspace (the container backend: a sandbox of their own, whose id is
   * the environment's; a session made with it works in that sandbox).
   */
  workspaces: Workspaces;
}

export class EnvironmentService {
  private readonly sealing: EnvironmentSealing;
  private readonly statuses: EnvironmentStatuses;
  private readonly preparations: Preparations;
  private readonly templates: EnvironmentTemplates;

  constructor(private readonly deps: EnvironmentDeps) {
    this.sealing = new EnvironmentSealing(deps.keyring);
    this.statuses = new EnvironmentStatuses(deps);
    this.preparations = new Preparations({ ...deps, statuses: this.statuses });
    this.templates = new EnvironmentTemplates({ ...deps, sealing: this.sealing });
  }

  private get parseOptions() {
    return { allowLocalRepositories: this.deps.config.repositories.allowLocal };
  }

  // planning (validation happens before anything is made) -------------------------------------------------------

  /**
   * An inline `openai_hosted` configuration, merged with its template (of the caller's project): what the
   * environment will get. 4xx for anything invalid, not enforceable or not supported here.
   */
  async plan(
    scope: Scope,
    raw: HostedEnvironmentInput,
    vaultIds: readonly string[],
    where: string,
  ): Promise<EnvironmentPlan> {
    const containers = this.containers;
    if (!containers && !isolated(this.deps.config)) {
      throw unsupported(
        `'${where}': this server runs agents without a sandbox (--sandbox danger-full-access), so it cannot ` +
          "prepare an environment with the isolation and network policy one promises",
        `${where}.type`,
        "environments_unavailable",
      );
    }
    const inline = parsePartial(raw, where, this.parseOptions);
    let template: EnvironmentTemplateRecord | null = null;
    if (raw.environment_template_id !== undefined) {
      template = await this.template(scope, raw.environment_template_id, `${where}.environment_template_id`);
    }
    const spec = merge(
      template ? templatePartial(template.config, this.sealing.openTemplate(template)) : null,
      inline,
      template?.id ?? null,
      where,
    );
    await resolveFiles(this.deps.files, scope, spec.files, where, template?.id ?? null);
    await this.deps.repositories.check(scope.projectId, spec.repositories, `${where}.repositories`);
    checkEnforceable(
      spec,
      { systemInstaller: this.deps.config.environments.systemInstaller !== null, containers },
      where,
    );
    return { spec, vaultIds: [...vaultIds], size: raw.container_size ?? null };
  }

  /** What a session keeps about the environment it is made with (public parts only). */
  sessionFields(id: string, plan: EnvironmentPlan, directory: string): SessionEnvironment {
    const layout = packageLayout(this.commandRoot(directory), plan.spec);
    return {
      environment: "openai_hosted",
      environment_id: id,
      environment_view: publicConfig(
        plan.spec,
        plan.spec.files.map(() => newObjectId("envfile_")),
      ),
      environment_thread: {
        network: plan.spec.network.access === "enabled",
        env: layout.env,
        path: layout.path,
      },
    };
  }

  /** The environment of a new session (its directory: the session's workspace), prepared in the background. */
  async createForSession(
    scope: Scope,
    session: SessionRecord,
    fields: SessionEnvironment,
    plan: EnvironmentPlan,
  ): Promise<EnvironmentRecord> {
    const now = this.deps.clock.now();
    const env: EnvironmentRecord = {
      id: fields.environment_id,
      project_id: scope.projectId,
      created_at: now,
      updated_at: now,
      type: "openai_hosted",
      status: "pending",
      session_id: session.id,
      directory: session.workspace,
      config: fields.environment_view,
      secrets: null,
      error: null,
      vault_ids: plan.vaultIds,
      owner_instance: this.deps.instanceId,
    };
    env.secrets = this.sealing.seal(env.id, plan.spec);
    await this.deps.hub.commit(session.id, async (tx, log) => {
      await tx.insertEnvironment(env);
      log({ type: "environment.updated", data: { environment: stateOf(env) } });
    });
    this.preparations.start(env, plan.spec, sessionVaults(session), sandboxIdOf(session));
    return env;
  }

  /** Environments are made in containers (the container backend). */
  private get containers(): boolean {
    return this.deps.workspaces.backend === "container";
  }

  /** The environment's directory as its commands see it (in a container: the workspace). */
  private commandRoot(directory: string): string {
    return this.containers ? SANDBOX_CWD : directory;
  }

  /**
   * environments.create: an environment made ahead of a session (its own directory under the workspace root; on
   * the container backend, a sandbox of its own).
   */
  async createAhead(scope: Scope, plan: EnvironmentPlan): Promise<EnvironmentRecord> {
    const id = newObjectId("env_");
    const { directory } = await this.deps.workspaces.provide({
      id,
      directory: join(this.deps.config.workspaceRoot, id),
      shared: false,
      size: plan.size,
    });
    const fields = this.sessionFields(id, plan, directory);
    const now = this.deps.clock.now();
    const env: EnvironmentRecord = {
      id,
      project_id: scope.projectId,
      created_at: now,
      updated_at: now,
      type: "openai_hosted",
      status: "pending",
      session_id: null,
      directory,
      config: fields.environment_view,
      secrets: this.sealing.seal(id, plan.spec),
      error: null,
      vault_ids: plan.vaultIds,
      owner_instance: this.deps.instanceId,
    };
    await this.deps.store.insertEnvironment(env);
    // On the container backend, the environment's own sandbox (its id is the environment's).
    this.preparations.start(env, plan.spec, [], this.containers ? id : null);
    return env;
  }

  /**
   * Reserves an environment made ahead for a session about to be made (of one session at most: of two sessions
   * asking for it at once, one gets it); `release` gives it back if the session is not made.
   */
  async reserve(scope: Scope, id: string, where: string): Promise<EnvironmentRecord> {
    const env = await this.get(scope, id, where);
    if (env.session_id !== null) {
      throw conflict(`Environment ${id} already belongs to a session`, "environment_in_use");
    }
    if (env.status === "failed" || env.status === "expired") {
      throw conflict(`Environment ${id} is ${env.status}: create another one`, `environment_${env.status}`);
    }
    const reserved = await this.deps.store.attachEnvironment(
      id,
      `reserved:${newObjectId("")}`,
      this.deps.clock.now(),
    );
    if (!reserved) throw conflict(`Environment ${id} already belongs to a session`, "environment_in_use");
    return reserved;
  }

  async release(id: string): Promise<void> {
    await this.deps.store.updateEnvironment(id, { session_id: null, updated_at: this.deps.clock.now() });
  }

  /** What a session made with an environment made ahead keeps about it. */
  attachedFields(env: EnvironmentRecord): SessionEnvironment {
    const layout = packageLayout(this.commandRoot(env.directory), env.config);
    return {
      environment: "openai_hosted",
      environment_id: env.id,
      environment_view: env.config,
      environment_thread: {
        network: env.config.network.access === "enabled",
        env: layout.env,
        path: layout.path,
      },
    };
  }

  /** The reserved environment now belongs to the session: its state starts the session's log of it. */
  async attach(env: EnvironmentRecord, session: SessionRecord): Promise<void> {
    await this.deps.hub.commit(session.id, async (tx, log) => {
      const now = await tx.updateEnvironment(env.id, {
        session_id: session.id,
        updated_at: this.deps.clock.now(),
      });
      if (now) log({ type: "environment.updated", data: { environment: stateOf(now) } });
    });
  }

  // reading ------------------------------------------------------------------------------------------------------

  /** The environment, if it belongs to the caller's project. */
  async get(scope: Scope, id: string, param = "environment_id"): Promise<EnvironmentRecord> {
    const e = await this.deps.store.getEnvironment(id);
    if (!e || e.project_id !== scope.projectId) throw notFound(`Environment ${id} not found`, param);
    return e;
  }

  list(scope: Scope, opts: ListOptions) {
    return this.deps.store.listEnvironments({ ...opts, project_id: scope.projectId });
  }

  /** The variables a session's environment gives its agent (opened), and the values to keep out of its log. */
  async threadVariables(env: EnvironmentRecord): Promise<Record<string, string>> {
    return this.sealing.open(env).env;
  }

  // the lifecycle ------------------------------------------------------------------------------------------------

  /**
   * Waits until the environment is prepared (at most `timeoutMs`); returns it as it is then. Follows the session's
   * log, so it works wherever the environment is being prepared.
   */
  settled(
    sessionId: string,
    id: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<EnvironmentRecord | undefined> {
    return this.statuses.settled(sessionId, id, timeoutMs, signal);
  }

  /** The session's engine thread is bound: a ready environment is now connected. */
  async connected(sessionId: string, env: EnvironmentRecord, turnId: string | null): Promise<void> {
    if (env.status !== "ready") return;
    await this.statuses.set(env, sessionId, "connected", null, turnId);
  }

  /** The session is gone: its environment's preparation stops, the environment expires, its own directory goes. */
  async sessionDeleted(session: SessionRecord): Promise<void> {
    const id = session.extra.environment_id;
    if (typeof id !== "string") return;
    this.deps.provisioner.cancel(id);
    const env = await this.deps.store.getEnvironment(id);
    if (!env) return;
    await this.deps.store.updateEnvironment(id, {
      status: "expired",
      updated_at: this.deps.clock.now(),
      secrets: null,
    });
    await this.deps.repositories
      .forget(env.id, env.config.repositories?.length ?? 0)
      .catch((err: unknown) =>
        this.deps.logger.warn({ environment: env.id, err: String(err) }, "repository records not removed"),
      );
    // A directory made for an environment ahead of its session (the session's own is removed with it).
    if (
      basename(env.directory) === env.id &&
      isInside(resolve(this.deps.config.workspaceRoot), env.directory)
    ) {
      rmSync(env.directory, { recursive: true, force: true });
    }
  }

  /** Start-up: environments whose preparation was cut short by the last shutdown have failed. */
  recover(): Promise<number> {
    return this.preparations.recover();
  }

  /**
   * Server shutdown: the preparations running here are stopped (their environments fail, as they would at the
   * next start) and waited for: nothing writes to their directories or logs afterwards.
   */
  close(): Promise<void> {
    return this.preparations.close();
  }

  // files --------------------------------------------------------------------------------------------------------

  /** Writes a file into a prepared environment (between turns), replacing a regular file at the same path. */
  async writeFile(
    scope: Scope,
    id: string,
    body: { type: string; path: string; data?: string; file_id?: string },
  ): Promise<{ path: string; size_bytes: number }> {
    const env = await this.get(scope, id);
    return writeEnvironmentFile({ ...this.deps, containers: this.containers }, scope, env, body);
  }

  /** Files of the environment (regular files, by path), optionally under a directory; `after` is a path. */
  listFiles(
    env: EnvironmentRecord,
    opts: { limit: number; order: "asc" | "desc"; after: string | null; path: string | null },
  ): { data: Array<{ path: string; size_bytes: number }>; next: string | null } {
    return listEnvironmentFiles(env, opts);
  }

  // templates ----------------------------------------------------------------------------------------------------

  template(scope: Scope, id: string, param = "environment_template_id"): Promise<EnvironmentTemplateRecord> {
    return this.templates.get(scope, id, param);
  }

  createTemplate(scope: Scope, raw: unknown): Promise<EnvironmentTemplateRecord> {
    return this.templates.create(scope, raw);
  }

  /** Given fields replace the template's (null: back to the default); omitted ones stay. */
  updateTemplate(scope: Scope, id: string, raw: unknown): Promise<EnvironmentTemplateRecord> {
    return this.templates.update(scope, id, raw);
  }

  listTemplates(scope: Scope, opts: ListOptions) {
    return this.templates.list(scope, opts);
  }

  deleteTemplate(scope: Scope, id: string): Promise<void> {
    return this.templates.delete(scope, id);
  }

  // self-hosted --------------------------------------------------------------------------------------------------

  /** The directory of a `self_hosted` session (self-hosted.ts): null for its own directory. */
  selfHostedDirectory(raw: unknown, where: string): string | null {
    return selfHostedDirectory(this.deps.config, raw, where);
  }
}

/** The vaults a session was given (`vault_ids`, kept in its `extra`). */
export function sessionVaults(s: SessionRecord): string[] {
  const v = s.extra.vault_ids;
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}
