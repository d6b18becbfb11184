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
 */
import { rmSync, statSync } from "node:fs";
import { basename, join, relative, resolve, sep } from "node:path";
import type { ContainerSize } from "@codex-agent-api/sandbox";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import type { Clock } from "../../kernel/clock.js";
import { ApiError, badRequest, conflict, notFound } from "../../kernel/errors.js";
import { InFlight } from "../../kernel/in-flight.js";
import type { Scope } from "../../model/scope.js";
import { isolated } from "../../platform/engine/codex-home.js";
import type { EventHub } from "../../platform/stream/hub.js";
import { type ArtifactInfo, listArtifacts } from "../../platform/workspace/artifacts.js";
import { environmentPath } from "../../platform/workspace/environment-paths.js";
import {
  encodeArtifactId,
  isInside,
  realpathLoose,
  resolveDetailed,
} from "../../platform/workspace/paths.js";
import { writeUpload } from "../../platform/workspace/upload.js";
import type {
  EnvironmentError,
  EnvironmentRecord,
  EnvironmentState,
  EnvironmentStatus,
  EnvironmentTemplateRecord,
  ListOptions,
  SessionRecord,
  Store,
} from "../../store/types.js";
import type { FileService } from "../files/service.js";
import { ContentMissingError, copyContents } from "../files/storage.js";
import type { RepositoryService } from "../repositories/service.js";
import { SANDBOX_CWD } from "../sandboxes/paths.js";
import { placeheld } from "../sandboxes/secrets.js";
import type { Workspaces } from "../sandboxes/workspaces.js";
import { sandboxIdOf } from "../sessions/workspace.js";
import type { EnvironmentThread } from "../turns/thread-options.js";
import { type Keyring, newObjectId, sealedContext, type VaultService } from "../vaults/service.js";
import { type Provisioner, type ProvisionResult, packageLayout } from "./provision.js";
import { redactValues } from "./redaction.js";
import {
  checkEnforceable,
  type EnvironmentSpec,
  type FileSpec,
  type HostedEnvironmentInput,
  merge,
  parsePartial,
  parseWith,
  publicConfig,
  type SetupCommand,
  type TemplateInput,
  TemplateParam,
  type TemplateSecrets,
  templatePartial,
  templateParts,
  unsupported,
  WORKSPACE_ROOT,
  workspaceDirectory,
  workspaceFilePath,
} from "./spec.js";

/** The sealed write-only parts of an environment. */
interface EnvironmentSecrets {
  env: Record<string, string>;
  setup_commands: SetupCommand[];
}

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

/** Why an environment whose preparation a shutdown cut short has failed. */
const STOPPED_WHILE_PREPARING: EnvironmentError = {
  code: "server_restart",
  message: "The server stopped while this environment was being prepared: create a new one.",
  type: "environment_error",
};

const TERMINAL: ReadonlySet<EnvironmentStatus> = new Set(["ready", "connected", "failed", "expired"]);

export const stateOf = (e: EnvironmentRecord): EnvironmentState => ({
  id: e.id,
  type: e.type,
  status: e.status,
  error: e.error,
});

