// Goal turns on the fake engine and the test clock (domain/goals/run.ts, service.ts): the server drives the
// continuations itself, one after each engine turn, until the model completes the goal or a cap (continuations,
// tokens, wall clock) or the user stops it — exactly, never one continuation late — and the goal's record says
// where it stands and why.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiError } from "../../../src/kernel/errors.js";
import type { GoalCaps } from "../../../src/model/goal-caps.js";
import { parseInput } from "../../../src/model/input.js";
import { defaultScope } from "../../../src/model/scope.js";
import type { GoalRecord, SessionRecord, TurnRecord } from "../../../src/store/types.js";
import { type EngineTurn, type FakeCore, fakeCore } from "../../support/fake-engine.js";
import { waitFor } from "../../support/fixture.js";

let f: FakeCore;
beforeEach(() => {
  f = fakeCore({ args: ["--turn-timeout", "60"] });
});
afterEach(async () => {
  await f.close();
});

/** Which engine turn of its thread this is (0: the thread's first). */
const indexOf = (t: EngineTurn) => f.engines.turnsOf(t.threadId).indexOf(t.id);

async function goalTurn(
  caps: GoalCaps,
  text = "make it so",
): Promise<{ s: SessionRecord; turn: TurnRecord }> {
  const s = await f.core.sessions.create(defaultScope, {}, { workspace: "session" });
  const { turn } = await f.core.messages.send(s, parseInput(text), { whileBusy: "refuse", goal: caps });
  return { s, turn };
}

const goalOf = async (sessionId: string): Promise<GoalRecord> => (await f.core.store.getGoal(sessionId))!;

/** The goal's statuses (and reasons) as its `goal.updated` events told them, each change once. */
async function goalHistory(sessionId: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await f.core.store.readEvents(sessionId, 0, 1000)) {
    if (e.type !== "goal.updated") continue;
    const g = (e.data as { goal: GoalRecord | null }).goal;
    const said = g ? `${g.status}:${g.status_reason}` : "cleared";
    if (out.at(-1) !== said) out.push(said);
  }
  return out;
}

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe("a goal turn", () => {
  it("continues, one engine turn after another, until the model completes the goal", async () => {
    f.engines.script = (t) => {
      t.message(`step ${indexOf(t)}`);
      if (indexOf(t) === 2) t.completeGoal();
      t.end();
    };
    const { s, turn } = await goalTurn({});
    expect(turn.goal).toEqual({ mode: "input", objective: "make it so" });
    const ended = await f.core.runner.waitFor(s.id, turn.id);
    expect(ended.status).toBe("completed");
    const thread = (await f.core.store.getSession(s.id))!.thread_id!;
    expect(f.engines.turnsOf(thread)).toHaveLength(3);
    // Every engine turn's items belong to the one logical turn.
    const items = (await f.core.store.listItems(s.id, { order: "asc" })).data;
    expect(items.map((i) => [i.turn_id, (i.data as { text?: string }).text])).toEqual([
      [turn.id, "step 0"],
      [turn.id, "step 1"],
      [turn.id, "step 2"],
    ]);
    // The user's own first turn is not a continuation.
    expect(await goalOf(s.id)).toMatchObject({
      objective: "make it so",
      status: "complete",
      status_reason: "completed",
      turns_used: 2,
      turn_id: turn.id,
      run_started_at: null,
    });
    expect(await goalHistory(s.id)).toEqual(["active:created", "complete:completed"]);
    // The engine's goal is never left active (the server holds it paused between continuations).
    expect(f.engines.goalOf(thread)?.status).toBe("complete");
  });

  it("stops at max_turns continuations exactly: paused, saying so; resuming needs a higher cap", async () => {
    f.engines.script = (t) => {
      t.message("more");
      t.end();
    };
    const { s, turn } = await goalTurn({ max_turns: 3 });
    expect((await f.core.runner.waitFor(s.id, turn.id)).status).toBe("completed");
    const thread = (await f.core.store.getSession(s.id))!.thread_id!;
    expect(f.engines.turnsOf(thread)).toHaveLength(4);
    expect(await goalOf(s.id)).toMatchObject({ status: "paused", status_reason: "max_turns", turns_used: 3 });
    expect(await goalHistory(s.id)).toEqual(["active:created", "paused:max_turns"]);
    expect(f.engines.goalOf(thread)?.status).toBe("paused");

    const stored = (await f.core.store.getSession(s.id))!;
    const capped = await refusal(f.core.goals.change(stored, { status: "active", caps: {} }));
    expect(capped.code).toBe("goal_cap_reached");
    expect(f.engines.turnsOf(thread)).toHaveLength(4);
    // With room for two more, it resumes (every engine turn a continuation now) and stops again.
    const resumed = await f.core.goals.change(stored, { status: "active", caps: { max_turns: 5 } });
    expect(resumed).toMatchObject({ status: "active", status_reason: "resumed", max_turns: 5 });
    const resumedTurn = resumed.turn_id!;
    expect(resumedTurn).not.toBe(turn.id);
    expect((await f.core.runner.waitFor(s.id, resumedTurn)).goal).toMatchObject({ mode: "resume" });
    expect(await goalOf(s.id)).toMatchObject({ status: "paused", status_reason: "max_turns", turns_used: 5 });
    expect(f.engines.turnsOf(thread)).toHaveLength(6);
  });

  it("stops once its token budget is used: paused token_budget, the tokens counted", async () => {
    f.engines.script = (t) => {
      t.usage(400);
      t.end();
    };
    const { s, turn } = await goalTurn({ token_budget: 1000 });
    await f.core.runner.waitFor(s.id, turn.id);
    const thread = (await f.core.store.getSession(s.id))!.thread_id!;
    // 400, 800, 1200: the third engine turn used the budget up.
    expect(f.engines.turnsOf(thread)).toHaveLength(3);
    expect(await goalOf(s.id)).toMatchObject({
      status: "paused",
      status_reason: "token_budget",
      tokens_used: 1200,
      turns_used: 2,
    });
  });

  it("stops at its duration cap (test clock): the engine turn running finishes, none follows", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    f.engines.script = async (t) => {
      if (indexOf(t) === 0) await held;
      t.end();
    };
    const { s, turn } = await goalTurn({ max_duration_seconds: 120 });
    await waitFor(() => f.clock.armed(120_000), 5000, "the goal's duration timer");
    // The turn's own timeout allows for the goal's duration.
    expect(f.clock.armed(180_000)).toBe(true);
    f.clock.advance(121);
    await waitFor(async () => (await goalOf(s.id)).status === "paused", 5000, "the pause");
    release();
    expect((await f.core.runner.waitFor(s.id, turn.id)).status).toBe("completed");
    const thread = (await f.core.store.getSession(s.id))!.thread_id!;
    expect(f.engines.turnsOf(thread)).toHaveLength(1);
    const g = await goalOf(s.id);
    expect(g).toMatchObject({ status: "paused", status_reason: "max_duration", turns_used: 0 });
    expect(g.time_used_seconds).toBeGreaterThanOrEqual(121);
  });

  it("a failed engine turn ends it: the turn failed, the goal blocked turn_failed", async () => {
    f.engines.script = (t) => (indexOf(t) === 1 ? t.end("failed", "model down") : t.end());
    const { s, turn } = await goalTurn({});
    const ended = await f.core.runner.waitFor(s.id, turn.id);
    expect(ended.status).toBe("failed");
    expect(await goalOf(s.id)).toMatchObject({ status: "blocked", status_reason: "turn_failed" });
    expect((await f.core.store.getSession(s.id))?.active_turn_id).toBeNull();
  });
});

