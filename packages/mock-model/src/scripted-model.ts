/**
 * A deterministic, directive-following stand-in for a model, usable as a {@link Fallback}.
 *
 * Directives are read from the text of the LAST user-role message of the request (all its text parts
 * joined with "\n"); phrases match case-insensitively:
 *
 * - `Run this exact shell command and wait for it to finish: CMD. Then reply with exactly: Y`
 *   → calls the engine's `exec_command` tool with `{cmd: CMD, login: false, yield_time_ms: 30000}`;
 *   once the request contains the `function_call_output` for that call, replies `Y`
 *   (`Done.` without a "Then reply with exactly:" part; a trailing period of CMD is then dropped).
 * - `Call the function NAME with arguments {JSON}. Then reply with exactly: Y` → one `function_call`
 *   (`NAME`, arguments = the JSON text as written); once its output is in the request, replies Y.
 *   `Then reply with its output` replies with the tool output text instead; no `Then …` part → `Done.`.
 *   `Call the function NAME in namespace NS with arguments {JSON}` calls a namespaced tool.
 * - `Call the functions A with {JSON} and B with {JSON}[, …]. Then …` → all calls in ONE response; the
 *   reply comes once every output is present (`its output`: the outputs joined with "\n").
 * - `Call the MCP tool TOOL on server LABEL with arguments {JSON}. Then …` → `function_call` TOOL in
 *   namespace `mcp__LABEL`.
 * - `Spawn a subagent with the message: M. Then …` → `spawn_agent {message: M}` in namespace
 *   `multi_agent_v1`, then `wait_agent` for that child, then the reply (`its output`: the child's final
 *   message); the child thread's own requests (last user message M) follow these same directives.
 * - If several of these appear, the first one in the text wins (including the shell directive).
 * - `<subagent_notification>` user messages (the engine's report of a finished child) are skipped when
 *   looking for the last user message; one arriving after the reply gets an empty response.
 * - `reply with exactly: X` → replies X (everything after the colon, trimmed).
 * - anything else → `OK: <first 60 characters of the trimmed text>` (or `defaultReply(text)`).
 *
 * Goal turns: when the last user message is the engine's goal prompt
 * (`<codex_internal_context source="goal">…`, i.e. an automatic goal continuation, or a goal turn
 * started by `thread/goal/set` alone) the model acts on the goal instead:
 * - it calls `update_goal` with `{"status":"complete"}` — or `blocked` / `paused` when the goal
 *   objective contains "mark the goal as blocked" / "mark the goal as paused" —
 *   and, once that call's output is in the request, replies `Goal complete.` (`Goal blocked.`, …);
 * - if the objective contains "keep the goal active" it only replies `Working on: <objective…>`,
 *   so the engine keeps continuing (until the goal is paused, interrupted or out of budget).
 *
 * Replies are streamed (one delta per word) and every response reports the same non-zero usage.
 */
import { type CapturedRequest, contentText, normaliseToolOutput } from "./request.js";
import type { Fallback } from "./server.js";
import { ev, type ResponseScript, scripts, type Usage } from "./sse.js";

export interface ScriptedModelOptions {
  /** Reply for text without a directive; default `OK: <first 60 chars>`. */
  defaultReply?: (lastUserText: string) => string;
  /** Usage reported by every response; default 10 input / 0 cached / 5 output / 0 reasoning / 15 total. */
  usage?: Usage;
  /** Delay between streamed events of text replies (ms); default 0. */
  delayMs?: number;
}

/** The goal prompt the 0.169.0 engine inserts as a user message in goal turns. */
export const GOAL_PROMPT_PREFIX = '<codex_internal_context source="goal">';

const SHELL_DIRECTIVE = /run this exact shell command and wait for it to finish:/i;
const FUNCTION_DIRECTIVE =
  /call the function\s+([A-Za-z0-9_-]+)(?:\s+in namespace\s+([A-Za-z0-9_-]+))?\s+with arguments\s*/i;
const FUNCTIONS_DIRECTIVE = /call the functions\s+/i;
const FUNCTIONS_ENTRY =
  /^\s*([A-Za-z0-9_-]+)(?:\s+in namespace\s+([A-Za-z0-9_-]+))?\s+with\s+(?:arguments\s+)?/i;
const FUNCTIONS_SEPARATOR = /^\s*(?:,\s*(?:and\s+)?|and\s+)/i;
const MCP_DIRECTIVE =
  /call the mcp tool\s+([A-Za-z0-9_.-]+)\s+on server\s+([A-Za-z0-9_-]+)\s+with arguments\s*/i;
