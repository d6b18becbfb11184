// Goal records (domain/goals/book.ts) on an in-memory store and a clock the test moves: caps from the server's defaults
// within its bounds, the wall clock a goal ran counted across its runs, the engine's goal statuses folded in (only
// those the model or the engine decide when the server drives the continuations), and `goal.updated` on the log
// only when something visible changed. Also the caps a client may give (model/goal-caps.ts) and the pause of
// running goals after a restart (service.ts).

import type { ThreadGoal } from "@codex-agent-api/codex";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { GoalLimits } from "../../../src/config/load.js";
import { GoalBook } from "../../../src/domain/goals/book.js";
import type { Clock } from "../../../src/kernel/clock.js";
import { ApiError } from "../../../src/kernel/errors.js";
import { parseGoalOption } from "../../../src/model/goal-caps.js";
import { EventHub } from "../../../src/platform/stream/hub.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { GoalReason, GoalRecord } from "../../../src/store/types.js";
import { goal, session } from "../../store/contract.js";
import { fakeCore } from "../../support/fake-engine.js";

const limits: GoalLimits = {
  defaultTokenBudget: 1000,
  defaultMaxTurns: 5,
  defaultMaxDurationSeconds: 600,
  maxTokenBudget: 10_000,
  maxTurns: 50,
  maxDurationSeconds: 3600,
};

let store: SqliteStore;
let hub: EventHub;
/** Time the test moves (the book only reads it). */
let now: number;
const clock: Clock = {
  now: () => now,
  after: () => ({ cancel: () => {} }),
  every: () => ({ cancel: () => {} }),
};
const advance = (seconds: number) => {
  now += seconds;
};
let book: GoalBook;
beforeEach(async () => {
  store = SqliteStore.open(":memory:");
  now = 5000;
  hub = new EventHub(store, { now: () => clock.now() });
  book = new GoalBook(store, hub, clock, limits);
  await store.insertSession(session("s1"));
});
afterEach(async () => {
  hub.closeAll();
  await hub.drain();
  await store.close();
});

/** The goals `goal.updated` events carried, in order (null: deleted). */
async function announced(): Promise<Array<GoalRecord | null>> {
  await hub.flush("s1");
  return (await store.readEvents("s1", 0, 100))
    .filter((e) => e.type === "goal.updated")
    .map((e) => (e.data as { goal: GoalRecord | null }).goal);
}

function refused(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error("not refused");
}

const engineGoal = (status: ThreadGoal["status"], tokensUsed = 0): ThreadGoal => ({
  threadId: "thr",
  objective: "o",
  status,
  tokenBudget: null,
  tokensUsed,
  timeUsedSeconds: 0,
  createdAt: 1,
  updatedAt: 1,
});

