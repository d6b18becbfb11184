/**
 * What a running turn waits for from the client. The model called one of the client's function tools, or the
 * engine asks before it acts (a command, a file change, an MCP tool call) or an MCP server asks the user something:
 * each such request of the engine becomes a required action. It is stored on the session (status
 * `requires_action`) and logged after the item it is about (so a client reacting to the item can already answer),
 * and the engine's request is answered when the client answers, or refused when the turn ends without an answer.
 */
import type { Protocol, ServerRequest } from "@codex-agent-api/codex";
import { defaultServerRequestResponse } from "@codex-agent-api/codex";
import { badRequest } from "../../kernel/errors.js";
import { isRecord } from "../../kernel/is-record.js";
import type { ActionAnswer } from "../../model/answers.js";
import { newId } from "../../model/ids.js";
import type { EventHub, LogFn } from "../../platform/stream/hub.js";
import type { HostPaths } from "../../platform/workspace/environment-paths.js";
import type {
  ActionAnswerSummary,
  ApprovalAction,
  ApprovalDecision,
  Queries,
  RequiredAction,
  SessionRecord,
} from "../../store/types.js";
import type { ServerToolAnswer, ServerToolCall } from "../feature.js";

export interface ActionsDeps {
  hub: EventHub;
  now: () => number;
  /** Resolves once the turn's recorder has logged the item (the action must follow it in the log). */
  itemLogged: (itemId: string) => Promise<void>;
  /** Whether the turn's recorder has logged the start of this item (a client may have seen it). */
  itemStarted: (itemId: string) => boolean;
  /** The session's host paths as its clients see them (an approval's `cwd` and `grant_root`). */
  paths: HostPaths;
  /** A tool this server answers itself for the session, by name (its calls are no required actions). */
  serverTool?: (name: string) => ((call: ServerToolCall) => Promise<ServerToolAnswer>) | undefined;
}

/**
 * How long an answer to a call the client saw start may wait for the call to become a required action (the engine
 * asks right after the item starts; a fast client can answer in between).
 */
const REGISTRATION_WAIT_MS = 2000;

interface Pending {
  action: RequiredAction;
  request: ServerRequest;
  respond: (response: unknown) => void;
}

/** Requests of the engine that become required actions (logged as actions, not as answered requests). */
export const ACTION_METHODS: ReadonlySet<string> = new Set([
  "item/tool/call",
  "item/commandExecution/requestApproval",
  "item/fileChange/requestApproval",
  "mcpServer/elicitation/request",
]);

/** The message every SDK retries on (HTTP 400, code `invalid_request_error`): keep it exactly. */
export const unknownPendingCall = (id: string) =>
  badRequest(`Unknown pending tool call: ${id}`, "call_id", "invalid_request_error");

export class TurnActions {
  private readonly pending = new Map<string, Pending>();
  /** Answers that arrived before their action was registered, waiting for it. */
  private readonly early = new Map<string, Array<() => void>>();
  private closed = false;

