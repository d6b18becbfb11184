import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ev, formatSse, Gate, MockResponsesServer, scripts } from "../src/index.js";
import { parseSse, postResponses } from "./helpers.js";

describe("event builders", () => {
  it("build the Responses API shapes the engine consumes", () => {
    expect(ev.responseCreated("r1")).toEqual({ type: "response.created", response: { id: "r1" } });
    expect(ev.messageItemAdded("m1")).toEqual({
      type: "response.output_item.added",
      item: { type: "message", role: "assistant", id: "m1", content: [{ type: "output_text", text: "" }] },
    });
    expect(ev.outputTextDelta("m1", "he")).toEqual({
      type: "response.output_text.delta",
      item_id: "m1",
      delta: "he",
    });
    expect(ev.assistantMessage("m1", "hello")).toEqual({
      type: "response.output_item.done",
      item: {
        type: "message",
        role: "assistant",
        id: "m1",
        content: [{ type: "output_text", text: "hello" }],
      },
    });
    expect(ev.functionCall("c1", "update_goal", { status: "complete" })).toEqual({
      type: "response.output_item.done",
      item: { type: "function_call", call_id: "c1", name: "update_goal", arguments: '{"status":"complete"}' },
    });
    expect(ev.functionCall("c1", "f", "{}").item).toMatchObject({ arguments: "{}" });
    expect(ev.failed("r1", "boom")).toEqual({
      type: "response.failed",
      response: { id: "r1", error: { code: "server_error", message: "boom" } },
    });
    expect(ev.failed("r1", "quota", "insufficient_quota").response).toMatchObject({
      error: { code: "insufficient_quota" },
    });
  });

  it("default and explicit usage", () => {
    expect(ev.completed("r1")).toEqual({
      type: "response.completed",
      response: {
        id: "r1",
        usage: {
          input_tokens: 1,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 1,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 2,
        },
      },
    });
    const usage = { inputTokens: 3, cachedInputTokens: 1, outputTokens: 2, reasoningOutputTokens: 1 };
    expect(ev.completed("r2", usage).response).toEqual({
      id: "r2",
      usage: {
        input_tokens: 3,
        input_tokens_details: { cached_tokens: 1 },
        output_tokens: 2,
        output_tokens_details: { reasoning_tokens: 1 },
        total_tokens: 5,
      },
    });
  });

  it("streamingMessage = created, added, deltas, done (joined), completed", () => {
    const script = scripts.streamingMessage(["a ", "b"], { responseId: "r", itemId: "m", delayMs: 5 });
    expect(script).toMatchObject({ kind: "sse", delayMs: 5 });
    if (script.kind !== "sse") throw new Error("unreachable");
    expect(script.events.map((e) => e.type)).toEqual([
      "response.created",
      "response.output_item.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(script.events[4]).toEqual(ev.assistantMessage("m", "a b"));
  });

  it("updateGoal calls update_goal with only a status", () => {
    const script = scripts.updateGoal("blocked", { callId: "c", responseId: "r" });
    if (script.kind !== "sse") throw new Error("unreachable");
    expect(script.events[1]).toEqual(ev.functionCall("c", "update_goal", '{"status":"blocked"}'));
  });
});

describe("SSE over HTTP", () => {
  let mock: MockResponsesServer;
  beforeEach(async () => {
    mock = await MockResponsesServer.start();
  });
  afterEach(async () => {
    await mock.close();
  });

  it("frames each event as `event: <type>\\ndata: <json>\\n\\n`", async () => {
    const script = scripts.streamingMessage(["Hello ", "world"], { responseId: "r1", itemId: "m1" });
    mock.enqueue(script);
    const res = await postResponses(mock, { model: "m", input: [] });
    expect(res.status).toBe(200);
    expect(res.contentType).toBe("text/event-stream");
    if (script.kind !== "sse") throw new Error("unreachable");
    expect(res.text).toBe(formatSse(script.events));
    expect(res.text.startsWith('event: response.created\ndata: {"type":"response.created"')).toBe(true);
    const events = parseSse(res.text);
    expect(events.map((e) => e.event)).toEqual(script.events.map((e) => e.type));
    expect(events.map((e) => e.data)).toEqual(script.events);
  });

  it("applies delayMs between events", async () => {
    mock.enqueue(
      scripts.sse([ev.responseCreated("r"), ev.completed("r"), ev.completed("r")], { delayMs: 40 }),
    );
    const started = performance.now();
    const res = await postResponses(mock, {});
    expect(parseSse(res.text)).toHaveLength(3);
    expect(performance.now() - started).toBeGreaterThanOrEqual(75);
  });

  it("serves GET /v1/models, 404s unknown paths, answers http_error scripts and 500 when nothing is queued", async () => {
    const models = await fetch(`${mock.url}/models`);
    expect(models.status).toBe(200);
    expect(await models.json()).toMatchObject({
      object: "list",
      data: [{ id: "mock-model", object: "model" }],
    });

    const missing = await fetch(`http://127.0.0.1:${mock.port}/nope`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toBe("application/json");
    expect(await missing.json()).toMatchObject({ error: { message: "unexpected GET /nope" } });

    mock.enqueue(scripts.httpError(429, '{"error":{"message":"slow down"}}'));
    const limited = await postResponses(mock, {});
    expect(limited).toMatchObject({ status: 429, text: '{"error":{"message":"slow down"}}' });

    const empty = await postResponses(mock, {});
    expect(empty.status).toBe(500);
    expect(JSON.parse(empty.text)).toMatchObject({ error: { message: "no queued response" } });
    expect(mock.requests()).toHaveLength(2);
  });

  it("a gate holds the stream after its first event until released", async () => {
    const gate = new Gate();
    mock.enqueue(scripts.streamingMessage(["x", "y"], { responseId: "r", gate }));
    const res = await fetch(`${mock.url}/responses`, { method: "POST", body: "{}" });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = "";
    while (!received.endsWith("\n\n")) {
      const { done, value } = await reader.read();
      if (done) throw new Error("stream ended early");
      received += value;
    }
    await gate.reached;
    expect(parseSse(received).map((e) => e.event)).toEqual(["response.created"]);
    let more = false;
    const rest = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        more = true;
        received += value;
      }
    })();
    // Full round trips on other connections: anything the held stream had written would have arrived.
    await fetch(`${mock.url}/models`).then((r) => r.text());
    await fetch(`${mock.url}/models`).then((r) => r.text());
    expect(more).toBe(false);
    gate.release();
    await rest;
    expect(parseSse(received)).toHaveLength(6);
  });

  it("survives a client that disconnects mid-stream", async () => {
    const gate = new Gate();
    mock.enqueue(scripts.streamingMessage(["x", "y"], { gate }));
    const controller = new AbortController();
    const res = await fetch(`${mock.url}/responses`, {
      method: "POST",
      body: "{}",
      signal: controller.signal,
    });
    await gate.reached;
    const body = res.body!.getReader();
    await body.read();
    controller.abort();
    await body.read().catch(() => undefined);
    gate.release();
    mock.enqueueAssistantMessage("still alive");
    const next = await postResponses(mock, {});
    expect(next.status).toBe(200);
    expect(next.text).toContain("still alive");
  });

  it("close() ends in-flight streams and rejects pending waiters", async () => {
    const gate = new Gate();
    mock.enqueue(scripts.streamingMessage(["x"], { gate }));
    const res = await fetch(`${mock.url}/responses`, { method: "POST", body: "{}" });
    const text = res.text().then(
      (t) => ({ ok: true, t }),
      () => ({ ok: false, t: "" }),
    );
    await gate.reached;
    const waiting = mock.waitForRequests(5);
    await mock.close();
    await expect(waiting).rejects.toThrow(/closed/);
    const outcome = await text;
    if (outcome.ok) expect(outcome.t).not.toContain("response.completed");
  });
});
