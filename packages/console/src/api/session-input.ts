import type OpenAI from "openai";
import type { AgentSessionInputParam } from "openai/resources/beta/agents/agents";
import type { GoalCaps } from "./types";

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
