import type { Item } from "../api/types";
import type { Entry } from "../state/timeline";
import { CommandItem } from "./CommandItem";
import { ToolCallItem } from "./ToolCallItem";

type MessageItem = Extract<Item, { type: "message" }>;

function messageText(item: MessageItem): string {
  return item.content
    .map((c) => {
      if (c.type === "input_text" || c.type === "output_text") return c.text;
      if (c.type === "input_image") return "[image]";
      return "";
    })
    .join("");
}

/** This server's own item: what it committed (and pushed) of a repository of the session's environment. */
interface Output {
  branch: string;
  commit: string;
  url: string;
  push: "pushed" | "failed" | "not_requested";
  error: string | null;
  stats: { files: number; insertions: number; deletions: number };
}

function RepositoryOutput(props: { item: Output }) {
  const { item } = props;
  const what =
    item.push === "pushed" ? "Pushed" : item.push === "failed" ? "Committed, push failed:" : "Committed";
  return (
    <div className="item tool" data-item-type="repository_output" data-push={item.push}>
      <div className="who">Repository</div>
      <div className="text">
        {what} {item.push === "failed" ? item.error : null} <code>{item.branch}</code> @{" "}
        <code>{item.commit.slice(0, 12)}</code> ({item.stats.files} files, +{item.stats.insertions} −
        {item.stats.deletions}) — {item.url}
      </div>
    </div>
  );
}

/** One item of the timeline, drawn by its type. */
export function ItemView(props: { entry: Entry }) {
  const { item, live } = props.entry;
  switch (item.type) {
    case "message": {
      const text = messageText(item) || live;
      return (
        <div className={`item message ${item.role}`} data-item-type="message" data-role={item.role}>
          <div className="who">{item.role === "user" ? "You" : "Agent"}</div>
          <div className="text">{text || <span className="muted">…</span>}</div>
        </div>
      );
    }
    case "reasoning": {
      const text = item.summary.map((s) => s.text).join("\n") || live;
      return (
        <div className="item reasoning" data-item-type="reasoning">
          <div className="who">Reasoning</div>
          <div className="text muted">{text || "…"}</div>
        </div>
      );
    }
    case "command_execution":
      return <CommandItem item={item} live={live} />;
    case "function_call":
    case "mcp_call":
    case "function_call_output":
      return <ToolCallItem item={item} />;
    case "web_search_call":
      return (
        <div className="item tool" data-item-type="web_search_call">
          <div className="who">Web search</div>
          <code>
            {item.action?.type === "search" ? (item.action.query ?? "") : (item.action?.type ?? "")}
          </code>
        </div>
      );
    default:
      if ((item.type as string) === "repository_output")
        return <RepositoryOutput item={item as unknown as Output} />;
      return (
        <div className="item other" data-item-type={item.type}>
          <div className="who">{item.type}</div>
        </div>
      );
  }
}
