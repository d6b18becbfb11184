import type { Item } from "../api/types";
import { DiffText } from "./DiffText";
import { StatusBadge } from "./StatusBadge";

type ToolItem = Extract<Item, { type: "function_call" | "mcp_call" | "function_call_output" }>;

const show = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v, null, 2));

interface FileChange {
  path: string;
  kind: string;
  movedTo: string | null;
  diff: string;
}

/**
 * The files an `apply_patch` call changes (this server reports the engine's file changes as that function call;
 * each change has its path, its kind — add, delete, update — and its diff: the new content for an added file).
 */
function changedFiles(args: unknown): FileChange[] | null {
  try {
    const parsed: unknown = typeof args === "string" ? JSON.parse(args) : args;
    const changes = (parsed as { changes?: unknown } | null)?.changes;
    if (!Array.isArray(changes)) return null;
    return changes.map((c: { path?: unknown; kind?: unknown; diff?: unknown }) => {
      const kind = c.kind as { type?: unknown; move_path?: unknown } | string | undefined;
      const type = typeof kind === "string" ? kind : typeof kind?.type === "string" ? kind.type : "change";
      const movedTo = typeof kind === "object" && typeof kind.move_path === "string" ? kind.move_path : null;
      return {
        path: String(c.path ?? "?"),
        kind: type,
        movedTo,
        diff: typeof c.diff === "string" ? c.diff : "",
      };
    });
  } catch {
    return null;
  }
}

function FileDiff(props: { change: FileChange }) {
  const { change } = props;
  return (
    <li data-path={change.path}>
      <div>
        <code>{change.path}</code>
        {change.movedTo && (
          <>
            {" "}
            → <code>{change.movedTo}</code>
          </>
        )}{" "}
        <span className="muted">{change.kind}</span>
      </div>
      {change.diff && (
        <DiffText
          text={change.diff}
          mode={change.kind === "add" ? "add" : change.kind === "delete" ? "delete" : "unified"}
        />
      )}
    </li>
  );
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
            <FileDiff key={f.path} change={f} />
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
