// Goal mode over HTTP (template dialect): one logical turn per goal, the goal resource, steer/interrupt, the
// server-enforced caps, failure, replacement and per-goal accounting. Real engine, mock model.
import { ev, Gate, scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { TestClock } from "../../support/clock.js";
import { readSse, type ServerFixture, startServer, waitFor } from "../../support/fixture.js";

const clock = new TestClock();

let fx: ServerFixture;
beforeAll(async () => {
  fx = await startServer({ env: { AGENT_GOAL_MAX_TURNS_LIMIT: "50" }, clock });
});
afterAll(async () => {
  await fx?.close();
});
beforeEach(() => {
  fx.mock.reset();
  fx.mock.setFallback(null);
});

const usage = (i: number, c: number, o: number) => ({
  inputTokens: i,
  cachedInputTokens: c,
  outputTokens: o,
  reasoningOutputTokens: 0,
  totalTokens: i + o,
});

/** initial message, continuation that calls update_goal(complete), final message. */
function goalWithOneContinuation(initial: string, final: string) {
  return [
    scripts.assistantMessage(initial, { usage: usage(3, 1, 2) }),
    scripts.sse([
      ev.responseCreated("tool"),
      ev.functionCall("call-complete", "update_goal", '{"status":"complete"}'),
      ev.completed("tool", usage(4, 1, 1)),
    ]),
    scripts.assistantMessage(final, { usage: usage(5, 0, 3) }),
  ];
}

async function newSession(): Promise<string> {
  const { body } = await fx.json<{ id: string }>("POST", "/v1/agents/sessions", {
    agent: { model: "mock-model" },
  });
  return body.id;
}

async function goal(id: string) {
  return fx.json<Record<string, unknown>>("GET", `/v1/agents/sessions/${id}/goal`);
}

const names = (events: Array<{ event: string | null }>) => events.map((e) => e.event);

describe("goal turns (template dialect)", () => {
  it("completes after a continuation as ONE logical turn with aggregated usage", async () => {
    fx.mock.enqueue(goalWithOneContinuation("First pass done.", "Goal reached."));
    const id = await newSession();
    const res = await fx.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Raise coverage",
      goal: { max_turns: 5 },
    });
    const events = await readSse(res);
    const turnIds = new Set(events.flatMap((e) => (e.data.turn_id ? [e.data.turn_id] : [])));
    expect(names(events).filter((n) => n === "agent.session.turn.started")).toHaveLength(1);
    expect(names(events).filter((n) => n === "agent.session.turn.completed")).toHaveLength(1);
    expect(names(events).at(-1)).toBe("agent.session.turn.completed");
    expect(turnIds.size).toBe(1);
    const messages = events.flatMap((e) =>
      e.event === "agent.session.output_item.done" ? [(e.data.item as { text: string }).text] : [],
    );
    expect(messages).toEqual(["First pass done.", "Goal reached."]);
    const completed = events.at(-1)!.data as { usage: Record<string, number> };
    expect(completed.usage).toMatchObject({ input_tokens: 12, cached_input_tokens: 2, output_tokens: 6 });
    const requests = await fx.mock.waitForRequests(3);
    expect(requests[0]!.lastUserText()).toBe("Raise coverage");
    expect(requests[1]!.goalObjective()).toBe("Raise coverage");
    const g = await goal(id);
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({
      object: "agent.session.goal",
      objective: "Raise coverage",
      status: "complete",
      status_reason: "completed",
      turns_used: 1,
      max_turns: 5,
      turn_id: [...turnIds][0],
    });
    // Per-goal accounting: input − cached + output of every model response of the goal's turns (the first one
    // included), counted by the server — here exactly the logical turn's usage (12 − 2 + 6).
    expect(g.body.tokens_used).toBe(16);
    const session = await fx.json<{ usage: { input_tokens: number } }>("GET", `/v1/agents/sessions/${id}`);
    expect(session.body.usage.input_tokens).toBe(12);
  });

  it("completes within the first engine turn without a continuation", async () => {
    fx.mock.enqueue([scripts.updateGoal("complete"), scripts.assistantMessage("Done at once.")]);
    const id = await newSession();
    const res = await fx.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Quick goal",
      goal: true,
    });
    const events = await readSse(res);
    expect(names(events).at(-1)).toBe("agent.session.turn.completed");
    expect(fx.mock.requests()).toHaveLength(2);
    expect((await goal(id)).body).toMatchObject({ status: "complete", turns_used: 0 });
  });

  it("starts a goal when creating the session (non-streaming create waits for the whole goal)", async () => {
    fx.mock.enqueue(goalWithOneContinuation("Working.", "All done."));
    const { status, body } = await fx.json<{
      id: string;
      status: string;
      output: Array<{ item: { text: string } }>;
    }>("POST", "/v1/agents/sessions", {
      agent: { model: "mock-model" },
      input: "Finish the report",
      goal: true,
    });
    expect(status).toBe(200);
    expect(body.status).toBe("idle");
    expect(body.output.map((o) => o.item.text)).toEqual(["Working.", "All done."]);
    expect((await goal(body.id)).body).toMatchObject({ status: "complete", objective: "Finish the report" });
  });

  it("a failed continuation fails the turn, starts no further continuation, and leaves the session usable", async () => {
    fx.mock.enqueue([scripts.assistantMessage("Started."), scripts.failure("model exploded")]);
    const id = await newSession();
    const events = await readSse(
      await fx.request("POST", `/v1/agents/sessions/${id}/events`, { input: "Doomed goal", goal: true }),
    );
    const failed = events.find((e) => e.event === "agent.session.turn.failed");
    expect((failed?.data.error as { message: string }).message).toMatch(/model exploded/);
    expect(fx.mock.requests()).toHaveLength(2);
    expect((await goal(id)).body).toMatchObject({ status: "blocked", status_reason: "turn_failed" });
    fx.mock.enqueueAssistantMessage("Plain turn works.");
    const after = await readSse(
      await fx.request("POST", `/v1/agents/sessions/${id}/events`, { input: "hello" }),
    );
    expect(names(after).at(-1)).toBe("agent.session.turn.completed");
    expect(fx.mock.requests()).toHaveLength(3);
    expect(fx.mock.requests()[2]!.lastUserText()).toBe("hello");
  });

  it("replaces a paused goal cleanly: no leftover objective, budget or counters", async () => {
    const id = await newSession();
    fx.mock.enqueueAssistantMessage("warm-up");
    await readSse(await fx.request("POST", `/v1/agents/sessions/${id}/events`, { input: "warm up" }));
    const paused = await fx.json("POST", `/v1/agents/sessions/${id}/goal`, {
      objective: "Old objective",
      status: "paused",
      token_budget: 500,
      max_turns: 7,
    });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({
      objective: "Old objective",
      status: "paused",
      token_budget: 500,
      max_turns: 7,
    });
    fx.mock.reset();
    fx.mock.enqueue(goalWithOneContinuation("New work.", "New goal done."));
    await readSse(
      await fx.request("POST", `/v1/agents/sessions/${id}/events`, { input: "New objective", goal: true }),
    );
    const requests = await fx.mock.waitForRequests(3);
    expect(requests[1]!.goalObjective()).toBe("New objective");
    expect(JSON.stringify(requests.map((r) => r.body))).not.toContain("Old objective");
    const g = (await goal(id)).body;
    expect(g).toMatchObject({ objective: "New objective", status: "complete", turns_used: 1 });
    expect(g.token_budget).toBe(fx.config.goals.defaultTokenBudget);
    expect(g.max_turns).toBe(fx.config.goals.defaultMaxTurns);
  });

  it("steers the running continuation (explicit steer field; a plain second input still gets 409)", async () => {
    const gate = new Gate();
    fx.mock.enqueue([
      scripts.assistantMessage("Initial."),
      scripts.streamingMessage(["continuing ", "work"], { gate }),
      scripts.updateGoal("complete"),
      scripts.assistantMessage("Steered and done."),
    ]);
    const id = await newSession();
    const stream = fx.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Steerable goal",
      goal: true,
    });
    await gate.reached;
    const plain = await fx.json("POST", `/v1/agents/sessions/${id}/events`, { input: "plain second input" });
    expect(plain.status).toBe(409);
    const steer = await fx.json("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Focus on edge cases",
      steer: true,
    });
    expect(steer.status).toBe(200);
    expect(steer.body).toMatchObject({ steered: true });
    gate.release();
    const events = await readSse(await stream);
    expect(names(events).at(-1)).toBe("agent.session.turn.completed");
    const requests = await fx.mock.waitForRequests(4);
    expect(requests[2]!.messageInputTexts("user").at(-1)).toBe("Focus on edge cases");
    expect(steer.body.turn_id).toBe(
      events.find((e) => e.event === "agent.session.turn.started")?.data.turn_id,
    );
  });

  it("interrupt mid-continuation cancels the logical turn, pauses the goal, session stays usable", async () => {
    const gate = new Gate();
    fx.mock.enqueue([
      scripts.assistantMessage("Initial."),
      scripts.streamingMessage(["never ", "ends"], { gate }),
    ]);
    const id = await newSession();
    const stream = fx.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Interruptible goal",
      goal: true,
    });
    await gate.reached;
    const cancel = await fx.json("POST", `/v1/agents/sessions/${id}/events`, {
      type: "agent.session.input.cancel",
    });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ cancelled: true, status: "idle" });
    const events = await readSse(await stream);
    expect(names(events).at(-1)).toBe("agent.session.turn.cancelled");
    expect((await goal(id)).body).toMatchObject({ status: "paused", status_reason: "interrupted" });
    gate.release();
    fx.mock.enqueueAssistantMessage("ordinary");
    const after = await readSse(
      await fx.request("POST", `/v1/agents/sessions/${id}/events`, { input: "ordinary turn" }),
    );
    expect(names(after).at(-1)).toBe("agent.session.turn.completed");
    const requests = fx.mock.requests();
    expect(requests).toHaveLength(3);
    expect(requests[2]!.lastUserText()).toBe("ordinary turn");
    // An ordinary turn, not a goal continuation (the engine still shows a paused goal's objective as context).
    expect(requests[2]!.isGoalContinuation()).toBe(false);
  });

  it("goal resource: set an objective to start work, pause, resume, clear; changes are on the stream", async () => {
    const id = await newSession();
    const gate = new Gate();
    fx.mock.enqueue([scripts.streamingMessage(["step ", "one"], { gate })]);
    const set = await fx.json("POST", `/v1/agents/sessions/${id}/goal`, {
      objective: "Write the docs",
      max_turns: 9,
    });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ objective: "Write the docs", status: "active", max_turns: 9 });
    await gate.reached;
    const paused = await fx.json("POST", `/v1/agents/sessions/${id}/goal`, { status: "paused" });
    expect(paused.status).toBe(200);
    gate.release();
    await waitFor(async () => (await goal(id)).body.status === "paused", 15_000, "goal paused");
    await waitFor(
      async () =>
        (await fx.json<{ status: string }>("GET", `/v1/agents/sessions/${id}`)).body.status === "idle",
    );
    expect((await goal(id)).body.status_reason).toBe("user_paused");
    const before = fx.mock.requests().length;
    expect(fx.mock.requests()[0]!.goalObjective()).toBe("Write the docs");
    fx.mock.enqueue([scripts.updateGoal("complete"), scripts.assistantMessage("Docs written.")]);
    const resumed = await fx.json("POST", `/v1/agents/sessions/${id}/goal`, { status: "active" });
    expect(resumed.body).toMatchObject({ status: "active", status_reason: "resumed" });
    await waitFor(async () => (await goal(id)).body.status === "complete", 15_000, "goal complete");
    // The goal is complete as soon as the model says so; its turn ends with the model's last reply after that.
    await waitFor(
      async () =>
        (await fx.json<{ status: string }>("GET", `/v1/agents/sessions/${id}`)).body.status === "idle",
      15_000,
      "the goal's turn to end",
    );
    expect(fx.mock.requests()[before]!.goalObjective()).toBe("Write the docs");
    const cleared = await fx.json("DELETE", `/v1/agents/sessions/${id}/goal`);
    expect(cleared.body).toMatchObject({ deleted: true });
    expect((await goal(id)).status).toBe(404);
    // The whole log (the official session stream replays every turn), up to the goal being cleared.
    const log = await fx.request("GET", `/v1/agents/sessions/${id}/events`, undefined, {
      "last-event-id": "0",
      "openai-beta": "agents=v1",
    });
    const frames = await readSse(
      log,
      (e) => e.event === "agent.session.goal.updated" && e.data.goal === null,
    );
    const statuses = frames.flatMap((e) =>
      e.event === "agent.session.goal.updated"
        ? [(e.data.goal as { status: string } | null)?.status ?? "cleared"]
        : [],
    );
    expect(statuses[0]).toBe("active");
    expect(statuses).toContain("paused");
    expect(statuses).toContain("complete");
  });

  it("rejects bad goal input with clear 400s", async () => {
    const id = await newSession();
    for (const goalValue of ["yes", { max_turns: -1 }, { token_budget: 0 }, { max_duration_seconds: 1.5 }]) {
      const r = await fx.json<{ error: string; type: string }>("POST", `/v1/agents/sessions/${id}/events`, {
        input: "x",
        goal: goalValue,
      });
      expect(r.status, JSON.stringify(goalValue)).toBe(400);
      expect(r.body.type).toBe("ValueError");
    }
    const tooBig = await fx.json("POST", `/v1/agents/sessions/${id}/events`, {
      input: "x",
      goal: { max_turns: 51 },
    });
    expect(tooBig.status).toBe(400);
    expect(JSON.stringify(tooBig.body)).toContain("at most 50");
    expect((await fx.json("POST", `/v1/agents/sessions/${id}/goal`, { status: "active" })).status).toBe(404);
    expect((await fx.json("POST", `/v1/agents/sessions/${id}/goal`, { objective: "" })).status).toBe(400);
    expect((await fx.json("POST", `/v1/agents/sessions/${id}/goal`, { bogus: 1 })).status).toBe(400);
    expect(fx.mock.requests()).toHaveLength(0);
  });
});

