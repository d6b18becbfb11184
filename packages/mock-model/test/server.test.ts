import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type CapturedRequest, MockResponsesServer, scripts } from "../src/index.js";
import { postResponses, replyText } from "./helpers.js";

const body = (threadId: string, text = "hi") => ({
  model: "mock-model",
  prompt_cache_key: threadId,
  input: [{ type: "message", role: "user", content: [{ type: "input_text", text }] }],
});

describe("MockResponsesServer", () => {
  let mock: MockResponsesServer;
  beforeEach(async () => {
    mock = await MockResponsesServer.start();
  });
  afterEach(async () => {
    await mock.close();
  });

  it("exposes a /v1 base URL on 127.0.0.1", () => {
    expect(mock.url).toBe(`http://127.0.0.1:${mock.port}/v1`);
    expect(mock.port).toBeGreaterThan(0);
  });

  it("routes: thread queue, then first matching predicate, then global FIFO, then fallback", async () => {
    const isUrgent = (req: CapturedRequest) => req.lastUserText()?.includes("urgent") === true;
    mock.enqueue([scripts.assistantMessage("global-1"), scripts.assistantMessage("global-2")]);
    mock.enqueue(scripts.assistantMessage("urgent-1"), isUrgent);
    mock.enqueue(scripts.assistantMessage("never"), () => false);
    mock.enqueueAssistantMessage("thread-a-1", { route: "A" });
    mock.enqueue([scripts.assistantMessage("thread-a-2")], "A");
    expect(mock.pending()).toBe(6);
    expect(mock.pending("A")).toBe(2);
    expect(mock.pending(isUrgent)).toBe(1);

    const reply = async (threadId: string, text?: string) =>
      replyText((await postResponses(mock, body(threadId, text))).text);
    expect(await reply("A", "urgent")).toBe("thread-a-1");
    expect(await reply("B", "urgent")).toBe("urgent-1");
    expect(await reply("B", "urgent")).toBe("global-1");
    expect(await reply("A")).toBe("thread-a-2");
    expect(await reply("A")).toBe("global-2");
    expect(mock.pending()).toBe(1);
    expect((await postResponses(mock, body("A"))).status).toBe(500);

    mock.setFallback((req) => scripts.assistantMessage(`fallback for ${req.threadId}`));
    expect(await reply("C")).toBe("fallback for C");
    mock.setFallback(null);
    expect((await postResponses(mock, body("C"))).status).toBe(500);

    expect(mock.requests().map((r) => r.threadId)).toEqual(["A", "B", "B", "A", "A", "A", "C", "C"]);
    expect(mock.requests("A")).toHaveLength(4);
    expect(mock.requests(isUrgent)).toHaveLength(3);
  });

  it("captures method, path, lower-cased headers and the parsed body", async () => {
    mock.enqueueAssistantMessage("ok");
    await fetch(`${mock.url}/responses`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Custom": "Yes" },
      body: JSON.stringify(body("T")),
    });
    const [req] = mock.requests();
    expect(req).toMatchObject({ method: "POST", path: "/v1/responses", threadId: "T", model: "mock-model" });
    expect(req!.headers["x-custom"]).toBe("Yes");
    expect(req!.header("X-CUSTOM")).toBe("Yes");
    expect(req!.body).toEqual(body("T"));
  });

  it("waitForRequests wakes up when requests arrive", async () => {
    mock.setFallback(() => scripts.assistantMessage("ok"));
    const waitingAll = mock.waitForRequests(2);
    const waitingB = mock.waitForRequests(1, { route: "B" });
    await postResponses(mock, body("A"));
    await postResponses(mock, body("B"));
    expect((await waitingAll).map((r) => r.threadId)).toEqual(["A", "B"]);
    expect((await waitingB).map((r) => r.threadId)).toEqual(["B"]);
    // already satisfied: resolves at once
    expect(await mock.waitForRequests(1, { route: "A" })).toHaveLength(1);
  });

  it("waitForRequests rejects on timeout saying how many arrived", async () => {
    mock.setFallback(() => scripts.assistantMessage("ok"));
    await postResponses(mock, body("A"));
    await expect(mock.waitForRequests(3, { timeoutMs: 30 })).rejects.toThrow(
      "waitForRequests: timed out after 30ms waiting for 3 request(s); 1 arrived (1 in total)",
    );
    await expect(mock.waitForRequests(1, { timeoutMs: 30, route: "B" })).rejects.toThrow(
      "waitForRequests: timed out after 30ms waiting for 1 request(s) for thread B; 0 arrived (1 in total)",
    );
  });

  it("a throwing fallback answers 500 with its message", async () => {
    mock.setFallback(() => {
      throw new Error("bad script");
    });
    const res = await postResponses(mock, body("A"));
    expect(res.status).toBe(500);
    expect(JSON.parse(res.text)).toMatchObject({ error: { message: "mock internal error: bad script" } });
  });

  it("reset() clears queues and captured requests", async () => {
    mock.enqueueAssistantMessage("a").enqueueAssistantMessage("b", { route: "T" });
    await postResponses(mock, body("X"));
    mock.reset();
    expect(mock.pending()).toBe(0);
    expect(mock.requests()).toEqual([]);
  });

  it("onRequest notifies listeners before the response is chosen", async () => {
    const seen: string[] = [];
    const off = mock.onRequest((req) => {
      seen.push(req.threadId ?? "?");
      mock.enqueueAssistantMessage(`late for ${req.threadId}`, { route: req.threadId });
    });
    expect(replyText((await postResponses(mock, body("Z"))).text)).toBe("late for Z");
    off();
    expect(seen).toEqual(["Z"]);
  });
});