describe("the user during a goal turn", () => {
  /** A goal turn whose continuations wait to be interrupted (or released), from its second engine turn on. */
  async function running(): Promise<{ s: SessionRecord; turn: TurnRecord; release: () => void }> {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    f.engines.script = async (t) => {
      if (indexOf(t) >= 1) await Promise.race([held, t.interrupted]);
      t.end();
    };
    const { s, turn } = await goalTurn({});
    await waitFor(async () => (await goalOf(s.id)).turns_used === 1, 5000, "the first continuation");
    return { s: (await f.core.store.getSession(s.id))!, turn, release };
  }

  it("steering joins the running continuation, addressed to its engine turn", async () => {
    const { s, turn, release } = await running();
    const thread = s.thread_id!;
    const sent = await f.core.messages.send(s, parseInput("also this"), { whileBusy: "steer" });
    expect(sent).toMatchObject({ steered: true, turn: { id: turn.id } });
    const steer = f.engines.requests.find((r) => r.method === "turn/steer");
    expect(steer?.params.expectedTurnId).toBe(f.engines.turnsOf(thread)[1]);
    await f.core.goals.change(s, { status: "paused", caps: {} });
    release();
    expect((await f.core.runner.waitFor(s.id, turn.id)).status).toBe("completed");
  });

  it("cancel interrupts it: the turn cancelled, the goal paused interrupted, no continuation after", async () => {
    const { s, turn } = await running();
    const cancelled = await f.core.messages.cancel(s);
    expect(cancelled).toMatchObject({ id: turn.id, status: "cancelled" });
    expect(f.engines.turnsOf(s.thread_id!)).toHaveLength(2);
    expect(await goalOf(s.id)).toMatchObject({
      status: "paused",
      status_reason: "interrupted",
      turns_used: 1,
    });
    expect(await goalHistory(s.id)).toEqual(["active:created", "paused:interrupted"]);
    expect(f.engines.goalOf(s.thread_id!)?.status).toBe("paused");
  });

  it("a pause lets the running continuation finish and starts no other; the turn completes", async () => {
    const { s, turn, release } = await running();
    const paused = await f.core.goals.change(s, { status: "paused", caps: {} });
    expect(paused).toMatchObject({ status: "paused", status_reason: "user_paused" });
    release();
    expect((await f.core.runner.waitFor(s.id, turn.id)).status).toBe("completed");
    expect(f.engines.turnsOf(s.thread_id!)).toHaveLength(2);
    expect(await goalOf(s.id)).toMatchObject({ status: "paused", status_reason: "user_paused" });
  });

  it("while it runs, a new goal, a resume or a goal message are refused", async () => {
    const { s, release } = await running();
    const replace = await refusal(f.core.goals.change(s, { objective: "other", caps: {} }));
    expect(replace.kind).toBe("conflict");
    expect((await refusal(f.core.goals.change(s, { status: "active", caps: {} }))).kind).toBe("conflict");
    const message = await refusal(
      f.core.messages.send(s, parseInput("g"), { whileBusy: "steer", goal: { max_turns: 1 } }),
    );
    expect(message.code).toBe("session_busy");
    expect((await goalOf(s.id)).objective).toBe("make it so");
    release();
  });
});