const SPAWN_DIRECTIVE = /spawn a subagent with the message:\s*/i;
const THEN_EXACTLY = /^\s*\.?\s*then reply with exactly:/i;
const THEN_OUTPUT = /^\s*\.?\s*then reply with its output\b/i;
const THEN_ANY = /\.?\s*then reply with (?:exactly:|its output\b)/gi;
/** The preamble the engine puts before an MCP tool's content in the `function_call_output`. */
const WALL_TIME_PREAMBLE = /^Wall time: [0-9.]+ seconds\nOutput:$/;

/** The namespace under which the engine declares the tools of MCP server `label`. */
export const mcpNamespace = (label: string): string => `mcp__${label}`;
/** The engine's multi-agent tools namespace (0.169.0). */
export const MULTI_AGENT_NAMESPACE = "multi_agent_v1";
const THEN_REPLY = /\.?\s*then reply with exactly:/i;
const REPLY_DIRECTIVE = /reply with exactly:/i;
const GOAL_STATUS_DIRECTIVE = /mark the goal as (blocked|paused|complete)\b/i;
const KEEP_ACTIVE_DIRECTIVE = /keep the goal active/i;

const DEFAULT_USAGE: Usage = {
  inputTokens: 10,
  cachedInputTokens: 0,
  outputTokens: 5,
  reasoningOutputTokens: 0,
  totalTokens: 15,
};

/**
 * User-role messages the engine injects on its own: a finished sub-agent's report to its parent. They are
 * not the user's words, so directives are read from the last user message BEFORE them.
 */
export const SUBAGENT_NOTIFICATION_PREFIX = "<subagent_notification>";

interface TurnView {
  /** Text of the last user message (engine-injected notifications skipped). */
  text: string;
  /** Number of user messages in the input (engine-injected notifications not counted). */
  userMessages: number;
  /** Input items after that user message (this turn's tool calls and outputs, notifications…). */
  tail: Array<Record<string, unknown>>;
  /** True if the request ends with an engine-injected notification. */
  endsWithNotification: boolean;
}

function isNotification(item: Record<string, unknown>): boolean {
  return contentText(item.content).join("\n").trimStart().startsWith(SUBAGENT_NOTIFICATION_PREFIX);
}

function turnView(req: CapturedRequest): TurnView {
  const items = req.inputItems();
  let last = -1;
  let userMessages = 0;
  items.forEach((item, i) => {
    if (item.type !== "message" || item.role !== "user" || isNotification(item)) return;
    last = i;
    userMessages += 1;
  });
  const final = items.at(-1);
  const endsWithNotification =
    final !== undefined && final.type === "message" && final.role === "user" && isNotification(final);
  const text = last >= 0 ? contentText(items[last]!.content).join("\n") : (req.lastUserMessageText() ?? "");
  return { text, userMessages, tail: items.slice(last + 1), endsWithNotification };
}

/** True if `tail` holds our `function_call` (`name`, `callId`) and its `function_call_output`. */
function answeredCall(tail: Array<Record<string, unknown>>, name: string, callId: string): boolean {
  const called = tail.some((i) => i.type === "function_call" && i.name === name && i.call_id === callId);
  return called && tail.some((i) => i.type === "function_call_output" && i.call_id === callId);
}

interface PlannedCall {
  name: string;
  namespace?: string;
  /** The JSON text, passed on as written. */
  arguments: string;
  callId: string;
}

/** What to say once the calls are answered. */
type Then = { kind: "exactly"; text: string } | { kind: "output" };

/** The outputs of all `calls` (in order) if `tail` holds each call and its output, else undefined. */
function callOutputs(tail: Array<Record<string, unknown>>, calls: PlannedCall[]): unknown[] | undefined {
  const outputs: unknown[] = [];
  for (const c of calls) {
    if (!answeredCall(tail, c.name, c.callId)) return undefined;
    outputs.push(tail.find((i) => i.type === "function_call_output" && i.call_id === c.callId)?.output);
  }
  return outputs;
}

/**
 * A tool output as the reply text: a string as is; a content array as its text parts joined with "\n"
 * (without the engine's `Wall time: … seconds\nOutput:` preamble of MCP results).
 */
export function toolOutputText(output: unknown): string {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) {
    const texts = output
      .filter((p): p is { text: string } => typeof p === "object" && p !== null && typeof p.text === "string")
      .map((p) => p.text);
    if (texts.length > 0 && WALL_TIME_PREAMBLE.test(texts[0]!)) texts.shift();
    return texts.join("\n");
  }
  return normaliseToolOutput(output);
}

