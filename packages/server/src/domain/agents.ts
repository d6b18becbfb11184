import type { Clock } from "../kernel/clock.js";
import { notFound } from "../kernel/errors.js";
import { newId } from "../model/ids.js";
import type { Scope } from "../model/scope.js";
import { DEFAULT_SETTINGS, mergeSettings, type SettingsPatch, settingsOf } from "../model/settings.js";
import type { AgentRecord, ListOptions, Page, Store } from "../store/types.js";

/** Saved agent configuration fields (already validated by the wire layer). */
export interface AgentFields {
  name?: string | null;
  model?: string;
  instructions?: string | null;
  tools?: unknown[];
  metadata?: Record<string, string>;
  /** Model settings to change (merged over the documented defaults). */
  settings?: SettingsPatch;
  extra?: Record<string, unknown>;
}

export class AgentService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly defaultModel: string,
  ) {}

  async create(scope: Scope, f: AgentFields): Promise<AgentRecord> {
    const now = this.clock.now();
    const agent: AgentRecord = {
      id: newId("agent_"),
      project_id: scope.projectId,
      created_at: now,
      updated_at: now,
      name: f.name ?? null,
      model: f.model || this.defaultModel,
      instructions: f.instructions ?? null,
      tools: f.tools ?? [],
      metadata: f.metadata ?? {},
      extra: { ...f.extra, settings: mergeSettings(DEFAULT_SETTINGS, f.settings ?? {}) },
    };
    await this.store.insertAgent(agent);
    return agent;
  }

  /** The agent, if it belongs to the caller's project (another project's agent is "not found" too). */
  async get(scope: Scope, id: string): Promise<AgentRecord> {
    const agent = await this.store.getAgent(id);
    if (!agent || agent.project_id !== scope.projectId) throw notFound(`Agent ${id} not found`, "agent_id");
    return agent;
  }

  async update(scope: Scope, id: string, f: AgentFields): Promise<AgentRecord> {
    const agent = await this.get(scope, id);
    const next = await this.store.updateAgent(id, {
      ...(f.name !== undefined ? { name: f.name } : {}),
      ...(f.model !== undefined ? { model: f.model || this.defaultModel } : {}),
      ...(f.instructions !== undefined ? { instructions: f.instructions } : {}),
      ...(f.tools !== undefined ? { tools: f.tools } : {}),
      ...(f.metadata !== undefined ? { metadata: f.metadata } : {}),
      extra: {
        ...agent.extra,
        ...f.extra,
        settings: mergeSettings(settingsOf(agent.extra), f.settings ?? {}),
      },
      updated_at: this.clock.now(),
    });
    if (!next) throw notFound(`Agent ${id} not found`, "agent_id");
    return next;
  }

  async delete(scope: Scope, id: string): Promise<void> {
    await this.get(scope, id);
    if (!(await this.store.deleteAgent(id))) throw notFound(`Agent ${id} not found`, "agent_id");
  }

  list(scope: Scope, opts: ListOptions): Promise<Page<AgentRecord>> {
    return this.store.listAgents({ ...opts, project_id: scope.projectId });
  }
}
