/**
 * Server-sent-event builders for the OpenAI Responses API, as consumed by the Codex app-server.
 *
 * Mirrors the Python SDK test harness helpers (`ev_*`, `sse`, `streaming_response`).
 */

/** Token usage reported in `response.completed`. */
export interface Usage {
  inputTokens: number;
  cachedInputTokens?: number;
  outputTokens: number;
  reasoningOutputTokens?: number;
  /** Defaults to `inputTokens + outputTokens`. */
  totalTokens?: number;
}

/** One SSE event of the Responses API; `type` is also used as the SSE `event:` name. */
export interface SseEvent {
  type: string;
  [k: string]: unknown;
}

const DEFAULT_USAGE: Usage = {
  inputTokens: 1,
  cachedInputTokens: 0,
  outputTokens: 1,
  reasoningOutputTokens: 0,
  totalTokens: 2,
};

/** Converts a {@link Usage} into the Responses API wire shape. */
export function usageToWire(usage: Usage = DEFAULT_USAGE): Record<string, unknown> {
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens ?? 0 },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningOutputTokens ?? 0 },
    total_tokens: usage.totalTokens ?? usage.inputTokens + usage.outputTokens,
  };
}

function messageItem(itemId: string, text: string): Record<string, unknown> {
  return {
    type: "message",
    role: "assistant",
    id: itemId,
    content: [{ type: "output_text", text }],
  };
}

/** Event builders. */
export const ev = {
  /** `response.created {response:{id}}` */
  responseCreated(responseId: string): SseEvent {
    return { type: "response.created", response: { id: responseId } };
  },
  /** `response.output_item.added` for an assistant message with an empty `output_text`. */
  messageItemAdded(itemId: string): SseEvent {
    return { type: "response.output_item.added", item: messageItem(itemId, "") };
  },
  /** `response.output_text.delta {delta, item_id}` */
  outputTextDelta(itemId: string, delta: string): SseEvent {
    return { type: "response.output_text.delta", item_id: itemId, delta };
  },
  /** `response.output_item.done` carrying the complete assistant message. */
  assistantMessage(itemId: string, text: string): SseEvent {
    return { type: "response.output_item.done", item: messageItem(itemId, text) };
  },
  /**
   * `response.output_item.done` carrying a `function_call`; object arguments are JSON-encoded. A tool
   * declared inside a namespace (`mcp__<label>`, `multi_agent_v1`, a dynamic-tool namespace) is called with
   * its plain `name` plus `namespace`; `mcp__demo__echo`-style flat names are "unsupported call"s.
   */
  functionCall(callId: string, name: string, args: string | object, namespace?: string): SseEvent {
    const item: Record<string, unknown> = { type: "function_call", call_id: callId, name };
    if (namespace !== undefined) item.namespace = namespace;
    item.arguments = typeof args === "string" ? args : JSON.stringify(args);
    return { type: "response.output_item.done", item };
  },
  /** `response.completed` with usage (default 1 input / 0 cached / 1 output / 0 reasoning / 2 total). */
  completed(responseId: string, usage?: Usage): SseEvent {
    return { type: "response.completed", response: { id: responseId, usage: usageToWire(usage) } };
  },
  /** `response.failed {response:{id, error:{code, message}}}`; code defaults to `server_error`. */
  failed(responseId: string, message: string, code = "server_error"): SseEvent {
    return { type: "response.failed", response: { id: responseId, error: { code, message } } };
  },
};

