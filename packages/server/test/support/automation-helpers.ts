// Helpers of the automation and webhook suites: time under a TestClock, waiting for invocations and turns.
import type OpenAI from "openai";
import type { AutomationInvocation } from "openai/resources/beta/agents/automations/invocations";
import type { TurnRecord } from "../../src/store/types.js";
import type { TestClock } from "./clock.js";
import { type ServerFixture, waitFor } from "./fixture.js";

/** Waits (polling, with a timeout) until `check` gives a value; returns it. */
export async function until<T>(
  check: () => T | null | undefined | Promise<T | null | undefined>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  return (await waitFor(check, timeoutMs, what)) as T;
}

/** Unix seconds of an ISO instant. */
export const at = (iso: string): number => Date.parse(iso) / 1000;

/** Moves the clock forward to `iso` (it never goes back). */
export function moveTo(clock: TestClock, iso: string): void {
  const delta = at(iso) - clock.now();
  if (delta < 0) throw new Error(`the clock is already past ${iso}`);
  clock.advance(delta);
}

export async function invocationsOf(client: OpenAI, automationId: string): Promise<AutomationInvocation[]> {
  const out: AutomationInvocation[] = [];
  for await (const i of client.beta.agents.automations.invocations.list(automationId, { order: "asc" })) {
    out.push(i);
  }
  return out;
}

/** Waits until the automation has `n` invocations; returns them (oldest first). */
export function waitForInvocations(
  client: OpenAI,
  automationId: string,
  n: number,
): Promise<AutomationInvocation[]> {
  return until(async () => {
    const list = await invocationsOf(client, automationId);
    return list.length >= n ? list : null;
  }, `${n} invocations of ${automationId}`);
}

/** Waits until the invocation is no longer queued; returns it. */
export function waitForDelivered(
  client: OpenAI,
  automationId: string,
  invocationId: string,
): Promise<AutomationInvocation> {
  return until(async () => {
    const i = await client.beta.agents.automations.invocations.retrieve(invocationId, {
      automation_id: automationId,
    });
    return i.status !== "queued" ? i : null;
  }, `invocation ${invocationId} delivered`);
}

/** The session's turns, oldest first (from the store). */
export async function turnsOf(f: ServerFixture, sessionId: string): Promise<TurnRecord[]> {
  return (await f.service.core.store.listTurns(sessionId, { order: "asc", limit: 100 })).data;
}

/** Waits until every turn of the session has ended and the session is idle; returns its turns. */
export function waitForIdle(f: ServerFixture, sessionId: string, turns = 1): Promise<TurnRecord[]> {
  return until(
    async () => {
      const s = await f.service.core.store.getSession(sessionId);
      const list = await turnsOf(f, sessionId);
      const ended =
        list.length >= turns && list.every((t) => t.status !== "in_progress" && t.status !== "queued");
      return s && !s.active_turn_id && s.status === "idle" && ended ? list : null;
    },
    `session ${sessionId} idle after ${turns} turn(s)`,
    30_000,
  );
}

/** Whether the scripted model was asked `text` (the last user message of a request). */
export const modelSaw = (f: ServerFixture, text: string): boolean =>
  f.mock.requests().some((r) => r.lastUserText() === text);

/** One official user message. */
export const userMessage = (text: string) => ({
  type: "message" as const,
  role: "user" as const,
  content: [{ type: "input_text" as const, text }],
});