describe("MockResponsesServer capture option (bounded memory)", () => {
  const many = async (mock: MockResponsesServer, n: number, size = 0) => {
    for (let i = 0; i < n; i += 8) {
      await Promise.all(
        Array.from({ length: Math.min(8, n - i) }, (_, j) =>
          postResponses(mock, { ...body(`thread-${i + j}`, `req ${i + j}`), padding: "x".repeat(size) }),
        ),
      );
    }
  };

  it("capture: 0 keeps no request however many arrive; listeners still see each one", async () => {
    const mock = await MockResponsesServer.start({
      capture: 0,
      fallback: () => scripts.assistantMessage("ok"),
    });
    try {
      let seen = 0;
      mock.onRequest(() => {
        seen += 1;
      });
      await many(mock, 400, 10_000);
      expect(mock.requests()).toEqual([]);
      expect(mock.received).toBe(400);
      expect(seen).toBe(400);
      expect(mock.pending()).toBe(0);
    } finally {
      await mock.close();
    }
  });

  it("capture: n keeps only the n most recent requests, in arrival order", async () => {
    const mock = await MockResponsesServer.start({
      capture: 3,
      fallback: () => scripts.assistantMessage("ok"),
    });
    try {
      for (let round = 1; round <= 4; round++) {
        await many(mock, 50);
        expect(mock.requests()).toHaveLength(3);
      }
      expect(mock.received).toBe(200);
      for (const text of ["one", "two", "three", "four"]) await postResponses(mock, body("T", text));
      expect(mock.requests().map((r) => r.lastUserText())).toEqual(["two", "three", "four"]);
      expect(await mock.waitForRequests(2)).toHaveLength(3);
      // per-thread queues are dropped once drained
      for (let i = 0; i < 100; i++) mock.enqueueAssistantMessage(`for ${i}`, { route: `thread-${i}` });
      expect(mock.pending()).toBe(100);
      await many(mock, 100);
      expect(mock.pending()).toBe(0);
      expect(mock.requests()).toHaveLength(3);
    } finally {
      await mock.close();
    }
  });

  it("capture: true (the default) keeps everything; invalid values are refused", async () => {
    const mock = await MockResponsesServer.start({
      capture: true,
      fallback: () => scripts.assistantMessage("ok"),
    });
    try {
      await many(mock, 20);
      expect(mock.requests()).toHaveLength(20);
      mock.reset();
      expect(mock.received).toBe(0);
    } finally {
      await mock.close();
    }
    await expect(MockResponsesServer.start({ capture: -1 })).rejects.toThrow(RangeError);
    await expect(MockResponsesServer.start({ capture: 1.5 })).rejects.toThrow(RangeError);
  });
});
