// The "template" wire dialect over real HTTP (the seed e2e contract, in more detail than the seed suite):
// ids and shapes, agent CRUD, sessions, turns (SSE and blocking), input forms, errors, usage, items.
// Real engine, scripted mock model.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type CapturedRequest, ev, Gate, scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse, type ServerFixture, type SseEvent, startServer, waitFor } from "../../support/fixture.js";

const AGENT_ID = /^agent_[0-9a-f]{24}$/;
const SESSION_ID = /^sess_[0-9a-f]{24}$/;
const TURN_ID = /^turn_[0-9a-f]{24}$/;
const SESSIONS = "/v1/agents/sessions";

interface AgentObject {
  id: string;
  object: string;
  model: string;
  instructions: string;
  tools: unknown[];
  name: string;
  metadata: Record<string, string>;
  created_at: number;
}

interface ExecItem {
  id: string;
  type: string;
  text?: string;
  command?: string;
  exit_code?: number | null;
  status?: string;
}

interface ItemEvent {
  type: string;
  turn_id: string;
  item: ExecItem;
}

interface UsageObject {
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_output_tokens: number;
  total_tokens: number;
}

interface SessionObject {
  id: string;
  object: string;
  status: string;
  model: string;
  instructions: string;
  tools: unknown[];
  created_at: number;
  metadata: Record<string, string>;
  output?: ItemEvent[];
  usage?: UsageObject;
}

let counter = 0;
/** A unique marker so scripted responses are routed to exactly one request. */
const uniq = (label: string) => `${label}-${process.pid}-${++counter}`;
const forText = (text: string) => (r: CapturedRequest) => r.lastUserText() === text;
const itemOf = (e: SseEvent) => e.data.item as ExecItem;
const texts = (out: ItemEvent[] | undefined) => (out ?? []).map((o) => o.item.text);

let f: ServerFixture;

beforeAll(async () => {
  f = await startServer();
});

afterAll(async () => {
  await f?.close();
});

