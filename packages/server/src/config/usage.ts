/** The usage text, from the tables: each row's flag and argument, its help lines in a column beside them. */
import type { Table } from "./option.js";

const HEADER =
  "Usage: codex-agent-api [serve] [options]   (serve is the default command)\n\nOptions (environment variable in brackets):\n";
/** Where help lines start; a longer flag and argument go on a line of their own. */
const COLUMN = 29;

export function usageOf(tables: readonly Table[]): string {
  const indent = " ".repeat(COLUMN);
  const lines: string[] = [];
  for (const t of tables) {
    for (const option of Object.values(t.rows)) {
      const [first, ...rest] = option.help;
      if (first === undefined) continue;
      const flag = option.flags[0];
      // A row without a flag (an environment variable only) continues the one above it.
      const head = flag === undefined ? "" : `  --${flag}${option.arg ? ` ${option.arg}` : ""}`;
      if (head === "") lines.push(indent + first);
      else if (head.length < COLUMN) lines.push(head.padEnd(COLUMN) + first);
      else lines.push(head, indent + first);
      for (const line of rest) lines.push(indent + line);
    }
  }
  return HEADER + lines.map((l) => `${l}\n`).join("");
}
