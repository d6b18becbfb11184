/**
 * Engine ThreadItems rendered the way `codex exec --json` reports items (the template dialect passes these
 * through: `{id, type:"agent_message", text}`, `command_execution`, `file_change`, …).
 */
type Item = Record<string, unknown> & { id: string; type: string };

function snake(type: string): string {
  return type.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Engine item types the template never showed (the user's own message). */
export const HIDDEN_ITEM_TYPES: readonly string[] = ["userMessage"];

/** null for items the template never showed. */
export function toExecItem(raw: Record<string, unknown>): Record<string, unknown> | null {
  const item = raw as Item;
  if (HIDDEN_ITEM_TYPES.includes(item.type)) return null;
  switch (item.type) {
    case "agentMessage":
      return { id: item.id, type: "agent_message", text: item.text ?? "" };
    case "reasoning": {
      const summary = Array.isArray(item.summary) ? (item.summary as string[]) : [];
      const content = Array.isArray(item.content) ? (item.content as string[]) : [];
      return { id: item.id, type: "reasoning", text: [...summary, ...content].join("\n") };
    }
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
        changes: Array.isArray(item.changes)
          ? (item.changes as Array<Record<string, unknown>>).map((c) => ({
              path: c.path,
              kind: kindOf(c.kind),
            }))
          : [],
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
    default: {
      const { type, ...rest } = item;
      return { ...rest, type: snake(type) };
    }
  }
}

function kindOf(kind: unknown): unknown {
  if (kind && typeof kind === "object" && "type" in kind) return (kind as { type: unknown }).type;
  return kind;
}
