// Goal mode through the official `openai` SDK (OpenAI-Beta: agents=v1): a goal on an input message, the goal
// resource, steering a continuation with a plain message, cancel, and a cap.
import { ev, Gate, scripts } from "@codex-agent-api/testkit";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { type ServerFixture, startServer, waitFor } from "../../support/fixture.js";

let fx: ServerFixture;
let client: OpenAI;
beforeAll(async () => {
  fx = await startServer();
  client = new OpenAI({ baseURL: `${fx.url}/v1`, apiKey: "test", maxRetries: 0 });
});
afterAll(async () => {
  await fx?.close();
});
beforeEach(() => {
  fx.mock.reset();
  fx.mock.setFallback(null);
});

interface Goal {
  objective: string;
  status: string;
  status_reason: string;
  turns_used: number;
  turn_id: string;
}
const getGoal = (id: string): Promise<Goal> =>
  client.get(`/agents/sessions/${id}/goal`, { headers: { "OpenAI-Beta": "agents=v1" } }) as Promise<Goal>;

/** Session events until the first idle/failed that follows a finished turn (the initial idle does not count). */
async function collect(sessionId: string) {
  const stream = await client.beta.agents.sessions.events.stream(sessionId);
  const events: Array<Record<string, unknown>> = [];
  let turnEnded = false;
  for await (const e of stream as AsyncIterable<Record<string, unknown>>) {
    events.push(e);
    const type = e.type as string;
    if (/^agent\.session\.turn\.(completed|failed|cancelled)$/.test(type)) turnEnded = true;
    if (turnEnded && (type === "agent.session.idle" || type === "agent.session.failed")) break;
  }
  return events;
}

it("starts a goal from an input message and reports it as one turn with goal updates", async () => {
  fx.mock.enqueue([
    scripts.assistantMessage("Working on it."),
    scripts.sse([
      ev.responseCreated("t"),
      ev.functionCall("c1", "update_goal", '{"status":"complete"}'),
      ev.completed("t"),
    ]),
    scripts.assistantMessage("Goal done."),
  ]);
  const session = await client.beta.agents.sessions.create({
    agent: { model: "mock-model" },
    environment: { type: "none" },
  });
  const events = collect(session.id);
  await waitFor(() => fx.service.core.hub.subscriberCount(session.id) > 0, 10_000, "subscriber");
  await client.beta.agents.sessions.events.create(session.id, {
    events: [
      {
        type: "agent.session.input.message",
        input: [{ role: "user", content: [{ type: "input_text", text: "Ship the feature" }] }],
        goal: { max_turns: 4 },
      } as never,
    ],
  });
  const seen = await events;
  const types = seen.map((e) => e.type);
  expect(types.filter((t) => t === "agent.session.turn.created")).toHaveLength(1);
  expect(types.filter((t) => t === "agent.session.turn.completed")).toHaveLength(1);
  expect(types).toContain("agent.session.goal.updated");
  const texts = seen.flatMap((e) => {
    const item = e.item as { type?: string; role?: string; content?: Array<{ text: string }> } | undefined;
    return e.type === "agent.session.turn.item.done" && item?.role === "assistant"
      ? [item.content![0]!.text]
      : [];
  });
  expect(texts).toEqual(["Working on it.", "Goal done."]);
  const goal = await getGoal(session.id);
  expect(goal).toMatchObject({ objective: "Ship the feature", status: "complete", turns_used: 1 });
  const turns = await client.beta.agents.sessions.turns.list(session.id);
  expect(turns.data).toHaveLength(1);
  expect(turns.data[0]!.id).toBe(goal.turn_id);
  expect(turns.data[0]!.usage?.input_tokens).toBeGreaterThan(0);
});

it("a message during a goal steers the running continuation; cancel interrupts and pauses the goal", async () => {
  const gate = new Gate();
  fx.mock.enqueue([
    scripts.assistantMessage("Started."),
    scripts.streamingMessage(["long ", "continuation"], { gate }),
  ]);
  fx.mock.setFallback(() => scripts.assistantMessage("more work"));
  const session = await client.beta.agents.sessions.create({
    agent: { model: "mock-model" },
    environment: { type: "none" },
  });
  await client.beta.agents.sessions.events.create(session.id, {
    events: [{ type: "agent.session.input.message", input: "Endless refactor", goal: true } as never],
  });
  await gate.reached;
  await client.beta.agents.sessions.events.create(session.id, {
    events: [
      {
        type: "agent.session.input.message",
        input: [{ role: "user", content: [{ type: "input_text", text: "Prefer small commits" }] }],
      },
    ],
  });
  gate.release();
  await waitFor(
    () => fx.mock.requests().some((r) => r.messageInputTexts("user").at(-1) === "Prefer small commits"),
    15_000,
    "steer reaches the model",
  );
  await client.beta.agents.sessions.events.create(session.id, {
    events: [{ type: "agent.session.input.cancel" }],
  });
  await waitFor(
    async () => (await client.beta.agents.sessions.retrieve(session.id)).status === "idle",
    15_000,
    "idle",
  );
  const turns = await client.beta.agents.sessions.turns.list(session.id);
  expect(turns.data[0]!.status).toBe("cancelled");
  expect(await getGoal(session.id)).toMatchObject({ status: "paused", status_reason: "interrupted" });
});

it("a goal while a turn runs is a clear 409; goal caps apply in this dialect too", async () => {
  const gate = new Gate();
  fx.mock.enqueue(scripts.streamingMessage(["first ", "turn"], { gate }));
  fx.mock.setFallback(() => scripts.assistantMessage("never done"));
  const session = await client.beta.agents.sessions.create({
    agent: { model: "mock-model" },
    environment: { type: "none" },
  });
  await client.beta.agents.sessions.events.create(session.id, {
    events: [{ type: "agent.session.input.message", input: "Endless", goal: { max_turns: 1 } } as never],
  });
  await gate.reached;
  const err = await client.beta.agents.sessions.events
    .create(session.id, {
      events: [{ type: "agent.session.input.message", input: "Another goal", goal: true } as never],
    })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OpenAI.ConflictError);
  gate.release();
  await waitFor(
    async () => (await client.beta.agents.sessions.retrieve(session.id)).status === "idle",
    20_000,
    "idle",
  );
  expect(await getGoal(session.id)).toMatchObject({
    objective: "Endless",
    status: "paused",
    status_reason: "max_turns",
    turns_used: 1,
  });
  if (fx.mock.requests().length !== 2)
    require("node:fs").writeFileSync(
      "/tmp/dbg-409.json",
      JSON.stringify(
        fx.mock
          .requests()
          .map((r) => [
            r.threadId,
            r.lastUserText()?.slice(0, 60),
            r.isGoalContinuation(),
            JSON.stringify(r.inputItems().slice(-1)).slice(0, 200),
          ]),
      ),
    );
  expect(fx.mock.requests()).toHaveLength(2);
  const bad = await client.beta.agents.sessions.events
    .create(session.id, {
      events: [{ type: "agent.session.input.message", input: "x", goal: { max_turns: -2 } } as never],
    })
    .catch((e: unknown) => e);
  expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
});
