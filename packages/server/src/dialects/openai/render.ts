/**
 * The official OpenAI Agents API wire format (requests with `OpenAI-Beta: agents=v1`), as the `openai` npm SDK
 * 7.55.0 reads it: `agent.session` objects, cursor pages, `agent.session.turn.*` events with `event_id`.
 */

import type {
  Agent,
  AgentFunctionCallStatus,
  AgentOutputItem,
  AgentOutputItemStatus,
  AgentSession,
  AgentSessionAssistantMessage,
  AgentSessionErrorEvent,
  AgentSessionEvent,
  AgentSessionItem,
  AgentSessionMessageContent,
  AgentTool,
  Environment,
  PersistedAgentTool,
  SessionTurnError,
  Subagent,
  TokenUsage,
  WebSearchAction,
} from "openai/resources/beta/agents/agents";
import type { Turn } from "openai/resources/beta/agents/sessions/turns/turns";
import { environmentRoot } from "../../model/environment-paths.js";
import type { Page } from "../../model/pages.js";
import type {
  AgentRecord,
  EnvironmentConfig,
  EventRecord,
  ItemRecord,
  ItemState,
  RequiredAction,
  SessionRecord,
  StoredItem,
  SubagentRecord,
  TurnRecord,
  TurnStatus,
  Usage,
} from "../../model/records.js";
import { settingsOf } from "../../model/settings.js";
import type { EndReason } from "../../model/streams.js";
import { subagentIdOf } from "../../model/subagents.js";
import { redacted, toolsOf } from "../../model/tools.js";
import { checkpointEventObject } from "../shared/render/checkpoint.js";
import { goalObject } from "../shared/render/goal.js";
import { repositoryOutputFields } from "../shared/render/repository.js";
import { toolResultOutput } from "../shared/render/tool-output.js";
import { environmentEventObject, hostedEnvironmentObject } from "./render/environments.js";

const secs = (t: number) => Math.floor(t);
const secsOrNull = (t: number | null) => (t === null ? null : Math.floor(t));

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

const FN_STATUS: Record<string, AgentFunctionCallStatus> = {
  inProgress: "in_progress",
  completed: "completed",
  failed: "failed",
  declined: "failed",
};

/** A call's status: the engine's, else what the stored state says. */
function callStatus(engine: unknown, state: ItemState): AgentFunctionCallStatus {
  return (
    FN_STATUS[String(engine)] ??
    (state === "completed" ? "completed" : state === "incomplete" ? "incomplete" : "in_progress")
  );
}

const OUTPUT_STATUS: Record<ItemState, AgentOutputItemStatus> = {
  started: "in_progress",
  completed: "completed",
  incomplete: "incomplete",
};

/**
 * An engine ThreadItem as an official AgentSessionItem (null for items with no official counterpart). `agentId`:
 * the session's agent, the sender of its multi-agent tool calls (the recipients are its subagents).
 */
