// The turn runner on the fake engine (no process) and the test clock: a turn ends with exactly one terminal state,
// its events and items recorded in order; the session is claimed by one turn at a time and given back whatever
// ends the turn (completion, cancel, the turn timeout, a hung engine killed by the stop watchdog, an engine failure).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { STOP_GRACE_MS } from "../../../src/domain/turns/runner.js";
import { ApiError } from "../../../src/kernel/errors.js";
import { parseInput } from "../../../src/model/input.js";
import { defaultScope } from "../../../src/model/scope.js";
import type { SessionRecord } from "../../../src/store/types.js";
import { type FakeCore, fakeCore } from "../../support/fake-engine.js";
import { waitFor } from "../../support/fixture.js";

let f: FakeCore;
beforeEach(() => {
  f = fakeCore({ args: ["--turn-timeout", "60"] });
});
afterEach(async () => {
  await f.close();
});

function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { opened, open };
}

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

const newSession = () => f.core.sessions.create(defaultScope, {}, { workspace: "session" });

async function eventTypes(sessionId: string, turnId: string): Promise<string[]> {
  return (await f.core.store.readEvents(sessionId, 0, 1000))
    .filter((e) => e.turn_id === turnId)
    .map((e) => e.type);
}

/** The session as stored, idle again: no turn holds it. */
async function expectIdle(sessionId: string): Promise<SessionRecord> {
  const s = await f.core.store.getSession(sessionId);
  expect(s?.status).toBe("idle");
  expect(s?.active_turn_id).toBeNull();
  expect(f.core.runner.isActive(sessionId)).toBe(false);
  return s!;
}

/** A turn on `s` that completes (the session takes input again). */
async function expectUsable(s: SessionRecord): Promise<void> {
  f.engines.script = (t) => {
    t.message("again");
    t.end();
  };
  const next = await f.core.messages.send(s, parseInput("again"), { whileBusy: "refuse" });
  expect((await f.core.runner.waitFor(s.id, next.turn.id)).status).toBe("completed");
}

