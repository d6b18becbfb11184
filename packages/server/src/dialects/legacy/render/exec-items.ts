/**
 * Engine ThreadItems rendered the way `codex exec --json` reports items (the template dialect passes these
 * through: `{id, type:"agent_message", text}`, `command_execution`, `file_change`, …).
 */
import type { StoredItem } from "../../../model/records.js";
import { toolResultOutput } from "../../shared/render/tool-output.js";

function snake(type: string): string {
  return type.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Engine item types the template never showed (the user's own message). */
export const HIDDEN_ITEM_TYPES: readonly string[] = ["userMessage"];

/** null for items the template never showed. */
export function toExecItem(item: StoredItem): Record<string, unknown> | null {
  switch (item.type) {
    case "userMessage":
      return null;
    case "agentMessage":
      return { id: item.id, type: "agent_message", text: item.text ?? "" };
    case "reasoning":
      return {
        id: item.id,
        type: "reasoning",
        text: [...(item.summary ?? []), ...(item.content ?? [])].join("\n"),
      };
    case "commandExecution":
      return {
        id: item.id,
        type: "command_execution",
        command: item.command,
        aggregated_output: item.aggregatedOutput ?? "",
        exit_code: item.exitCode ?? null,
        status: snake(String(item.status ?? "")),
      };
    case "fileChange":
      return {
        id: item.id,
        type: "file_change",
        changes: (item.changes ?? []).map((c) => ({ path: c.path, kind: c.kind.type })),
        status: snake(String(item.status ?? "")),
      };
    case "mcpToolCall":
      return {
        id: item.id,
        type: "mcp_tool_call",
        server: item.server,
        tool: item.tool,
        arguments: item.arguments,
        result: item.result ?? null,
        error: item.error ?? null,
        status: snake(String(item.status ?? "")),
      };
    case "webSearch":
      return { id: item.id, type: "web_search", query: item.query };
    case "dynamicToolCall":
      return {
        id: item.id,
        type: "function_call",
        call_id: item.id,
        name: item.tool,
        arguments: JSON.stringify(item.arguments ?? {}),
        status: snake(String(item.status ?? "")),
      };
    case "clientToolResult": {
      const { output, error } = toolResultOutput(item);
      return { id: item.id, type: "function_call_output", call_id: item.callId, output, error };
    }
    default: {
      const { type, ...rest } = item;
      return { ...rest, type: snake(type) };
    }
  }
}
