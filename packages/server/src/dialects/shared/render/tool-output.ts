/**
 * A client's function-call result as both dialects show it: one text part is the output string, several parts
 * (or an image) are a content array; a failed call has its text as `error` and no output.
 */
import type { ClientToolResultItem } from "../../../model/records.js";

export type ToolOutputContent =
  | { type: "input_text"; text: string }
  | { type: "input_image"; image_url: string };

export function toolResultOutput(item: ClientToolResultItem): {
  output: string | ToolOutputContent[] | null;
  error: string | null;
} {
  const parts = item.contentItems.map(
    (c): ToolOutputContent =>
      c.type === "inputText"
        ? { type: "input_text", text: c.text }
        : { type: "input_image", image_url: c.imageUrl },
  );
  if (!item.success) {
    return {
      output: null,
      error: parts.map((p) => (p.type === "input_text" ? p.text : "")).join("") || "failed",
    };
  }
  const only = parts[0];
  return { output: parts.length === 1 && only?.type === "input_text" ? only.text : parts, error: null };
}