  constructor(
    private readonly deps: ActionsDeps,
    readonly sessionId: string,
    readonly turnId: string,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  ids(): string[] {
    return [...this.pending.keys()];
  }

  has(actionId: string): boolean {
    return this.pending.has(actionId);
  }

  /**
   * Handles one request of the engine during this turn and resolves with the JSON-RPC response: a required action
   * for the client, or the safe default for requests that are not the client's to answer.
   */
  async request(request: ServerRequest): Promise<unknown> {
    const served = this.serverToolCall(request);
    if (served) return served;
    const action = actionFor(request, this.turnId, this.deps.now(), this.deps.paths);
    if (!action) return defaultServerRequestResponse(request.method);
    if (this.closed) return refusal(request);
    const itemId = action.type === "function_call" ? action.id : action.item_id;
    if (itemId) await this.deps.itemLogged(itemId);
    const answered = new Promise<unknown>((respond) =>
      this.pending.set(action.id, { action, request, respond }),
    );
    await this.deps.hub.commit(this.sessionId, async (tx, log) => {
      const s = await tx.getSession(this.sessionId);
      if (!s) return;
      await this.setActions(tx, log, [...s.required_actions.filter((a) => a.id !== action.id), action]);
      log({ type: "action.required", data: { action } }, { turn_id: this.turnId });
    });
    const early = this.early.get(action.id);
    this.early.delete(action.id);
    for (const wake of early ?? []) wake();
    return answered;
  }

  /** A call of a tool this server answers: its answer as the engine takes it (null: not such a call). */
  private serverToolCall(request: ServerRequest): Promise<unknown> | null {
    if (request.method !== "item/tool/call") return null;
    const params = (request as unknown as Extract<Protocol.ServerRequest, { method: "item/tool/call" }>)
      .params;
    const call = this.deps.serverTool?.(params.tool);
    if (!call) return null;
    const answer = (success: boolean, text: string) => ({
      contentItems: [{ type: "inputText", text }],
      success,
    });
    return call({ callId: params.callId, arguments: params.arguments ?? null }).then(
      (r) => answer(r.success, r.text),
      (err: unknown) => answer(false, `The tool failed: ${err instanceof Error ? err.message : String(err)}`),
    );
  }

  /**
   * The client's answer. 400 when no such action waits (unknown, already answered, or of the other kind; the
   * message for an unknown call is the one the SDKs retry on).
   */
  async answer(actionId: string, answer: ActionAnswer): Promise<void> {
    // A call the client saw start, answered before the engine asked for it: wait until it is an action.
    if (!this.pending.has(actionId) && !this.closed && this.deps.itemStarted(actionId)) {
      await this.registered(actionId);
    }
    const p = this.pending.get(actionId);
    if (!p) throw unknownPendingCall(actionId);
    if (answer.type === "tool_result" && p.action.type !== "function_call") {
      throw badRequest(
        `Required action ${actionId} is an approval request: answer it with an approval result`,
      );
    }
    if (answer.type === "approval_result" && p.action.type !== "approval_request") {
      throw badRequest(`Required action ${actionId} is a function call: answer it with a tool result`);
    }
    this.pending.delete(actionId);
    const summary: ActionAnswerSummary =
      answer.type === "tool_result" ? { success: answer.success } : { decision: answer.decision };
    await this.deps.hub.commit(this.sessionId, async (tx, log) => {
      const s = await tx.getSession(this.sessionId);
      if (!s) return;
      log(
        {
          type: "action.resolved",
          data: { action_id: actionId, action_type: p.action.type, answer: summary },
        },
        { turn_id: this.turnId },
      );
      await this.setActions(
        tx,
        log,
        s.required_actions.filter((a) => a.id !== actionId),
      );
    });
    p.respond(engineResponse(p, answer));
  }

  /** Resolves when the action is registered (stored and logged), or after a while if it never is. */
  private registered(actionId: string): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, REGISTRATION_WAIT_MS);
      timer.unref();
      const list = this.early.get(actionId) ?? [];
      list.push(() => {
        clearTimeout(timer);
        resolve();
      });
      this.early.set(actionId, list);
    });
  }

  /**
   * The turn is ending (cancelled, timed out, failed): no answer will come. Every waiting request of the engine is
   * refused (after an interrupt the engine ignores it anyway); the turn's end clears the stored actions.
   */
  close(): RequiredAction[] {
    this.closed = true;
    for (const wake of [...this.early.values()].flat()) wake();
    this.early.clear();
    const left = [...this.pending.values()];
    this.pending.clear();
    for (const p of left) p.respond(refusal(p.request));
    return left.map((p) => p.action);
  }

  /** Stores the session's actions and its status (`requires_action` while any wait), logging the change. */
  private async setActions(tx: Queries, log: LogFn, actions: RequiredAction[]): Promise<void> {
    const next = await tx.updateSession(this.sessionId, {
      required_actions: actions,
      status: actions.length > 0 ? "requires_action" : "in_progress",
      updated_at: this.deps.now(),
    });
    if (next)
      log({ type: "session.status", data: { session: next as SessionRecord } }, { turn_id: this.turnId });
  }
}