/** Frames one event: `event: <type>\ndata: <json>\n\n`. */
export function formatSseEvent(event: SseEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** Frames a whole event list (what a stream with no delays would send). */
export function formatSse(events: SseEvent[]): string {
  return events.map(formatSseEvent).join("");
}

/**
 * Holds an SSE stream after its first event until {@link Gate.release} is called.
 * `reached` resolves once a stream using the gate has flushed its first event.
 * Releasing before the stream arrives lets it pass without pausing.
 */
export class Gate {
  readonly reached: Promise<void>;
  readonly released: Promise<void>;
  #markReached!: () => void;
  #release!: () => void;
  #isReleased = false;
  #isReached = false;

  constructor() {
    this.reached = new Promise<void>((resolve) => {
      this.#markReached = resolve;
    });
    this.released = new Promise<void>((resolve) => {
      this.#release = resolve;
    });
  }

  /** True once a stream has flushed its first event through this gate. */
  get isReached(): boolean {
    return this.#isReached;
  }

  /** True once {@link Gate.release} was called. */
  get isReleased(): boolean {
    return this.#isReleased;
  }

  /** Lets held (and future) streams continue. Idempotent. */
  release(): void {
    this.#isReleased = true;
    this.#release();
  }

  /** @internal called by the server after the first event was written. */
  markReached(): void {
    this.#isReached = true;
    this.#markReached();
  }
}

/** One scripted answer to a `POST /responses` request. */
export type ResponseScript =
  | {
      kind: "sse";
      events: SseEvent[];
      /** Delay between consecutive events, in milliseconds. */
      delayMs?: number;
      /** Hold the stream after the first event until released. */
      gate?: Gate;
    }
  | { kind: "http_error"; status: number; body?: string };

interface IdUsageOpts {
  responseId?: string;
  usage?: Usage;
}

interface FunctionCallOpts extends IdUsageOpts {
  callId?: string;
  /** The tool's namespace (e.g. `mcp__demo`, `multi_agent_v1`). */
  namespace?: string;
}

/** One call of {@link scripts.functionCalls}. */
export interface FunctionCallSpec {
  name: string;
  /** A JSON text, or an object to encode. */
  arguments: string | object;
  namespace?: string;
  /** Default `call-<responseId>-<index>`. */
  callId?: string;
}

let autoId = 0;
function nextId(prefix: string): string {
  autoId += 1;
  return `${prefix}-${autoId}`;
}

/** Builders for whole scripted responses. */
export const scripts = {
  /** created, output_item.done (message), completed. Item id is `msg-<responseId>`. */
  assistantMessage(text: string, opts: IdUsageOpts = {}): ResponseScript {
    const responseId = opts.responseId ?? nextId("resp");
    return {
      kind: "sse",
      events: [
        ev.responseCreated(responseId),
        ev.assistantMessage(`msg-${responseId}`, text),
        ev.completed(responseId, opts.usage),
      ],
    };
  },

  /** created, item added, one delta per part, item done (joined text), completed. */
  streamingMessage(
    parts: string[],
    opts: IdUsageOpts & { itemId?: string; delayMs?: number; gate?: Gate } = {},
  ): ResponseScript {
    const responseId = opts.responseId ?? nextId("resp");
    const itemId = opts.itemId ?? `msg-${responseId}`;
    const script: ResponseScript = {
      kind: "sse",
      events: [
        ev.responseCreated(responseId),
        ev.messageItemAdded(itemId),
        ...parts.map((part) => ev.outputTextDelta(itemId, part)),
        ev.assistantMessage(itemId, parts.join("")),
        ev.completed(responseId, opts.usage),
      ],
    };
    if (opts.delayMs !== undefined) script.delayMs = opts.delayMs;
    if (opts.gate !== undefined) script.gate = opts.gate;
    return script;
  },

  /** created, output_item.done (function_call), completed. Call id defaults to `call-<responseId>`. */
  functionCall(name: string, args: string | object, opts: FunctionCallOpts = {}): ResponseScript {
    const responseId = opts.responseId ?? nextId("resp");
    return {
      kind: "sse",
      events: [
        ev.responseCreated(responseId),
        ev.functionCall(opts.callId ?? `call-${responseId}`, name, args, opts.namespace),
        ev.completed(responseId, opts.usage),
      ],
    };
  },

  /** Several function calls in ONE response (parallel tool calls): created, one item per call, completed. */
  functionCalls(calls: FunctionCallSpec[], opts: IdUsageOpts = {}): ResponseScript {
    const responseId = opts.responseId ?? nextId("resp");
    return {
      kind: "sse",
      events: [
        ev.responseCreated(responseId),
        ...calls.map((c, i) =>
          ev.functionCall(c.callId ?? `call-${responseId}-${i}`, c.name, c.arguments, c.namespace),
        ),
        ev.completed(responseId, opts.usage),
      ],
    };
  },

  /** A call of the engine's `update_goal` tool with `{"status": status}`. */
  updateGoal(status: "complete" | "blocked" | "paused", opts: FunctionCallOpts = {}): ResponseScript {
    return scripts.functionCall("update_goal", { status }, opts);
  },

  /** created, failed. */
  failure(message: string, opts: { code?: string; responseId?: string } = {}): ResponseScript {
    const responseId = opts.responseId ?? nextId("resp");
    return {
      kind: "sse",
      events: [ev.responseCreated(responseId), ev.failed(responseId, message, opts.code)],
    };
  },

  /** A plain HTTP error status (no SSE). */
  httpError(status: number, body?: string): ResponseScript {
    return body === undefined ? { kind: "http_error", status } : { kind: "http_error", status, body };
  },

  /** Arbitrary events. */
  sse(events: SseEvent[], opts: { delayMs?: number; gate?: Gate } = {}): ResponseScript {
    const script: ResponseScript = { kind: "sse", events };
    if (opts.delayMs !== undefined) script.delayMs = opts.delayMs;
    if (opts.gate !== undefined) script.gate = opts.gate;
    return script;
  },
};