describe("goals without a running turn", () => {
  it("an objective set paused is recorded and set on the engine, no turn started", async () => {
    const s = await f.core.sessions.create(defaultScope, {}, { workspace: "session" });
    const g = await f.core.goals.change(s, {
      objective: "  tidy up  ",
      status: "paused",
      caps: { max_turns: 2 },
    });
    expect(g).toMatchObject({ objective: "tidy up", status: "paused", max_turns: 2, turn_id: null });
    const stored = (await f.core.store.getSession(s.id))!;
    expect(f.engines.goalOf(stored.thread_id!)).toMatchObject({ objective: "tidy up", status: "paused" });
    expect((await f.core.store.listTurns(s.id, {})).data).toEqual([]);
    // Cleared: the record and the engine's goal go.
    await f.core.goals.clear(stored);
    expect(await f.core.store.getGoal(s.id)).toBeUndefined();
    expect(f.engines.goalOf(stored.thread_id!)).toBeNull();
    expect((await refusal(f.core.goals.get(stored))).kind).toBe("not_found");
  });

  it("an empty objective or an override above the server's maximum is refused before anything runs", async () => {
    const s = await f.core.sessions.create(defaultScope, {}, { workspace: "session" });
    expect((await refusal(f.core.goals.change(s, { objective: "   ", caps: {} }))).param).toBe("objective");
    const big = await refusal(f.core.goals.change(s, { objective: "x", caps: { max_turns: 10_000 } }));
    expect(big.param).toBe("goal.max_turns");
    expect(await f.core.store.getGoal(s.id)).toBeUndefined();
    expect((await f.core.store.getSession(s.id))?.active_turn_id).toBeNull();
    expect(f.engines.requests.filter((r) => r.method === "turn/start")).toEqual([]);
  });
});

describe("between two continuations", () => {
  /** A goal turn whose features' hook after its first engine turn does `during` (the next one waits for it). */
  async function withHook(during: (s: SessionRecord) => Promise<void>) {
    let calls = 0;
    f.core.runner.use({
      afterEngineTurn: async (s) => {
        if (++calls === 1) await during(s);
      },
    });
    const { s, turn } = await goalTurn({});
    const ended = await f.core.runner.waitFor(s.id, turn.id);
    const thread = (await f.core.store.getSession(s.id))!.thread_id!;
    return { ended, engineTurns: f.engines.turnsOf(thread).length, goal: await goalOf(s.id) };
  }

  it("a pause while the hooks run starts no further continuation", async () => {
    const { ended, engineTurns, goal } = await withHook(async (s) => {
      expect(await f.core.control.pauseGoal(s.id)).toBe(true);
    });
    expect(ended.status).toBe("completed");
    expect(engineTurns).toBe(1);
    expect(goal).toMatchObject({ status: "paused", status_reason: "user_paused", turns_used: 0 });
  });

  it("a cancel while the hooks run starts no further continuation: cancelled, paused interrupted", async () => {
    const { ended, engineTurns, goal } = await withHook(async (s) => {
      void f.core.runner.cancel(s.id);
    });
    expect(ended).toMatchObject({ status: "cancelled", error: { code: "cancelled" } });
    expect(engineTurns).toBe(1);
    expect(goal).toMatchObject({ status: "paused", status_reason: "interrupted", turns_used: 0 });
  });
});
