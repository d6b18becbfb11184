import { InvalidRequestError } from "./errors.js";
import type { UserInput } from "./generated/v2/UserInput.js";
import type { Input, InputItem } from "./types.js";

export const MAX_OBJECTIVE_CHARS = 4000;

export function normalizeInput(input: Input): InputItem[] {
  if (typeof input === "string") return [{ type: "text", text: input }];
  return Array.isArray(input) ? input : [input];
}

export function toProtocolInput(items: InputItem[]): UserInput[] {
  return items.map((item): UserInput => {
    switch (item.type) {
      case "text":
        return { type: "text", text: item.text, text_elements: [] };
      case "image":
        return { type: "image", url: item.url, ...(item.detail ? { detail: item.detail } : {}) };
      case "localImage":
        return { type: "localImage", path: item.path, ...(item.detail ? { detail: item.detail } : {}) };
      default:
        throw new InvalidRequestError(`unsupported input type: ${(item as { type: string }).type}`);
    }
  });
}

/** Goal objective = the text inputs, each trimmed, empties dropped, joined by a blank line (engine rules). */
export function goalObjective(items: InputItem[]): string {
  const objective = items
    .flatMap((i) => (i.type === "text" ? [i.text.trim()] : []))
    .filter((t) => t.length > 0)
    .join("\n\n");
  if (objective.length === 0) throw new InvalidRequestError("goal objective must not be empty");
  if ([...objective].length > MAX_OBJECTIVE_CHARS) {
    throw new InvalidRequestError(`goal objective must be at most ${MAX_OBJECTIVE_CHARS} characters`);
  }
  return objective;
}
