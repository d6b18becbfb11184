/**
 * A client's answer to a required action of a running turn, as both dialects send it: a function call's result
 * (a string, input parts, or any JSON) or an approval decision; parsed here, acted on by domain/turns/actions.ts.
 */
import { badRequest } from "../kernel/errors.js";
import { isRecord } from "../kernel/is-record.js";
import type { ApprovalDecision } from "./records.js";

/** One part of a function call's output. */
export type ToolOutputPart =
  | { type: "input_text"; text: string }
  | { type: "input_image"; image_url: string };

/** A client's answer to a required action. */
export type ActionAnswer =
  | { type: "tool_result"; success: boolean; output: string | ToolOutputPart[] | null; error: string | null }
  | { type: "approval_result"; decision: ApprovalDecision; content: unknown };

/**
 * A tool result as a client sends it (both dialects): `output` a string, a list of `input_text` / `input_image`
 * parts, or any other JSON (sent to the model as its JSON text); `success: false` with `error` for a failed call
 * (`success` defaults to whether an error was given).
 */
export function parseToolResult(
  raw: { success?: unknown; output?: unknown; error?: unknown },
  where: string,
): ActionAnswer {
  if (raw.success !== undefined && typeof raw.success !== "boolean") {
    throw badRequest(`'${where}.success' must be a boolean`, `${where}.success`);
  }
  if (raw.error !== undefined && raw.error !== null && typeof raw.error !== "string") {
    throw badRequest(`'${where}.error' must be a string`, `${where}.error`);
  }
  const error = typeof raw.error === "string" ? raw.error : null;
  const success = typeof raw.success === "boolean" ? raw.success : error === null;
  return { type: "tool_result", success, output: toolOutput(raw.output, `${where}.output`), error };
}

function toolOutput(v: unknown, where: string): string | ToolOutputPart[] | null {
  if (v === undefined || v === null) return null;
  if (typeof v === "string") return v;
  if (Array.isArray(v) && v.length > 0 && v.every((p) => isRecord(p) && typeof p.type === "string")) {
    return v.map((p: Record<string, unknown>, i): ToolOutputPart => {
      if (p.type === "input_text" && typeof p.text === "string") return { type: "input_text", text: p.text };
      if (p.type === "input_image" && typeof p.image_url === "string") {
        return { type: "input_image", image_url: p.image_url };
      }
      throw badRequest(
        `'${where}[${i}]' must be {type: "input_text", text} or {type: "input_image", image_url}`,
        `${where}[${i}]`,
      );
    });
  }
  return JSON.stringify(v);
}

export const APPROVAL_DECISIONS: readonly ApprovalDecision[] = [
  "approve",
  "approve_for_session",
  "deny",
  "cancel",
];

/** An approval decision as a client sends it (`content`: the answer to an MCP server's form, when it asks one). */
export function parseApproval(raw: { decision?: unknown; content?: unknown }, where: string): ActionAnswer {
  if (typeof raw.decision !== "string" || !APPROVAL_DECISIONS.includes(raw.decision as ApprovalDecision)) {
    throw badRequest(
      `'${where}.decision' must be one of ${APPROVAL_DECISIONS.join(", ")}`,
      `${where}.decision`,
    );
  }
  return {
    type: "approval_result",
    decision: raw.decision as ApprovalDecision,
    content: raw.content ?? null,
  };
}
