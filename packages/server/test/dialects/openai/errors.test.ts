// Official dialect through the real `openai` SDK, on the HTTP app alone (no engine, no socket): every client mistake
// is a 4xx in the official shape `{error:{message,type,param,code}}` that the SDK maps to its error classes;
// unimplemented endpoints answer a clear 501; nothing a client sends produces a 5xx or an HTML page. (The cases that
// need a running service: errors.engine.test.ts.)
import type OpenAI from "openai";
import {
  APIError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  UnprocessableEntityError,
} from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppFixture, startApp } from "../../support/fixture.js";
import {
  countingSdk,
  expectApiError,
  message,
  messageEvent,
  rejection,
  sdk,
} from "../../support/openai-helpers.js";

const BETA = { "OpenAI-Beta": "agents=v1" };

describe("client mistakes and unimplemented endpoints", () => {
  // The HTTP app alone (no engine, no socket): what is checked here never reaches a turn.
  let f: AppFixture;
  let client: OpenAI;
  let sid: string;

  beforeAll(async () => {
    f = await startApp();
    client = sdk(f);
    sid = (await client.beta.agents.sessions.create({ environment: { type: "none" } })).id;
  });
  afterAll(async () => {
    await f.close();
  });

  /** Asserts a 400 that the SDK surfaces as BadRequestError and must not retry. */
  async function badRequest(call: Promise<unknown>, param?: string | null): Promise<APIError> {
    const e = expectApiError(await rejection(call), BadRequestError, 400);
    expect(e.type).toBe("invalid_request_error");
    expect(e.headers?.get("x-should-retry")).toBe("false");
    expect(e.headers?.get("content-type")).toMatch(/^application\/json/);
    if (param !== undefined) expect(e.param).toBe(param);
    return e;
  }

  it("400 BadRequestError for bad bodies and wrong types", async () => {
    const agents = client.beta.agents;
    const e1 = await badRequest(agents.create({ model: 5 } as never), "model");
    expect(e1.message).toMatch(/^400 .*model/);
    await badRequest(agents.create({} as never), "model");
    await badRequest(agents.create({ model: "m", metadata: "nope" } as never), "metadata");
    await badRequest(agents.create({ model: "m", tools: { type: "web_search" } } as never), "tools");
    const agent = await agents.create({ model: "mock-model" });
    await badRequest(agents.update(agent.id, { name: 42 } as never), "name");
    await badRequest(agents.list({ limit: 0 }), "limit");
    await badRequest(agents.list({ order: "sideways" as never }), "order");

    const sessions = client.beta.agents.sessions;
    await badRequest(sessions.create({ environment: { type: "mars" } } as never), "environment.type");
    await badRequest(sessions.create({ environment: { type: "none" }, stream: "yes" } as never), "stream");
    await badRequest(sessions.create({ environment: { type: "none" }, input: 42 } as never));
    await badRequest(sessions.create({ environment: { type: "none" }, input: "" }), "input");
    await badRequest(sessions.create({ environment: { type: "none" }, stream: true }), "input");
    await badRequest(sessions.update(sid, { metadata: { k: 1 } } as never));

    const events = client.beta.agents.sessions.events;
    await badRequest(events.create(sid, { events: [] }), "events");
    await badRequest(events.create(sid, { events: [{ type: "agent.session.input.bogus" }] } as never));
    await badRequest(
      events.create(sid, { events: [{ type: "agent.session.input.message", input: 7 }] } as never),
    );
    await badRequest(
      events.create(sid, {
        events: [{ type: "agent.session.input.message", input: [{ role: "assistant", content: [] }] }],
      } as never),
    );
    // A tool result nobody asked for: the exact message the SDK's tool dispatcher recognises.
    const tool = await badRequest(
      events.create(sid, {
        events: [
          { type: "agent.session.input.tool_result", turn_id: "turn_x", call_id: "call_x", success: true },
        ],
      }),
    );
    expect(tool.code).toBe("invalid_request_error");
    expect((tool.error as { message: string }).message).toBe("Unknown pending tool call: call_x");
    // Nothing was started by any of these.
    expect((await client.beta.agents.sessions.turns.list(sid)).data).toEqual([]);
  });

  it("400 for malformed JSON, in the official shape", async () => {
    for (const body of ['{"model":', "[]", "null", '"text"']) {
      const res = await f.request("POST", "/v1/agents", body, BETA);
      expect(res.status, body).toBe(400);
      const json = (await res.json()) as { error: Record<string, unknown> };
      expect(json.error).toMatchObject({ message: expect.any(String), type: "invalid_request_error" });
      expect(json.error).toHaveProperty("param");
      expect(json.error).toHaveProperty("code");
    }
  });

  it("404 NotFoundError for unknown ids and paths", async () => {
    const a = client.beta.agents;
    const s = client.beta.agents.sessions;
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["agents.retrieve", () => a.retrieve("agent_missing")],
      ["agents.update", () => a.update("agent_missing", { name: "x" })],
      ["agents.delete", () => a.delete("agent_missing")],
      ["sessions.retrieve", () => s.retrieve("sess_missing")],
      ["sessions.update", () => s.update("sess_missing", { metadata: {} })],
      ["sessions.delete", () => s.delete("sess_missing")],
      [
        "sessions.create(agent_id)",
        () => s.create({ agent_id: "agent_missing", environment: { type: "none" } }),
      ],
      ["events.create", () => s.events.create("sess_missing", { events: [messageEvent("hi")] })],
      ["events.stream", () => s.events.stream("sess_missing")],
      ["items.list", () => s.items.list("sess_missing")],
      ["turns.list", () => s.turns.list("sess_missing")],
      ["turns.retrieve", () => s.turns.retrieve("turn_missing", { session_id: sid })],
      ["turns.items.list", () => s.turns.items.list("turn_missing", { session_id: sid })],
      ["artifacts.list", () => s.artifacts.list("sess_missing")],
      ["artifacts.retrieve", () => s.artifacts.retrieve("bm9wZS50eHQ", { session_id: sid })],
      ["artifacts.delete", () => s.artifacts.delete("bm9wZS50eHQ", { session_id: sid })],
    ];
    for (const [what, call] of calls) {
      const e = expectApiError(await rejection(call()), NotFoundError, 404);
      expect(e.type, what).toBe("not_found_error");
    }
    const res = await f.request("GET", "/v1/agents/sessions/sess_x/unknown", undefined, BETA);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe("not_found_error");
  });

  it("422 UnprocessableEntityError for a well-formed request this server cannot serve (a domain-restricted network)", async () => {
    const before = (await client.beta.agents.sessions.list({ limit: 100 })).data.length;
    const e = expectApiError(
      await rejection(
        client.beta.agents.sessions.create({
          agent: { model: "mock-model" },
          environment: {
            type: "openai_hosted",
            network: { access: "restricted", allowed_domains: ["pypi.org"] },
          },
        }),
      ),
      UnprocessableEntityError,
      422,
    );
    expect(e.param).toBe("environment.network.access");
    expect(e.message).toMatch(/restricted/);
    expect((await client.beta.agents.sessions.list({ limit: 100 })).data.length).toBe(before);
  });

  it("unimplemented endpoints answer 501 'not implemented' in the official shape, without retries", async () => {
    const { client: retrying, requests } = countingSdk(f);
    // Every method of the SDK is served (the Files API too: files.engine.test.ts); what is left are official paths this
    // server has no operation for, asked through the SDK's own request methods.
    const calls: Array<[string, () => Promise<unknown>]> = [
      ["DELETE an environment", () => retrying.delete("/agents/environments/env_1", { headers: BETA })],
      [
        "suspend an environment",
        () => retrying.post("/agents/environments/env_1/suspend", { headers: BETA }),
      ],
      ["a vault's unknown part", () => retrying.get("/vaults/vault_1/members/x", { headers: BETA })],
    ];
    for (const [what, call] of calls) {
      const before = requests();
      const err = await rejection(call());
      expect(err, what).toBeInstanceOf(APIError);
      expect(err, what).toBeInstanceOf(InternalServerError);
      const e = err as APIError;
      expect(e.status, what).toBe(501);
      expect(e.message, what).toMatch(/not implemented/i);
      expect(e.type, what).toBe("not_implemented_error");
      expect(e.code, what).toBe("not_implemented");
      expect(e.headers?.get("x-should-retry"), what).toBe("false");
      expect(requests() - before, what).toBe(1);
    }
  });

  it("no 5xx and no HTML for odd requests", async () => {
    const art = (p: string) => Buffer.from(p).toString("base64url");
    const odd: Array<[string, string, unknown?]> = [
      ["GET", "/v1/agents?limit=abc"],
      ["GET", "/v1/agents?limit=1000000"],
      ["GET", "/v1/agents?after=agent_does_not_exist"],
      ["GET", `/v1/agents/sessions?metadata[a]=b&metadata=c`],
      ["GET", `/v1/agents/sessions/${sid}/items?after=nope&limit=2`],
      ["GET", `/v1/agents/sessions/${sid}/artifacts/${art("../../etc/passwd")}`],
      ["GET", `/v1/agents/sessions/${sid}/artifacts/${art("/etc/passwd")}/content`],
      ["GET", `/v1/agents/sessions/${sid}/artifacts/..%2F..%2Fetc%2Fpasswd`],
      ["DELETE", `/v1/agents/sessions/${sid}/artifacts/${art(".")}`],
      ["POST", `/v1/agents/sessions/${sid}/events`, { events: "x" }],
      ["POST", `/v1/agents/sessions/${sid}/events`, { events: [{}] }],
      ["POST", `/v1/agents/sessions/${sid}/events`, { events: [messageEvent("x"), null] }],
      ["POST", "/v1/agents/sessions", { environment: { type: "none" }, input: [message("")] }],
      ["POST", "/v1/agents/sessions", { environment: { type: "none" }, agent: { model: 5 } }],
      ["POST", "/v1/agents", { model: "m", metadata: { ["k".repeat(65)]: "v" } }],
      ["PUT", "/v1/agents"],
      ["PATCH", `/v1/agents/sessions/${sid}`, {}],
    ];
    for (const [method, path, body] of odd) {
      const res = await f.request(method, path, body, BETA);
      const what = `${method} ${path}`;
      expect(res.status, what).toBeLessThan(500);
      expect(res.headers.get("content-type"), what).toMatch(/^application\/json/);
      const json = (await res.json()) as { error?: { message?: unknown; type?: unknown } } & Record<
        string,
        unknown
      >;
      if (res.status >= 400) {
        expect(json.error?.message, what).toEqual(expect.any(String));
        expect(json.error?.type, what).toEqual(expect.any(String));
      }
    }
    // The server still works.
    expect((await client.beta.agents.sessions.retrieve(sid)).status).toBe("idle");
  });
});
