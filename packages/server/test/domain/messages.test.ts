// A message to a session (domain/messages.ts), on the fake engine: it starts a turn when the session is idle; while
// a turn runs it steers it or is refused, as the caller asks — whoever holds the session (a turn here, one the
// stored claim names, a restore); a message that meets a turn already ending starts the next turn once that one has
// ended (never lost to the race). A goal message starts a goal turn, only on an idle session.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiError } from "../../src/kernel/errors.js";
import { parseInput } from "../../src/model/input.js";
import { defaultScope } from "../../src/model/scope.js";
import { newRestoreLock } from "../../src/model/session-lock.js";
import type { SessionRecord } from "../../src/store/types.js";
import { type FakeCore, fakeCore } from "../support/fake-engine.js";

let f: FakeCore;
let release: () => void;
beforeEach(() => {
  f = fakeCore();
  // Every engine turn runs until the test releases it (or it is interrupted).
  const held = new Promise<void>((r) => {
    release = r;
  });
  f.engines.script = async (t) => {
    await Promise.race([held, t.interrupted]);
    t.end();
  };
});
afterEach(async () => {
  vi.restoreAllMocks();
  release();
  await f.close();
});

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

const newSession = () => f.core.sessions.create(defaultScope, {}, { workspace: "session" });
const turnStarts = () => f.engines.requests.filter((r) => r.method === "turn/start").length;
const reload = async (id: string): Promise<SessionRecord> => (await f.core.store.getSession(id))!;

describe("a message to an idle session", () => {
  it("starts a turn with its input", async () => {
    const s = await newSession();
    const sent = await f.core.messages.send(s, parseInput("hello"), { whileBusy: "steer" });
    expect(sent.steered).toBe(false);
    expect(sent.turn).toMatchObject({
      status: "in_progress",
      input: [{ type: "text", text: "hello" }],
      goal: null,
    });
    expect((await reload(s.id)).active_turn_id).toBe(sent.turn.id);
    // Nothing runs to steer, cancel or answer.
    const idle = await newSession();
    expect(await f.core.messages.steer(idle, parseInput("x"))).toBeNull();
    expect(await f.core.messages.cancel(idle)).toBeNull();
    const unknown = await refusal(
      f.core.messages.answer(idle, "call_9", {
        type: "tool_result",
        success: true,
        output: "x",
        error: null,
      }),
    );
    expect(unknown.message).toContain("Unknown pending tool call: call_9");
  });

  it("with goal caps starts a goal turn whose objective is the input", async () => {
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("reach it"), { whileBusy: "refuse", goal: {} });
    expect(turn.goal).toEqual({ mode: "input", objective: "reach it" });
    expect(await f.core.store.getGoal(s.id)).toMatchObject({ objective: "reach it", turn_id: turn.id });
  });
});

describe("a message while a turn holds the session", () => {
  it("refused or steering, as asked; the running turn here counts even when the caller's record is stale", async () => {
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("first"), { whileBusy: "refuse" });
    // `s` still says idle: the runner knows better.
    const busy = await refusal(f.core.messages.send(s, parseInput("no"), { whileBusy: "refuse" }));
    expect(busy.kind).toBe("conflict");
    const goal = await refusal(f.core.messages.send(s, parseInput("g"), { whileBusy: "steer", goal: {} }));
    expect(goal.code).toBe("session_busy");
    const joined = await f.core.messages.send(s, parseInput("yes"), { whileBusy: "steer" });
    expect(joined).toEqual({ turn: expect.objectContaining({ id: turn.id }), steered: true });
    expect(turnStarts()).toBe(1);
  });

  it("held by a restore: refused whatever was asked, nothing steered", async () => {
    const s = await newSession();
    await f.core.store.updateSession(s.id, { active_turn_id: newRestoreLock().id });
    const held = await reload(s.id);
    for (const whileBusy of ["steer", "refuse"] as const) {
      const e = await refusal(f.core.messages.send(held, parseInput("x"), { whileBusy }));
      expect(e.code).toBe("session_busy");
      expect(e.message).toContain("checkpoint is being restored");
    }
    const steer = vi.spyOn(f.core.control, "steer");
    await refusal(f.core.messages.send(held, parseInput("x"), { whileBusy: "steer" }));
    expect(steer).not.toHaveBeenCalled();
    expect(turnStarts()).toBe(0);
  });

  it("a turn another instance runs (by the stored claim): refused, or its owner asked (409 when it is gone)", async () => {
    const s = await newSession();
    await f.core.store.updateSession(s.id, {
      active_turn_id: "turn_elsewhere",
      owner_instance: "inst_other",
    });
    const held = await reload(s.id);
    const refused = await refusal(f.core.messages.send(held, parseInput("x"), { whileBusy: "refuse" }));
    expect(refused.message).toBe("Session has an active turn");
    const gone = await refusal(f.core.messages.send(held, parseInput("x"), { whileBusy: "steer" }));
    expect(gone.code).toBe("owner_unavailable");
    expect(
      await refusal(f.core.messages.send(held, parseInput("g"), { whileBusy: "steer", goal: {} })),
    ).toMatchObject({ code: "session_busy" });
    expect(turnStarts()).toBe(0);
  });

  it("meeting a turn that is ending, starts the next one on the session as it is then", async () => {
    const s = await newSession();
    const { turn } = await f.core.messages.send(s, parseInput("first"), { whileBusy: "refuse" });
    // The turn is ending: nothing to steer any more.
    const steer = vi.spyOn(f.core.control, "steer").mockResolvedValueOnce(null);
    const sending = f.core.messages.send(s, parseInput("next"), { whileBusy: "steer" });
    await vi.waitFor(() => expect(steer).toHaveBeenCalledTimes(1));
    expect((await f.core.store.listTurns(s.id, {})).data).toHaveLength(1);
    release();
    const sent = await sending;
    expect(sent.steered).toBe(false);
    expect(sent.turn.id).not.toBe(turn.id);
    expect((await f.core.store.getTurn(s.id, turn.id))?.status).toBe("completed");
    // Reloaded: the new turn continues the thread the first one made.
    const thread = (await reload(s.id)).thread_id!;
    expect(thread).not.toBeNull();
    await vi.waitFor(() => expect(f.engines.turnsOf(thread)).toHaveLength(2));
  });

  it("meeting a turn that is ending on a session deleted meanwhile: not found", async () => {
    const s = await newSession();
    await f.core.messages.send(s, parseInput("first"), { whileBusy: "refuse" });
    const getSession = vi.spyOn(f.core.store, "getSession");
    vi.spyOn(f.core.control, "steer").mockImplementationOnce(async () => {
      getSession.mockResolvedValue(undefined); // from now on, the session is gone
      return null;
    });
    const sending = f.core.messages.send(s, parseInput("next"), { whileBusy: "steer" });
    release();
    const e = await refusal(sending);
    expect(e.kind).toBe("not_found");
    expect(e.param).toBe("session_id");
    getSession.mockRestore();
    expect(turnStarts()).toBe(1);
  });
});
