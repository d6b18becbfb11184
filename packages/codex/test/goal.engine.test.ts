// Port of the seed goal-mode suite (shared/seeds/codex-python-sdk/test_goal_mode.txt) to the TypeScript SDK,
// against the pinned engine (0.169.0) and the testkit mock model. Where the seed's sync/async pair collapses in
// TypeScript, the second variant runs two goals concurrently in one app-server, each routed to its own thread.
import { ev, Gate, scripts } from "@codex-agent-api/testkit";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { InvalidRequestError, TransportClosedError, type TurnEvent, TurnFailedError } from "../src/index.js";
import {
  agentMessages,
  completedGoal,
  type Fixture,
  fixturePool,
  streamedMessages,
  usage,
  userText,
} from "./fixture.js";

const pool = fixturePool();
let f: Fixture;
afterEach(() => pool.release());
afterAll(() => pool.close());

/** Initial message, a gated streaming continuation, update_goal, final message (the seed's steerable goal). */
function steerableGoal(prefix: string, initial: string, chunks: string[], final: string, gate: Gate) {
  return [
    scripts.assistantMessage(initial, { responseId: `${prefix}-initial` }),
    scripts.streamingMessage(chunks, { responseId: `${prefix}-continuation`, gate }),
    scripts.sse([
      ev.responseCreated(`${prefix}-complete-tool`),
      ev.functionCall(`call-${prefix}-complete`, "update_goal", '{"status":"complete"}'),
      ev.completed(`${prefix}-complete-tool`, usage(1, 0, 1, 0, 2)),
    ]),
    scripts.assistantMessage(final, { responseId: `${prefix}-final` }),
  ];
}

function interruptibleGoal(prefix: string, initial: string, chunks: string[], followUp: string, gate: Gate) {
  return [
    scripts.assistantMessage(initial, { responseId: `${prefix}-initial` }),
    scripts.streamingMessage(chunks, { responseId: `${prefix}-continuation`, gate }),
    scripts.assistantMessage(followUp, { responseId: `${prefix}-follow-up` }),
  ];
}

const noCache = (u: object) => ({ cacheWriteInputTokens: 0, ...u });

