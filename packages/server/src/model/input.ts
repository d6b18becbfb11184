import type { InputItem } from "@codex-agent-api/codex";
import { badRequest } from "../kernel/errors.js";

/** A turn's user input after parsing (both dialects produce this). */
export interface TurnInput {
  items: InputItem[];
}

export function inputText(input: TurnInput): string {
  return input.items.flatMap((i) => (i.type === "text" ? [i.text] : [])).join("\n\n");
}

export function hasContent(input: TurnInput): boolean {
  return input.items.some((i) => (i.type === "text" ? i.text.trim().length > 0 : true));
}

/** One content part in either dialect: `{type:"input_text",text}` / `{type:"input_image",image_url}`. */
function contentPart(part: unknown, where: string): InputItem {
  if (typeof part === "string") return { type: "text", text: part };
  if (!part || typeof part !== "object") throw badRequest(`${where} must be an object or a string`, where);
  const p = part as Record<string, unknown>;
  if ((p.type === "input_text" || p.type === "text") && typeof p.text === "string") {
    return { type: "text", text: p.text };
  }
  if (p.type === "input_image" && typeof p.image_url === "string") return { type: "image", url: p.image_url };
  throw badRequest(`${where}: unsupported content part (expected input_text or input_image)`, where);
}

/**
 * Parses `input` as both dialects send it: a string; a list of content parts; a list of messages
 * `{role:"user", content: string | parts}`; or a template event `{type:"agent.session.input.message", content}`.
 */
export function parseInput(raw: unknown, where = "input"): TurnInput {
  if (typeof raw === "string") return { items: [{ type: "text", text: raw }] };
  if (Array.isArray(raw)) {
    const items: InputItem[] = [];
    raw.forEach((el, i) => {
      const at = `${where}[${i}]`;
      if (el && typeof el === "object" && ("role" in el || (el as { type?: unknown }).type === "message")) {
        const msg = el as { role?: unknown; content?: unknown };
        if (msg.role !== undefined && msg.role !== "user") throw badRequest(`${at}.role must be "user"`, at);
        items.push(...parseInput(msg.content, `${at}.content`).items);
      } else {
        items.push(contentPart(el, at));
      }
    });
    return { items };
  }
  if (raw && typeof raw === "object") {
    const ev = raw as { type?: unknown; content?: unknown; input?: unknown };
    if (ev.type === "agent.session.input.message")
      return parseInput(ev.content ?? ev.input, `${where}.content`);
    return { items: [contentPart(raw, where)] };
  }
  throw badRequest(`${where} must be a string or an array of content parts`, where);
}
