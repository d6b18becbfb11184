/**
 * Environment templates of a project: a configuration sessions' environments merge under their own (spec.ts says
 * how). Checked when saved like an environment's (its Files API references and repositories must exist); its
 * write-only parts are sealed (sealing.ts). An update replaces the fields it gives (null: back to the default) and
 * keeps the others.
 */
import type { Config } from "../../config/load.js";
import type { Clock } from "../../kernel/clock.js";
import { notFound } from "../../kernel/errors.js";
import type { Scope } from "../../model/scope.js";
import type { EnvironmentTemplateRecord, ListOptions, Store } from "../../store/types.js";
import type { FileService } from "../files/service.js";
import type { RepositoryService } from "../repositories/service.js";
import { newObjectId } from "../vaults/service.js";
import { resolveFiles } from "./files.js";
import type { EnvironmentSealing } from "./sealing.js";
import {
  parsePartial,
  parseWith,
  type TemplateInput,
  TemplateParam,
  templatePartial,
  templateParts,
} from "./spec.js";

export interface TemplateDeps {
  store: Store;
  clock: Clock;
  config: Config;
  files: FileService;
  repositories: RepositoryService;
  sealing: EnvironmentSealing;
}

export class EnvironmentTemplates {
  constructor(private readonly deps: TemplateDeps) {}

  private get parseOptions() {
    return { allowLocalRepositories: this.deps.config.repositories.allowLocal };
  }

  /** The template, if it belongs to the caller's project (404 named by `param` otherwise). */
  async get(scope: Scope, id: string, param: string): Promise<EnvironmentTemplateRecord> {
    const t = await this.deps.store.getEnvironmentTemplate(id);
    if (!t || t.project_id !== scope.projectId) throw notFound(`Environment template ${id} not found`, param);
    return t;
  }

  async create(scope: Scope, raw: unknown): Promise<EnvironmentTemplateRecord> {
    const input = parseWith(TemplateParam, raw, "");
    const partial = parsePartial(input, "body", this.parseOptions);
    await resolveFiles(this.deps.files, scope, partial.files, "body", null);
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
      secrets: this.deps.sealing.sealTemplate(id, parts.secrets),
    };
    await this.deps.store.insertEnvironmentTemplate(t);
    return t;
  }

  async update(scope: Scope, id: string, raw: unknown): Promise<EnvironmentTemplateRecord> {
    const t = await this.get(scope, id, "environment_template_id");
    const input: TemplateInput = parseWith(TemplateParam, raw, "");
    const given = parsePartial(input, "body", this.parseOptions);
    await resolveFiles(this.deps.files, scope, given.files, "body", id);
    await this.deps.repositories.check(scope.projectId, given.repositories ?? [], "body.repositories");
    const has = (k: keyof TemplateInput) => Object.hasOwn(raw as object, k);
    const old = this.deps.sealing.openTemplate(t) ?? { env: null, setup_commands: null, files: null };
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
      secrets: this.deps.sealing.sealTemplate(id, parts.secrets),
      updated_at: this.deps.clock.now(),
    });
    if (!next) throw notFound(`Environment template ${id} not found`, "environment_template_id");
    return next;
  }

  list(scope: Scope, opts: ListOptions) {
    return this.deps.store.listEnvironmentTemplates({ ...opts, project_id: scope.projectId });
  }

  async delete(scope: Scope, id: string): Promise<void> {
    await this.get(scope, id, "environment_template_id");
    await this.deps.store.deleteEnvironmentTemplate(id);
  }
}