export function toOfficialItem(
  raw: StoredItem,
  turnId: string,
  state: ItemState,
  agentId = "",
): AgentSessionItem | null {
  const base = { id: raw.id, turn_id: turnId };
  switch (raw.type) {
    case "collabAgentToolCall":
      return subagentCallItem(raw, base, agentId, state);
    case "userMessage": {
      const content = raw.content.flatMap((c): AgentSessionMessageContent[] =>
        c.type === "text"
          ? [{ type: "input_text", text: c.text }]
          : c.type === "image"
            ? [
                {
                  type: "input_image",
                  image_url: "url" in c ? c.url : c.fileId,
                  detail: c.detail ?? null,
                } as AgentSessionMessageContent,
              ]
            : [],
      );
      return { ...base, type: "message", role: "user", content, phase: null, status: "completed" };
    }
    case "agentMessage":
      return {
        ...base,
        type: "message",
        role: "assistant",
        content: state !== "started" || raw.text ? [{ type: "output_text", text: raw.text ?? "" }] : [],
        // The engine's "partial_answer" precedes its final answer: not part of the result text.
        phase: raw.phase === "partial_answer" ? "commentary" : (raw.phase ?? "final_answer"),
        status: OUTPUT_STATUS[state],
      } satisfies AgentSessionAssistantMessage;
    case "reasoning":
      return {
        ...base,
        type: "reasoning",
        summary: (raw.summary ?? []).map((text) => ({ type: "summary_text", text })),
        status: OUTPUT_STATUS[state],
      };
    case "commandExecution":
      return {
        ...base,
        type: "command_execution",
        command: raw.command,
        cwd: raw.cwd ?? null,
        output: raw.aggregatedOutput ?? null,
        exit_code: raw.exitCode ?? null,
        duration_ms: raw.durationMs ?? null,
        status: callStatus(raw.status, state),
      };
    case "fileChange":
      return {
        ...base,
        type: "function_call",
        call_id: raw.id,
        name: "apply_patch",
        arguments: JSON.stringify({ changes: raw.changes ?? [] }),
        status: callStatus(raw.status, state),
      };
    case "mcpToolCall":
      return {
        ...base,
        type: "mcp_call",
        server_label: raw.server,
        name: raw.tool,
        arguments: raw.arguments ?? null,
        output: raw.result ?? null,
        error: raw.error ?? null,
        status: callStatus(raw.status, state),
      };
    case "dynamicToolCall":
      return {
        ...base,
        type: "function_call",
        call_id: raw.id,
        name: raw.tool,
        arguments: JSON.stringify(raw.arguments ?? {}),
        status: callStatus(raw.status, state),
      };
    case "clientToolResult": {
      const { output, error } = toolResultOutput(raw);
      return {
        ...base,
        type: "function_call_output",
        call_id: raw.callId,
        output,
        error,
        status: "completed",
      };
    }
    case "repositoryOutput":
      // This server's extension (not in the SDK's item union): what the service committed and pushed.
      return {
        ...base,
        type: "repository_output",
        ...repositoryOutputFields(raw),
        status: "completed",
      } as unknown as AgentSessionItem;
    case "webSearch":
      return {
        ...base,
        type: "web_search_call",
        action: { type: "search", query: raw.query ?? null, queries: null } as WebSearchAction,
        status: OUTPUT_STATUS[state],
      };
    default:
      return null;
  }
}

export function itemObject(i: ItemRecord, agentId = ""): AgentSessionItem | null {
  return toOfficialItem(i.data, i.turn_id, i.state, agentId);
}

