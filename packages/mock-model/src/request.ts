/** A `POST /responses` request recorded by {@link MockResponsesServer}. */

export type MessageRole = "user" | "developer" | "assistant" | "system";

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The text parts of a message `content` (a string, or `input_text` / `output_text` parts). */
export function contentText(content: unknown): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  const texts: string[] = [];
  for (const span of content) {
    if (!isRecord(span)) continue;
    if ((span.type === "input_text" || span.type === "output_text") && typeof span.text === "string") {
      texts.push(span.text);
    }
  }
  return texts;
}

/** Normalises a `function_call_output.output` (string, content array or `{content}`) to a string. */
export function normaliseToolOutput(output: unknown): string {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) return contentText(output).join("");
  if (isRecord(output)) {
    if (typeof output.content === "string") return output.content;
    if (Array.isArray(output.content)) return contentText(output.content).join("");
  }
  return output === undefined || output === null ? "" : JSON.stringify(output);
}

export interface CapturedRequestInit {
  method: string;
  path: string;
  headers: Record<string, string>;
  rawBody: string;
}

export interface FunctionCallOutput {
  callId?: string;
  name?: string;
  output: string;
}

export interface FunctionCallItem {
  callId?: string;
  name: string;
  namespace?: string;
  /** The raw `arguments` string. */
  arguments: string;
}

export class CapturedRequest {
  readonly method: string;
  readonly path: string;
  /** Header names are lower-cased. */
  readonly headers: Record<string, string>;
  /** The body as received (after content-encoding was undone). */
  readonly rawBody: string;
  /** Parsed JSON body; `{}` if the body was not a JSON object. */
  readonly body: Record<string, unknown>;
  /**
   * The thread the request is for: `thread_id` of the turn metadata, else `body.prompt_cache_key`. They are
   * equal except for sub-agents: a spawned child thread's requests carry the ROOT thread's id (the session
   * id) as `prompt_cache_key`.
   */
  readonly threadId: string | undefined;
  /** `body.prompt_cache_key` (the session id: the thread id, or the root thread's id for sub-agents). */
  readonly promptCacheKey: string | undefined;
  readonly model: string | undefined;
  /** Wall-clock arrival time (ms since epoch). */
  readonly receivedAt: number;

  constructor(init: CapturedRequestInit) {
    this.method = init.method;
    this.path = init.path;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(init.headers)) headers[k.toLowerCase()] = v;
    this.headers = headers;
    this.rawBody = init.rawBody;
    let body: Record<string, unknown> = {};
    if (init.rawBody.length > 0) {
      try {
        const parsed: unknown = JSON.parse(init.rawBody);
        if (isRecord(parsed)) body = parsed;
      } catch {
        // keep {}; rawBody still holds the text
      }
    }
    this.body = body;
    this.promptCacheKey = typeof body.prompt_cache_key === "string" ? body.prompt_cache_key : undefined;
    const metaThread = this.turnMetadata()?.thread_id;
    this.threadId = typeof metaThread === "string" ? metaThread : this.promptCacheKey;
    this.model = typeof body.model === "string" ? body.model : undefined;
    this.receivedAt = Date.now();
  }

  /** Builds a request from a body object (handy for unit tests of fallbacks). */
  static fromBody(body: Record<string, unknown>, init: Partial<Omit<CapturedRequestInit, "rawBody">> = {}) {
    return new CapturedRequest({
      method: init.method ?? "POST",
      path: init.path ?? "/v1/responses",
      headers: init.headers ?? { "content-type": "application/json" },
      rawBody: JSON.stringify(body),
    });
  }

  /** A header by case-insensitive name. */
  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()];
  }

  /** The `input` array (object items only). */
  inputItems(): Array<Record<string, unknown>> {
    const input = this.body.input;
    return Array.isArray(input) ? input.filter(isRecord) : [];
  }

  /**
   * Like the Python helper `message_input_texts`: for every `message` input item with this role,
   * its string content, or the `.text` of each `input_text` / `output_text` part.
   */
  messageInputTexts(role: MessageRole): string[] {
    const texts: string[] = [];
    for (const item of this.inputItems()) {
      if (item.type !== "message" || item.role !== role) continue;
      texts.push(...contentText(item.content));
    }
    return texts;
  }

  /** The last entry of `messageInputTexts("user")`. */
  lastUserText(): string | undefined {
    return this.messageInputTexts("user").at(-1);
  }

  /** The text of the last user-role message item (its text parts joined with `"\n"`). */
  lastUserMessageText(): string | undefined {
    const items = this.inputItems();
    for (let i = items.length - 1; i >= 0; i--) {
      const item = items[i]!;
      if (item.type === "message" && item.role === "user") return contentText(item.content).join("\n");
    }
    return undefined;
  }

  /** `function_call` input items (calls the model made earlier in the conversation). */
  functionCalls(): FunctionCallItem[] {
    return this.inputItems()
      .filter((item) => item.type === "function_call")
      .map((item) => {
        const call: FunctionCallItem = {
          name: typeof item.name === "string" ? item.name : "",
          arguments:
            typeof item.arguments === "string" ? item.arguments : JSON.stringify(item.arguments ?? null),
        };
        if (typeof item.call_id === "string") call.callId = item.call_id;
        if (typeof item.namespace === "string") call.namespace = item.namespace;
        return call;
      });
  }

  /** `function_call_output` input items; `output` is normalised to a string. */
  functionCallOutputs(): FunctionCallOutput[] {
    return this.inputItems()
      .filter((item) => item.type === "function_call_output")
      .map((item) => {
        const out: FunctionCallOutput = { output: normaliseToolOutput(item.output) };
        if (typeof item.call_id === "string") out.callId = item.call_id;
        if (typeof item.name === "string") out.name = item.name;
        return out;
      });
  }

  /** The goal objective, sent by the 0.169.0 engine as a synthetic `function_call_output` named `goal_objective`. */
  goalObjective(): string | undefined {
    return this.functionCallOutputs().findLast((o) => o.name === "goal_objective")?.output;
  }

  /** `client_metadata["x-codex-turn-metadata"]` parsed from its JSON string, if present. */
  turnMetadata(): Record<string, unknown> | undefined {
    const meta = this.body.client_metadata;
    if (!isRecord(meta)) return undefined;
    const raw = meta["x-codex-turn-metadata"];
    if (isRecord(raw)) return raw;
    if (typeof raw !== "string") return undefined;
    try {
      const parsed: unknown = JSON.parse(raw);
      return isRecord(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  }

  /** True for requests of an automatic goal-continuation turn (`turn_trigger === "goal"`). */
  isGoalContinuation(): boolean {
    return this.turnMetadata()?.turn_trigger === "goal";
  }

  /** Names of the tools offered to the model (namespace tools as `namespace` name, not expanded). */
  toolNames(): string[] {
    const tools = this.body.tools;
    if (!Array.isArray(tools)) return [];
    const names: string[] = [];
    for (const tool of tools) {
      if (!isRecord(tool)) continue;
      if (typeof tool.name === "string") names.push(tool.name);
      else if (typeof tool.type === "string") names.push(tool.type);
    }
    return names;
  }
}
