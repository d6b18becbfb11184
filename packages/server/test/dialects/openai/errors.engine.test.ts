// Official dialect through the real `openai` SDK: the errors that need a running service: a wrong token (401),
// the session cap (429), a running turn (409), in the official shape the SDK maps to its error classes. (Client
// mistakes and unimplemented endpoints, on the HTTP app alone: errors.test.ts.)
import { type CapturedRequest, Gate, scripts } from "@codex-agent-api/testkit";
import type OpenAI from "openai";
import { AuthenticationError, ConflictError, RateLimitError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerFixture, startServer } from "../../support/fixture.js";
import {
  countingSdk,
  EventLog,
  expectApiError,
  messageEvent,
  rejection,
  sdk,
} from "../../support/openai-helpers.js";

describe("authentication (--token)", () => {
  let f: ServerFixture;

  beforeAll(async () => {
    f = await startServer({ args: ["--token", "secret"] });
  });
  afterAll(async () => {
    await f.close();
  });

  it("a wrong api key is a 401 AuthenticationError; the right one works", async () => {
    const wrong = sdk(f, { apiKey: "not-the-secret" });
    for (const call of [
      () => wrong.beta.agents.list(),
      () => wrong.beta.agents.create({ model: "mock-model" }),
      () => wrong.beta.agents.sessions.events.stream("sess_x"),
    ]) {
      const e = expectApiError(await rejection(call()), AuthenticationError, 401);
      expect(e.type).toBe("authentication_error");
    }
    const right = sdk(f, { apiKey: "secret" });
    const agent = await right.beta.agents.create({ model: "mock-model", name: "authorised" });
    const s = await right.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: "none" } });
    expect((await right.beta.agents.sessions.retrieve(s.id)).agent.id).toBe(agent.id);
    expect((await right.beta.agents.list()).data.map((a) => a.id)).toContain(agent.id);
  });
});

describe("capacity (AGENT_MAX_SESSIONS)", () => {
  let f: ServerFixture;

  beforeAll(async () => {
    f = await startServer({ env: { AGENT_MAX_SESSIONS: "1" } });
  });
  afterAll(async () => {
    await f.close();
  });

  it("one session too many is a 429 RateLimitError; deleting one makes room", async () => {
    const client = sdk(f);
    const first = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    const e = expectApiError(
      await rejection(client.beta.agents.sessions.create({ environment: { type: "none" } })),
      RateLimitError,
      429,
    );
    expect(e.type).toBe("rate_limit_error");
    expect(e.code).toBe("rate_limit_exceeded");
    await client.beta.agents.sessions.delete(first.id);
    const second = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    expect(second.status).toBe("idle");
  });
});

describe("a running turn (real engine)", () => {
  let f: ServerFixture;
  let client: OpenAI;
  beforeAll(async () => {
    f = await startServer();
    client = sdk(f);
  });
  afterAll(async () => {
    await f.close();
  });

  it("409 ConflictError when deleting a session while a turn runs (thrown, not retried)", async () => {
    const busy = (await client.beta.agents.sessions.create({ environment: { type: "none" } })).id;
    const log = await EventLog.open(client, busy);
    const text = `Keep running (${busy})`;
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["busy ", "busy"], { gate }), (r: CapturedRequest) => {
      return r.lastUserText() === text;
    });
    await client.beta.agents.sessions.events.create(busy, { events: [messageEvent(text)] });
    const turnId = await log.turnCreated();
    await gate.reached;

    const { client: retrying, requests } = countingSdk(f);
    const before = requests();
    const e = expectApiError(await rejection(retrying.beta.agents.sessions.delete(busy)), ConflictError, 409);
    expect(requests() - before).toBe(1);
    expect(e.headers?.get("x-should-retry")).toBe("false");
    expect(e.message).toMatch(/cancel/i);
    expect((await client.beta.agents.sessions.retrieve(busy)).status).toBe("in_progress");

    await client.beta.agents.sessions.events.create(busy, {
      events: [{ type: "agent.session.input.cancel" }],
    });
    await log.waitForSettled(turnId);
    gate.release();
    await log.close();
    expect(await client.beta.agents.sessions.delete(busy)).toMatchObject({ deleted: true });
  });
});