describe("goal mode (seed scenarios)", () => {
  it("1. a goal run aggregates the automatic continuation", async () => {
    f = await pool.take();
    f.mock.enqueue(completedGoal("sync-run", "Initial pass complete.", "Goal complete."));
    const thread = await f.codex.startThread();
    const schema = {
      type: "object",
      properties: { summary: { type: "string" } },
      required: ["summary"],
      additionalProperties: false,
    };
    const turn = await thread.turn(
      [
        { type: "text", text: " Improve benchmark coverage " },
        { type: "text", text: "Document the results" },
      ],
      { goal: true, model: "goal-test-model", outputSchema: schema },
    );
    const result = await turn.run();
    const requests = await f.mock.waitForRequests(3);
    const first = requests[0]!.body as { model: string; text: { format: { schema: unknown } } };
    expect(result.id).toBe(turn.id);
    expect(result.status).toBe("completed");
    expect(agentMessages(result.items)).toEqual(["Initial pass complete.", "Goal complete."]);
    expect(result.finalResponse).toBe("Goal complete.");
    expect(result.usage?.last).toEqual(
      noCache({
        cachedInputTokens: 0,
        inputTokens: 5,
        outputTokens: 3,
        reasoningOutputTokens: 0,
        totalTokens: 8,
      }),
    );
    expect(result.usage?.total).toEqual(
      noCache({
        cachedInputTokens: 2,
        inputTokens: 12,
        outputTokens: 6,
        reasoningOutputTokens: 2,
        totalTokens: 18,
      }),
    );
    expect(result.usage?.modelContextWindow).toBe(258_400);
    expect(result.startedAt).not.toBeNull();
    expect(result.completedAt).not.toBeNull();
    expect(result.durationMs).toBe(Math.max(0, result.completedAt! - result.startedAt!) * 1000);
    expect(requests[0]!.messageInputTexts("user").slice(-2)).toEqual([
      " Improve benchmark coverage ",
      "Document the results",
    ]);
    expect(first.model).toBe("goal-test-model");
    expect(first.text.format.schema).toEqual(schema);
    // 0.169.0 does not inline the objective into a user message (the seed checks for "<objective>" text);
    // it sends it as a synthetic `goal_objective` function_call_output item. Assert on what the engine sends.
    expect(requests[1]!.goalObjective()).toBe("Improve benchmark coverage\n\nDocument the results");
    expect(result.engineTurns).toBe(2);
  });

  it("2. a goal stream exposes one logical lifecycle", async () => {
    f = await pool.take();
    f.mock.enqueue([
      scripts.streamingMessage(["initial ", "pass"], {
        responseId: "stream-initial",
        itemId: "msg-stream-initial",
      }),
      scripts.updateGoal("complete", { responseId: "stream-complete-tool", usage: usage(1, 0, 1, 0, 2) }),
      scripts.streamingMessage(["goal ", "complete"], {
        responseId: "stream-final",
        itemId: "msg-stream-final",
      }),
    ]);
    const turn = await (await f.codex.startThread()).turn("Finish the integration suite", { goal: true });
    const events: TurnEvent[] = [];
    for await (const e of turn.stream()) events.push(e);
    const lifecycle = events.filter((e) => e.method === "turn/started" || e.method === "turn/completed");
    const routed = events.flatMap((e) => {
      const p = e.params as { turnId?: string; turn?: { id: string } };
      const id = p.turnId ?? p.turn?.id;
      return id ? [id] : [];
    });
    expect(lifecycle.map((e) => e.method)).toEqual(["turn/started", "turn/completed"]);
    expect(routed.length).toBeGreaterThan(4);
    expect(new Set(routed)).toEqual(new Set([turn.id]));
    expect(events.flatMap((e) => (e.method === "item/agentMessage/delta" ? [e.params.delta] : []))).toEqual([
      "initial ",
      "pass",
      "goal ",
      "complete",
    ]);
    expect(streamedMessages(events)).toEqual(["initial pass", "goal complete"]);
    expect(events.flatMap((e) => (e.method === "turn/completed" ? [e.params.turn.status] : []))).toEqual([
      "completed",
    ]);
  });

  it("3. a goal can complete within the initial engine turn", async () => {
    f = await pool.take();
    f.mock.enqueue([
      scripts.updateGoal("complete", {
        responseId: "single-turn-complete-tool",
        usage: usage(1, 0, 1, 0, 2),
      }),
      scripts.assistantMessage("Completed without a continuation.", { responseId: "single-turn-final" }),
    ]);
    const turn = await (await f.codex.startThread()).turn("Finish in the initial turn", { goal: true });
    const result = await turn.run();
    const requests = await f.mock.waitForRequests(2);
    await expect(turn.steer("Keep working")).rejects.toThrow(InvalidRequestError);
    await expect(turn.steer("Keep working")).rejects.toThrow("no active turn to steer");
    await expect(turn.interrupt()).rejects.toThrow("no active turn to interrupt");
    expect([result.id, result.status, result.finalResponse]).toEqual([
      turn.id,
      "completed",
      "Completed without a continuation.",
    ]);
    expect(agentMessages(result.items)).toEqual(["Completed without a continuation."]);
    expect(requests).toHaveLength(2);
    expect(f.mock.requests()).toHaveLength(2);
    expect(result.engineTurns).toBe(1);
  });

  it("4. a goal replaces an existing persisted goal", async () => {
    f = await pool.take();
    f.mock.enqueue(completedGoal("replacement", "Replacement started.", "Replacement complete."));
    const thread = await f.codex.startThread();
    const previous = await thread.setGoal({
      objective: "Keep the old benchmark objective",
      status: "paused",
      tokenBudget: 500,
    });
    const result = await thread.run("Publish the replacement objective", { goal: true });
    const persisted = await thread.getGoal();
    const requests = await f.mock.waitForRequests(3);
    expect([previous.objective, previous.status, previous.tokenBudget]).toEqual([
      "Keep the old benchmark objective",
      "paused",
      500,
    ]);
    expect([result.status, result.finalResponse]).toEqual(["completed", "Replacement complete."]);
    expect([persisted?.objective, persisted?.status, persisted?.tokenBudget]).toEqual([
      "Publish the replacement objective",
      "complete",
      null,
    ]);
    expect(requests[1]!.goalObjective()).toBe("Publish the replacement objective");
    expect(JSON.stringify(requests[1]!.body)).not.toContain("Keep the old benchmark objective");
  });

  it("5. steer targets the active continuation and returns the logical id", async () => {
    f = await pool.take();
    const gate = new Gate();
    f.mock.enqueue(
      steerableGoal(
        "steer",
        "Initial work complete.",
        ["continuation ", "work"],
        "Steered goal complete.",
        gate,
      ),
    );
    const turn = await (await f.codex.startThread()).turn("Start a goal that needs refinement", {
      goal: true,
    });
    await f.mock.waitForRequests(2);
    await gate.reached;
    const steering = turn.steer("Prioritize the edge-case coverage.");
    const steer = await steering;
    gate.release();
    const result = await turn.run();
    const requests = await f.mock.waitForRequests(4);
    expect(steer.turnId).toBe(turn.id);
    expect([result.id, result.status, result.finalResponse]).toEqual([
      turn.id,
      "completed",
      "Steered goal complete.",
    ]);
    expect(agentMessages(result.items)).toEqual([
      "Initial work complete.",
      "continuation work",
      "Steered goal complete.",
    ]);
    expect(requests[2]!.messageInputTexts("user").slice(-1)).toEqual(["Prioritize the edge-case coverage."]);
  });

  it("6. interrupt pauses the goal and leaves the thread usable", async () => {
    f = await pool.take();
    const gate = new Gate();
    f.mock.enqueue(
      interruptibleGoal(
        "interrupt",
        "Initial work complete.",
        ["still ", "working"],
        "Ordinary follow-up complete.",
        gate,
      ),
    );
    const thread = await f.codex.startThread();
    const turn = await thread.turn("Start interruptible goal work", { goal: true });
    await f.mock.waitForRequests(2);
    const interrupt = await turn.interrupt();
    const interrupted = await turn.run();
    gate.release();
    const followUp = await thread.run("Continue with an ordinary turn");
    await f.mock.waitForRequests(3);
    const requests = f.mock.requests();
    expect(interrupt).toEqual({});
    expect([interrupted.id, interrupted.status]).toEqual([turn.id, "interrupted"]);
    expect([followUp.status, followUp.finalResponse]).toEqual(["completed", "Ordinary follow-up complete."]);
    expect(requests).toHaveLength(3);
    expect(requests[2]!.messageInputTexts("user").slice(-1)).toEqual(["Continue with an ordinary turn"]);
    expect((await thread.getGoal())?.status).toBe("paused");
  });

  it("7. a failed engine turn ends the goal without a continuation", async () => {
    f = await pool.take();
    f.mock.enqueue([
      scripts.failure("goal model failed", { responseId: "goal-terminal-failure" }),
      scripts.assistantMessage("Recovered with an ordinary turn.", { responseId: "goal-failure-follow-up" }),
    ]);
    const thread = await f.codex.startThread();
    const failed = thread.run("Fail this goal turn", { goal: true });
    await expect(failed).rejects.toThrow(TurnFailedError);
    await expect(failed).rejects.toThrow(/goal model failed/);
    const followUp = await thread.run("Run after the goal failure");
    await f.mock.waitForRequests(2);
    const requests = f.mock.requests();
    expect([followUp.status, followUp.finalResponse]).toEqual([
      "completed",
      "Recovered with an ordinary turn.",
    ]);
    expect(requests).toHaveLength(2);
    expect(requests[1]!.messageInputTexts("user").slice(-1)).toEqual(["Run after the goal failure"]);
  });

  it("8. closing a goal stream releases routing at once", async () => {
    f = await pool.take();
    const gate = new Gate();
    f.mock.enqueue(
      scripts.streamingMessage(["long ", "running ", "goal"], { responseId: "stream-close", gate }),
    );
    const turn = await (await f.codex.startThread()).turn("Close this goal stream", { goal: true });
    await f.mock.waitForRequests(1);
    expect(f.codex.activeRoutes).toBe(1);
    const stream = turn.stream();
    await stream.return?.();
    expect(f.codex.activeRoutes).toBe(0);
    gate.release();
  });

  it("9. an app-server exit unblocks the goal and releases routing", async () => {
    f = await pool.take();
    const gate = new Gate();
    f.mock.enqueue(
      scripts.streamingMessage(["long ", "running ", "goal"], { responseId: "transport-exit", gate }),
    );
    const turn = await (await f.codex.startThread()).turn("Stop the app-server during this goal", {
      goal: true,
    });
    await f.mock.waitForRequests(1);
    process.kill(f.codex.pid!, "SIGTERM");
    await expect(turn.run()).rejects.toThrow(TransportClosedError);
    expect(f.codex.activeRoutes).toBe(0);
    gate.release();
  });

  it("10. rejected goal starts leave the thread usable and make no model request", async () => {
    f = await pool.take();
    f.mock.enqueueAssistantMessage("Ordinary turn complete.", { responseId: "validation-follow-up" });
    const thread = await f.codex.startThread();
    const empty = await thread.turn("  ", { goal: true }).catch((e: unknown) => e);
    const ephemeral = await f.codex.startThread({ ephemeral: true });
    const ephemeralError = await ephemeral.turn("Persist this goal", { goal: true }).catch((e: unknown) => e);
    const followUp = await thread.run("Run after rejected goals");
    const requests = await f.mock.waitForRequests(1);
    expect(empty).toBeInstanceOf(InvalidRequestError);
    expect(ephemeralError).toBeInstanceOf(InvalidRequestError);
    expect([(empty as Error).message, (ephemeralError as Error).message]).toEqual([
      "goal objective must not be empty",
      `ephemeral thread does not support goals: ${ephemeral.id}`,
    ]);
    expect([followUp.status, followUp.finalResponse]).toEqual(["completed", "Ordinary turn complete."]);
    expect(requests).toHaveLength(1);
    expect(f.codex.activeRoutes).toBe(0);
  });

  it("11. two goals run concurrently in one app-server, each result exact", async () => {
    f = await pool.take();
    const [a, b] = await Promise.all([f.codex.startThread(), f.codex.startThread()]);
    f.mock.enqueue(completedGoal("async-a", "A initial pass.", "A goal complete."), a.id);
    f.mock.enqueue(completedGoal("async-b", "B initial pass.", "B goal complete."), b.id);
    const [ta, tb] = await Promise.all([
      a.turn("Finish goal A", { goal: true }),
      b.turn("Finish goal B", { goal: true }),
    ]);
    const [ra, rb] = await Promise.all([ta.run(), tb.run()]);
    const [qa, qb] = await Promise.all([
      f.mock.waitForRequests(3, { route: a.id }),
      f.mock.waitForRequests(3, { route: b.id }),
    ]);
    for (const [turn, r, q, name] of [
      [ta, ra, qa, "A"],
      [tb, rb, qb, "B"],
    ] as const) {
      expect([r.id, r.status, r.finalResponse]).toEqual([turn.id, "completed", `${name} goal complete.`]);
      expect(agentMessages(r.items)).toEqual([`${name} initial pass.`, `${name} goal complete.`]);
      expect(r.usage?.total.totalTokens).toBe(18);
      expect(q[1]!.goalObjective()).toBe(`Finish goal ${name}`);
      await expect(turn.steer("Keep working")).rejects.toThrow("no active turn to steer");
      await expect(turn.interrupt()).rejects.toThrow("no active turn to interrupt");
    }
    expect(ra.id).not.toBe(rb.id);
  });

  it("12. two goals are steered concurrently", async () => {
    f = await pool.take();
    const [a, b] = await Promise.all([f.codex.startThread(), f.codex.startThread()]);
    const gates = { [a.id]: new Gate(), [b.id]: new Gate() };
    for (const [t, n] of [
      [a, "A"],
      [b, "B"],
    ] as const) {
      f.mock.enqueue(
        steerableGoal(
          `s${n}`,
          `${n} initial.`,
          [`${n} continuation `, "work"],
          `${n} steered done.`,
          gates[t.id]!,
        ),
        t.id,
      );
    }
    const turns = await Promise.all([a.turn("Refine A", { goal: true }), b.turn("Refine B", { goal: true })]);
    await Promise.all([gates[a.id]!.reached, gates[b.id]!.reached]);
    const steers = await Promise.all(turns.map((t, i) => t.steer(`Steer ${i === 0 ? "A" : "B"} now.`)));
    for (const g of Object.values(gates)) g.release();
    const results = await Promise.all(turns.map((t) => t.run()));
    for (const [i, n] of ["A", "B"].entries()) {
      const thread = i === 0 ? a : b;
      const requests = await f.mock.waitForRequests(4, { route: thread.id });
      expect(steers[i]!.turnId).toBe(turns[i]!.id);
      expect(results[i]!.finalResponse).toBe(`${n} steered done.`);
      expect(agentMessages(results[i]!.items)).toEqual([
        `${n} initial.`,
        `${n} continuation work`,
        `${n} steered done.`,
      ]);
      expect(requests[2]!.messageInputTexts("user").slice(-1)).toEqual([`Steer ${n} now.`]);
    }
  });

  it("13. two goals are interrupted concurrently and both threads stay usable", async () => {
    f = await pool.take();
    const [a, b] = await Promise.all([f.codex.startThread(), f.codex.startThread()]);
    const gates = [new Gate(), new Gate()];
    f.mock.enqueue(
      interruptibleGoal("ia", "A initial.", ["A still ", "working"], "A follow-up.", gates[0]!),
      a.id,
    );
    f.mock.enqueue(
      interruptibleGoal("ib", "B initial.", ["B still ", "working"], "B follow-up.", gates[1]!),
      b.id,
    );
    const turns = await Promise.all([
      a.turn("Interrupt A", { goal: true }),
      b.turn("Interrupt B", { goal: true }),
    ]);
    await Promise.all(gates.map((g) => g.reached));
    const interrupts = await Promise.all(turns.map((t) => t.interrupt()));
    const results = await Promise.all(turns.map((t) => t.run()));
    for (const g of gates) g.release();
    const followUps = await Promise.all([a.run("Continue A normally"), b.run("Continue B normally")]);
    expect(interrupts).toEqual([{}, {}]);
    expect(results.map((r) => [r.id, r.status])).toEqual(turns.map((t) => [t.id, "interrupted"]));
    expect(followUps.map((r) => [r.status, r.finalResponse])).toEqual([
      ["completed", "A follow-up."],
      ["completed", "B follow-up."],
    ]);
    for (const [thread, text] of [
      [a, "Continue A normally"],
      [b, "Continue B normally"],
    ] as const) {
      const requests = f.mock.requests(thread.id);
      expect(requests).toHaveLength(3);
      expect(requests[2]!.messageInputTexts("user").slice(-1)).toEqual([text]);
      expect(userText(requests[2]!)).toContain(text);
    }
  });
});