describe("a turn", () => {
  it("runs on the engine and ends completed, its events and items recorded in order, its thread released", async () => {
    f.engines.script = (t) => {
      t.message("one");
      t.message("two");
      t.end();
    };
    const s = await newSession();
    const { turn, steered } = await f.core.messages.send(s, parseInput("hello"), { whileBusy: "refuse" });
    expect(steered).toBe(false);
    expect(turn.status).toBe("in_progress");
    const ended = await f.core.runner.waitFor(s.id, turn.id);
    expect(ended).toMatchObject({ id: turn.id, status: "completed", error: null });
    expect(ended.completed_at).not.toBeNull();
    expect(await eventTypes(s.id, turn.id)).toEqual([
      "turn.started",
      "session.status",
      "item.started",
      "item.completed",
      "item.started",
      "item.completed",
      "turn.completed",
      "session.status",
    ]);
    const items = await f.core.store.listItems(s.id, { turn_id: turn.id, order: "asc" });
    expect(items.data.map((i) => [i.state, (i.data as { text?: string }).text])).toEqual([
      ["completed", "one"],
      ["completed", "two"],
    ]);
    expect((await f.core.store.getTurn(s.id, turn.id))?.status).toBe("completed");
    const stored = await expectIdle(s.id);
    expect(stored.thread_id).toMatch(/^thr_/);
    expect(f.engines.turnsOf(stored.thread_id!)).toHaveLength(1);
    expect(f.engines.released).toBe(f.engines.leased);
    // The next turn continues the same thread.
    await expectUsable(stored);
    expect(f.engines.turnsOf(stored.thread_id!)).toHaveLength(2);
  });

  it("holds its session: a second start is refused, a refusing message too, a steering one joins it", async () => {
    const hold = gate();
    f.engines.script = async (t) => {
      await hold.opened;
      t.end();
    };
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("first"), { whileBusy: "refuse" });
    expect((await refusal(f.core.runner.start(s, parseInput("second")))).kind).toBe("conflict");
    const stored = (await f.core.store.getSession(s.id))!;
    expect(stored.active_turn_id).toBe(turn.id);
    expect((await refusal(f.core.messages.send(stored, parseInput("x"), { whileBusy: "refuse" }))).kind).toBe(
      "conflict",
    );
    const goal = await refusal(
      f.core.messages.send(stored, parseInput("g"), { whileBusy: "steer", goal: {} }),
    );
    expect(goal.code).toBe("session_busy");
    const joined = await f.core.messages.send(stored, parseInput("and this"), { whileBusy: "steer" });
    expect(joined).toMatchObject({ steered: true, turn: { id: turn.id } });
    const steer = f.engines.requests.find((r) => r.method === "turn/steer");
    expect(JSON.stringify(steer?.params.input)).toContain("and this");
    hold.open();
    expect((await f.core.runner.waitFor(s.id, turn.id)).status).toBe("completed");
    expect(await eventTypes(s.id, turn.id)).toContain("turn.steered");
    expect((await f.core.store.listTurns(s.id, {})).data).toHaveLength(1);
  });

  it("of two concurrent starts on an idle session, one wins and the other is refused", async () => {
    f.engines.script = async (t) => {
      await t.interrupted;
    };
    const s = await newSession();
    const results = await Promise.allSettled([
      f.core.runner.start(s, parseInput("a")),
      f.core.runner.start(s, parseInput("b")),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    const lost = results.find((r) => r.status === "rejected");
    expect(lost?.status === "rejected" && lost.reason).toBeInstanceOf(ApiError);
    expect((await f.core.store.listTurns(s.id, {})).data).toHaveLength(1);
  });

  it("whose goal side cannot be built gives the session back as it was, no turn recorded", async () => {
    const s = await newSession();
    const failing = f.core.runner.start(s, parseInput("x"), {
      goal: () => Promise.reject(new Error("no goal today")),
    });
    await expect(failing).rejects.toThrow("no goal today");
    await expectIdle(s.id);
    expect((await f.core.store.listTurns(s.id, {})).data).toEqual([]);
    expect(f.engines.leased).toBe(0);
    await expectUsable(s);
  });
});

describe("stopping a turn", () => {
  it("cancel interrupts the engine turn: it ends cancelled, its running command said stopped, the session free", async () => {
    f.engines.script = async (t) => {
      t.startCommand("sleep 100", "tick");
      await t.interrupted;
    };
    const stops: string[] = [];
    f.core.runner.onStop((id) => stops.push(id));
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("run it"), { whileBusy: "refuse" });
    await waitFor(
      async () => (await eventTypes(s.id, turn.id)).includes("item.started"),
      5000,
      "the command",
    );
    const cancelled = await f.core.runner.cancel(s.id);
    expect(cancelled).toMatchObject({ status: "cancelled", error: { code: "cancelled" } });
    expect(stops).toEqual([s.id]);
    expect(f.engines.requests.some((r) => r.method === "turn/interrupt")).toBe(true);
    expect((await eventTypes(s.id, turn.id)).at(-2)).toBe("turn.cancelled");
    const [command] = (await f.core.store.listItems(s.id, { turn_id: turn.id })).data;
    expect(command?.state).toBe("incomplete");
    expect(command?.data).toMatchObject({
      status: "failed",
      aggregatedOutput: "tick\n[command stopped: Cancelled by the user]",
    });
    expect(f.engines.kills).toEqual([]);
    await expectUsable(await expectIdle(s.id));
    // Nothing runs: a cancel now has nothing to stop.
    expect(await f.core.runner.cancel(s.id)).toBeNull();
  });

  it("an engine that does not end the interrupted turn is killed once the stop's grace period has passed", async () => {
    f.engines.hangOnInterrupt = true;
    f.engines.script = () => {}; // never ends by itself
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("hang"), { whileBusy: "refuse" });
    await waitFor(() => f.engines.requests.some((r) => r.method === "turn/start"), 5000, "the engine turn");
    const cancelling = f.core.runner.cancel(s.id);
    await waitFor(() => f.clock.armed(STOP_GRACE_MS), 5000, "the stop watchdog");
    f.clock.advance(STOP_GRACE_MS / 1000 - 1);
    expect(f.engines.kills).toEqual([]);
    expect(f.core.runner.isActive(s.id)).toBe(true);
    // Past the grace period, and past the turn timeout (60 s) too: the first stop is how the turn ends, whatever
    // stops it later or the engine's death made of it.
    f.clock.advance(60);
    expect(f.engines.kills).toEqual([0]);
    expect(await cancelling).toMatchObject({
      id: turn.id,
      status: "cancelled",
      error: { code: "cancelled" },
    });
    await expectUsable(await expectIdle(s.id));
  });

  it("the turn timeout (test clock) fails a turn that runs too long: request_timeout", async () => {
    f.engines.script = async (t) => {
      t.message("working");
      await t.interrupted;
    };
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("slow"), { whileBusy: "refuse" });
    await waitFor(() => f.clock.armed(60_000), 5000, "the turn timeout");
    f.clock.advance(59);
    expect(f.core.runner.isActive(s.id)).toBe(true);
    f.clock.advance(2);
    const ended = await f.core.runner.waitFor(s.id, turn.id);
    expect(ended.status).toBe("failed");
    expect(ended.error).toEqual({ code: "request_timeout", message: "Turn timeout exceeded (60 s)" });
    const stored = await expectIdle(s.id);
    expect(stored.error).toBe("Turn timeout exceeded (60 s)");
    expect(f.clock.armed(60_000)).toBe(false);
    await expectUsable(stored);
  });

  it("a turn that ends by itself disarms its timeout", async () => {
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("quick"), { whileBusy: "refuse" });
    await f.core.runner.waitFor(s.id, turn.id);
    expect(f.clock.armed(60_000)).toBe(false);
  });

  it("a steering message that meets a turn being stopped starts the next turn once that one has ended", async () => {
    f.engines.hangOnInterrupt = true;
    let interrupted!: () => void;
    f.engines.script = async (t) => {
      if (t.input.length === 0 || !JSON.stringify(t.input).includes("first")) {
        t.end();
        return;
      }
      interrupted = () => t.end("interrupted");
      await t.interrupted;
    };
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("first"), { whileBusy: "refuse" });
    await waitFor(() => f.engines.requests.some((r) => r.method === "turn/start"), 5000, "the engine turn");
    const cancelling = f.core.runner.cancel(s.id);
    await waitFor(() => f.engines.requests.some((r) => r.method === "turn/interrupt"), 5000, "the interrupt");
    const sending = f.core.messages.send(s, parseInput("next"), { whileBusy: "steer" });
    interrupted();
    const sent = await sending;
    expect(sent.steered).toBe(false);
    expect(sent.turn.id).not.toBe(turn.id);
    expect((await cancelling)?.status).toBe("cancelled");
    expect((await f.core.runner.waitFor(s.id, sent.turn.id)).status).toBe("completed");
    expect(f.engines.requests.filter((r) => r.method === "turn/steer")).toEqual([]);
  });
});

