/**
 * The "template" dialect: the exact HTTP contract of the original codex-agent-api service (the seed e2e suite).
 * Integer-second timestamps, `{error, type}` errors, `agent.session.*` SSE names carrying exec-style items.
 */

import type {
  AgentRecord,
  EventRecord,
  ItemRecord,
  RequiredAction,
  SessionRecord,
  Usage,
} from "../../model/records.js";
import { settingsOf } from "../../model/settings.js";
import type { EndReason } from "../../model/streams.js";
import { publicTools } from "../../model/tools.js";
import { checkpointEventObject } from "../shared/render/checkpoint.js";
import { goalObject } from "../shared/render/goal.js";
import { repositoryOutputFields } from "../shared/render/repository.js";
import { toExecItem } from "./render/exec-items.js";

export { HIDDEN_ITEM_TYPES } from "./render/exec-items.js";

const secs = (t: number) => Math.floor(t);

export function agentObject(a: AgentRecord) {
  return {
    id: a.id,
    object: "agent",
    model: a.model,
    instructions: a.instructions ?? "",
    tools: publicTools(a.tools),
    name: a.name ?? "",
    metadata: a.metadata,
    approval_policy: settingsOf(a.extra).approval_policy,
    created_at: secs(a.created_at),
  };
}

export function usageObject(u: Usage) {
  return {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    cached_input_tokens: u.cached_input_tokens,
    reasoning_output_tokens: u.reasoning_output_tokens,
    total_tokens: u.total_tokens,
  };
}

/** The original service reported a session whose last turn failed as `failed` (it still accepts new turns). */
export function templateStatus(s: SessionRecord): string {
  return s.status === "idle" && s.error ? "failed" : s.status;
}

export function sessionObject(s: SessionRecord) {
  return {
    id: s.id,
    object: "session",
    status: templateStatus(s),
    model: s.model,
    instructions: s.instructions ?? "",
    tools: publicTools(s.tools),
    created_at: secs(s.created_at),
    metadata: s.metadata,
    approval_policy: settingsOf(s.extra).approval_policy,
    required_actions: s.required_actions.map(actionObject),
  };
}

/** An item as the template's /items listed it: the completed-item event wrapper. */
export function itemObject(i: ItemRecord): Record<string, unknown> | null {
  const item = toExecItem(i.data);
  return item ? { type: "item.completed", turn_id: i.turn_id, item } : null;
}

/** GET session: the session plus its last 5 items as `output` and summed `usage`. */
export function sessionWithOutput(s: SessionRecord, lastItems: ItemRecord[]) {
  const output = lastItems.flatMap((i) => {
    const o = itemObject(i);
    return o ? [o] : [];
  });
  return { ...sessionObject(s), output: output.slice(-5), usage: usageObject(s.usage) };
}

export interface SseFrame {
  event: string;
  data: Record<string, unknown>;
}

