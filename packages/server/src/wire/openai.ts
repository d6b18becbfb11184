/**
 * The official OpenAI Agents API wire format (requests with `OpenAI-Beta: agents=v1`), as the `openai` npm SDK
 * 7.55.0 reads it: `agent.session` objects, cursor pages, `agent.session.turn.*` events with `event_id`.
 */
import type { ThreadItem } from "@codex-agent-api/codex";
import type {
  AgentRecord,
  EventRecord,
  ItemRecord,
  Page,
  SessionRecord,
  TurnRecord,
  TurnStatus,
  Usage,
} from "../store/types.js";
import { goalObject } from "./goal.js";

const secs = (t: number | null) => (t === null ? null : Math.floor(t));

type Extra = Record<string, unknown>;

function agentSettings(extra: Extra) {
  return {
    multi_agent: (extra.multi_agent as object) ?? { enabled: false, max_concurrent_subagents: null },
    reasoning: (extra.reasoning as object) ?? { effort: null, summary: null },
    service_tier: (extra.service_tier as string) ?? "auto",
    text: (extra.text as object) ?? { format: { type: "text" }, verbosity: "medium" },
  };
}

export function agentObject(a: AgentRecord) {
  return {
    id: a.id,
    object: "agent",
    created_at: secs(a.created_at),
    updated_at: secs(a.updated_at),
    name: a.name,
    instructions: a.instructions,
    metadata: a.metadata,
    model: a.model,
    tools: a.tools,
    ...agentSettings(a.extra),
  };
}

export function usageObject(u: Usage | null) {
  if (!u) return null;
  return {
    input_tokens: u.input_tokens,
    input_tokens_details: { cached_tokens: u.cached_input_tokens },
    output_tokens: u.output_tokens,
    output_tokens_details: { reasoning_tokens: u.reasoning_output_tokens },
    total_tokens: u.total_tokens,
  };
}

export function sessionObject(s: SessionRecord) {
  return {
    id: s.id,
    object: "agent.session",
    agent: {
      id: s.agent_id,
      name: s.name,
      instructions: s.instructions,
      model: s.model,
      tools: s.tools,
      ...agentSettings(s.extra),
    },
    created_at: secs(s.created_at),
    last_active_at: secs(s.last_active_at),
    environment: {
      type: "self_hosted",
      id: "env_local",
      capability_directories: [],
      remote_url: "",
      workspace_directory: s.workspace,
    },
    // Only a failed session has an error; a failed turn carries its own (Turn.error).
    error: s.status === "failed" ? s.error : null,
    metadata: s.metadata,
    required_actions: [],
    status: s.status,
    usage: usageObject(s.usage),
    vault_ids: [],
  };
}

const OFFICIAL_TURN_STATUS: Record<TurnStatus, string> = {
  queued: "queued",
  in_progress: "in_progress",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
  interrupted: "cancelled",
};

