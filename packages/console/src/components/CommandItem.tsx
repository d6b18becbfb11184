import type { Item } from "../api/types";
import { StatusBadge } from "./StatusBadge";

type Command = Extract<Item, { type: "command_execution" }>;

/** A shell command: its output as it streams in, then its exit code and duration. */
export function CommandItem(props: { item: Command; live: string }) {
  const { item, live } = props;
  const output = item.output ?? live;
  return (
    <div className="item command" data-item-type="command_execution" data-status={item.status}>
      <div className="who">
        Command <StatusBadge status={item.status} />
        {item.exit_code !== null && (
          <span className={item.exit_code === 0 ? "ok" : "error"} data-testid="exit-code">
            exit {item.exit_code}
          </span>
        )}
        {item.duration_ms !== null && <span className="muted">{item.duration_ms} ms</span>}
      </div>
      <pre className="cmd">$ {item.command}</pre>
      {output && <pre className="output">{output}</pre>}
    </div>
  );
}