describe("caps", () => {
  it("default to the server's, an override or the goal's own taking their place", () => {
    expect(book.resolveCaps({})).toEqual({ token_budget: 1000, max_turns: 5, max_duration_seconds: 600 });
    expect(book.resolveCaps({ max_turns: 0, token_budget: 10_000 })).toEqual({
      token_budget: 10_000,
      max_turns: 0,
      max_duration_seconds: 600,
    });
    const base = goal("s1", 1, { token_budget: 7, max_turns: 8, max_duration_seconds: 9 });
    expect(book.resolveCaps({ max_turns: 20 }, base)).toEqual({
      token_budget: 7,
      max_turns: 20,
      max_duration_seconds: 9,
    });
  });

  it("an override above the server's maximum is a 400 naming it", () => {
    const e = refused(() => book.resolveCaps({ max_duration_seconds: 3601 }));
    expect(e.kind).toBe("bad_request");
    expect(e.param).toBe("goal.max_duration_seconds");
    expect(e.message).toContain("at most 3600");
    expect(refused(() => book.resolveCaps({ token_budget: 10_001 })).param).toBe("goal.token_budget");
    expect(refused(() => book.resolveCaps({ max_turns: 51 })).param).toBe("goal.max_turns");
  });

  it("as a client gives them: true, an object of positive integers (max_turns may be 0), nothing", () => {
    expect(parseGoalOption(undefined)).toBeNull();
    expect(parseGoalOption(false)).toBeNull();
    expect(parseGoalOption(null)).toBeNull();
    expect(parseGoalOption(true)).toEqual({});
    expect(parseGoalOption({ max_turns: 0, token_budget: 5, max_duration_seconds: null, other: 1 })).toEqual({
      max_turns: 0,
      token_budget: 5,
    });
    expect(refused(() => parseGoalOption({ token_budget: 0 })).param).toBe("goal.token_budget");
    expect(refused(() => parseGoalOption({ max_turns: 1.5 }, "x.goal")).param).toBe("x.goal.max_turns");
    expect(refused(() => parseGoalOption({ max_duration_seconds: "60" })).param).toBe(
      "goal.max_duration_seconds",
    );
    expect(refused(() => parseGoalOption([1])).param).toBe("goal");
    expect(refused(() => parseGoalOption("yes")).param).toBe("goal");
  });
});

describe("records", () => {
  it("a new goal starts clean, its run's clock started when it is active", async () => {
    const g = await book.create("s1", "do it", { max_turns: 2 }, "active", "turn_1");
    expect(g).toMatchObject({
      objective: "do it",
      status: "active",
      status_reason: "created",
      max_turns: 2,
      tokens_used: 0,
      turns_used: 0,
      time_used_seconds: 0,
      turn_id: "turn_1",
      run_started_at: 5000,
    });
    expect(await book.get("s1")).toEqual(g);
    const paused = await book.create("s1", "other", {}, "paused", null);
    expect(paused.run_started_at).toBeNull();
    expect(paused.max_turns).toBe(5);
    expect((await announced()).map((a) => a?.objective)).toEqual(["do it", "other"]);
    const events = await store.readEvents("s1", 0, 100);
    expect(events.filter((e) => e.type === "goal.updated").map((e) => e.turn_id)).toEqual(["turn_1", null]);
  });

  it("the wall clock is counted while it is active, across runs", async () => {
    await book.create("s1", "o", {}, "active", null);
    advance(30);
    const paused = await book.update("s1", { status: "paused", status_reason: "user_paused" });
    expect(paused?.run_started_at).toBeNull();
    expect(paused?.time_used_seconds).toBe(30);
    advance(1000); // paused: not counted
    const resumed = await book.update("s1", { status: "active", status_reason: "resumed" });
    expect(resumed?.run_started_at).toBe(now);
    advance(15);
    const done = await book.update("s1", { status: "complete", status_reason: "completed" });
    expect(done?.time_used_seconds).toBe(45);
  });

  it("announces a change only when something visible changed", async () => {
    await book.create("s1", "o", {}, "paused", null);
    advance(5);
    expect((await book.update("s1", {}))?.updated_at).toBe(now);
    await book.update("s1", { turns_used: 0 });
    expect(await announced()).toHaveLength(1);
    await book.update("s1", { turns_used: 1 }, "turn_2");
    const all = await announced();
    expect(all).toHaveLength(2);
    expect(all[1]?.turns_used).toBe(1);
    expect(await book.update("nobody", { turns_used: 3 })).toBeNull();
  });

  it("deleting logs the goal gone, once", async () => {
    await book.create("s1", "o", {}, "paused", null);
    expect(await book.delete("s1")).toBe(true);
    expect(await book.delete("s1")).toBe(false);
    expect(await book.get("s1")).toBeNull();
    expect((await announced()).at(-1)).toBeNull();
    expect(await announced()).toHaveLength(2);
  });

  it("after a restart, active goals come back paused server_restart; others stay as they were", async () => {
    await store.insertSession(session("s2"));
    await store.insertSession(session("s3"));
    await store.putGoal(goal("s1", 1, { run_started_at: clock.now() }, "active"));
    await store.putGoal(goal("s2", 1, {}, "complete"));
    await store.putGoal(goal("s3", 1, { run_started_at: clock.now() }, "active"));
    expect((await book.pauseAllActive("server_restart")).sort()).toEqual(["s1", "s3"]);
    expect(await book.get("s1")).toMatchObject({ status: "paused", status_reason: "server_restart" });
    expect(await book.get("s2")).toMatchObject({ status: "complete" });
    expect(await book.pauseAllActive("server_restart")).toEqual([]);
  });
});