async function createSession(body: Record<string, unknown> = {}): Promise<SessionObject> {
  const r = await f.json<SessionObject>("POST", SESSIONS, body);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

async function getSession(id: string): Promise<SessionObject> {
  const r = await f.json<SessionObject>("GET", `${SESSIONS}/${id}`);
  expect(r.status).toBe(200);
  return r.body;
}

/** A blocking turn (`stream: false`): the session with output. */
async function syncTurn(id: string, body: Record<string, unknown>): Promise<SessionObject> {
  const r = await f.json<SessionObject>("POST", `${SESSIONS}/${id}/events`, { ...body, stream: false });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

function expectSecondsNow(t: number): void {
  expect(Number.isInteger(t)).toBe(true);
  expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(600);
}

function expectIncreasingIds(frames: SseEvent[]): void {
  let prev = 0;
  for (const e of frames) {
    expect(e.id, `${e.event} carries an id`).toMatch(/^\d+$/);
    expect(Number(e.id)).toBeGreaterThan(prev);
    prev = Number(e.id);
  }
}

const notFoundSession = (id: string) => ({ error: `Session ${id} not found`, type: "NotFoundError" });
const notFoundAgent = (id: string) => ({ error: `Agent ${id} not found`, type: "NotFoundError" });

describe("agents", () => {
  it("create with defaults: ids, object name, integer created_at", async () => {
    const r = await f.json<AgentObject>("POST", "/v1/agents", {});
    expect(r.status).toBe(200);
    expect(r.body.id).toMatch(AGENT_ID);
    expect(r.body).toEqual({
      id: r.body.id,
      object: "agent",
      model: "mock-model",
      instructions: "",
      tools: [],
      name: "",
      metadata: {},
      created_at: r.body.created_at,
      // This server's extension (approvals): the default asks for nothing.
      approval_policy: "never",
    });
    expectSecondsNow(r.body.created_at);
  });

  it("CRUD field for field; partial updates keep untouched fields; delete", async () => {
    const tools = [{ type: "function", name: "lookup" }];
    const created = await f.json<AgentObject>("POST", "/v1/agents", {
      model: "model-a",
      instructions: "Be brief.",
      tools,
      name: "alpha",
      metadata: { team: "x" },
    });
    const a = created.body;
    expect(a).toMatchObject({
      object: "agent",
      model: "model-a",
      instructions: "Be brief.",
      tools,
      name: "alpha",
      metadata: { team: "x" },
    });
    expect((await f.json("GET", `/v1/agents/${a.id}`)).body).toEqual(a);
    const list = await f.json<{ object: string; data: AgentObject[] }>("GET", "/v1/agents");
    expect(list.body.object).toBe("list");
    expect(list.body.data.find((x) => x.id === a.id)).toEqual(a);

    const renamed = await f.json<AgentObject>("POST", `/v1/agents/${a.id}`, { name: "beta" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...a, name: "beta" });
    const remodeled = await f.json<AgentObject>("POST", `/v1/agents/${a.id}`, {
      model: "model-b",
      metadata: { other: "y" },
      // not updatable
      id: "agent_000000000000000000000000",
      created_at: 1,
    });
    expect(remodeled.body).toEqual({ ...a, name: "beta", model: "model-b", metadata: { other: "y" } });
    expect((await f.json("GET", `/v1/agents/${a.id}`)).body).toEqual(remodeled.body);

    const del = await f.json("DELETE", `/v1/agents/${a.id}`);
    expect(del).toEqual({ status: 200, body: { id: a.id, object: "agent", deleted: true } });
    expect(await f.json("GET", `/v1/agents/${a.id}`)).toEqual({ status: 404, body: notFoundAgent(a.id) });
    const after = await f.json<{ data: AgentObject[] }>("GET", "/v1/agents");
    expect(after.body.data.some((x) => x.id === a.id)).toBe(false);
  });

  it("404s for unknown agents, and agent routes do not swallow session ids", async () => {
    const ghost = "agent_0123456789abcdef01234567";
    for (const [method, body] of [
      ["GET", undefined],
      ["POST", { name: "x" }],
      ["DELETE", undefined],
    ] as const) {
      expect(await f.json(method, `/v1/agents/${ghost}`, body)).toEqual({
        status: 404,
        body: notFoundAgent(ghost),
      });
    }
    expect(await f.json("GET", "/v1/agents/sess_x")).toEqual({ status: 404, body: notFoundAgent("sess_x") });
    const sessions = await f.json<{ object: string; data: unknown[] }>("GET", SESSIONS);
    expect(sessions.status).toBe(200);
    expect(sessions.body.object).toBe("list");
    expect(await f.json("GET", "/v1/nothing-here")).toEqual({
      status: 404,
      body: { error: "Not found: /v1/nothing-here", type: "ValueError" },
    });
  });
});

describe("sessions", () => {
  it("create without input is an idle JSON session, even with stream:true", async () => {
    for (const body of [{}, { stream: true }, { input: "", stream: true }]) {
      const res = await f.request("POST", SESSIONS, body);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      const s = (await res.json()) as SessionObject;
      expect(s).toEqual({
        id: s.id,
        object: "session",
        status: "idle",
        model: "mock-model",
        instructions: "",
        tools: [],
        created_at: s.created_at,
        metadata: {},
        approval_policy: "never",
        required_actions: [],
      });
      expect(s.id).toMatch(SESSION_ID);
      expectSecondsNow(s.created_at);
    }
  });

  it("create with input (stream absent or false) blocks until the turn ends, then returns output and usage", async () => {
    for (const stream of [undefined, false]) {
      const text = uniq("held create");
      const gate = new Gate();
      f.mock.enqueue(scripts.streamingMessage(["held ", "reply"], { gate }), forText(text));
      let settled = false;
      const pending = f
        .json<SessionObject>("POST", SESSIONS, { input: text, ...(stream === undefined ? {} : { stream }) })
        .finally(() => {
          settled = true;
        });
      await gate.reached;
      const busy = await f.json<{ data: SessionObject[] }>("GET", SESSIONS);
      expect(busy.body.data.filter((s) => s.status === "in_progress")).toHaveLength(1);
      expect(settled).toBe(false);
      gate.release();
      const { status, body } = await pending;
      expect(status).toBe(200);
      expect(body.id).toMatch(SESSION_ID);
      expect(body.status).toBe("idle");
      expect(body.output).toEqual([
        {
          type: "item.completed",
          turn_id: expect.stringMatching(TURN_ID),
          item: { id: expect.any(String), type: "agent_message", text: "held reply" },
        },
      ]);
      expect(body.usage!.input_tokens).toBeGreaterThan(0);
      expect(body.usage!.output_tokens).toBeGreaterThan(0);
    }
  });

  it("create with input and stream:true streams the turn: created, turn.started, items, turn.completed", async () => {
    const res = await f.request("POST", SESSIONS, {
      input: "Reply with exactly: hello stream",
      stream: true,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const frames = await readSse(res);
    expectIncreasingIds(frames);

    const [created, started] = frames;
    expect(created!.event).toBe("agent.session.created");
    const sid = created!.data.id as string;
    expect(sid).toMatch(SESSION_ID);
    expect(created!.data).toMatchObject({ object: "session", status: "in_progress", model: "mock-model" });
    expectSecondsNow(created!.data.created_at as number);
    expect(started!.event).toBe("agent.session.turn.started");
    const turnId = started!.data.turn_id as string;
    expect(turnId).toMatch(TURN_ID);
    expect(started!.data).toEqual({ turn_id: turnId, session_id: sid });

    const added = frames.findIndex(
      (e) => e.event === "agent.session.output_item.added" && itemOf(e).type === "agent_message",
    );
    const done = frames.findIndex(
      (e) => e.event === "agent.session.output_item.done" && itemOf(e).type === "agent_message",
    );
    expect(added).toBeGreaterThan(1);
    expect(done).toBeGreaterThan(added);
    expect(frames[done]!.data).toMatchObject({
      type: "agent.session.output_item.done",
      session_id: sid,
      turn_id: turnId,
      item: { type: "agent_message", text: "hello stream" },
    });
    const deltas = frames.filter((e) => e.event === "agent.session.output_text.delta");
    expect(deltas.map((e) => e.data.delta).join("")).toBe("hello stream");

    const last = frames.at(-1)!;
    expect(last.event).toBe("agent.session.turn.completed");
    expect(last.data).toMatchObject({ turn_id: turnId, session_id: sid, status: "completed" });
    expect(frames.filter((e) => e.event === "agent.session.turn.completed")).toHaveLength(1);
    for (const e of frames.slice(1)) expect(e.data.session_id).toBe(sid);

    const s = await getSession(sid);
    expect(s.status).toBe("idle");
    expect(texts(s.output)).toEqual(["hello stream"]);
  });

  it("a saved agent id supplies model and instructions; they reach the model", async () => {
    const marker = uniq("INSTR");
    const agent = (
      await f.json<AgentObject>("POST", "/v1/agents", {
        model: "agent-model-z",
        instructions: `Follow rule ${marker}.`,
        tools: [],
      })
    ).body;
    const s = await createSession({ agent: agent.id });
    expect(s).toMatchObject({
      status: "idle",
      model: "agent-model-z",
      instructions: `Follow rule ${marker}.`,
    });

    const text = uniq("Reply with exactly: from agent");
    const done = await syncTurn(s.id, { input: text });
    expect(done.status).toBe("idle");
    const [req] = f.mock.requests(forText(text));
    expect(req!.model).toBe("agent-model-z");
    expect(req!.rawBody).toContain(`Follow rule ${marker}.`);

    // Deleting the agent later leaves the session untouched.
    expect((await f.json("DELETE", `/v1/agents/${agent.id}`)).status).toBe(200);
    expect((await getSession(s.id)).model).toBe("agent-model-z");
  });

  it("an unknown saved agent id is a 404 and creates nothing", async () => {
    const before = (await f.json<{ data: unknown[] }>("GET", SESSIONS)).body.data.length;
    const ghost = "agent_ffffffffffffffffffffffff";
    for (const body of [{ agent: ghost }, { agent: ghost, input: "hi", stream: true }]) {
      expect(await f.json("POST", SESSIONS, body)).toEqual({ status: 404, body: notFoundAgent(ghost) });
    }
    expect((await f.json<{ data: unknown[] }>("GET", SESSIONS)).body.data.length).toBe(before);
  });

  it("get, list, update and delete; 404 shapes for unknown sessions", async () => {
    const s = await createSession({ agent: { model: "m-1", instructions: "first" } });
    const got = await getSession(s.id);
    expect(got).toEqual({ ...s, output: [], usage: expect.objectContaining({ input_tokens: 0 }) });
    const listed = (await f.json<{ data: SessionObject[] }>("GET", SESSIONS)).body.data.find(
      (x) => x.id === s.id,
    );
    expect(listed).toEqual(s);

    const upd = await f.json<SessionObject>("POST", `${SESSIONS}/${s.id}`, { instructions: "second" });
    expect(upd).toEqual({ status: 200, body: { ...s, instructions: "second" } });
    const upd2 = await f.json<SessionObject>("POST", `${SESSIONS}/${s.id}`, { model: "m-2" });
    expect(upd2.body).toEqual({ ...s, instructions: "second", model: "m-2" });

    expect(await f.json("DELETE", `${SESSIONS}/${s.id}`)).toEqual({
      status: 200,
      body: { id: s.id, object: "session", deleted: true },
    });
    const ghost = s.id;
    for (const [method, path, body] of [
      ["GET", "", undefined],
      ["POST", "", { model: "x" }],
      ["DELETE", "", undefined],
      ["POST", "/events", { input: "hi" }],
      ["GET", "/events", undefined],
      ["GET", "/items", undefined],
    ] as const) {
      expect(await f.json(method, `${SESSIONS}/${ghost}${path}`, body), `${method} ${path}`).toEqual({
        status: 404,
        body: notFoundSession(ghost),
      });
    }
  });
});

describe("turns", () => {
  it("POST events streams SSE by default; stream:false blocks and returns the session with output", async () => {
    const s = await createSession();
    const res = await f.request("POST", `${SESSIONS}/${s.id}/events`, {
      input: "Reply with exactly: sse turn",
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const frames = await readSse(res);
    expectIncreasingIds(frames);
    expect(frames[0]!.event).toBe("agent.session.turn.started");
    expect(frames[0]!.data.turn_id).toMatch(TURN_ID);
    expect(frames.some((e) => e.event === "agent.session.created")).toBe(false);
    expect(frames.at(-1)!.event).toBe("agent.session.turn.completed");
    expect(
      frames.filter((e) => e.event === "agent.session.output_item.done").map((e) => itemOf(e).text),
    ).toEqual(["sse turn"]);

    const text = uniq("blocking turn");
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["blocked ", "then done"], { gate }), forText(text));
    let settled = false;
    const pending = f
      .json<SessionObject>("POST", `${SESSIONS}/${s.id}/events`, { input: text, stream: false })
      .finally(() => {
        settled = true;
      });
    await gate.reached;
    expect((await getSession(s.id)).status).toBe("in_progress");
    expect(settled).toBe(false);
    gate.release();
    const { status, body } = await pending;
    expect(status).toBe(200);
    expect(body).toMatchObject({ id: s.id, object: "session", status: "idle" });
    expect(texts(body.output)).toEqual(["sse turn", "blocked then done"]);
    expect(body.output![1]!.turn_id).not.toBe(frames[0]!.data.turn_id);
  });

  it("409 while a turn runs, checked before input validation", async () => {
    const s = await createSession();
    const text = uniq("long turn");
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["finally ", "free"], { gate }), forText(text));
    const stream = f.request("POST", `${SESSIONS}/${s.id}/events`, { input: text });
    await gate.reached;
    const conflict = { status: 409, body: { error: "Session has an active turn", type: "ConflictError" } };
    for (const body of [{ input: "another" }, { input: "another", stream: false }, {}, { input: "" }]) {
      expect(await f.json("POST", `${SESSIONS}/${s.id}/events`, body)).toEqual(conflict);
    }
    expect(f.mock.requests(forText("another"))).toHaveLength(0);
    // Concurrent attempts: all refused, none slips through.
    const racing = await Promise.all(
      Array.from({ length: 4 }, () => f.json("POST", `${SESSIONS}/${s.id}/events`, { input: "racer" })),
    );
    expect(racing).toEqual(Array.from({ length: 4 }, () => conflict));
    // The live branch of GET events answers with SSE while the turn runs.
    const tail = await f.request("GET", `${SESSIONS}/${s.id}/events`);
    expect(tail.headers.get("content-type")).toMatch(/^text\/event-stream/);
    gate.release();
    const frames = await readSse(await stream);
    expect(frames.at(-1)!.event).toBe("agent.session.turn.completed");
    const tailFrames = await readSse(tail);
    expect(tailFrames).toEqual(frames);
    expect(texts((await syncTurn(s.id, { input: "Reply with exactly: free again" })).output)).toEqual([
      "finally free",
      "free again",
    ]);
  });

  it("400 Missing input text for missing or empty input; nothing runs", async () => {
    const s = await createSession();
    const requestsBefore = f.mock.requests().length;
    for (const body of [
      {},
      { input: "" },
      { input: null },
      { input: [] },
      { input: [{ type: "input_text", text: "" }] },
      { type: "agent.session.input.message", content: [] },
      { stream: false },
    ]) {
      expect(await f.json("POST", `${SESSIONS}/${s.id}/events`, body), JSON.stringify(body)).toEqual({
        status: 400,
        body: { error: "Missing input text", type: "ValueError" },
      });
    }
    expect(f.mock.requests().length).toBe(requestsBefore);
    expect(await getSession(s.id)).toMatchObject({ status: "idle", output: [] });
  });

  it("accepts the three input forms", async () => {
    const s = await createSession();
    const forms: Array<(text: string) => Record<string, unknown>> = [
      (text) => ({ input: text }),
      (text) => ({ input: [{ type: "input_text", text }] }),
      (text) => ({ type: "agent.session.input.message", content: [{ type: "input_text", text }] }),
      (text) => ({ input: { type: "agent.session.input.message", content: [{ type: "input_text", text }] } }),
    ];
    for (const [i, form] of forms.entries()) {
      const reply = uniq(`form${i}`);
      const text = `Reply with exactly: ${reply}`;
      const out = await syncTurn(s.id, form(text));
      expect(f.mock.requests(forText(text)), `form ${i}`).toHaveLength(1);
      expect(out.output!.at(-1)!.item).toMatchObject({ type: "agent_message", text: reply });
    }
    // The list form on create, too.
    const created = await f.json<SessionObject>("POST", SESSIONS, {
      input: [{ type: "input_text", text: "Reply with exactly: list on create" }],
    });
    expect(texts(created.body.output)).toEqual(["list on create"]);
  });

  it("follow-up turns continue the same engine thread with the earlier conversation", async () => {
    const first = await f.json<SessionObject>("POST", SESSIONS, { input: "Reply with exactly: remember 41" });
    expect(texts(first.body.output)).toEqual(["remember 41"]);
    const second = "Reply with exactly: recalled";
    await syncTurn(first.body.id, { input: second });
    const [r1] = f.mock.requests(forText("Reply with exactly: remember 41"));
    const [r2] = f.mock.requests(forText(second));
    expect(r1!.threadId).toBeTruthy();
    expect(r2!.threadId).toBe(r1!.threadId);
    expect(r2!.messageInputTexts("user")).toEqual(
      expect.arrayContaining(["Reply with exactly: remember 41", second]),
    );
    expect(r2!.messageInputTexts("assistant")).toContain("remember 41");
    // A different session is a different thread.
    const other = await f.json<SessionObject>("POST", SESSIONS, { input: "Reply with exactly: elsewhere" });
    expect(other.status).toBe(200);
    const [r3] = f.mock.requests(forText("Reply with exactly: elsewhere"));
    expect(r3!.threadId).not.toBe(r1!.threadId);
    expect(r3!.messageInputTexts("assistant")).not.toContain("remember 41");
  });

  it("usage is summed per session across turns", async () => {
    const t1 = uniq("usage one");
    const t2 = uniq("usage two");
    f.mock.enqueue(
      scripts.assistantMessage("u1", {
        usage: { inputTokens: 7, cachedInputTokens: 2, outputTokens: 3, reasoningOutputTokens: 1 },
      }),
      forText(t1),
    );
    f.mock.enqueue(
      scripts.assistantMessage("u2", { usage: { inputTokens: 11, cachedInputTokens: 5, outputTokens: 4 } }),
      forText(t2),
    );
    const created = await f.json<SessionObject>("POST", SESSIONS, { input: t1 });
    expect(created.body.usage).toEqual({
      input_tokens: 7,
      output_tokens: 3,
      cached_input_tokens: 2,
      reasoning_output_tokens: 1,
      total_tokens: 10,
    });
    const frames = await readSse(
      await f.request("POST", `${SESSIONS}/${created.body.id}/events`, { input: t2 }),
    );
    // The turn's own usage on its completion frame.
    expect(frames.at(-1)!.data.usage).toEqual({
      input_tokens: 11,
      output_tokens: 4,
      cached_input_tokens: 5,
      reasoning_output_tokens: 0,
      total_tokens: 15,
    });
    expect((await getSession(created.body.id)).usage).toEqual({
      input_tokens: 18,
      output_tokens: 7,
      cached_input_tokens: 7,
      reasoning_output_tokens: 1,
      total_tokens: 25,
    });
  });

  it("GET events: idle answer; a failed turn sends turn.failed, leaves status failed; the next turn works", async () => {
    const s = await createSession();
    expect(await f.json("GET", `${SESSIONS}/${s.id}/events`)).toEqual({
      status: 200,
      body: { status: "idle", message: "No active turn" },
    });

    const text = uniq("fail this");
    const reason = uniq("model exploded");
    f.mock.enqueue(scripts.failure(reason), forText(text));
    const frames = await readSse(await f.request("POST", `${SESSIONS}/${s.id}/events`, { input: text }));
    const last = frames.at(-1)!;
    expect(last.event).toBe("agent.session.turn.failed");
    expect(last.data).toMatchObject({ session_id: s.id, turn_id: frames[0]!.data.turn_id, status: "failed" });
    expect((last.data.error as { message: string }).message).toContain(reason);
    expect(frames.some((e) => e.event === "agent.session.turn.completed")).toBe(false);
    expect((await getSession(s.id)).status).toBe("failed");
    expect(await f.json("GET", `${SESSIONS}/${s.id}/events`)).toEqual({
      status: 200,
      body: { status: "failed", message: "No active turn" },
    });

    // A blocking turn that fails upstream is still a 200 with the failed session.
    const http = uniq("http fail");
    f.mock.enqueue(scripts.httpError(500), forText(http));
    const failed = await syncTurn(s.id, { input: http });
    expect(failed.status).toBe("failed");

    const ok = await syncTurn(s.id, { input: "Reply with exactly: back on track" });
    expect(ok.status).toBe("idle");
    expect(texts(ok.output)).toEqual(["back on track"]);
    expect(await f.json("GET", `${SESSIONS}/${s.id}/events`)).toEqual({
      status: 200,
      body: { status: "idle", message: "No active turn" },
    });
  });

  it("items list everything in order; GET session shows the last 5 as output", async () => {
    const s = await createSession();
    await syncTurn(s.id, { input: "Reply with exactly: zero" });
    const text = uniq("six messages");
    const words = ["one", "two", "three", "four", "five", "six"];
    f.mock.enqueue(
      scripts.sse([
        ev.responseCreated("resp_six"),
        ...words.map((w) => ev.assistantMessage(`msg_six_${w}`, w)),
        ev.completed("resp_six"),
      ]),
      forText(text),
    );
    await syncTurn(s.id, { input: text });
    const items = await f.json<{ object: string; data: ItemEvent[] }>("GET", `${SESSIONS}/${s.id}/items`);
    expect(items.body.object).toBe("list");
    expect(texts(items.body.data)).toEqual(["zero", ...words]);
    for (const i of items.body.data)
      expect(i).toMatchObject({ type: "item.completed", turn_id: expect.any(String) });
    expect(new Set(items.body.data.map((i) => i.turn_id)).size).toBe(2);
    expect(texts((await getSession(s.id)).output)).toEqual(words.slice(1));

    // Turns that produce no output of their own do not push earlier items out of the last 5.
    for (let i = 0; i < 6; i++) {
      const t = uniq("silent failure");
      f.mock.enqueue(scripts.failure("no output"), forText(t));
      expect((await syncTurn(s.id, { input: t })).status).toBe("failed");
    }
    const after = await getSession(s.id);
    expect(texts(after.output)).toEqual(words.slice(1));
    expect(
      texts((await f.json<{ data: ItemEvent[] }>("GET", `${SESSIONS}/${s.id}/items`)).body.data),
    ).toEqual(["zero", ...words]);
  });

  it("runs a real shell command in the workspace", async () => {
    const s = await createSession();
    const res = await f.request("POST", `${SESSIONS}/${s.id}/events`, {
      input:
        "Run this exact shell command and wait for it to finish: echo hi > made.txt. Then reply with exactly: DONE",
    });
    const frames = await readSse(res);
    expect(frames.at(-1)!.event).toBe("agent.session.turn.completed");
    const file = join(f.workspace, "made.txt");
    expect(existsSync(file)).toBe(true);
    expect(readFileSync(file, "utf8")).toBe("hi\n");

    const added = frames.find(
      (e) => e.event === "agent.session.output_item.added" && itemOf(e).type === "command_execution",
    );
    const done = frames.find(
      (e) => e.event === "agent.session.output_item.done" && itemOf(e).type === "command_execution",
    );
    expect(itemOf(added!)).toMatchObject({ command: expect.stringContaining("echo hi > made.txt") });
    expect(itemOf(done!)).toMatchObject({
      type: "command_execution",
      command: expect.stringContaining("echo hi > made.txt"),
      exit_code: 0,
      status: "completed",
    });
    expect(frames.indexOf(added!)).toBeLessThan(frames.indexOf(done!));

    const items = await f.json<{ data: ItemEvent[] }>("GET", `${SESSIONS}/${s.id}/items`);
    expect(items.body.data.map((i) => i.item.type)).toEqual(["command_execution", "agent_message"]);
    expect(items.body.data[0]!.item).toEqual(itemOf(done!));
    expect(items.body.data[1]!.item.text).toBe("DONE");
    await waitFor(async () => (await getSession(s.id)).status === "idle", 5000, "idle session");
  });
});
