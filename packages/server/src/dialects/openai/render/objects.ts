/** The official objects: agents, sessions, turns, usage, required actions, subagents, pages. */
import type {
  Agent,
  AgentSession,
  AgentTool,
  Environment,
  PersistedAgentTool,
  SessionTurnError,
  Subagent,
  TokenUsage,
} from "openai/resources/beta/agents/agents";
import type { Turn } from "openai/resources/beta/agents/sessions/turns/turns";
import { environmentRoot } from "../../../model/environment-paths.js";
import type { Page } from "../../../model/pages.js";
import type {
  AgentRecord,
  EnvironmentConfig,
  RequiredAction,
  SessionRecord,
  SubagentRecord,
  TurnRecord,
  TurnStatus,
  Usage,
} from "../../../model/records.js";
import { settingsOf } from "../../../model/settings.js";
import { redacted, toolsOf } from "../../../model/tools.js";
import { hostedEnvironmentObject } from "./environments.js";

export const secs = (t: number) => Math.floor(t);
export const secsOrNull = (t: number | null) => (t === null ? null : Math.floor(t));

/**
 * The agent id a session reports: its saved agent's, or — for an agent given inline — one named after the session
 * (the official type requires an id; it is not a saved agent).
 */
export const agentIdOf = (s: Pick<SessionRecord, "id" | "agent_id">): string =>
  s.agent_id ?? `agent_${s.id.slice(5)}`;

/** Tools as the official types show them: complete, and never an MCP server's secrets. */
function tools(list: unknown[]): PersistedAgentTool[] {
  return toolsOf(list).map((t): PersistedAgentTool => {
    switch (t.type) {
      case "function":
        return { ...t, defer_loading: false };
      case "web_search":
        return {
          type: "web_search",
          mode: t.mode,
          allowed_domains: null,
          context_size: "medium",
          location: null,
        };
      case "automations":
        return { type: "automations" };
      default:
        return {
          type: "mcp",
          server_label: t.server_label,
          allowed_tools: t.allowed_tools,
          required: t.required,
          connection_origin: "service",
          credential_id: null,
          request_metadata: {},
          transport:
            t.transport.type === "http"
              ? { type: "http", server_url: t.transport.server_url, headers: redacted(t.transport.headers) }
              : {
                  type: "stdio",
                  command: t.transport.command,
                  args: t.transport.args,
                  cwd: t.transport.cwd ?? "",
                  env_vars: Object.keys(t.transport.env),
                },
        };
    }
  });
}

export function agentObject(a: AgentRecord): Agent {
  const settings = settingsOf(a.extra);
  return {
    id: a.id,
    object: "agent",
    created_at: secs(a.created_at),
    updated_at: secs(a.updated_at),
    name: a.name,
    instructions: a.instructions,
    metadata: a.metadata,
    model: a.model,
    tools: tools(a.tools),
    ...settings,
  };
}

export function usageObject(u: Usage): TokenUsage;
export function usageObject(u: Usage | null): TokenUsage | null;
export function usageObject(u: Usage | null): TokenUsage | null {
  if (!u) return null;
  return {
    input_tokens: u.input_tokens,
    input_tokens_details: { cached_tokens: u.cached_input_tokens },
    output_tokens: u.output_tokens,
    output_tokens_details: { reasoning_tokens: u.reasoning_output_tokens },
    total_tokens: u.total_tokens,
  };
}

/** The id of the environment a session's files live in when this server did not prepare one for it. */
export const LOCAL_ENVIRONMENT_ID = "env_local";

/** The id of the environment a session's files live in: the one prepared for it, else this server's own. */
export function environmentIdOf(s: SessionRecord): string {
  return s.extra.environment === "openai_hosted" && typeof s.extra.environment_id === "string"
    ? s.extra.environment_id
    : LOCAL_ENVIRONMENT_ID;
}

/** The environment a session reports: none, or this server's own workspace as a self-hosted environment. */
function environmentOf(s: SessionRecord): Environment {
  if (s.extra.environment === "none") return { type: "none" };
  // Prepared by this server (domain/environments): what it was made with, without its secrets.
  if (s.extra.environment === "openai_hosted" && typeof s.extra.environment_id === "string") {
    return hostedEnvironmentObject(s.extra.environment_id, s.extra.environment_view as EnvironmentConfig);
  }
  return {
    type: "self_hosted",
    id: LOCAL_ENVIRONMENT_ID,
    capability_directories: [],
    remote_url: "",
    // Where its files are as clients see them (never this host's directory, unless the client chose it).
    workspace_directory: environmentRoot(s),
  };
}