/** Renders one log event; null for events the template dialect does not show. */
export function renderEvent(e: EventRecord): SseFrame | null {
  const session_id = e.session_id;
  switch (e.type) {
    case "session.created":
      return { event: "agent.session.created", data: sessionObject(e.data.session) };
    case "turn.started":
      return {
        event: "agent.session.turn.started",
        data: {
          turn_id: e.turn_id,
          session_id,
          // A subagent's turn (this server's extension); the session's own turns have none.
          ...(e.data.turn.subagent_id ? { subagent_id: e.data.turn.subagent_id } : {}),
        },
      };
    case "item.started":
    case "item.completed": {
      const item = toExecItem(e.data.item);
      if (!item) return null;
      const event =
        e.type === "item.started" ? "agent.session.output_item.added" : "agent.session.output_item.done";
      return { event, data: { type: event, session_id, turn_id: e.turn_id, item } };
    }
    case "item.delta": {
      const event =
        e.data.kind === "agent_message"
          ? "agent.session.output_text.delta"
          : e.data.kind === "reasoning"
            ? "agent.session.reasoning.delta"
            : "agent.session.command_output.delta";
      return {
        event,
        data: { type: event, session_id, turn_id: e.turn_id, item_id: e.data.item_id, delta: e.data.delta },
      };
    }
    case "turn.completed": {
      const usage = e.data.turn.usage;
      return {
        event: "agent.session.turn.completed",
        data: {
          turn_id: e.turn_id,
          session_id,
          status: "completed",
          usage: usage ? usageObject(usage) : null,
        },
      };
    }
    case "turn.failed":
    case "turn.cancelled": {
      const turn = e.data.turn;
      const event = e.type === "turn.failed" ? "agent.session.turn.failed" : "agent.session.turn.cancelled";
      return {
        event,
        data: {
          turn_id: e.turn_id,
          session_id,
          status: turn.status,
          error: { message: turn.error?.message ?? turn.status, code: turn.error?.code ?? null },
        },
      };
    }
    case "checkpoint.created":
      return {
        event: "agent.session.checkpoint.created",
        data: {
          type: "agent.session.checkpoint.created",
          session_id,
          turn_id: e.turn_id ?? e.data.checkpoint.turn_id,
          checkpoint: checkpointEventObject(e.data.checkpoint),
        },
      };
    case "repository.output":
      return {
        event: "agent.session.repository.output",
        data: {
          type: "agent.session.repository.output",
          session_id,
          turn_id: e.turn_id,
          output: { id: e.data.item.id, ...repositoryOutputFields(e.data.item) },
        },
      };
    case "goal.updated":
      return {
        event: "agent.session.goal.updated",
        data: {
          session_id,
          turn_id: e.turn_id,
          goal: e.data.goal ? goalObject(e.data.goal, e.created_at) : null,
        },
      };
    case "subagent.updated":
      return {
        event: `agent.session.subagent.${e.data.change}`,
        data: { session_id, subagent: e.data.subagent },
      };
    case "environment.updated":
      return {
        event: `agent.session.environment.${e.data.environment.status}`,
        data: { session_id, turn_id: e.turn_id, environment: e.data.environment },
      };
    case "mcp_server.status":
      return {
        event: "agent.session.mcp_server.status",
        data: { session_id, turn_id: e.turn_id, ...e.data },
      };
    case "action.required":
      return {
        event: "agent.session.action.required",
        data: { session_id, turn_id: e.turn_id, action: actionObject(e.data.action) },
      };
    case "action.resolved":
      return {
        event: "agent.session.action.resolved",
        data: {
          session_id,
          turn_id: e.turn_id,
          action_id: e.data.action_id,
          type: e.data.action_type,
          answer: e.data.answer,
        },
      };
    case "server_request.answered":
      return {
        event: "agent.session.approval.answered",
        data: { session_id, turn_id: e.turn_id, ...e.data },
      };
    default:
      return null;
  }
}

/**
 * A required action as the template dialect shows it (answered by `POST /v1/agents/sessions/{id}/actions/{id}`).
 */
export function actionObject(a: RequiredAction) {
  return a.type === "function_call"
    ? { id: a.id, type: a.type, turn_id: a.turn_id, call_id: a.id, name: a.name, arguments: a.arguments }
    : {
        id: a.id,
        type: a.type,
        turn_id: a.turn_id,
        kind: a.kind,
        item_id: a.item_id,
        message: a.message,
        details: a.details,
        decisions: ["approve", "approve_for_session", "deny", "cancel"],
      };
}

export function errorBody(message: string, type: string) {
  return { error: message, type };
}

/** The data of the last frame (`event: error`) of a stream the server ends (its API key was revoked). */
export function streamEndedError(reason: EndReason) {
  return errorBody(STREAM_ENDED[reason], "AuthError");
}

const STREAM_ENDED: Record<EndReason, string> = {
  revoked: "The API key this stream was opened with was revoked; this stream has been closed",
};
