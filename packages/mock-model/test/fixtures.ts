/** Request bodies shaped like what codex 0.169.0 really sends (abridged). */

export const GOAL_PROMPT =
  '<codex_internal_context source="goal">\nContinue working toward the active thread goal.\n\n' +
  "Use the current goal_objective context as the task to pursue.\n</codex_internal_context>";

export const userMessage = (...texts: string[]) => ({
  type: "message",
  role: "user",
  content: texts.map((text) => ({ type: "input_text", text })),
});

export const prelude = [
  { type: "message", role: "developer", content: [{ type: "input_text", text: "You are a coding agent" }] },
  { type: "message", role: "developer", content: [{ type: "input_text", text: "<skills_instructions>" }] },
  userMessage("<environment_context>\n  <cwd>/tmp/ws</cwd>\n</environment_context>"),
];

export const goalObjectiveItem = (objective: string) => ({
  type: "function_call_output",
  name: "goal_objective",
  namespace: "agent",
  output: objective,
});

export const functionCall = (callId: string, name: string, args: object) => ({
  type: "function_call",
  name,
  arguments: JSON.stringify(args),
  call_id: callId,
});

export const functionCallOutput = (callId: string, output: unknown) => ({
  type: "function_call_output",
  call_id: callId,
  output,
});

export function requestBody(input: unknown[], opts: { threadId?: string; turnTrigger?: string } = {}) {
  const threadId = opts.threadId ?? "thread-1";
  const meta: Record<string, unknown> = { thread_id: threadId, request_kind: "turn", model: "mock-model" };
  if (opts.turnTrigger) meta.turn_trigger = opts.turnTrigger;
  return {
    model: "mock-model",
    stream: true,
    input,
    tools: [
      { type: "function", name: "exec_command", parameters: { type: "object" } },
      { type: "function", name: "write_stdin", parameters: { type: "object" } },
      { type: "namespace", name: "multi_agent_v1", tools: [{ type: "function", name: "spawn_agent" }] },
      { type: "function", name: "update_goal", parameters: { type: "object" } },
      { type: "web_search" },
    ],
    tool_choice: "auto",
    parallel_tool_calls: true,
    store: false,
    prompt_cache_key: threadId,
    client_metadata: {
      thread_id: threadId,
      "x-codex-turn-metadata": JSON.stringify(meta),
    },
  };
}