/** A multi-agent tool call as the official subagent item of the same meaning (null: not shown, e.g. a listing). */
function subagentCallItem(
  raw: Extract<StoredItem, { type: "collabAgentToolCall" }>,
  base: { id: string; turn_id: string },
  agentId: string,
  state: ItemState,
): AgentSessionItem | null {
  const status = callStatus(raw.status, state);
  const recipients = raw.receiverThreadIds.map(subagentIdOf);
  const recipient = recipients[0] ?? "";
  const content = raw.prompt ? [{ type: "output_text" as const, text: raw.prompt }] : [];
  const from = { sender_agent_id: agentId, recipient_agent_id: recipient, status };
  switch (raw.tool) {
    case "spawnAgent":
      return {
        ...base,
        type: "create_subagent_call",
        agent_id: agentId,
        content,
        model: raw.model || null,
        reasoning_effort: raw.reasoningEffort ?? null,
        status,
      };
    case "sendInput":
    case "sendMessage":
    case "followupTask":
      return { ...base, type: "send_subagent_input_call", ...from, content };
    case "resumeAgent":
      return { ...base, type: "resume_subagent_call", ...from };
    case "wait":
      return {
        ...base,
        type: "wait_for_subagents_call",
        sender_agent_id: agentId,
        recipient_agent_ids: recipients,
        status,
      };
    case "interruptAgent":
      return { ...base, type: "interrupt_subagent_call", ...from };
    case "closeAgent":
      return { ...base, type: "close_subagent_call", ...from };
    default:
      return null;
  }
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

/**
 * The last event of a stream the server ends (its API key was revoked): an `error` event, then the connection
 * closes (no `[DONE]`). Its `event_id` stands for the last event delivered ("…_state"): resuming from it continues
 * right after that event. The npm SDK yields it as an ordinary event (`type: "error"`) and then ends; the Python
 * SDK raises it as an `APIError`.
 */
export function streamEndedEvent(
  sessionId: string,
  reason: EndReason,
  lastSeq: number,
): AgentSessionErrorEvent {
  return {
    type: "error",
    event_id: `evt_${sessionId.slice(5)}_${lastSeq}_state`,
    session_id: sessionId,
    error: {
      type: "authentication_error",
      code: "invalid_api_key",
      message: `${STREAM_ENDED[reason]}; this stream has been closed`,
      param: null,
    },
  };
}

const STREAM_ENDED: Record<EndReason, string> = {
  revoked: "The API key this stream was opened with was revoked",
};

/**
 * Renders one log event as official stream events (some log events give two, e.g. turn created + in progress).
 * `agentId` is the session's agent (turn objects carry it). A failed turn is `agent.session.turn.failed` (with
 * `turn.error`) followed by the session's `agent.session.idle`: no separate `error` event, which the Python SDK
 * raises as an exception (any streamed payload with a top-level `error`) before its helper sees the turn end.
 */
export function renderEvent(e: EventRecord, agentId: string): AgentSessionEvent[] {
  const session_id = e.session_id;
  const turn_id = e.turn_id;
  const event_id = (k = 0) => `evt_${session_id.slice(5)}_${e.seq}_${k}`;
  switch (e.type) {
    case "session.created":
      return [
        { type: "agent.session.created", event_id: event_id(), session: sessionObject(e.data.session) },
      ];
    case "session.status":
      return [sessionStatusEvent(e.data.session, event_id())];
    case "turn.started": {
      const turn = turnObject(e.data.turn, agentId);
      return [
        {
          type: "agent.session.turn.created",
          event_id: event_id(0),
          session_id,
          turn_id: turn.id,
          turn: { ...turn, status: "queued" },
        },
        { type: "agent.session.turn.in_progress", event_id: event_id(1), session_id, turn_id: turn.id, turn },
      ];
    }
    case "item.started":
    case "item.completed": {
      const raw = e.data.item;
      const tid = turn_id ?? "";
      // Input items (the user's message, a client's tool result) are added once, never "done".
      if (raw.type === "userMessage" || raw.type === "clientToolResult") {
        if (e.type === (raw.type === "userMessage" ? "item.completed" : "item.started")) return [];
        const item = toOfficialItem(raw, tid, "completed", agentId);
        return item
          ? [
              {
                type: "agent.session.turn.item.added",
                event_id: event_id(),
                session_id,
                turn_id,
                item,
                output_index: null,
              },
            ]
          : [];
      }
      const done = e.type === "item.completed";
      const item = toOfficialItem(raw, tid, done ? finishedState(raw) : "started", agentId);
      if (!item) return [];
      const output_index = e.data.output_index;
      return done
        ? [
            {
              type: "agent.session.turn.item.done",
              event_id: event_id(),
              session_id,
              turn_id,
              item: item as AgentOutputItem,
              output_index,
            },
          ]
        : [
            {
              type: "agent.session.turn.item.added",
              event_id: event_id(),
              session_id,
              turn_id,
              item,
              output_index,
            },
          ];
    }
    case "item.delta": {
      const { output_index, item_id, delta } = e.data;
      switch (e.data.kind) {
        case "agent_message":
          return [
            {
              type: "agent.session.turn.output_text.delta",
              event_id: event_id(),
              session_id,
              turn_id,
              item_id,
              output_index,
              content_index: 0,
              delta,
            },
          ];
        case "command_output":
          return [
            {
              type: "agent.output.command_execution_output.delta",
              event_id: event_id(),
              session_id,
              turn_id,
              item_id,
              output_index,
              delta,
            },
          ];
        case "reasoning":
          return [
            {
              type: "agent.session.turn.reasoning_summary_text.delta",
              event_id: event_id(),
              session_id,
              turn_id,
              item_id,
              output_index,
              summary_index: 0,
              delta,
            },
          ];
        default:
          return [];
      }
    }
    case "turn.completed":
    case "turn.failed":
    case "turn.cancelled": {
      const t = e.data.turn;
      const turn = turnObject(t, agentId);
      const usage = usageObject(t.usage);
      const base = { event_id: event_id(), session_id, turn_id: turn.id, turn, usage };
      if (turn.status === "completed") return [{ ...base, type: "agent.session.turn.completed" }];
      if (turn.status === "failed") return [{ ...base, type: "agent.session.turn.failed" }];
      return [{ ...base, type: "agent.session.turn.cancelled" }];
    }
    case "environment.updated":
      return [
        environmentEventObject(e.data.environment, {
          event_id: event_id(),
          session_id,
          turn_id,
        }) as AgentSessionEvent,
      ];
    case "mcp_server.status":
      // This server's extension (not in the SDK's event union).
      return [
        {
          type: "agent.session.mcp_server.status",
          event_id: event_id(),
          session_id,
          turn_id,
          ...e.data,
        } as unknown as AgentSessionEvent,
      ];
    case "subagent.updated": {
      const subagent = subagentObject(session_id, agentId, e.data.subagent);
      const event_id0 = event_id();
      if (e.data.change === "created")
        return [{ type: "agent.session.subagent.created", event_id: event_id0, subagent }];
      if (e.data.change === "closed")
        return [{ type: "agent.session.subagent.closed", event_id: event_id0, subagent }];
      return [{ type: "agent.session.subagent.active", event_id: event_id0, subagent }];
    }
    case "goal.updated":
      // This server's extension (not in the SDK's event union).
      return [
        {
          type: "agent.session.goal.updated",
          event_id: event_id(),
          session_id,
          turn_id,
          goal: e.data.goal ? goalObject(e.data.goal, e.created_at) : null,
        } as unknown as AgentSessionEvent,
      ];
    case "repository.output":
      // This server's extension (not in the SDK's event union).
      return [
        {
          type: "agent.session.repository.output",
          event_id: event_id(),
          session_id,
          turn_id,
          output: { id: e.data.item.id, ...repositoryOutputFields(e.data.item) },
        } as unknown as AgentSessionEvent,
      ];
    case "checkpoint.created":
      // This server's extension (not in the SDK's event union), shown when the operator turned it on.
      if (!e.data.official) return [];
      return [
        {
          type: "agent.session.checkpoint.created",
          event_id: event_id(),
          session_id,
          turn_id: turn_id ?? e.data.checkpoint.turn_id,
          checkpoint: checkpointEventObject(e.data.checkpoint),
        } as unknown as AgentSessionEvent,
      ];
    default:
      return [];
  }
}

/** A completed engine item's state: items the engine reports failed or declined stay visible as such. */
function finishedState(item: StoredItem): ItemState {
  return "status" in item && (item.status === "failed" || item.status === "declined")
    ? "incomplete"
    : "completed";
}

/** `agent.session.<status>` with the session snapshot. */
export function sessionStatusEvent(s: SessionRecord, eventId: string): AgentSessionEvent {
  const session = sessionObject(s);
  switch (s.status) {
    case "in_progress":
      return { type: "agent.session.in_progress", event_id: eventId, session };
    case "requires_action":
      return { type: "agent.session.requires_action", event_id: eventId, session };
    case "failed":
      return { type: "agent.session.failed", event_id: eventId, session };
    default:
      return { type: "agent.session.idle", event_id: eventId, session };
  }
}