export function sessionObject(s: SessionRecord): AgentSession {
  return {
    id: s.id,
    object: "agent.session",
    agent: {
      id: agentIdOf(s),
      name: s.name,
      instructions: s.instructions,
      model: s.model,
      tools: tools(s.tools) as AgentTool[],
      ...settingsOf(s.extra),
    },
    created_at: secs(s.created_at),
    last_active_at: secs(s.last_active_at),
    environment: environmentOf(s),
    // Only a failed session has an error; a failed turn carries its own (Turn.error).
    error: s.status === "failed" ? s.error : null,
    metadata: s.metadata,
    required_actions: s.required_actions.map(requiredAction),
    status: s.status,
    usage: usageObject(s.usage),
    vault_ids: Array.isArray(s.extra.vault_ids) ? (s.extra.vault_ids as string[]) : [],
  };
}

type RequiredActionObject = AgentSession["required_actions"][number];

/**
 * A required action as the official types show it. Approvals are this server's extension (`approval_request`,
 * answered by an `approval_result` input event); the official SDK treats them as actions it cannot handle.
 */
export function requiredAction(a: RequiredAction): RequiredActionObject {
  if (a.type === "function_call") {
    return { type: "function_call", call_id: a.id, name: a.name, arguments: a.arguments, turn_id: a.turn_id };
  }
  return {
    type: "approval_request",
    action_id: a.id,
    turn_id: a.turn_id,
    kind: a.kind,
    item_id: a.item_id,
    message: a.message,
    details: a.details,
    decisions: ["approve", "approve_for_session", "deny", "cancel"],
  } as unknown as RequiredActionObject;
}

const OFFICIAL_TURN_STATUS: Record<TurnStatus, Turn["status"]> = {
  queued: "queued",
  in_progress: "in_progress",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
  interrupted: "cancelled",
};

/** `SessionTurnError.code` values the SDK knows; other engine/server codes are reported as `internal_error`. */
const TURN_ERROR_CODES: ReadonlySet<string> = new Set<SessionTurnError["code"]>([
  "context_length_exceeded",
  "max_output_tokens",
  "session_budget_exceeded",
  "usage_limit_exceeded",
  "project_spend_limit_exceeded",
  "organization_spend_limit_exceeded",
  "organization_usage_limit_exceeded",
  "billing_not_active",
  "credit_balance_exhausted",
  "rate_limit_exceeded",
  "flex_unavailable",
  "server_overloaded",
  "cyber_policy",
  "misalignment_policy_violation",
  "connection_failed",
  "server_error",
  "authentication_error",
  "invalid_request",
  "resource_not_found",
  "sandbox_error",
  "executor_version_incompatible",
  "active_turn_not_steerable",
  "request_timeout",
  "internal_error",
]);

/** Official `Turn.error`: non-null only when the turn failed (a cancelled turn has no error). */
function turnError(t: TurnRecord): SessionTurnError | null {
  if (t.status !== "failed" || !t.error) return null;
  const code = (
    TURN_ERROR_CODES.has(t.error.code) ? t.error.code : "internal_error"
  ) as SessionTurnError["code"];
  return { code, message: t.error.message };
}

/** The official turn; this server's goal extension is added as `goal` when the turn runs one. */
export function turnObject(t: TurnRecord, agentId: string): Turn & { goal?: TurnRecord["goal"] } {
  return {
    id: t.id,
    object: "agent.session.turn",
    session_id: t.session_id,
    agent_id: agentId,
    subagent_id: t.subagent_id ?? null,
    status: OFFICIAL_TURN_STATUS[t.status],
    created_at: secs(t.created_at),
    started_at: secsOrNull(t.started_at),
    completed_at: secsOrNull(t.completed_at),
    error: turnError(t),
    usage: usageObject(t.usage),
    ...(t.goal ? { goal: t.goal } : {}),
  };
}

/** A session's subagent, as the official API shows it. */
export function subagentObject(sessionId: string, parentAgentId: string, a: SubagentRecord): Subagent {
  return {
    id: a.id,
    object: "agent.session.subagent",
    session_id: sessionId,
    parent_agent_id: parentAgentId,
    name: null,
    instructions: a.instructions ? [{ type: "output_text", text: a.instructions }] : null,
    status: a.status,
    opened_at: secs(a.opened_at),
    closed_at: secsOrNull(a.closed_at),
  };
}

export function page<T extends { id: string | null }>(p: Page<T>) {
  return {
    object: "list",
    data: p.data,
    first_id: p.data[0]?.id ?? null,
    last_id: p.data.at(-1)?.id ?? null,
    has_more: p.has_more,
  };
}
