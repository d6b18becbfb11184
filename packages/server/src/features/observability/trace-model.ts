/**
 * A turn's trace, built from its stored events alone (so it is the same after a restart and on any instance): one
 * root span for the turn and one child span per engine item (message, reasoning, command, file change, tool and MCP
 * calls…), with the times the events were stored. Ids are derived from the session, turn and item ids, so a trace
 * read again (or exported live) always has the same trace and span ids.
 */
import { createHash } from "node:crypto";
import type { EventRecord, StoredItem, TurnRecord } from "../../store/types.js";

export type AttributeValue = string | number | boolean | string[];
export type Attributes = Record<string, AttributeValue>;

/** OTLP status codes (the same numbers in the OpenTelemetry API). */
export const StatusCodes = { unset: 0, ok: 1, error: 2 } as const;

export interface SpanEventData {
  name: string;
  /** Unix seconds. */
  time: number;
  attributes: Attributes;
}

export interface SpanLinkData {
  traceId: string;
  spanId: string;
  attributes: Attributes;
}

/** A finished span, independent of any SDK (converted for OTLP JSON and for the exporter). */
export interface SpanData {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: "internal" | "server";
  /** Unix seconds (fractional). */
  start: number;
  end: number;
  attributes: Attributes;
  status: { code: (typeof StatusCodes)[keyof typeof StatusCodes]; message?: string };
  events: SpanEventData[];
  links: SpanLinkData[];
}

const hex = (input: string, digits: number) =>
  createHash("sha256").update(input).digest("hex").slice(0, digits);