describe("an engine failure", () => {
  it("a failed engine turn fails the turn with the engine's message; the session stays usable", async () => {
    f.engines.script = (t) => {
      t.message("partial");
      t.end("failed", "the model exploded");
    };
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("boom"), { whileBusy: "refuse" });
    const ended = await f.core.runner.waitFor(s.id, turn.id);
    expect(ended.status).toBe("failed");
    expect(ended.error?.code).toBe("server_error");
    expect(ended.error?.message).toContain("the model exploded");
    expect((await eventTypes(s.id, turn.id)).at(-2)).toBe("turn.failed");
    // What the turn did before it failed is kept.
    const items = (await f.core.store.listItems(s.id, { turn_id: turn.id })).data;
    expect(items.map((i) => [i.state, (i.data as { text?: string }).text])).toEqual([
      ["completed", "partial"],
    ]);
    const stored = await expectIdle(s.id);
    expect(stored.error).toContain("the model exploded");
    expect(f.engines.released).toBe(f.engines.leased);
    await expectUsable(stored);
    expect((await f.core.store.getSession(s.id))?.error).toBeNull();
  });

  it("the engine process dying mid-turn fails the turn (internal_error), its open items kept incomplete", async () => {
    f.engines.script = (t) => t.startCommand("make", "building");
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("build"), { whileBusy: "refuse" });
    await waitFor(
      async () => (await eventTypes(s.id, turn.id)).includes("item.started"),
      5000,
      "the command",
    );
    f.engines.killEngine(0);
    const ended = await f.core.runner.waitFor(s.id, turn.id);
    expect(ended.status).toBe("failed");
    expect(ended.error?.code).toBe("internal_error");
    expect(ended.error?.message).toContain("The Codex engine exited during the turn");
    const items = (await f.core.store.listItems(s.id, { turn_id: turn.id })).data;
    expect(items.map((i) => [i.type, i.state])).toEqual([["commandExecution", "incomplete"]]);
    await expectUsable(await expectIdle(s.id));
  });
});
