/**
 * An automation's target: checked and normalised when it is saved (so a delivery never meets bad input), and turned
 * into what the session services take when an invocation is delivered.
 */

import { badRequest, unprocessable } from "../../kernel/errors.js";
import { hasContent, parseInput, type TurnInput } from "../../model/input.js";
import type { Scope } from "../../model/scope.js";
import { inlineAgentSettings } from "../../model/settings.js";
import type { AutomationInputMessage, AutomationTarget } from "../../store/types.js";
import type { AgentService } from "../agents.js";
import type { SessionFields, SessionService } from "../sessions/service.js";
import type { ToolPolicy } from "../tools.js";

/** A target as a request gives it (types checked by the route schema). */
export type TargetParam =
  | {
      type: "new_session";
      agent_id?: string | null | undefined;
      agent?: Record<string, unknown> | null | undefined;
      environment: { type: string } & Record<string, unknown>;
      input: unknown[];
      metadata?: Record<string, string> | null | undefined;
      vault_ids?: string[] | null | undefined;
    }
  | { type: "existing_session"; session_id: string; instructions: string };

/** The agent settings an inline agent may carry (the same as a session's). */

export interface TargetContext {
  scope: Scope;
  agents: AgentService;
  sessions: SessionService;
  tools: ToolPolicy;
}

/** Checks a target (400/404/422 naming the field) and returns it normalised for storage. */
export async function normalizeTarget(t: TargetParam, ctx: TargetContext): Promise<AutomationTarget> {
  if (t.type === "existing_session") {
    await ctx.sessions.get(ctx.scope, t.session_id);
    if (!t.instructions.trim())
      throw badRequest("'target.instructions' must not be empty", "target.instructions");
    return { type: "existing_session", session_id: t.session_id, instructions: t.instructions };
  }
  const agentId = t.agent_id ?? null;
  const agent = t.agent ?? null;
  if ((agentId === null) === (agent === null)) {
    throw badRequest("Provide exactly one of 'target.agent' and 'target.agent_id'", "target.agent");
  }
  if (agentId !== null) await ctx.agents.get(ctx.scope, agentId);
  const envType = t.environment.type;
  if (envType === "openai_hosted") {
    throw unprocessable(
      "This server runs sessions in its own workspace: use environment {type: 'none'} or {type: 'self_hosted'}",
      "target.environment.type",
    );
  }
  if (envType !== "none" && envType !== "self_hosted") {
    throw badRequest("'target.environment.type' must be none or self_hosted", "target.environment.type");
  }
  return {
    type: "new_session",
    agent_id: agentId,
    agent: agent && (await normalizeAgent(agent, ctx)),
    environment: t.environment,
    input: normalizeInput(t.input),
    metadata: t.metadata ?? {},
    vault_ids: t.vault_ids ?? [],
  };
}

async function normalizeAgent(
  agent: Record<string, unknown>,
  ctx: TargetContext,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { ...agent };
  if (Array.isArray(agent.tools)) {
    out.tools = await ctx.tools.admit({ raw: agent.tools, strict: true, where: "target.agent.tools" });
  }
  return out;
}

/** The initial messages as official content parts (strings and `text` parts become `input_text`). */
function normalizeInput(raw: unknown[]): AutomationInputMessage[] {
  if (raw.length === 0) throw badRequest("'target.input' must contain at least one message", "target.input");
  const messages = raw.map((m, i): AutomationInputMessage => {
    const where = `target.input[${i}]`;
    if (!m || typeof m !== "object" || Array.isArray(m))
      throw badRequest(`'${where}' must be a message`, where);
    const msg = m as { role?: unknown; content?: unknown };
    if (msg.role !== "user") throw badRequest(`'${where}.role' must be "user"`, `${where}.role`);
    const items = parseInput(msg.content, `${where}.content`).items;
    return {
      type: "message",
      role: "user",
      content: items.map((it) =>
        it.type === "text"
          ? { type: "input_text" as const, text: it.text }
          : { type: "input_image" as const, image_url: it.type === "image" ? it.url : "" },
      ),
    };
  });
  if (!hasContent(inputOf(messages))) {
    throw badRequest(
      "'target.input' must contain at least one non-empty input_text or input_image",
      "target.input",
    );
  }
  return messages;
}

/** The session input of a new-session target's messages. */
export function inputOf(messages: readonly AutomationInputMessage[]): TurnInput {
  return {
    items: messages.flatMap((m) =>
      m.content.map((c) =>
        c.type === "input_text"
          ? { type: "text" as const, text: c.text }
          : { type: "image" as const, url: c.image_url },
      ),
    ),
  };
}

/** The fields of the session a new-session target creates, tagged with the automation and invocation. */
export function sessionFieldsOf(
  t: Extract<AutomationTarget, { type: "new_session" }>,
  tags: { automation_id: string; automation_invocation_id: string },
): SessionFields {
  const a = t.agent ?? {};
  return {
    ...(t.agent_id ? { agent_id: t.agent_id } : {}),
    ...(typeof a.model === "string" && a.model ? { model: a.model } : {}),
    ...(a.instructions !== undefined ? { instructions: a.instructions as string | null } : {}),
    ...(Array.isArray(a.tools) ? { tools: a.tools } : {}),
    ...(a.name !== undefined ? { name: a.name as string | null } : {}),
    metadata: t.metadata,
    settings: inlineAgentSettings(a),
    extra: { environment: t.environment.type === "none" ? "none" : "self_hosted", ...tags },
  };
}
