// Security at the HTTP edge, on the HTTP app alone (no engine, no socket): a "bad input" sweep over every route of
// both dialects (never a 500, never a crash, always a JSON error). (Token auth, the non-loopback bind guard,
// workspace confinement, body validation and size cap on a running service: security.engine.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppFixture, startApp } from "../support/fixture.js";

type Json = Record<string, unknown>;

async function jsonOf(res: Response): Promise<Json> {
  const text = await res.text();
  try {
    return JSON.parse(text) as Json;
  } catch {
    throw new Error(`not JSON (HTTP ${res.status}): ${text.slice(0, 200)}`);
  }
}

// As root every file is readable, so this runs the server as `nobody` (only possible when the tests run as root).

describe("bad input on every route (the HTTP app alone)", () => {
  let s: AppFixture;
  let sessionId: string;
  beforeAll(async () => {
    s = await startApp();
    sessionId = (await s.json<{ id: string }>("POST", "/v1/agents/sessions", {})).body.id;
  });
  afterAll(async () => {
    await s?.close();
  });

  it("survives a bad-input sweep over every route: always a JSON error < 500", async () => {
    const huge = "x".repeat(300_000);
    const deep = `${"[".repeat(20_000)}${"]".repeat(20_000)}`;
    const badIds = [
      "nope",
      `sess_${"0".repeat(24)}`,
      "..",
      "%2e%2e%2f%2e%2e",
      "%00",
      "%E0%A4%A",
      "%F0%9F%98%80",
      "x".repeat(500),
    ];
    const badBodies: unknown[] = [
      '{"a":',
      "[]",
      "[{}]",
      '"str"',
      "123",
      "true",
      deep,
      { input: 5, stream: "yes", model: 5, metadata: "x", tools: {}, agent: 5, path: 5 },
      { input: { type: huge }, agent: { model: 1 }, model: [], path: "", content_base64: 7 },
      { metadata: { [huge.slice(0, 70)]: "v" }, objective: 5, status: "weird", token_budget: -1 },
    ];
    type Case = { method: string; path: string; body?: unknown; headers?: Record<string, string> };
    const cases: Case[] = [];
    const fill = (url: string, id: string) => url.replace(/:[a-z_]+/g, id);
    for (const { method, url } of s.app.routeTable) {
      if (url.includes(":")) {
        for (const id of badIds)
          cases.push({ method, path: fill(url, id), ...(method === "POST" ? { body: {} } : {}) });
      }
      if (method === "POST") {
        // Bodies against an existing session (or no id at all): every one of them is invalid.
        const path = url.replace(":session_id", sessionId).replace(/:[a-z_]+/g, "nope");
        for (const body of badBodies) cases.push({ method, path, body });
      }
      for (const other of ["PUT", "PATCH", "OPTIONS"]) cases.push({ method: other, path: fill(url, "nope") });
    }
    const events = `/v1/agents/sessions/${sessionId}/events`;
    cases.push(
      { method: "GET", path: "/" },
      { method: "GET", path: "/v1" },
      { method: "POST", path: "/v1/nope", body: {} },
      { method: "DELETE", path: "/v1/agents/a/b/c/d/e" },
      { method: "GET", path: "/v2/agents" },
      { method: "DELETE", path: "/v1/agents" },
      { method: "DELETE", path: "/v1/agents/sessions" },
      { method: "POST", path: `${events}/x`, body: {} },
      { method: "GET", path: `${events}?after=abc` },
      { method: "GET", path: events, headers: { "last-event-id": "garbage" } },
      { method: "GET", path: events, headers: { "last-event-id": "-1" } },
      { method: "GET", path: `/v1/agents/${"y".repeat(40_000)}` },
      { method: "GET", path: "/v1/agents/nope", headers: { "x-big": "z".repeat(40_000) } },
      { method: "POST", path: events, body: '{"input":"\\ud800"', headers: { "content-type": "text/plain" } },
    );
    // Both wire dialects: the template's (no header) and the official one.
    const dialects: Array<Record<string, string>> = [{}, { "openai-beta": "agents=v1" }];
    for (const dialect of dialects) {
      for (const c of cases) {
        const what = `${JSON.stringify(dialect)} ${c.method} ${c.path.slice(0, 100)} ${typeof c.body === "string" ? c.body.slice(0, 40) : JSON.stringify(c.body)?.slice(0, 60)}`;
        const res = await s.request(c.method, c.path, c.body, { ...dialect, ...c.headers });
        const body = await jsonOf(res);
        if (res.status === 501) {
          // Endpoints this server does not provide in a dialect: a deliberate answer, not a failure.
          expect(JSON.stringify(body), what).toMatch(/NotImplementedError|not_implemented/);
          continue;
        }
        expect(res.status, what).toBeGreaterThanOrEqual(400);
        expect(res.status, what).toBeLessThan(500);
        expect(body.error, what).toBeTruthy();
      }
    }
    expect(cases.length).toBeGreaterThan(300);

    // Still healthy: nothing is stuck, and the session still takes a turn (which, with no model in this app,
    // ends at once saying so).
    const health = await s.json<{ status: string; active_turns: number }>("GET", "/health");
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: "ok", active_turns: 0 });
    const turn = await s.json<{ status: string }>("POST", events, { input: "still alive?", stream: false });
    expect(turn.status).toBe(200);
    expect(turn.body.status).toBe("failed");
    const stored = await s.core.store.listTurns(sessionId, {});
    expect(stored.data[0]?.error?.message).toMatch(/No model is configured/);
  });

  it("answers a body nested deeper than 64 levels with 400 in the dialect's shape, on every POST route", async () => {
    const deepObject = `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}`;
    const deepArray = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
    // Where the nesting sits: the places a route reads as it likes (tools, metadata, an agent), an unknown field,
    // and the body itself.
    const bodies = [
      `{"model":"m","tools":${deepArray}}`,
      `{"model":"m","metadata":${deepObject}}`,
      `{"agent":${deepObject},"input":"x"}`,
      `{"model":"m","x":${deepObject}}`,
      `{"events":[${deepArray}]}`,
      deepArray,
    ];
    const agentsBefore = (await s.json<{ data: unknown[] }>("GET", "/v1/agents")).body.data.length;
    const posts = s.app.routeTable.filter((r) => r.method === "POST").map((r) => r.url);
    expect(posts.length).toBeGreaterThan(30);
    for (const url of posts) {
      const path = url.replace(":session_id", sessionId).replace(/:[a-z_]+/g, "nope");
      for (const body of bodies) {
        const template = await s.request("POST", path, body);
        const what = `${url} ${body.slice(0, 30)}`;
        const t = await jsonOf(template);
        // Webhook endpoints and the Files API answer in the official shape whatever the dialect header (their SDK
        // methods send none); the upload route takes multipart/form-data only, so any JSON body is a 415 there.
        if (url === "/v1/files") {
          const asOfficial = await s.request("POST", path, body, { "openai-beta": "agents=v1" });
          for (const [status, json] of [
            [template.status, t],
            [asOfficial.status, await jsonOf(asOfficial)],
          ] as const) {
            expect(status, what).toBe(415);
            expect((json.error as Json).code, what).toBe("unsupported_media_type");
          }
          continue;
        }
        if (url.startsWith("/v1/webhook_endpoints") || url.startsWith("/v1/files")) {
          expect(template.status, what).toBe(400);
          expect((t.error as Json).message, what).toMatch(/nests more than 64 levels/);
        } else {
          expect({ status: template.status, body: t }, what).toEqual({
            status: 400,
            body: { error: "Invalid JSON: the body nests more than 64 levels deep", type: "ValueError" },
          });
        }
        const official = await s.request("POST", path, body, { "openai-beta": "agents=v1" });
        expect({ status: official.status, body: await jsonOf(official) }, what).toEqual({
          status: 400,
          body: {
            error: {
              message: "Invalid JSON: the body nests more than 64 levels deep",
              type: "invalid_request_error",
              param: null,
              code: "invalid_request_error",
            },
          },
        });
      }
    }
    // Nothing was created on the way.
    expect((await s.json<{ data: unknown[] }>("GET", "/v1/agents")).body.data).toHaveLength(agentsBefore);
  });

  it("takes nesting up to 64 levels (brackets inside strings do not count)", async () => {
    // A function tool whose schema nests the body to exactly 64 levels: body, tools, the tool, its parameters,
    // then 60 levels of schema.
    let parameters: Json = { type: "string" };
    for (let i = 0; i < 30; i++) parameters = { type: "object", properties: { a: parameters } };
    const body = {
      model: "m",
      name: "[[[[{{{{".repeat(50),
      tools: [{ type: "function", name: "deep", parameters }],
    };
    const ok = await s.json<{ id: string; tools: Json[] }>("POST", "/v1/agents", body);
    expect(ok.status).toBe(200);
    expect(ok.body.tools[0]!.parameters).toEqual(parameters);
    // One level more is refused.
    const deeper = { ...body, tools: [{ type: "function", name: "deep", parameters: { not: parameters } }] };
    const refused = await s.json<{ error: string }>("POST", "/v1/agents", deeper);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe("Invalid JSON: the body nests more than 64 levels deep");
    // An escaped quote does not end a string early (the brackets after it are still inside it).
    const escaped = await s.json("POST", "/v1/agents", { model: "m", name: `\\"${"[".repeat(100)}` });
    expect(escaped.status).toBe(200);
    await s.json("DELETE", `/v1/agents/${ok.body.id}`);
    await s.json("DELETE", `/v1/agents/${(escaped.body as { id: string }).id}`);
  });
});
