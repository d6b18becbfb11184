// Shared helpers of the official-dialect conformance suite (openai-*.test.ts): everything goes through the real
// `openai` SDK, pointed at an in-process server.
import OpenAI, { type APIError } from "openai";
import type { AgentSessionEvent } from "openai/resources/beta/agents/agents";
import { expect } from "vitest";
import { waitFor } from "./fixture.js";

export type { AgentSessionEvent };

/** The client exactly as a user would create it, pointed at our server. */
export function sdk(
  f: { url: string; fetch?: typeof fetch },
  opts: { apiKey?: string; maxRetries?: number; fetch?: typeof fetch } = {},
): OpenAI {
  const transport = opts.fetch ?? f.fetch;
  return new OpenAI({
    baseURL: `${f.url}/v1`,
    apiKey: opts.apiKey ?? "test",
    maxRetries: opts.maxRetries ?? 0,
    ...(transport ? { fetch: transport } : {}),
  });
}

/** A client that retries like the SDK default (2 retries) and counts the HTTP requests it sends. */
export function countingSdk(
  f: { url: string; fetch?: typeof fetch },
  apiKey = "test",
): { client: OpenAI; requests: () => number } {
  let n = 0;
  const transport = f.fetch ?? fetch;
  const counted: typeof fetch = (input, init) => {
    n++;
    return transport(input, init);
  };
  return { client: sdk(f, { apiKey, maxRetries: 2, fetch: counted }), requests: () => n };
}

/** One official user message (`AgentSessionInputMessageParam`). */
export function message(text: string) {
  return { role: "user" as const, content: [{ type: "input_text" as const, text }] };
}

/** `agent.session.input.message` with one user message. */
export function messageEvent(text: string) {
  return { type: "agent.session.input.message" as const, input: [message(text)] };
}

/** The raw JSON body of a list page (the SDK page object keeps it, protected). */
export function bodyOf(page: unknown): Record<string, unknown> {
  return (page as { body: Record<string, unknown> }).body;
}

/** Awaits a promise expected to reject and returns the error. */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected the call to be rejected, it succeeded");
}

/** Asserts an SDK APIError of the given class and status with an official error body. */
export function expectApiError(
  err: unknown,
  cls: abstract new (...args: never[]) => APIError,
  status: number,
): APIError {
  expect(err).toBeInstanceOf(cls);
  const e = err as APIError;
  expect(e.status).toBe(status);
  const body = e.error as { message?: unknown; type?: unknown; param?: unknown; code?: unknown };
  expect(typeof body.message).toBe("string");
  expect(typeof body.type).toBe("string");
  expect(body).toHaveProperty("param");
  expect(body).toHaveProperty("code");
  return e;
}

/**
 * Follows a session's stream (`events.stream`) in the background and records every event, so a test can
 * subscribe first, then act, then wait for what it expects.
 */
export class EventLog {
  readonly events: AgentSessionEvent[] = [];
  private error: unknown = null;

  private constructor(
    private readonly stream: { controller: AbortController },
    private readonly reading: Promise<void>,
  ) {}

  static async open(client: OpenAI, sessionId: string): Promise<EventLog> {
    const stream = await client.beta.agents.sessions.events.stream(sessionId);
    let log!: EventLog;
    const reading = (async () => {
      await Promise.resolve();
      try {
        for await (const e of stream) log.events.push(e);
      } catch (err) {
        if (!stream.controller.signal.aborted) log.error = err;
      }
    })();
    log = new EventLog(stream, reading);
    return log;
  }

  types(): string[] {
    return this.events.map((e) => e.type);
  }

  /** Waits for the first event (at or after `from`) matching `pred`; returns it. */
  async waitFor<T extends AgentSessionEvent>(
    pred: (e: AgentSessionEvent) => e is T,
    what: string,
    from?: number,
  ): Promise<T>;
  async waitFor(
    pred: (e: AgentSessionEvent) => boolean,
    what: string,
    from?: number,
  ): Promise<AgentSessionEvent>;
  async waitFor(pred: (e: AgentSessionEvent) => boolean, what: string, from = 0) {
    return waitFor(
      () => {
        if (this.error) throw this.error;
        return this.events.slice(from).find(pred);
      },
      20_000,
      what,
    );
  }

  /** Waits for `turn.<terminal>` of the turn and the `agent.session.*` status event after it. */
  async waitForSettled(turnId: string): Promise<{ end: AgentSessionEvent; status: AgentSessionEvent }> {
    const end = await this.waitFor(
      (e) =>
        (e.type === "agent.session.turn.completed" ||
          e.type === "agent.session.turn.failed" ||
          e.type === "agent.session.turn.cancelled") &&
        e.turn_id === turnId,
      `the end of ${turnId}`,
    );
    const at = this.events.indexOf(end);
    const status = await this.waitFor(
      (e) => e.type === "agent.session.idle" || e.type === "agent.session.failed",
      `the session status after ${turnId}`,
      at + 1,
    );
    return { end, status };
  }

  /** The turn id of the n-th `turn.created` event (0-based) once it arrived. */
  async turnCreated(n = 0): Promise<string> {
    const e = await waitFor(
      () => this.events.filter((x) => x.type === "agent.session.turn.created")[n],
      20_000,
      `turn.created #${n}`,
    );
    return (e as { turn_id: string }).turn_id;
  }

  async close(): Promise<void> {
    this.stream.controller.abort();
    await this.reading;
  }
}