/** The trace of a turn: stable, derived from its session and turn ids. */
export const turnTraceId = (sessionId: string, turnId: string) => hex(`trace:${sessionId}:${turnId}`, 32);
export const turnSpanId = (sessionId: string, turnId: string) => hex(`turn:${sessionId}:${turnId}`, 16);
/** `occurrence` tells apart an item id the engine reported more than once in a turn (0: the first). */
export const itemSpanId = (sessionId: string, turnId: string, itemId: string, occurrence = 0) =>
  hex(`item:${sessionId}:${turnId}:${itemId}${occurrence ? `#${occurrence}` : ""}`, 16);

/** Long values (commands) are cut: a trace is for finding things, not for keeping them. */
const MAX_TEXT = 1024;
const MAX_PATHS = 50;
const cut = (s: string) => (s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT)}…` : s);

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The span name of an item: its kind, in the API's words. */
function itemSpanName(item: StoredItem): string {
  switch (item.type) {
    case "dynamicToolCall":
      return "function_call";
    case "clientToolResult":
      return "function_call_output";
    default:
      return snake(item.type);
  }
}

type Status = SpanData["status"];
const UNSET: Status = { code: StatusCodes.unset };

/** What an item's span says about it (never message or output text: only what it did and how it ended). */
function describeItem(item: StoredItem): { attributes: Attributes; status: Status } {
  const attributes: Attributes = { "agent.item.id": item.id, "agent.item.type": item.type };
  let status: Status = UNSET;
  const failed = (message: string): Status => ({ code: StatusCodes.error, message });
  switch (item.type) {
    case "commandExecution":
      attributes["gen_ai.operation.name"] = "execute_tool";
      attributes["gen_ai.tool.name"] = "shell";
      attributes["process.command_line"] = cut(item.command);
      attributes["agent.command.cwd"] = item.cwd;
      attributes["agent.item.status"] = item.status;
      if (item.exitCode !== null) attributes["process.exit.code"] = item.exitCode;
      if (item.durationMs !== null) attributes["agent.command.duration_ms"] = item.durationMs;
      if (item.status === "failed" || item.status === "declined") {
        status = failed(item.exitCode !== null ? `exit code ${item.exitCode}` : `command ${item.status}`);
      }
      break;
    case "fileChange":
      attributes["agent.item.status"] = item.status;
      attributes["agent.file_change.paths"] = item.changes.slice(0, MAX_PATHS).map((c) => c.path);
      if (item.status === "failed" || item.status === "declined") status = failed(`patch ${item.status}`);
      break;
    case "mcpToolCall":
      attributes["gen_ai.operation.name"] = "execute_tool";
      attributes["gen_ai.tool.name"] = item.tool;
      attributes["gen_ai.tool.call.id"] = item.id;
      attributes["agent.mcp.server"] = item.server;
      attributes["agent.item.status"] = item.status;
      if (item.durationMs !== null) attributes["agent.tool.duration_ms"] = item.durationMs;
      if (item.error) status = failed(cut(item.error.message));
      else if (item.status === "failed") status = failed("MCP tool call failed");
      break;
    case "dynamicToolCall":
      attributes["gen_ai.operation.name"] = "execute_tool";
      attributes["gen_ai.tool.name"] = item.namespace ? `${item.namespace}.${item.tool}` : item.tool;
      attributes["gen_ai.tool.call.id"] = item.id;
      attributes["agent.item.status"] = item.status;
      if (item.durationMs !== null) attributes["agent.tool.duration_ms"] = item.durationMs;
      if (item.success === false || item.status === "failed") status = failed("function call failed");
      break;
    case "clientToolResult":
      attributes["gen_ai.tool.call.id"] = item.callId;
      attributes["agent.tool.success"] = item.success;
      if (!item.success) status = failed("the client reported a failure");
      break;
    case "agentMessage":
      attributes["agent.message.length"] = item.text.length;
      break;
    case "collabAgentToolCall":
      attributes["gen_ai.operation.name"] = "execute_tool";
      attributes["gen_ai.tool.name"] = item.tool;
      attributes["agent.item.status"] = item.status;
      break;
    default:
      break;
  }
  return { attributes, status };
}

/** The events of a span for log events that are not items. */
function turnSpanEvent(e: EventRecord): SpanEventData | null {
  const at = (name: string, attributes: Attributes = {}) => ({ name, time: e.created_at, attributes });
  switch (e.type) {
    case "turn.queued":
      return at("turn.queued");
    case "turn.steered":
      return at("turn.steered", { "agent.input.items": e.data.input.length });
    case "action.required": {
      const a = e.data.action;
      return at("action.required", {
        "agent.action.id": a.id,
        "agent.action.type": a.type,
        ...(a.type === "function_call" ? { "gen_ai.tool.name": a.name } : { "agent.approval.kind": a.kind }),
      });
    }
    case "action.resolved":
      return at("action.resolved", {
        "agent.action.id": e.data.action_id,
        "agent.action.type": e.data.action_type,
        "agent.action.answered": e.data.answer !== null,
      });
    case "server_request.answered":
      return at("engine_request.answered", {
        "agent.engine_request.method": e.data.request_method,
        "agent.engine_request.defaulted": e.data.defaulted,
      });
    case "mcp_server.status":
      return at("mcp_server.status", {
        "agent.mcp.server": e.data.server_label,
        "agent.mcp.status": e.data.status,
        ...(e.data.error ? { "agent.mcp.error": cut(e.data.error) } : {}),
      });
    case "goal.updated":
      return e.data.goal
        ? at("goal.updated", {
            "agent.goal.status": e.data.goal.status,
            "agent.goal.status_reason": e.data.goal.status_reason,
          })
        : at("goal.cleared");
    default:
      return null;
  }
}

const TERMINAL = new Set(["turn.completed", "turn.failed", "turn.cancelled"]);

export interface TurnTraceSource {
  sessionId: string;
  /** The (root) turn as stored once it ended. */
  turn: TurnRecord;
  /**
   * The turn's events in log order: those with its turn id, and those of the subagent turns that ran during it
   * (their own turn ids, from their `turn.started`).
   */
  events: EventRecord[];
  /** Links of the turn span (e.g. the request that started it; known only live). */
  links?: SpanLinkData[];
}

/** What a turn span says about its turn (the root's and a subagent's). */
function describeTurn(sessionId: string, turn: TurnRecord): { attributes: Attributes; status: Status } {
  const attributes: Attributes = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.conversation.id": sessionId,
    "agent.session.id": sessionId,
    "agent.turn.id": turn.id,
    "agent.turn.status": turn.status,
    "agent.turn.goal": turn.goal !== null,
  };
  if (turn.subagent_id) attributes["agent.subagent.id"] = turn.subagent_id;
  if (turn.usage) {
    attributes["gen_ai.usage.input_tokens"] = turn.usage.input_tokens;
    attributes["gen_ai.usage.output_tokens"] = turn.usage.output_tokens;
    attributes["agent.usage.cached_input_tokens"] = turn.usage.cached_input_tokens;
    attributes["agent.usage.reasoning_output_tokens"] = turn.usage.reasoning_output_tokens;
    attributes["agent.usage.total_tokens"] = turn.usage.total_tokens;
  }
  let status: Status = UNSET;
  if (turn.status === "completed") status = { code: StatusCodes.ok };
  else if (turn.status === "failed") {
    status = { code: StatusCodes.error, message: turn.error?.message ?? "turn failed" };
  }
  if (turn.error) {
    attributes["error.type"] = turn.error.code;
    attributes["agent.turn.error"] = cut(turn.error.message);
  }
  return { attributes, status };
}

/** A turn span being built: the root's, or a subagent turn's (a child of the root). */
interface TurnSpan {
  spanId: string;
  start: number;
  record: TurnRecord;
  /** When its terminal event was stored (null: not before the root ended). */
  end: number | null;
  events: SpanEventData[];
  order: number;
}

/**
 * The spans of an ended turn: the turn (root) first, then, in start order, its items and the turns of subagents
 * that ran during it (children of the root; their items are their children). Times come from the stored events
 * (the turn record's where an event is missing); every span lies within the root's.
 */
export function turnSpans(src: TurnTraceSource): SpanData[] {
  const { sessionId, turn, events } = src;
  const traceId = turnTraceId(sessionId, turn.id);
  const rootId = turnSpanId(sessionId, turn.id);
  const own = (e: EventRecord) => e.turn_id === turn.id;
  const startedEvent = events.find((e) => own(e) && e.type === "turn.started");
  const endEvent = events.find((e) => own(e) && TERMINAL.has(e.type));
  const start = startedEvent?.created_at ?? turn.started_at ?? turn.created_at;
  const end = Math.max(
    start,
    endEvent?.created_at ?? turn.completed_at ?? events.at(-1)?.created_at ?? start,
  );
  const within = (t: number) => Math.min(end, Math.max(start, t));

  const root: TurnSpan = { spanId: rootId, start, record: turn, end, events: [], order: 0 };
  /** Turn spans by turn id: the root, and subagent turns once their start is seen. */
  const turnsById = new Map<string, TurnSpan>([[turn.id, root]]);

  interface Open {
    spanId: string;
    parent: string;
    start: number;
    item: StoredItem;
    order: number;
  }
  /** Open items and ids seen, by turn id and item id. */
  const open = new Map<string, Open>();
  const seen = new Map<string, number>();
  const spans: Array<SpanData & { order: number }> = [];
  let model: string | null = null;
  let agentId: string | null = null;

  const finish = (o: Open, item: StoredItem, at: number, state: "completed" | "incomplete") => {
    const d = describeItem(item);
    spans.push({
      order: o.order,
      traceId,
      spanId: o.spanId,
      parentSpanId: o.parent,
      name: itemSpanName(item),
      kind: "internal",
      start: o.start,
      end: Math.max(o.start, within(at)),
      attributes: { ...d.attributes, "agent.item.state": state },
      status: d.status,
      events: [],
      links: [],
    });
  };
  const opening = (owner: string, ownerSpan: TurnSpan, item: StoredItem, at: number, seq: number): Open => {
    const key = `${owner}\u0000${item.id}`;
    const n = seen.get(key) ?? 0;
    seen.set(key, n + 1);
    return {
      spanId: itemSpanId(sessionId, owner, item.id, n),
      parent: ownerSpan.spanId,
      start: Math.max(ownerSpan.start, within(at)),
      item,
      order: seq,
    };
  };

  for (const e of events) {
    const owner = e.turn_id;
    if (!owner) continue;
    if (e.type === "turn.started" && owner !== turn.id && !turnsById.has(owner)) {
      turnsById.set(owner, {
        spanId: turnSpanId(sessionId, owner),
        start: within(e.created_at),
        record: e.data.turn,
        end: null,
        events: [],
        order: e.seq,
      });
      continue;
    }
    const ownerSpan = turnsById.get(owner);
    if (!ownerSpan) continue;
    switch (e.type) {
      case "turn.started":
        break;
      case "turn.completed":
      case "turn.failed":
      case "turn.cancelled":
        if (ownerSpan !== root) {
          ownerSpan.record = e.data.turn;
          ownerSpan.end = within(e.created_at);
        }
        break;
      case "item.started": {
        const key = `${owner}\u0000${e.data.item.id}`;
        if (open.has(key)) break;
        open.set(key, opening(owner, ownerSpan, e.data.item, e.created_at, e.seq));
        break;
      }
      case "item.completed": {
        const item = e.data.item;
        const key = `${owner}\u0000${item.id}`;
        let o = open.get(key);
        if (o) open.delete(key);
        else {
          // Completed without a start (e.g. recorded only at its end): it starts when the engine says it did.
          const startedMs = "startedAtMs" in item ? item.startedAtMs : null;
          o = opening(
            owner,
            ownerSpan,
            item,
            typeof startedMs === "number" ? startedMs / 1000 : e.created_at,
            e.seq,
          );
        }
        finish(o, item, e.created_at, "completed");
        break;
      }
      case "session.created":
      case "session.status":
        model = e.data.session.model;
        agentId = e.data.session.agent_id;
        break;
      default: {
        const ev = turnSpanEvent(e);
        if (ev) ownerSpan.events.push({ ...ev, time: within(ev.time) });
      }
    }
  }
  // Items and subagent turns the root ended before: they end with it.
  for (const o of open.values()) finish(o, o.item, end, "incomplete");
  for (const t of turnsById.values()) {
    if (t === root) continue;
    const d = describeTurn(sessionId, t.record);
    spans.push({
      order: t.order,
      traceId,
      spanId: t.spanId,
      parentSpanId: rootId,
      name: "subagent_turn",
      kind: "internal",
      start: t.start,
      end: Math.max(t.start, t.end ?? end),
      attributes: { ...d.attributes, ...(t.end === null ? { "agent.turn.ended_with_root": true } : {}) },
      status: d.status,
      events: t.events,
      links: [],
    });
  }
  spans.sort((a, b) => a.order - b.order);

  const d = describeTurn(sessionId, turn);
  if (model) d.attributes["gen_ai.request.model"] = model;
  if (agentId) d.attributes["gen_ai.agent.id"] = agentId;
  const rootSpan: SpanData = {
    traceId,
    spanId: rootId,
    parentSpanId: null,
    name: "turn",
    kind: "internal",
    start,
    end,
    attributes: d.attributes,
    status: d.status,
    events: root.events,
    links: src.links ?? [],
  };
  return [rootSpan, ...spans.map(({ order: _, ...span }) => span)];
}
