/** Session items in the official shapes (messages, calls, outputs, subagent calls), from stored engine items. */
import type {
  AgentFunctionCallStatus,
  AgentOutputItemStatus,
  AgentSessionAssistantMessage,
  AgentSessionItem,
  AgentSessionMessageContent,
  WebSearchAction,
} from "openai/resources/beta/agents/agents";
import type { ItemRecord, ItemState, StoredItem } from "../../../model/records.js";
import { subagentIdOf } from "../../../model/subagents.js";
import { repositoryOutputFields } from "../../shared/render/repository.js";
import { toolResultOutput } from "../../shared/render/tool-output.js";

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

/** A completed engine item's state: items the engine reports failed or declined stay visible as such. */
export function finishedState(item: StoredItem): ItemState {
  return "status" in item && (item.status === "failed" || item.status === "declined")
    ? "incomplete"
    : "completed";
}