describe("goal mode (beyond the seed)", () => {
  it("reports each engine turn and each goal update in the stream", async () => {
    f = await pool.take();
    // Three engine turns: the first (the goal still paused, so not charged to it), a continuation that works (its
    // tokens are charged to the goal), and one that completes the goal. (Whether the completing response's own
    // tokens are charged depends on whether the engine reads its usage before it runs the tool: not asserted.)
    //
    // When the engine charges tokens: the goal extension records each response's usage as it arrives and charges
    // the delta to an active goal only at an accounting point: when a tool other than update_goal finishes, when
    // update_goal itself runs (the current turn first), and when a turn stops (its `thread/goal/updated` with that
    // turn's id). Charges are "active only": once the goal is complete, a later accounting point charges nothing.
    // The working continuation has no tool, so its tokens are charged at its turn stop; if the model completed the
    // goal before that accounting landed, they would never be charged. So the completing response waits (gated at
    // the mock) until the goal shows the working continuation's tokens.
    const [first, , final] = completedGoal("obs", "first", "done");
    const working = scripts.sse([
      ev.responseCreated("obs-working"),
      ev.assistantMessage("msg-obs-working", "working"),
      ev.completed("obs-working", usage(6, 2, 3, 0, 9)),
    ]);
    const accounted = new Gate();
    const completing = scripts.sse(
      [
        ev.responseCreated("obs-complete-tool"),
        ev.functionCall("call-obs-complete", "update_goal", '{"status":"complete"}'),
        ev.completed("obs-complete-tool", usage(4, 1, 1, 1, 5)),
      ],
      { gate: accounted },
    );
    f.mock.enqueue([first!, working, completing, final!]);
    const thread = await f.codex.startThread();
    const turn = await thread.turn("Observe the goal", {
      goal: { tokenBudget: 1000 },
    });
    const events: TurnEvent[] = [];
    const consumed = (async () => {
      for await (const e of turn.stream()) events.push(e);
    })();
    const updates = () => events.flatMap((e) => (e.method === "client/goal/updated" ? [e.params.goal] : []));
    try {
      await accounted.reached;
      // The working continuation's response: 6 input - 2 cached + 3 output.
      await vi.waitFor(
        () => {
          if (!updates().some((g) => g.tokensUsed >= 7)) {
            throw new Error(
              `the working continuation's tokens were never charged: ${JSON.stringify(updates())}`,
            );
          }
        },
        { timeout: 10_000, interval: 20 },
      );
    } finally {
      accounted.release();
    }
    await consumed;
    const starts = events.flatMap((e) => (e.method === "client/goal/engineTurnStarted" ? [e.params] : []));
    expect(starts.map((s) => s.index)).toEqual([0, 1, 2]);
    expect(new Set(starts.map((s) => s.turnId))).toEqual(new Set([turn.id]));
    expect(starts[0]!.engineTurnId).toBe(turn.id);
    expect(new Set(starts.map((s) => s.engineTurnId)).size).toBe(3);
    expect(updates().at(-1)).toMatchObject({
      status: "complete",
      tokenBudget: 1000,
      objective: "Observe the goal",
    });
    expect(updates().at(-1)!.tokensUsed).toBeGreaterThanOrEqual(7);
    expect((await thread.getGoal())?.tokensUsed).toBe(updates().at(-1)!.tokensUsed);
  });

  it("a driven goal runs exactly the continuations its driver allows, and the engine starts none by itself", async () => {
    f = await pool.take();
    f.mock.setFallback(() => scripts.assistantMessage("still working"));
    const thread = await f.codex.startThread();
    const asked: number[] = [];
    const turn = await thread.turn("Endless work", {
      goal: {
        drive: ({ engineTurns, goal }) => {
          asked.push(engineTurns);
          expect(goal.status).toBe("paused");
          return engineTurns < 3;
        },
      },
    });
    const result = await turn.run();
    expect(result.status).toBe("completed");
    expect(result.engineTurns).toBe(3);
    expect(asked).toEqual([1, 2, 3]);
    expect(f.mock.requests()).toHaveLength(3);
    expect((await thread.getGoal())?.status).toBe("paused");
    // Nothing else runs afterwards: a plain turn is the next request.
    await thread.run("plain");
    expect(f.mock.requests()).toHaveLength(4);
    expect(f.mock.requests().at(-1)!.lastUserText()).toBe("plain");
  });

  it("resumes a paused goal as one logical turn on the same thread", async () => {
    f = await pool.take();
    const gate = new Gate();
    f.mock.enqueue(interruptibleGoal("resume", "Started.", ["half ", "way"], "unused", gate));
    const thread = await f.codex.startThread();
    const first = await thread.turn("Finish the resumable work", { goal: true });
    await f.mock.waitForRequests(2);
    await first.interrupt();
    expect((await first.run()).status).toBe("interrupted");
    gate.release();
    f.mock.reset();
    f.mock.enqueue([scripts.updateGoal("complete"), scripts.assistantMessage("Resumed and finished.")]);
    const resumed = await thread.resumeGoal();
    const result = await resumed.run();
    const requests = await f.mock.waitForRequests(2);
    expect(result.id).toBe(resumed.id);
    expect([result.status, result.finalResponse]).toEqual(["completed", "Resumed and finished."]);
    expect(requests[0]!.threadId).toBe(thread.id);
    expect(requests[0]!.goalObjective()).toBe("Finish the resumable work");
    expect((await thread.getGoal())?.status).toBe("complete");
    expect(await thread.clearGoal()).toBe(true);
    await expect(thread.resumeGoal()).rejects.toThrow(/no goal exists/);
    expect(f.codex.activeRoutes).toBe(0);
  });
});
