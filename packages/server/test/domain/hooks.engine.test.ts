// The lifecycle seams features attach to (domain/feature.ts): the order turn hooks run in for a plain turn and a
// goal with continuations, a beforeTurn hook failing the turn with its code, session hooks on create and delete.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HookFailure } from "../../src/domain/feature.js";
import type { SessionRecord, TurnRecord } from "../../src/store/types.js";
import { readSse, type ServerFixture, startServer, waitFor } from "../support/fixture.js";

let f: ServerFixture;
const calls: string[] = [];
let failNext: HookFailure | null = null;

beforeAll(async () => {
  f = await startServer();
  const { runner, sessions } = f.service.core;
  const note = (what: string) => async (s: SessionRecord, t?: TurnRecord) => {
    calls.push(`${what}:${s.id}${t ? `:${t.status}` : ""}`);
  };
  runner.use({
    beforeTurn: async (s, t) => {
      await note("before")(s, t);
      if (failNext) {
        const err = failNext;
        failNext = null;
        throw err;
      }
    },
    afterEngineTurn: note("engineTurn"),
    afterTurn: note("after"),
  });
  sessions.use({ afterCreate: note("created"), afterDelete: note("deleted") });
});
afterAll(async () => {
  await f.close();
});

const of = (id: string) => calls.filter((c) => c.includes(id)).map((c) => c.replace(`:${id}`, ""));

describe("turn and session hooks", () => {
  it("a plain turn: before, one engine turn, after (with the final state)", async () => {
    const res = await f.request("POST", "/v1/agents/sessions", {
      input: "Reply with exactly: hooked",
      stream: true,
    });
    const events = await readSse(res);
    const id = String(events[0]!.data.id);
    await waitFor(() => of(id).includes("after:completed"), 10_000, "afterTurn");
    expect(of(id)).toEqual(["created", "before:in_progress", "engineTurn:in_progress", "after:completed"]);
  });

  it("a goal: the hook runs between continuations and once at the end", async () => {
    const created = await f.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const id = created.body.id;
    const res = await f.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Objective: keep the goal active while polishing",
      goal: { max_turns: 2 },
    });
    await readSse(res);
    await waitFor(() => of(id).some((c) => c.startsWith("after:")), 10_000, "afterTurn");
    // First engine turn + 2 continuations: a hook before each continuation, one after the last.
    expect(of(id)).toEqual([
      "created",
      "before:in_progress",
      "engineTurn:in_progress",
      "engineTurn:in_progress",
      "engineTurn:in_progress",
      "after:completed",
    ]);
  });

  it("a beforeTurn HookFailure fails the turn with its code; delete runs the session hook", async () => {
    const created = await f.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const id = created.body.id;
    failNext = new HookFailure("environment_failed", "setup command failed: exit 1");
    const res = await f.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Reply with exactly: never",
    });
    const events = await readSse(res);
    expect(events.at(-1)).toMatchObject({
      event: "agent.session.turn.failed",
      data: { error: { code: "environment_failed", message: "setup command failed: exit 1" } },
    });
    expect(f.mock.requests().some((r) => r.lastUserText() === "Reply with exactly: never")).toBe(false);
    await f.request("DELETE", `/v1/agents/sessions/${id}`);
    await waitFor(() => of(id).includes("deleted"), 10_000, "afterDelete");
  });
});

describe("a session claimed by something that is not a turn (a checkpoint restore)", () => {
  it("a message is a 409 saying so (official and template), and the template's live tail answers idle", async () => {
    const created = await f.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const id = created.body.id;
    expect(await f.service.core.store.claimSession(id, "restore_test", {})).toBeDefined();
    const official = await f.json<{ error: { code: string; message: string } }>(
      "POST",
      `/v1/agents/sessions/${id}/events`,
      { events: [{ type: "agent.session.input.message", input: "Reply with exactly: later" }] },
      { "openai-beta": "agents=v1" },
    );
    expect(official.status).toBe(409);
    expect(official.body.error.message).toContain("checkpoint is being restored");
    const template = await f.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Reply with exactly: later",
    });
    expect(template.status).toBe(409);
    const tail = await f.json<{ message: string }>("GET", `/v1/agents/sessions/${id}/events`);
    expect(tail.body.message).toBe("No active turn");
    await f.service.core.store.updateSession(id, { active_turn_id: null });
    const after = await f.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Reply with exactly: later",
    });
    expect((await readSse(after)).at(-1)!.event).toBe("agent.session.turn.completed");
  });
});