describe("the engine's goal folded in", () => {
  beforeEach(async () => {
    await book.create("s1", "o", {}, "active", null);
  });

  it("maps its statuses and says why: completed, token_budget, usage_limited, blocked, a pause we asked for", async () => {
    const cases: Array<[ThreadGoal["status"], GoalReason | null, string, string]> = [
      ["complete", null, "complete", "completed"],
      ["budgetLimited", null, "budget_limited", "token_budget"],
      ["usageLimited", null, "usage_limited", "usage_limited"],
      ["blocked", null, "blocked", "blocked"],
      ["paused", "max_turns", "paused", "max_turns"],
      ["paused", null, "paused", "user_paused"],
    ];
    for (const [engine, pending, status, reason] of cases) {
      await book.update("s1", { status: "active", status_reason: "resumed" });
      const g = await book.fromEngine("s1", engineGoal(engine), pending, "t");
      expect([engine, g?.status, g?.status_reason]).toEqual([engine, status, reason]);
    }
    await book.update("s1", { status: "paused", status_reason: "user_paused" });
    expect(await book.fromEngine("s1", engineGoal("active"), null, "t")).toMatchObject({
      status: "active",
      status_reason: "resumed",
    });
  });

  it("takes the engine's token count when the engine drives, never lowering it", async () => {
    expect((await book.fromEngine("s1", engineGoal("active", 300), null, null))?.tokens_used).toBe(300);
    expect((await book.fromEngine("s1", engineGoal("active", 100), null, null))?.tokens_used).toBe(300);
  });

  it("driven by the server: only what the model or the engine decide is taken, not active/paused nor tokens", async () => {
    const driven = { driven: true };
    const paused = await book.fromEngine("s1", engineGoal("paused", 500), null, "t", driven);
    expect(paused).toMatchObject({ status: "active", status_reason: "created", tokens_used: 0 });
    const complete = await book.fromEngine("s1", engineGoal("complete", 500), null, "t", driven);
    expect(complete).toMatchObject({ status: "complete", status_reason: "completed", tokens_used: 0 });
    expect(await book.fromEngine("nobody", engineGoal("complete"), null, null)).toBeNull();
  });
});

describe("after a restart (GoalService)", () => {
  it("pauses running goals in the record and on the engine of each session that has a thread", async () => {
    const f = fakeCore();
    try {
      const { core } = f;
      await core.store.insertSession(session("sa", 1000, { thread_id: "thr_a" }));
      await core.store.insertSession(session("sb"));
      await core.store.putGoal(goal("sa", 1, {}, "active"));
      await core.store.putGoal(goal("sb", 1, {}, "active"));
      const threads: Record<string, string | null> = { sa: "thr_a", sb: null };
      expect(await core.goals.pauseAfterRestart(async (id) => threads[id] ?? null)).toBe(2);
      for (const id of ["sa", "sb"]) {
        expect(await core.store.getGoal(id)).toMatchObject({
          status: "paused",
          status_reason: "server_restart",
        });
      }
      const sets = f.engines.requests.filter((r) => r.method === "thread/goal/set");
      expect(sets.map((r) => r.params)).toEqual([{ threadId: "thr_a", status: "paused" }]);
    } finally {
      await f.close();
    }
  });
});