/** `SessionTurnError.code` values the SDK knows; other engine/server codes are reported as `internal_error`. */
const TURN_ERROR_CODES: ReadonlySet<string> = new Set([
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
function turnError(t: TurnRecord) {
  if (t.status !== "failed" || !t.error) return null;
  const code = TURN_ERROR_CODES.has(t.error.code) ? t.error.code : "internal_error";
  return { code, message: t.error.message };
}

export function turnObject(t: TurnRecord, agentId: string | null) {
  return {
    id: t.id,
    object: "agent.session.turn",
    session_id: t.session_id,
    agent_id: agentId,
    subagent_id: null,
    status: OFFICIAL_TURN_STATUS[t.status],
    created_at: secs(t.created_at),
    started_at: secs(t.started_at),
    completed_at: secs(t.completed_at),
    error: turnError(t),
    usage: usageObject(t.usage),
    ...(t.goal ? { goal: t.goal } : {}),
  };
}

const FN_STATUS: Record<string, string> = {
  inProgress: "in_progress",
  completed: "completed",
  failed: "failed",
  declined: "failed",
};
const fnStatus = (s: unknown, done: boolean) => FN_STATUS[String(s)] ?? (done ? "completed" : "in_progress");

/** An engine ThreadItem as an official AgentSessionItem (null for items with no official counterpart). */
export function toOfficialItem(
  raw: ThreadItem,
  turnId: string,
  done: boolean,
): Record<string, unknown> | null {
  const base = { id: raw.id, turn_id: turnId };
  switch (raw.type) {
    case "userMessage": {
      const content = raw.content.flatMap(
        (c): Array<Record<string, unknown>> =>
          c.type === "text"
            ? [{ type: "input_text", text: c.text }]
            : c.type === "image"
              ? [{ type: "input_image", image_url: "url" in c ? c.url : c.fileId }]
              : [],
      );
      return { ...base, type: "message", role: "user", content, phase: null, status: "completed" };
    }
    case "agentMessage":
      return {
        ...base,
        type: "message",
        role: "assistant",
        content: done || raw.text ? [{ type: "output_text", text: raw.text ?? "" }] : [],
        phase: raw.phase ?? "final_answer",
        status: done ? "completed" : "in_progress",
      };
    case "reasoning":
      return {
        ...base,
        type: "reasoning",
        summary: (raw.summary ?? []).map((text) => ({ type: "summary_text", text })),
        status: done ? "completed" : "in_progress",
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
        status: fnStatus(raw.status, done),
      };
    case "fileChange":
      return {
        ...base,
        type: "function_call",
        call_id: raw.id,
        name: "apply_patch",
        arguments: JSON.stringify({ changes: raw.changes ?? [] }),
        status: fnStatus(raw.status, done),
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
        status: fnStatus(raw.status, done),
      };
    case "dynamicToolCall":
      return {
        ...base,
        type: "function_call",
        call_id: raw.id,
        name: raw.tool,
        arguments: JSON.stringify(raw.arguments ?? {}),
        status: fnStatus(raw.status, done),
      };
    case "webSearch":
      return {
        ...base,
        type: "web_search_call",
        action: { type: "search", query: raw.query ?? null, queries: null },
        status: done ? "completed" : "in_progress",
      };
    default:
      return null;
  }
}

export function itemObject(i: ItemRecord): Record<string, unknown> | null {
  return toOfficialItem(i.data, i.turn_id, i.state !== "started");
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
 * Renders one log event as official stream events (some log events give two, e.g. turn created + in progress).
 * `agentId` is the session's agent (turn objects carry it).
 */
export function renderEvent(
  e: EventRecord,
  agentId: string | null,
): Array<Record<string, unknown> & { type: string }> {
  const session_id = e.session_id;
  const turn_id = e.turn_id;
  const ev = (type: string, body: Record<string, unknown>, k = 0) => ({
    type,
    event_id: `evt_${session_id.slice(5)}_${e.seq}_${k}`,
    ...body,
  });
  switch (e.type) {
    case "session.created":
      return [ev("agent.session.created", { session: sessionObject(e.data.session) })];
    case "session.status": {
      const s = e.data.session;
      return [ev(`agent.session.${s.status}`, { session: sessionObject(s) })];
    }
    case "turn.started": {
      const turn = turnObject(e.data.turn, agentId);
      return [
        ev("agent.session.turn.created", { session_id, turn_id, turn: { ...turn, status: "queued" } }, 0),
        ev("agent.session.turn.in_progress", { session_id, turn_id, turn }, 1),
      ];
    }
    case "item.started":
    case "item.completed": {
      const raw = e.data.item;
      const output_index = e.data.output_index;
      if (raw.type === "userMessage") {
        if (e.type === "item.completed") return [];
        const item = toOfficialItem(raw, turn_id!, true);
        return item
          ? [ev("agent.session.turn.item.added", { session_id, turn_id, item, output_index: null })]
          : [];
      }
      const done = e.type === "item.completed";
      const item = toOfficialItem(raw, turn_id!, done);
      if (!item) return [];
      const type = done ? "agent.session.turn.item.done" : "agent.session.turn.item.added";
      return [ev(type, { session_id, turn_id, item, output_index })];
    }
    case "item.delta": {
      const { output_index, item_id, delta } = e.data;
      switch (e.data.kind) {
        case "agent_message":
          return [
            ev("agent.session.turn.output_text.delta", {
              session_id,
              turn_id,
              item_id,
              output_index,
              content_index: 0,
              delta,
            }),
          ];
        case "command_output":
          return [
            ev("agent.output.command_execution_output.delta", {
              session_id,
              turn_id,
              item_id,
              output_index,
              delta,
            }),
          ];
        case "reasoning":
          return [
            ev("agent.session.turn.reasoning_summary_text.delta", {
              session_id,
              turn_id,
              item_id,
              output_index,
              summary_index: 0,
              delta,
            }),
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
      const type = `agent.session.turn.${turn.status === "completed" ? "completed" : turn.status === "failed" ? "failed" : "cancelled"}`;
      const frames = [ev(type, { session_id, turn_id, turn, usage: usageObject(t.usage) })];
      // "error: emitted when a turn or session fails" (the turn event carries the same error).
      if (t.status === "failed") {
        frames.push(
          ev(
            "error",
            {
              session_id,
              error: {
                code: t.error?.code ?? null,
                message: t.error?.message ?? "turn failed",
                param: null,
                type: "server_error",
              },
            },
            1,
          ),
        );
      }
      return frames;
    }
    case "goal.updated":
      return [
        ev("agent.session.goal.updated", {
          session_id,
          turn_id,
          goal: e.data.goal ? goalObject(e.data.goal, e.created_at) : null,
        }),
      ];
    default:
      return [];
  }
}