export class EnvironmentService {
  constructor(private readonly deps: EnvironmentDeps) {}

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
      template ? templatePartial(template.config, this.openTemplateSecrets(template)) : null,
      inline,
      template?.id ?? null,
      where,
    );
    await this.resolveFiles(scope, spec.files, where, template?.id ?? null);
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
    env.secrets = this.sealSecrets(env.id, plan.spec);
    await this.deps.hub.commit(session.id, async (tx, log) => {
      await tx.insertEnvironment(env);
      log({ type: "environment.updated", data: { environment: stateOf(env) } });
    });
    this.startProvisioning(env, plan.spec, sessionVaults(session), sandboxIdOf(session));
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
      secrets: this.sealSecrets(id, plan.spec),
      error: null,
      vault_ids: plan.vaultIds,
      owner_instance: this.deps.instanceId,
    };
    await this.deps.store.insertEnvironment(env);
    // On the container backend, the environment's own sandbox (its id is the environment's).
    this.startProvisioning(env, plan.spec, [], this.containers ? id : null);
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
    return this.openSecrets(env).env;
  }

  // the lifecycle ------------------------------------------------------------------------------------------------

  /**
   * Waits until the environment is prepared (at most `timeoutMs`); returns it as it is then. Follows the session's
   * log, so it works wherever the environment is being prepared.
   */
  async settled(
    sessionId: string,
    id: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<EnvironmentRecord | undefined> {
    const { store, hub } = this.deps;
    const from = await store.lastEventSeq(sessionId);
    const env = await store.getEnvironment(id);
    if (!env || TERMINAL.has(env.status)) return env;
    const sub = hub.subscribe(sessionId, {
      afterSeq: from,
      until: (e) =>
        e.type === "environment.updated" &&
        e.data.environment.id === id &&
        TERMINAL.has(e.data.environment.status),
    });
    const timer = setTimeout(() => sub.close(), timeoutMs);
    const stop = () => sub.close();
    signal?.addEventListener("abort", stop);
    try {
      for await (const e of sub) {
        if (
          e.type === "environment.updated" &&
          e.data.environment.id === id &&
          TERMINAL.has(e.data.environment.status)
        )
          break;
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", stop);
      sub.close();
    }
    return store.getEnvironment(id);
  }

  /** The session's engine thread is bound: a ready environment is now connected. */
  async connected(sessionId: string, env: EnvironmentRecord, turnId: string | null): Promise<void> {
    if (env.status !== "ready") return;
    await this.setStatus(env, sessionId, "connected", null, turnId);
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
  async recover(): Promise<number> {
    // With several instances, another may be preparing them (an environment of a dead instance stays pending:
    // turns waiting for it fail when their wait ends).
    if (!this.single()) return 0;
    const pending = await this.deps.store.listPendingEnvironments(10_000);
    let n = 0;
    for (const env of pending) {
      await this.setStatus(
        env,
        env.session_id && !env.session_id.startsWith("reserved:") ? env.session_id : null,
        "failed",
        STOPPED_WHILE_PREPARING,
        null,
      );
      n++;
    }
    return n;
  }

  private single(): boolean {
    return this.deps.config.databaseUrl === null;
  }

  /**
   * Server shutdown: the preparations running here are stopped (their environments fail, as they would at the
   * next start) and waited for: nothing writes to their directories or logs afterwards.
   */
  async close(): Promise<void> {
    this.closing = true;
    for (const id of this.preparingIds) this.deps.provisioner.cancel(id);
    await this.preparing.idle();
  }

  private closing = false;
  /** Preparations running in the background, and their environments' ids. */
  private readonly preparing = new InFlight();
  private readonly preparingIds = new Set<string>();

  private startProvisioning(
    env: EnvironmentRecord,
    spec: EnvironmentSpec,
    sessionVaultIds: string[],
    sandboxId: string | null,
  ): void {
    if (this.closing) return; // stays pending: the next start fails it (recover)
    this.preparingIds.add(env.id);
    const work = (async () => {
      let result: ProvisionResult;
      let secretValues: string[] = Object.values(spec.env);
      try {
        const creds = await this.deps.vaults.forSession(env.project_id, [
          ...new Set([...env.vault_ids, ...sessionVaultIds]),
        ]);
        secretValues = [...secretValues, ...creds.values];
        // In a sandbox, credentials are placeholders (domain/sandboxes/secrets.ts).
        const held = sandboxId ? placeheld(creds.envCredentials) : null;
        result = await this.deps.provisioner.run({
          id: env.id,
          directory: env.directory,
          spec,
          extraEnv: held ? held.env : creds.env,
          substitutions: held?.substitutions ?? [],
          redact: (text) => redactValues(text, secretValues),
          checkout:
            spec.repositories.length > 0
              ? () => this.deps.repositories.checkout(env, spec.repositories)
              : null,
          logFile: join(this.deps.config.dataDir, "environments", env.id, "setup.log"),
          sandboxId,
        });
      } catch (err) {
        result = {
          ok: false,
          error: {
            code: "internal_error",
            message: redactValues(String(err), secretValues),
            type: "environment_error",
          },
        };
      }
      const current = await this.deps.store.getEnvironment(env.id);
      if (!current || current.status !== "pending") return;
      const sessionId =
        current.session_id && !current.session_id.startsWith("reserved:") ? current.session_id : null;
      // Cut short by the shutdown: what a restart would say (not the cancellation's own message).
      const error = result.ok ? null : this.closing ? STOPPED_WHILE_PREPARING : result.error;
      await this.setStatus(current, sessionId, error ? "failed" : "ready", error, null);
    })()
      .catch((err: unknown) =>
        this.deps.logger.error(
          { environment: env.id, err: String(err) },
          "environment status could not be stored",
        ),
      )
      .finally(() => this.preparingIds.delete(env.id));
    void this.preparing.track(work);
  }

  /** A status change: stored, and on the session's log when it has one (in the same transaction). */
  private async setStatus(
    env: EnvironmentRecord,
    sessionId: string | null,
    status: EnvironmentStatus,
    error: EnvironmentError | null,
    turnId: string | null,
  ): Promise<void> {
    const patch = { status, error, updated_at: this.deps.clock.now(), owner_instance: null };
    if (!sessionId) {
      await this.deps.store.updateEnvironment(env.id, patch);
      return;
    }
    await this.deps.hub.commit(sessionId, async (tx, log) => {
      const next = await tx.updateEnvironment(env.id, patch);
      if (next)
        log({ type: "environment.updated", data: { environment: stateOf(next) } }, { turn_id: turnId });
    });
  }

  // files --------------------------------------------------------------------------------------------------------

  /** Writes a file into a prepared environment (between turns), replacing a regular file at the same path. */
  async writeFile(
    scope: Scope,
    id: string,
    body: { type: string; path: string; data?: string; file_id?: string },
  ): Promise<{ path: string; size_bytes: number }> {
    const env = await this.get(scope, id);
    const file = body.type === "file_id" ? await this.deps.files.get(scope, body.file_id ?? "") : null;
    if (env.status !== "ready" && env.status !== "connected") {
      throw conflict(
        `Environment ${id} is ${env.status}: files can be added once it is ready`,
        "environment_not_ready",
      );
    }
    const session = env.session_id ? await this.deps.store.getSession(env.session_id) : undefined;
    if (session?.active_turn_id) {
      throw conflict("The environment's session has a running turn: add files between turns", "session_busy");
    }
    const rel = workspaceFilePath(body.path, "path");
    let size: number;
    if (!file) {
      size = writeUpload(env.directory, { path: rel, content_base64: body.data ?? "" }).bytes;
    } else {
      try {
        size = await copyContents(this.deps.files.contentPath(file), env.directory, rel);
      } catch (err) {
        if (err instanceof ContentMissingError) throw notFound(`No such File object: ${file.id}`, "file_id");
        throw err;
      }
    }
    // The file (and the directories made for it) become the agent's: the sandbox that holds the directory is its
    // session's, or (made ahead, not yet attached) the environment's own.
    const sandboxId = session ? sandboxIdOf(session) : this.containers ? env.id : null;
    await this.deps.workspaces.handOver({ sandboxId }, [rel.split("/")[0]!]);
    return { path: body.path, size_bytes: size };
  }

  /**
   * Looks up the Files API files among `files` (of the caller's project): their size, and where their contents
   * are. A file that is not there is 404, named by the client's parameter (or by the template it came from).
   */
  private async resolveFiles(
    scope: Scope,
    files: FileSpec[] | null,
    where: string,
    templateId: string | null,
  ): Promise<void> {
    for (const f of files ?? []) {
      const source = f.source;
      if (source.type !== "file_id") continue;
      let found: Awaited<ReturnType<FileService["get"]>>;
      try {
        found = await this.deps.files.get(
          scope,
          source.file_id,
          source.param ?? `${where}.environment_template_id`,
        );
      } catch (err) {
        if (source.param !== null || !(err instanceof ApiError) || err.kind !== "not_found") throw err;
        throw notFound(
          `No such File object: ${source.file_id} (the file ${f.path} of the environment template ${templateId})`,
          `${where}.environment_template_id`,
        );
      }
      source.resolved = { bytes: found.bytes, content: this.deps.files.contentPath(found) };
    }
  }

  /** Files of the environment (regular files, by path), optionally under a directory; `after` is a path. */
  listFiles(
    env: EnvironmentRecord,
    opts: { limit: number; order: "asc" | "desc"; after: string | null; path: string | null },
  ): { data: Array<{ path: string; size_bytes: number }>; next: string | null } {
    const dirRel = opts.path === null ? "" : workspaceDirectory(opts.path, "path");
    const root = dirRel === "" ? env.directory : resolveDetailed(env.directory, dirRel).abs;
    let st: ReturnType<typeof statSync> | null = null;
    try {
      st = statSync(root);
    } catch {
      st = null;
    }
    if (!st?.isDirectory()) return { data: [], next: null };
    const prefix = dirRel === "" ? "" : `${dirRel}/`;
    // The same paths as the session's artifacts (environment-paths.ts).
    const show = (a: ArtifactInfo) => ({
      path: environmentPath(WORKSPACE_ROOT, `${prefix}${a.path}`),
      size_bytes: a.size,
    });
    const afterRel =
      opts.after === null
        ? null
        : opts.after.startsWith(`${WORKSPACE_ROOT}/${prefix}`)
          ? opts.after.slice(`${WORKSPACE_ROOT}/${prefix}`.length)
          : null;
    if (opts.order === "asc") {
      const page = listArtifacts(root, {
        limit: opts.limit,
        ...(afterRel !== null ? { after: encodeArtifactId(afterRel) } : {}),
      });
      const data = page.data.map(show);
      return { data, next: page.has_more ? (data.at(-1)?.path ?? null) : null };
    }
    const all = listArtifacts(root).data.reverse();
    const rest = afterRel === null ? all : all.filter((a) => a.path < afterRel);
    const data = rest.slice(0, opts.limit).map(show);
    return { data, next: rest.length > opts.limit ? (data.at(-1)?.path ?? null) : null };
  }

  // templates ----------------------------------------------------------------------------------------------------

  async template(
    scope: Scope,
    id: string,
    param = "environment_template_id",
  ): Promise<EnvironmentTemplateRecord> {
    const t = await this.deps.store.getEnvironmentTemplate(id);
    if (!t || t.project_id !== scope.projectId) throw notFound(`Environment template ${id} not found`, param);
    return t;
  }

  async createTemplate(scope: Scope, raw: unknown): Promise<EnvironmentTemplateRecord> {
    const input = parseWith(TemplateParam, raw, "");
    const partial = parsePartial(input, "body", this.parseOptions);
    await this.resolveFiles(scope, partial.files, "body", null);
    await this.deps.repositories.check(scope.projectId, partial.repositories ?? [], "body.repositories");
    const parts = templateParts(partial, input.desktop ?? null);
    const id = newObjectId("envtpl_");
    const now = this.deps.clock.now();
    const t: EnvironmentTemplateRecord = {
      id,
      project_id: scope.projectId,
      created_at: now,
      updated_at: now,
      name: input.name ?? null,
      config: parts.config,
      secrets: this.sealTemplate(id, parts.secrets),
    };
    await this.deps.store.insertEnvironmentTemplate(t);
    return t;
  }

  /** Given fields replace the template's (null: back to the default); omitted ones stay. */
  async updateTemplate(scope: Scope, id: string, raw: unknown): Promise<EnvironmentTemplateRecord> {
    const t = await this.template(scope, id, "environment_template_id");
    const input: TemplateInput = parseWith(TemplateParam, raw, "");
    const given = parsePartial(input, "body", this.parseOptions);
    await this.resolveFiles(scope, given.files, "body", id);
    await this.deps.repositories.check(scope.projectId, given.repositories ?? [], "body.repositories");
    const has = (k: keyof TemplateInput) => Object.hasOwn(raw as object, k);
    const old = this.openTemplateSecrets(t) ?? { env: null, setup_commands: null, files: null };
    const current = templatePartial(t.config, old);
    const nextPartial = {
      env: has("env") ? given.env : current.env,
      files: has("files") ? given.files : current.files,
      network: has("network") ? given.network : current.network,
      packages: has("packages") ? given.packages : current.packages,
      repositories: has("repositories") ? given.repositories : current.repositories,
      setup_commands: has("setup_commands") ? given.setup_commands : current.setup_commands,
    };
    const parts = templateParts(nextPartial, has("desktop") ? (input.desktop ?? null) : t.config.desktop);
    const next = await this.deps.store.updateEnvironmentTemplate(id, {
      ...(has("name") ? { name: input.name ?? null } : {}),
      config: parts.config,
      secrets: this.sealTemplate(id, parts.secrets),
      updated_at: this.deps.clock.now(),
    });
    if (!next) throw notFound(`Environment template ${id} not found`, "environment_template_id");
    return next;
  }

  listTemplates(scope: Scope, opts: ListOptions) {
    return this.deps.store.listEnvironmentTemplates({ ...opts, project_id: scope.projectId });
  }

  async deleteTemplate(scope: Scope, id: string): Promise<void> {
    await this.template(scope, id);
    await this.deps.store.deleteEnvironmentTemplate(id);
  }

  // self-hosted --------------------------------------------------------------------------------------------------

  /**
   * The directory of a `self_hosted` session: none (the session's own directory, today's meaning) for an absent
   * `workspace_directory` or `/workspace`; otherwise an existing directory inside one of the roots the operator
   * allows (default: the workspace root), never another session's or environment's directory, nor one holding
   * them, nor the server's data directory.
   */
  selfHostedDirectory(raw: unknown, where: string): string | null {
    if (
      raw === undefined ||
      raw === null ||
      raw === "" ||
      raw === WORKSPACE_ROOT ||
      raw === `${WORKSPACE_ROOT}/`
    ) {
      return null;
    }
    if (typeof raw !== "string" || !raw.startsWith("/") || raw.includes("\0")) {
      throw badRequest(`'${where}' must be an absolute directory path`, where);
    }
    const real = realpathLoose(resolve(raw));
    let isDir = false;
    try {
      isDir = real !== null && statSync(real).isDirectory();
    } catch {
      isDir = false;
    }
    const refused = (why: string) =>
      new ApiError(
        "forbidden",
        `'${where}': ${why}`,
        "ForbiddenError",
        where,
        "workspace_directory_not_allowed",
      );
    if (!real || !isDir) throw badRequest(`'${where}' is not an existing directory`, where);
    const roots = this.deps.config.environments.selfHostedRoots.map(
      (r) => realpathLoose(resolve(r)) ?? resolve(r),
    );
    if (!roots.some((r) => isInside(r, real))) {
      throw refused("outside the directories this server's operator allows for self-hosted sessions");
    }
    const workspaceRoot =
      realpathLoose(resolve(this.deps.config.workspaceRoot)) ?? this.deps.config.workspaceRoot;
    const dataDir = realpathLoose(resolve(this.deps.config.dataDir)) ?? this.deps.config.dataDir;
    if (isInside(real, workspaceRoot) || isInside(real, dataDir)) {
      throw refused("it holds the server's data or other sessions' directories");
    }
    if (isInside(workspaceRoot, real)) {
      const first = relative(workspaceRoot, real).split(sep)[0] ?? "";
      if (/^(sess|env)_/.test(first)) throw refused("it is another session's or environment's directory");
    } else if (isInside(dataDir, real)) {
      throw refused("it is inside the server's data directory");
    }
    return real;
  }

  // sealing ------------------------------------------------------------------------------------------------------

  private sealSecrets(id: string, spec: EnvironmentSpec): string | null {
    const s: EnvironmentSecrets = { env: spec.env, setup_commands: spec.setup_commands };
    if (Object.keys(s.env).length === 0 && s.setup_commands.length === 0) return null;
    return this.deps.keyring.seal(JSON.stringify(s), sealedContext("environment", id));
  }

  private openSecrets(env: EnvironmentRecord): EnvironmentSecrets {
    if (!env.secrets) return { env: {}, setup_commands: [] };
    return JSON.parse(
      this.deps.keyring.open(env.secrets, sealedContext("environment", env.id)),
    ) as EnvironmentSecrets;
  }

  private sealTemplate(id: string, s: TemplateSecrets): string | null {
    if (!s.env && !s.setup_commands && !s.files) return null;
    return this.deps.keyring.seal(JSON.stringify(s), sealedContext("environment_template", id));
  }

  private openTemplateSecrets(t: EnvironmentTemplateRecord): TemplateSecrets | null {
    if (!t.secrets) return null;
    return JSON.parse(
      this.deps.keyring.open(t.secrets, sealedContext("environment_template", t.id)),
    ) as TemplateSecrets;
  }
}

/** The vaults a session was given (`vault_ids`, kept in its `extra`). */
export function sessionVaults(s: SessionRecord): string[] {
  const v = s.extra.vault_ids;
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}