/** End (exclusive) of the balanced JSON object starting at `text[start] === "{"`, or -1. */
function jsonObjectEnd(text: string, start: number): number {
  if (text[start] !== "{") return -1;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** How long a spawn directive's `wait_agent` waits for the child (ms). */
const WAIT_AGENT_TIMEOUT_MS = 600_000;

/** The `agent_id` of a `spawn_agent` output (`{"agent_id": …, "nickname": …}`). */
function spawnedAgentId(output: unknown): string | undefined {
  try {
    const parsed: unknown = JSON.parse(toolOutputText(output));
    const id = (parsed as { agent_id?: unknown }).agent_id;
    return typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The child's final message from a `wait_agent` output (`{"status":{<id>:{"completed": text}},
 * "timed_out": false}`), or the raw output when it did not complete.
 */
function childResult(output: unknown, agentId: string): string {
  const raw = toolOutputText(output);
  try {
    const parsed = JSON.parse(raw) as { status?: Record<string, { completed?: unknown }> };
    const completed = parsed.status?.[agentId]?.completed;
    return typeof completed === "string" ? completed : raw;
  } catch {
    return raw;
  }
}

/** Parses what follows the calls: `. Then reply with exactly: Y`, `. Then reply with its output`, or nothing. */
function parseThen(rest: string): Then {
  const exactly = THEN_EXACTLY.exec(rest);
  if (exactly) return { kind: "exactly", text: rest.slice(exactly[0].length).trim() };
  if (THEN_OUTPUT.test(rest)) return { kind: "output" };
  return { kind: "exactly", text: "Done." };
}

interface CallPlan {
  /** Where the directive starts in the text (the earliest directive wins). */
  index: number;
  calls: Array<Omit<PlannedCall, "callId">>;
  after: Then;
  kind: string;
}

/** `Call the function NAME [in namespace NS] with arguments {JSON}…` */
function functionPlan(text: string): CallPlan | undefined {
  const m = FUNCTION_DIRECTIVE.exec(text);
  if (!m) return undefined;
  const start = m.index + m[0].length;
  const end = jsonObjectEnd(text, start);
  if (end < 0) return undefined;
  const call: Omit<PlannedCall, "callId"> = { name: m[1]!, arguments: text.slice(start, end) };
  if (m[2] !== undefined) call.namespace = m[2];
  return { index: m.index, kind: "fn", calls: [call], after: parseThen(text.slice(end)) };
}

/** `Call the functions A with {JSON} and B with {JSON}…` */
function functionsPlan(text: string): CallPlan | undefined {
  const m = FUNCTIONS_DIRECTIVE.exec(text);
  if (!m) return undefined;
  let pos = m.index + m[0].length;
  const calls: Array<Omit<PlannedCall, "callId">> = [];
  for (;;) {
    const entry = FUNCTIONS_ENTRY.exec(text.slice(pos));
    if (!entry) return undefined;
    const start = pos + entry[0].length;
    const end = jsonObjectEnd(text, start);
    if (end < 0) return undefined;
    const call: Omit<PlannedCall, "callId"> = { name: entry[1]!, arguments: text.slice(start, end) };
    if (entry[2] !== undefined) call.namespace = entry[2];
    calls.push(call);
    pos = end;
    const sep = FUNCTIONS_SEPARATOR.exec(text.slice(pos));
    if (!sep || !FUNCTIONS_ENTRY.test(text.slice(pos + sep[0].length))) break;
    pos += sep[0].length;
  }
  return { index: m.index, kind: "fns", calls, after: parseThen(text.slice(pos)) };
}

/** `Call the MCP tool TOOL on server LABEL with arguments {JSON}…` */
function mcpPlan(text: string): CallPlan | undefined {
  const m = MCP_DIRECTIVE.exec(text);
  if (!m) return undefined;
  const start = m.index + m[0].length;
  const end = jsonObjectEnd(text, start);
  if (end < 0) return undefined;
  const call = { name: m[1]!, namespace: mcpNamespace(m[2]!), arguments: text.slice(start, end) };
  return { index: m.index, kind: "mcp", calls: [call], after: parseThen(text.slice(end)) };
}

/** `Spawn a subagent with the message: M. Then …` (M ends at the LAST "Then reply with …"). */
function spawnPlan(text: string): CallPlan | undefined {
  const m = SPAWN_DIRECTIVE.exec(text);
  if (!m) return undefined;
  const rest = text.slice(m.index + m[0].length);
  let last: RegExpExecArray | undefined;
  for (const found of rest.matchAll(THEN_ANY)) last = found;
  const message = last ? rest.slice(0, last.index).trim() : rest.trim().replace(/\.$/, "").trim();
  const then = last ? parseThen(rest.slice(last.index)) : ({ kind: "exactly", text: "Done." } as const);
  const call = {
    name: "spawn_agent",
    namespace: MULTI_AGENT_NAMESPACE,
    arguments: JSON.stringify({ message }),
  };
  return { index: m.index, kind: "spawn", calls: [call], after: then };
}

function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

/** Splits a reply into word-sized deltas that join back to the exact text. */
function chunks(text: string): string[] {
  const parts = text.match(/\S+\s*|\s+/g);
  return parts && parts.length > 0 ? parts : [text];
}

function preview(text: string): string {
  return text.trim().slice(0, 60);
}

export function scriptedModel(opts: ScriptedModelOptions = {}): Fallback {
  let counter = 0;
  const usage = opts.usage ?? DEFAULT_USAGE;
  const nextResponseId = () => {
    counter += 1;
    return `resp_mock_${counter}`;
  };
  const reply = (text: string): ResponseScript => {
    const responseId = nextResponseId();
    const streamOpts: Parameters<typeof scripts.streamingMessage>[1] = {
      responseId,
      itemId: `msg_${responseId}`,
      usage,
    };
    if (opts.delayMs) streamOpts.delayMs = opts.delayMs;
    return scripts.streamingMessage(chunks(text), streamOpts);
  };
  const call = (name: string, args: object, callId: string): ResponseScript =>
    scripts.functionCall(name, args, { callId, responseId: nextResponseId(), usage });

  return (req) => {
    const { text, userMessages, tail, endsWithNotification } = turnView(req);

    // A sub-agent finished after this turn's reply was given: nothing more to say (an empty response).
    if (endsWithNotification && tail.some((i) => i.type === "message" && i.role === "assistant")) {
      const responseId = nextResponseId();
      return scripts.sse([ev.responseCreated(responseId), ev.completed(responseId, usage)]);
    }

    if (text.trimStart().startsWith(GOAL_PROMPT_PREFIX)) {
      const objective = req.goalObjective() ?? "";
      if (KEEP_ACTIVE_DIRECTIVE.test(objective)) return reply(`Working on: ${preview(objective)}`);
      const status = (GOAL_STATUS_DIRECTIVE.exec(objective)?.[1]?.toLowerCase() ?? "complete") as
        | "complete"
        | "blocked"
        | "paused";
      const callId = `call_mock_goal_${userMessages}`;
      if (answeredCall(tail, "update_goal", callId)) return reply(`Goal ${status}.`);
      return call("update_goal", { status }, callId);
    }

    const plan = [functionsPlan(text), functionPlan(text), mcpPlan(text), spawnPlan(text)]
      .filter((p) => p !== undefined)
      .sort((a, b) => a.index - b.index)[0];
    const shell = SHELL_DIRECTIVE.exec(text);
    if (shell && (plan === undefined || shell.index < plan.index)) {
      const rest = text.slice(shell.index + shell[0].length);
      const then = THEN_REPLY.exec(rest);
      let cmd: string;
      let answer: string;
      if (then) {
        cmd = rest.slice(0, then.index).trim();
        answer = rest.slice(then.index + then[0].length).trim();
      } else {
        cmd = rest.trim().replace(/\.$/, "").trim();
        answer = "Done.";
      }
      const callId = `call_mock_exec_${userMessages}_${hash(cmd)}`;
      if (answeredCall(tail, "exec_command", callId)) return reply(answer);
      return call("exec_command", { cmd, login: false, yield_time_ms: 30_000 }, callId);
    }

    if (plan) {
      const planned: PlannedCall[] = plan.calls.map((c, i) => ({
        ...c,
        callId: `call_mock_${plan.kind}_${userMessages}_${i}_${hash(`${c.namespace ?? ""}/${c.name}/${c.arguments}`)}`,
      }));
      let outputs = callOutputs(tail, planned);
      if (outputs && plan.kind === "spawn") {
        // wait for the child before replying, so the reply never races the child's completion notice
        const agentId = spawnedAgentId(outputs[0]);
        if (agentId !== undefined) {
          const wait: PlannedCall = {
            name: "wait_agent",
            namespace: MULTI_AGENT_NAMESPACE,
            arguments: JSON.stringify({ targets: [agentId], timeout_ms: WAIT_AGENT_TIMEOUT_MS }),
            callId: `call_mock_wait_${userMessages}_${hash(agentId)}`,
          };
          const waited = callOutputs(tail, [wait]);
          if (!waited) return scripts.functionCalls([wait], { responseId: nextResponseId(), usage });
          outputs = [childResult(waited[0], agentId)];
        }
      }
      if (outputs) {
        return reply(
          plan.after.kind === "exactly" ? plan.after.text : outputs.map(toolOutputText).join("\n"),
        );
      }
      return scripts.functionCalls(planned, { responseId: nextResponseId(), usage });
    }

    const direct = REPLY_DIRECTIVE.exec(text);
    if (direct) return reply(text.slice(direct.index + direct[0].length).trim());

    return reply(opts.defaultReply ? opts.defaultReply(text) : `OK: ${preview(text)}`);
  };
}
