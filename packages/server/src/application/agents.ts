/**
 * Saved agents (both dialects): the tool policy applied to what a client sent, then the domain's agent service,
 * in the caller's project.
 */
import type { AgentFields, AgentService } from "../domain/agents.js";
import type { ClientTools, ToolPolicy } from "../domain/tools.js";
import type { Scope } from "../model/scope.js";
import type { AgentRecord, ListOptions, Page } from "../store/types.js";

/** An agent's fields as a client sent them (tools not yet checked). */
export type AgentChanges = Omit<AgentFields, "tools"> & { tools?: ClientTools };

/** The fields to store: the client's, with its tools admitted by the policy. */
export async function admitted<T extends AgentChanges>(
  policy: ToolPolicy,
  f: T,
): Promise<Omit<T, "tools"> & { tools?: unknown[] }> {
  const { tools, ...rest } = f;
  return tools === undefined ? rest : { ...rest, tools: await policy.admit(tools) };
}

export class AgentOperations {
  constructor(private readonly deps: { agents: AgentService; tools: ToolPolicy }) {}

  async create(scope: Scope, f: AgentChanges): Promise<AgentRecord> {
    return this.deps.agents.create(scope, await admitted(this.deps.tools, f));
  }

  async update(scope: Scope, id: string, f: AgentChanges): Promise<AgentRecord> {
    return this.deps.agents.update(scope, id, await admitted(this.deps.tools, f));
  }

  get(scope: Scope, id: string): Promise<AgentRecord> {
    return this.deps.agents.get(scope, id);
  }

  list(scope: Scope, opts: ListOptions): Promise<Page<AgentRecord>> {
    return this.deps.agents.list(scope, opts);
  }

  delete(scope: Scope, id: string): Promise<void> {
    return this.deps.agents.delete(scope, id);
  }
}