describe("server-enforced goal caps (a model that never completes)", () => {
  beforeEach(() => {
    fx.mock.setFallback(() => scripts.assistantMessage("still working", { usage: usage(10, 0, 5) }));
  });

  /** After a cap: one plain turn makes exactly one more request, which is not a goal continuation. */
  async function assertNoFurtherRequests(id: string, before: number) {
    fx.mock.enqueueAssistantMessage("plain reply");
    await readSse(await fx.request("POST", `/v1/agents/sessions/${id}/events`, { input: "plain follow-up" }));
    const requests = fx.mock.requests();
    expect(requests).toHaveLength(before + 1);
    expect(requests.at(-1)!.lastUserText()).toBe("plain follow-up");
  }

  it("max_turns: stops exactly after the allowed continuations", async () => {
    const id = await newSession();
    const events = await readSse(
      await fx.request("POST", `/v1/agents/sessions/${id}/events`, {
        input: "Endless",
        goal: { max_turns: 2 },
      }),
    );
    expect(names(events).at(-1)).toBe("agent.session.turn.completed");
    expect(fx.mock.requests()).toHaveLength(3);
    expect((await goal(id)).body).toMatchObject({
      status: "paused",
      status_reason: "max_turns",
      turns_used: 2,
    });
    const resume = await fx.json("POST", `/v1/agents/sessions/${id}/goal`, { status: "active" });
    expect(resume.status).toBe(409);
    await assertNoFurtherRequests(id, 3);
  });

  it("max_turns 0: only the first engine turn runs", async () => {
    const id = await newSession();
    await readSse(
      await fx.request("POST", `/v1/agents/sessions/${id}/events`, {
        input: "Endless",
        goal: { max_turns: 0 },
      }),
    );
    expect(fx.mock.requests()).toHaveLength(1);
    expect((await goal(id)).body).toMatchObject({
      status: "paused",
      status_reason: "max_turns",
      turns_used: 0,
    });
    await assertNoFurtherRequests(id, 1);
  });

  it("token_budget: stops once the goal has used its budget", async () => {
    const id = await newSession();
    await readSse(
      await fx.request("POST", `/v1/agents/sessions/${id}/events`, {
        input: "Endless",
        goal: { token_budget: 40, max_turns: 20 },
      }),
    );
    const g = (await goal(id)).body as { status: string; status_reason: string; tokens_used: number };
    expect(g.status_reason).toBe("token_budget");
    expect(["paused", "budget_limited"]).toContain(g.status);
    expect(g.tokens_used).toBeGreaterThanOrEqual(40);
    const n = fx.mock.requests().length;
    expect(n).toBeLessThan(20);
    await assertNoFurtherRequests(id, n);
  });

  it("max_duration_seconds: pauses on the wall clock", async () => {
    const gate = new Gate();
    fx.mock.enqueue(scripts.streamingMessage(["slow ", "continuation"], { gate }), (r) =>
      r.isGoalContinuation(),
    );
    const id = await newSession();
    const stream = fx.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Endless",
      goal: { max_duration_seconds: 600, max_turns: 20 },
    });
    await gate.reached;
    clock.advance(601);
    await waitFor(async () => (await goal(id)).body.status === "paused", 15_000, "duration pause");
    gate.release();
    const events = await readSse(await stream);
    expect(names(events).at(-1)).toBe("agent.session.turn.completed");
    expect((await goal(id)).body).toMatchObject({ status: "paused", status_reason: "max_duration" });
    await assertNoFurtherRequests(id, fx.mock.requests().length);
  });
});