/** The required action for a request of the engine, or null when the client is not asked. */
function actionFor(
  request: ServerRequest,
  turnId: string,
  now: number,
  paths: HostPaths,
): RequiredAction | null {
  const r = request as unknown as Protocol.ServerRequest;
  switch (r.method) {
    case "item/tool/call":
      return {
        type: "function_call",
        id: r.params.callId,
        turn_id: turnId,
        name: r.params.tool,
        arguments: JSON.stringify(r.params.arguments ?? {}),
        created_at: now,
      };
    case "item/commandExecution/requestApproval":
      return approval(turnId, now, "command_execution", r.params.itemId, {
        message: r.params.reason ?? `Run \`${r.params.command ?? ""}\``,
        details: {
          command: r.params.command ?? null,
          cwd: paths.mapOptional(r.params.cwd ?? null),
          reason: r.params.reason ?? null,
        },
      });
    case "item/fileChange/requestApproval":
      return approval(turnId, now, "file_change", r.params.itemId, {
        message: r.params.reason ?? "Apply file changes",
        details: {
          reason: r.params.reason ?? null,
          grant_root: paths.mapOptional(r.params.grantRoot ?? null),
        },
      });
    case "mcpServer/elicitation/request": {
      const p = r.params;
      const meta = isRecord(p._meta) ? p._meta : {};
      if (meta.codex_approval_kind === "mcp_tool_call") {
        return approval(turnId, now, "mcp_tool_call", null, {
          message: p.message,
          details: {
            server_label: p.serverName,
            tool: meta.tool_name ?? null,
            arguments: meta.tool_params ?? null,
          },
        });
      }
      return approval(turnId, now, "mcp_elicitation", null, {
        message: p.message,
        details:
          p.mode === "url"
            ? { server_label: p.serverName, mode: "url", url: p.url }
            : { server_label: p.serverName, mode: "form", requested_schema: p.requestedSchema },
      });
    }
    default:
      return null;
  }
}

function approval(
  turnId: string,
  now: number,
  kind: ApprovalAction["kind"],
  itemId: string | null,
  what: { message: string; details: Record<string, unknown> },
): ApprovalAction {
  return {
    type: "approval_request",
    id: newId("act_"),
    turn_id: turnId,
    kind,
    item_id: itemId,
    ...what,
    created_at: now,
  };
}

const COMMAND_DECISION: Record<ApprovalDecision, string> = {
  approve: "accept",
  approve_for_session: "acceptForSession",
  deny: "decline",
  cancel: "cancel",
};

/** The JSON-RPC response the engine expects for a client's answer. */
function engineResponse(p: Pending, answer: ActionAnswer): unknown {
  if (answer.type === "tool_result") {
    const parts: Protocol.v2.DynamicToolCallOutputContentItem[] =
      typeof answer.output === "string"
        ? [{ type: "inputText", text: answer.output }]
        : (answer.output ?? []).map((c) =>
            c.type === "input_text"
              ? { type: "inputText", text: c.text }
              : { type: "inputImage", imageUrl: c.image_url },
          );
    if (!answer.success)
      return {
        contentItems: [{ type: "inputText", text: answer.error ?? "The tool failed." }],
        success: false,
      };
    return { contentItems: parts.length > 0 ? parts : [{ type: "inputText", text: "" }], success: true };
  }
  switch (p.request.method) {
    case "mcpServer/elicitation/request": {
      const action =
        answer.decision === "deny" ? "decline" : answer.decision === "cancel" ? "cancel" : "accept";
      return {
        action,
        content: action === "accept" ? (answer.content ?? null) : null,
        _meta: answer.decision === "approve_for_session" ? { persist: "session" } : null,
      };
    }
    default:
      return { decision: COMMAND_DECISION[answer.decision] };
  }
}

/** What the engine gets when nobody will answer (the turn is ending). */
function refusal(request: ServerRequest): unknown {
  if (request.method === "item/tool/call") {
    return {
      contentItems: [{ type: "inputText", text: "The turn ended before the client answered." }],
      success: false,
    };
  }
  return request.method === "mcpServer/elicitation/request"
    ? { action: "cancel", content: null, _meta: null }
    : defaultServerRequestResponse(request.method);
}
