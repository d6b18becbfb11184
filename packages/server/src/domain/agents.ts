import type { AgentRecord, ListOptions, Page, Store } from "../store/types.js";
import { notFound } from "./errors.js";
import { newId, nowSeconds } from "./ids.js";

/** Saved agent configuration fields (already validated by the wire layer). */
export interface AgentFields {
  name?: string | null;
  model?: string;
  instructions?: string | null;
  tools?: unknown[];
  metadata?: Record<string, string>;
  extra?: Record<string, unknown>;
}

export class AgentService {
  constructor(
    private readonly store: Store,
    private readonly defaultModel: string,
  ) {}

  create(f: AgentFields): AgentRecord {
    const now = nowSeconds();
    const agent: AgentRecord = {
      id: newId("agent_"),
      created_at: now,
      updated_at: now,
      name: f.name ?? null,
      model: f.model || this.defaultModel,
      instructions: f.instructions ?? null,
      tools: f.tools ?? [],
      metadata: f.metadata ?? {},
      extra: f.extra ?? {},
    };
    this.store.insertAgent(agent);
    return agent;
  }

  get(id: string): AgentRecord {
    const agent = this.store.getAgent(id);
    if (!agent) throw notFound(`Agent ${id} not found`, "agent_id");
    return agent;
  }

  update(id: string, f: AgentFields): AgentRecord {
    const agent = this.get(id);
    const next: AgentRecord = {
      ...agent,
      ...(f.name !== undefined ? { name: f.name } : {}),
      ...(f.model !== undefined ? { model: f.model || this.defaultModel } : {}),
      ...(f.instructions !== undefined ? { instructions: f.instructions } : {}),
      ...(f.tools !== undefined ? { tools: f.tools } : {}),
      ...(f.metadata !== undefined ? { metadata: f.metadata } : {}),
      extra: { ...agent.extra, ...f.extra },
      updated_at: nowSeconds(),
    };
    this.store.updateAgent(next);
    return next;
  }

  delete(id: string): void {
    if (!this.store.deleteAgent(id)) throw notFound(`Agent ${id} not found`, "agent_id");
  }

  list(opts: ListOptions): Page<AgentRecord> {
    return this.store.listAgents(opts);
  }
}
