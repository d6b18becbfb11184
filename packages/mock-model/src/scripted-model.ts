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
import type { CapturedRequest } from "./request.js";
import type { Fallback } from "./server.js";
import { type ResponseScript, scripts, type Usage } from "./sse.js";

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

interface TurnView {
  /** Text of the last user message. */
  text: string;
  /** Number of user messages in the input. */
  userMessages: number;
  /** Input items after the last user message (this turn's tool calls and outputs). */
  tail: Array<Record<string, unknown>>;
}

function turnView(req: CapturedRequest): TurnView {
  const items = req.inputItems();
  let last = -1;
  let userMessages = 0;
  items.forEach((item, i) => {
    if (item.type === "message" && item.role === "user") {
      last = i;
      userMessages += 1;
    }
  });
  return { text: req.lastUserMessageText() ?? "", userMessages, tail: items.slice(last + 1) };
}

/** True if `tail` holds our `function_call` (`name`, `callId`) and its `function_call_output`. */
function answeredCall(tail: Array<Record<string, unknown>>, name: string, callId: string): boolean {
  const called = tail.some((i) => i.type === "function_call" && i.name === name && i.call_id === callId);
  return called && tail.some((i) => i.type === "function_call_output" && i.call_id === callId);
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
    const { text, userMessages, tail } = turnView(req);

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

    const shell = SHELL_DIRECTIVE.exec(text);
    if (shell) {
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

    const direct = REPLY_DIRECTIVE.exec(text);
    if (direct) return reply(text.slice(direct.index + direct[0].length).trim());

    return reply(opts.defaultReply ? opts.defaultReply(text) : `OK: ${preview(text)}`);
  };
}
