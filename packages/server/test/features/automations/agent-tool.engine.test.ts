// The agent's own automations tool ({type: "automations"}): the model schedules a wake-up in its session through
// the real engine (a dynamic tool this server answers itself, never a required action); it is an automation of
// the API (created_by the agent), it fires at its time (an injected clock) as a message to the session, and the
// model lists and cancels its wake-ups — never another session's.
import type OpenAI from "openai";
import { BadRequestError, NotFoundError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  at,
  invocationsOf,
  moveTo,
  waitForDelivered,
  waitForIdle,
  waitForInvocations,
} from "../../support/automation-helpers.js";
import { TestClock } from "../../support/clock.js";
import { type ServerFixture, startServer } from "../../support/fixture.js";
import { expectApiError, rejection, sdk } from "../../support/openai-helpers.js";

const clock = new TestClock();
let f: ServerFixture;
let client: OpenAI;

beforeAll(async () => {
  moveTo(clock, "2031-05-01T08:00:00Z");
  f = await startServer({ clock });
  client = sdk(f);
});
afterAll(async () => {
  await f?.close();
});

/** The model calls the tool with these arguments and replies with its output (the JSON the server answered). */
async function callTool(sessionId: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const result = await client.beta.agents.sessions
    .stream(sessionId, {
      input: `Call the function automations with arguments ${JSON.stringify(args)}. Then reply with its output`,
    })
    .finalResult();
  expect(result.turn.status).toBe("completed");
  try {
    return JSON.parse(result.output_text) as Record<string, unknown>;
  } catch {
    return { error: result.output_text };
  }
}

const withTool = () =>
  client.beta.agents.sessions.create({
    environment: { type: "none" },
    agent: { model: "mock-model", tools: [{ type: "automations" }] },
  });

describe("the agent's automations tool", () => {
  it("schedules a wake-up that fires at its time as a message to the session; lists it and cancels it", async () => {
    const s = await withTool();
    expect(s.agent.tools).toEqual([{ type: "automations" }]);

    const created = await callTool(s.id, {
      action: "create",
      name: "check the build",
      instructions: "Reply with exactly: woke up",
      run_at: "2031-05-01T09:30:00Z",
    });
    expect(created).toMatchObject({
      name: "check the build",
      status: "active",
      run_at: "2031-05-01T09:30:00.000Z",
      instructions: "Reply with exactly: woke up",
    });
    const id = created.automation_id as string;
    // Answered by the server: the session never waited for a client.
    const session = await client.beta.agents.sessions.retrieve(s.id);
    expect(session.required_actions).toEqual([]);
    const items = [];
    for await (const i of client.beta.agents.sessions.items.list(s.id)) items.push(i);
    const call = items.find((i) => i.type === "function_call");
    expect(call).toMatchObject({ name: "automations", status: "completed" });
    expect(items.find((i) => i.type === "function_call_output")).toMatchObject({ status: "completed" });

    // An automation of the API like any other, made by the agent in this session.
    const a = await client.beta.agents.automations.retrieve(id);
    expect(a).toMatchObject({
      type: "once",
      run_at: at("2031-05-01T09:30:00Z"),
      target: { type: "existing_session", session_id: s.id, instructions: "Reply with exactly: woke up" },
      created_by: {
        type: "agent",
        session_id: s.id,
        tool_call_id: call?.type === "function_call" ? call.call_id : "",
      },
    });

    // It fires at its time: the instructions reach the session as a message, and the agent acts on them.
    clock.advance(at("2031-05-01T09:30:00Z") - 1 - clock.now());
    expect(await f.service.core.workers.scheduler.tick()).toBe(0);
    moveTo(clock, "2031-05-01T09:30:00Z");
    const [fired] = await waitForInvocations(client, id, 1);
    expect(await waitForDelivered(client, id, fired!.id)).toMatchObject({
      status: "completed",
      session_id: s.id,
    });
    await waitForIdle(f, s.id, 2);
    const turns = (await client.beta.agents.sessions.turns.list(s.id, { order: "asc" })).data;
    expect(turns).toHaveLength(2);
    const said = [];
    for await (const i of client.beta.agents.sessions.items.list(s.id, { order: "asc" })) {
      if (i.type === "message" && i.role === "assistant" && i.turn_id === turns[1]!.id) said.push(i);
    }
    expect(said.flatMap((m) => m.content.map((c) => ("text" in c ? c.text : "")))).toEqual(["woke up"]);

    // A repeating one, then the model lists its wake-ups and cancels one.
    const daily = await callTool(s.id, {
      action: "create",
      instructions: "Reply with exactly: good morning",
      expression: "0 7 * * *",
      timezone: "Europe/Paris",
    });
    expect(daily).toMatchObject({
      expression: "0 7 * * *",
      timezone: "Europe/Paris",
      next_run_at: "2031-05-02T05:00:00.000Z",
    });
    const listed = await callTool(s.id, { action: "list" });
    expect((listed.automations as Array<{ automation_id: string }>).map((x) => x.automation_id)).toEqual([
      id,
      daily.automation_id,
    ]);
    expect(await callTool(s.id, { action: "delete", automation_id: daily.automation_id })).toEqual({
      deleted: daily.automation_id,
    });
    expectApiError(
      await rejection(client.beta.agents.automations.retrieve(daily.automation_id as string)),
      NotFoundError,
      404,
    );
  });

  it("refuses what the model got wrong (it reads why), and never touches another session's automations", async () => {
    const s = await withTool();
    const past = await callTool(s.id, {
      action: "create",
      instructions: "late",
      run_at: "2020-01-01T00:00:00Z",
    });
    expect(past.error).toContain("future");
    const both = await callTool(s.id, {
      action: "create",
      instructions: "x",
      run_at: "2031-06-01T00:00:00Z",
      expression: "* * * * *",
    });
    expect(both.error).toContain("exactly one of run_at");
    const badCron = await callTool(s.id, { action: "create", instructions: "x", expression: "every day" });
    expect(badCron.error).toMatch(/expression/i);

    const other = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    const theirs = await client.beta.agents.automations.create({
      type: "periodic",
      name: "theirs",
      expression: "0 9 * * *",
      timezone: "UTC",
      target: { type: "existing_session", session_id: other.id, instructions: "Reply with exactly: hi" },
    });
    const refused = await callTool(s.id, { action: "delete", automation_id: theirs.id });
    expect(refused.error).toContain("not one of this session's wake-ups");
    expect((await client.beta.agents.automations.retrieve(theirs.id)).id).toBe(theirs.id);
    expect(await callTool(s.id, { action: "list" })).toEqual({ automations: [] });
    expect(await invocationsOf(client, theirs.id)).toEqual([]);
  });

  it("without the tool, a function tool named automations stays the client's; with it, that name is refused", async () => {
    const fn = {
      type: "function" as const,
      name: "automations",
      description: "The client's own.",
      parameters: { type: "object", properties: {} },
    };
    const clients = await client.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: { model: "mock-model", tools: [fn] },
    });
    const result = await client.beta.agents.sessions
      .stream(clients.id, {
        input: "Call the function automations with arguments {}. Then reply with its output",
        toolHandlers: { automations: async () => "the client answered" },
      })
      .finalResult();
    expect(result.output_text).toBe("the client answered");

    const err = expectApiError(
      await rejection(
        client.beta.agents.sessions.create({
          environment: { type: "none" },
          agent: { model: "mock-model", tools: [fn, { type: "automations" }] },
        }),
      ),
      BadRequestError,
      400,
    );
    expect(err.message).toContain("would shadow the automations tool");
  });
});
