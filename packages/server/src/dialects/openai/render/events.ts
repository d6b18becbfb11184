/** The official stream events (`agent.session.*`) of a logged event, and the events of a stream's state and end. */
import type {
  AgentOutputItem,
  AgentSessionErrorEvent,
  AgentSessionEvent,
} from "openai/resources/beta/agents/agents";
import type { EventRecord, SessionRecord } from "../../../model/records.js";
import type { EndReason } from "../../../model/streams.js";
import { checkpointEventObject } from "../../shared/render/checkpoint.js";
import { goalObject } from "../../shared/render/goal.js";
import { repositoryOutputFields } from "../../shared/render/repository.js";
import { environmentEventObject } from "./environments.js";
import { finishedState, toOfficialItem } from "./items.js";
import { sessionObject, subagentObject, turnObject, usageObject } from "./objects.js";

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
