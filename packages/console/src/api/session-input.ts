import type OpenAI from "openai";
import type { AgentSessionInputParam } from "openai/resources/beta/agents/agents";
import type { ApprovalDecision, GoalCaps } from "./types";

/** A message event; with `goal` it starts a goal whose objective is the message (this server's extension). */
type MessageEvent = AgentSessionInputParam.SessionInputParamAgentSessionInputMessage & {
  goal?: GoalCaps | true;
};

/** Sends a message: it starts a turn on an idle session, and steers the running turn otherwise. */
export async function sendMessage(
  client: OpenAI,
  sessionId: string,
  text: string,
  goal?: GoalCaps | true,
): Promise<void> {
  const event: MessageEvent = {
    type: "agent.session.input.message",
    input: [{ role: "user", content: [{ type: "input_text", text }] }],
    ...(goal ? { goal } : {}),
  };
  await client.beta.agents.sessions.events.create(sessionId, { events: [event] });
}

export async function cancelTurn(client: OpenAI, sessionId: string): Promise<void> {
  await client.beta.agents.sessions.events.create(sessionId, {
    events: [{ type: "agent.session.input.cancel" }],
  });
}

/** Answers a function call the agent is waiting on: its output, or a failure with a message. */
export async function sendToolResult(
  client: OpenAI,
  sessionId: string,
  call: { turn_id: string; call_id: string },
  result: { success: true; output: string } | { success: false; error: string },
): Promise<void> {
  await client.beta.agents.sessions.events.create(sessionId, {
    events: [
      { type: "agent.session.input.tool_result", turn_id: call.turn_id, call_id: call.call_id, ...result },
    ],
  });
}

/** `agent.session.input.approval_result`: this server's extension, not in the SDK's input union. */
interface ApprovalResultEvent {
  type: "agent.session.input.approval_result";
  action_id: string;
  decision: ApprovalDecision;
}

/** Decides on an approval request (a command, a file change, an MCP tool call). */
export async function sendApproval(
  client: OpenAI,
  sessionId: string,
  actionId: string,
  decision: ApprovalDecision,
): Promise<void> {
  const event: ApprovalResultEvent = {
    type: "agent.session.input.approval_result",
    action_id: actionId,
    decision,
  };
  await client.beta.agents.sessions.events.create(sessionId, {
    events: [event as unknown as AgentSessionInputParam],
  });
}
