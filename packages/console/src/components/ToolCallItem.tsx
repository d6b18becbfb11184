import type { Item } from "../api/types";
import { StatusBadge } from "./StatusBadge";

type ToolItem = Extract<Item, { type: "function_call" | "mcp_call" | "function_call_output" }>;

const show = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v, null, 2));

/** The files an `apply_patch` call changes (this server reports file changes as that function call). */
function changedFiles(args: unknown): Array<{ path: string; kind: string }> | null {
  try {
    const parsed: unknown = typeof args === "string" ? JSON.parse(args) : args;
    const changes = (parsed as { changes?: unknown } | null)?.changes;
    if (!Array.isArray(changes)) return null;
    return changes.map((c: { path?: unknown; kind?: unknown }) => ({
      path: String(c.path ?? "?"),
      kind: typeof c.kind === "string" ? c.kind : show(c.kind ?? ""),
    }));
  } catch {
    return null;
  }
}

/** Function calls, MCP calls, file changes and tool outputs. */
export function ToolCallItem(props: { item: ToolItem }) {
  const { item } = props;
  if (item.type === "function_call_output") {
    return (
      <div className="item tool" data-item-type={item.type}>
        <div className="who">
          Tool output <StatusBadge status={item.status} />
        </div>
        <pre className="output">{show(item.error ?? item.output)}</pre>
      </div>
    );
  }
  const files =
    item.type === "function_call" && item.name === "apply_patch" ? changedFiles(item.arguments) : null;
  if (files) {
    return (
      <div className="item files" data-item-type="file_change">
        <div className="who">
          File changes <StatusBadge status={item.status} />
        </div>
        <ul>
          {files.map((f) => (
            <li key={f.path}>
              <code>{f.path}</code> <span className="muted">{f.kind}</span>
            </li>
          ))}
        </ul>
      </div>
    );
  }
  const name = item.type === "mcp_call" ? `${item.server_label}.${item.name}` : item.name;
  return (
    <div className="item tool" data-item-type={item.type}>
      <div className="who">
        {item.type === "mcp_call" ? "MCP" : "Tool"} <code>{name}</code> <StatusBadge status={item.status} />
      </div>
      <pre className="args">{show(item.arguments)}</pre>
      {item.type === "mcp_call" && (item.output !== null || item.error !== null) && (
        <pre className="output">{show(item.error ?? item.output)}</pre>
      )}
    </div>
  );
}
