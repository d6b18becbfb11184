// SSE streams as views of the per-session event log (template dialect): fan-out to many subscribers,
// Last-Event-ID resumption, slow readers and disconnecting clients. Real engine, scripted mock model.
import { randomBytes } from "node:crypto";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { type CapturedRequest, ev, Gate, scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerFixture, startServer, waitFor } from "../support/fixture.js";
import { parseSse, type SseEvent, SseReader } from "../support/sse-client.js";

const SESSIONS = "/v1/agents/sessions";

/** A 200 `text/event-stream` response, read frame by frame. */
function streamOf(res: Response): SseReader {
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  return new SseReader(res);
}

const tag = () => randomBytes(4).toString("hex");
const forText = (text: string) => (r: CapturedRequest) => r.lastUserText() === text;
const isDelta = (e: SseEvent) => e.event === "agent.session.output_text.delta";
const isEnd = (e: SseEvent) => e.event === "agent.session.turn.completed";
const itemOf = (e: SseEvent) => e.data.item as { type: string; text?: string; command?: string };

/** Every frame has a numeric id, strictly increasing, no repeats. */
function expectIncreasingIds(frames: SseEvent[]): void {
  let prev = 0;
  for (const f of frames) {
    expect(f.id, `frame ${f.event} has an id`).toMatch(/^\d+$/);
    const n = Number(f.id);
    expect(n, `id ${n} after ${prev}`).toBeGreaterThan(prev);
    prev = n;
  }
}

/** The text of the agent message streamed by `frames` (its deltas joined). */
const deltaText = (frames: SseEvent[]) =>
  frames
    .filter(isDelta)
    .map((e) => e.data.delta as string)
    .join("");

let f: ServerFixture;

beforeAll(async () => {
  f = await startServer();
});

afterAll(async () => {
  await f?.close();
});

async function newSession(): Promise<string> {
  const r = await f.json<{ id: string; status: string }>("POST", SESSIONS, {});
  expect(r.status).toBe(200);
  expect(r.body.status).toBe("idle");
  return r.body.id;
}

const postTurn = (sid: string, input: string) => f.request("POST", `${SESSIONS}/${sid}/events`, { input });
const getEvents = (sid: string, headers: Record<string, string> = {}, query = "") =>
  f.request("GET", `${SESSIONS}/${sid}/events${query}`, undefined, headers);

async function sessionStatus(sid: string): Promise<string> {
  return (await f.json<{ status: string }>("GET", `${SESSIONS}/${sid}`)).body.status;
}

describe("fan-out", () => {
  it("many concurrent subscribers each receive every event of the turn, in the same order", async () => {
    const sid = await newSession();
    const text = `Stream to many ${tag()}`;
    const parts = Array.from({ length: 60 }, (_, i) => `p${i} `);
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(parts, { gate }), forText(text));

    const post = streamOf(await postTurn(sid, text));
    await gate.reached;
    // The turn is held mid-response: every GET takes the live branch.
    const subs = await Promise.all(Array.from({ length: 5 }, async () => streamOf(await getEvents(sid))));
    // Each one is live before the model continues: it has the turn start already.
    for (const r of [post, ...subs]) await r.until((e) => e.event === "agent.session.turn.started");
    expect(f.service.core.hub.subscriberCount(sid)).toBe(6);
    expect(await sessionStatus(sid)).toBe("in_progress");

    gate.release();
    await Promise.all([post, ...subs].map((r) => r.toEnd()));

    const reference = post.frames;
    expect(reference[0]!.event).toBe("agent.session.turn.started");
    expect(reference.at(-1)!.event).toBe("agent.session.turn.completed");
    expect(reference.filter(isDelta)).toHaveLength(parts.length);
    expect(deltaText(reference)).toBe(parts.join(""));
    const done = reference.filter((e) => e.event === "agent.session.output_item.done");
    expect(done.map(itemOf)).toEqual([
      expect.objectContaining({ type: "agent_message", text: parts.join("") }),
    ]);
    expectIncreasingIds(reference);
    for (const r of subs) {
      expect(r.ended).toBe(true);
      expect(r.frames).toEqual(reference);
    }
    await waitFor(() => f.service.core.hub.subscriberCount(sid) === 0, 5000, "subscriptions released");
  });
});

describe("Last-Event-ID", () => {
  it("a reconnecting client gets exactly the frames it missed, then the live tail; later, replay only", async () => {
    const sid = await newSession();
    const text = `Resume me ${tag()}`;
    const callId = `call_resume_${tag()}`;
    const first = Array.from({ length: 20 }, (_, i) => `a${i} `);
    const second = Array.from({ length: 20 }, (_, i) => `b${i} `);
    // Request 1: a streamed message and a shell command; request 2 (after the command ran) is held by the gate.
    f.mock.enqueue(
      scripts.sse([
        ev.responseCreated("resp_resume_1"),
        ev.messageItemAdded("msg_resume_1"),
        ...first.map((p) => ev.outputTextDelta("msg_resume_1", p)),
        ev.assistantMessage("msg_resume_1", first.join("")),
        ev.functionCall(callId, "exec_command", { cmd: "echo step-one", login: false, yield_time_ms: 30000 }),
        ev.completed("resp_resume_1"),
      ]),
      forText(text),
    );
    const gate = new Gate();
    f.mock.enqueue(
      scripts.streamingMessage(second, { gate }),
      (r) => forText(text)(r) && r.functionCallOutputs().some((o) => o.callId === callId),
    );

    const a = streamOf(await postTurn(sid, text));
    // A reference subscriber that stays connected for the whole turn.
    const full = streamOf(await getEvents(sid));
    await gate.reached;
    // Everything of request 1 is in the log once the command item is stored.
    await waitFor(
      async () =>
        (await f.service.core.store.listItems(sid, { limit: 100, states: ["completed"] })).data.some(
          (i) => i.type === "commandExecution",
        ),
      10_000,
      "command item stored",
    );

    // Client A reads part of the stream and goes away.
    const seen = await a.until((e) => isDelta(e) && e.data.delta === "a9 ", "10th delta");
    await a.cancel();
    const lastId = seen.at(-1)!.id!;

    // It reconnects while the turn is still held: the replay brings what it missed, up to the command.
    const b = streamOf(await getEvents(sid, { "last-event-id": lastId }));
    const replayed = await b.until(
      (e) => e.event === "agent.session.output_item.done" && itemOf(e).type === "command_execution",
      "command item",
    );
    expect(Number(replayed[0]!.id)).toBeGreaterThan(Number(lastId));
    expect(deltaText(replayed)).toBe(first.slice(10).join(""));
    expect(await sessionStatus(sid)).toBe("in_progress");

    // Then the live tail.
    gate.release();
    await b.toEnd();
    await full.toEnd();
    expect(full.frames.at(-1)!.event).toBe("agent.session.turn.completed");
    expectIncreasingIds(full.frames);
    expect(deltaText(full.frames)).toBe(first.join("") + second.join(""));
    expect([...seen, ...b.frames]).toEqual(full.frames);
    const ids = [...seen, ...b.frames].map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    // B received frames appended after it connected (the gated message).
    expect(deltaText(b.frames)).toContain(second.join(""));

    // After the turn ended: the same cursor replays the same frames and the stream ends.
    await waitFor(async () => (await sessionStatus(sid)) === "idle", 10_000, "turn end");
    const missed = full.frames.slice(seen.length);
    const c = streamOf(await getEvents(sid, { "last-event-id": lastId }));
    expect(await c.toEnd()).toEqual(missed);
    const d = streamOf(await getEvents(sid, {}, `?after=${lastId}`));
    expect(await d.toEnd()).toEqual(missed);
    // From just before the turn: the whole turn.
    const startId = Number(full.frames[0]!.id) - 1;
    const e = streamOf(await getEvents(sid, { "last-event-id": String(startId) }));
    expect(await e.toEnd()).toEqual(full.frames);
  });

  it("a client that already has the whole turn is told there is no active turn (no hanging stream)", async () => {
    const sid = await newSession();
    const res = await postTurn(sid, `Reply with exactly: all seen ${tag()}`);
    const frames = await streamOf(res).toEnd();
    expect(frames.at(-1)!.event).toBe("agent.session.turn.completed");
    const lastId = frames.at(-1)!.id!;
    const again = await getEvents(sid, { "last-event-id": lastId });
    expect(again.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await again.json()).toEqual({ status: "idle", message: "No active turn" });
  });

  it("rejects a malformed Last-Event-ID, and one ahead of the log (which would wait forever)", async () => {
    const sid = await newSession();
    const res = await getEvents(sid, { "last-event-id": "not-a-number" });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "Invalid Last-Event-ID: not-a-number", type: "ValueError" });

    const text = `Ahead ${tag()}`;
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["ahead"], { gate }), forText(text));
    const post = streamOf(await postTurn(sid, text));
    await gate.reached;
    const ahead = await getEvents(sid, { "last-event-id": "999999" });
    expect(ahead.status).toBe(400);
    expect(await ahead.json()).toEqual({
      error: "Last-Event-ID 999999 is ahead of this session's event log",
      type: "ValueError",
    });
    gate.release();
    expect((await post.toEnd()).at(-1)!.event).toBe("agent.session.turn.completed");
  });
});

/** A raw HTTP request whose response body is not read until asked (real TCP backpressure). */
function pausedRequest(path: string, body: unknown): Promise<IncomingMessage> {
  const url = new URL(f.url + path);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST" },
      (res) => {
        res.pause();
        resolve(res);
      },
    );
    req.on("error", reject);
    req.setHeader("content-type", "application/json");
    req.end(JSON.stringify(body));
  });
}

function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
    res.resume();
  });
}

describe("slow and departing clients", () => {
  it("a reader that reads nothing does not hold the turn back; it later reads everything in order", async () => {
    const sid = await newSession();
    const text = `Flood me ${tag()}`;
    // ~6 MB of deltas plus the same again in the completed item: far beyond the socket buffers.
    const parts = Array.from({ length: 4000 }, (_, i) => `${String(i).padStart(5, "0")}${"x".repeat(1495)} `);
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(parts, { gate }), forText(text));

    const slow = await pausedRequest(`${SESSIONS}/${sid}/events`, { input: text });
    expect(slow.statusCode).toBe(200);
    expect(slow.headers["content-type"]).toMatch(/^text\/event-stream/);
    await gate.reached;
    gate.release();

    // The turn completes although the slow client has not read a byte.
    await waitFor(async () => (await sessionStatus(sid)) === "idle", 30_000, "turn completed");
    expect(slow.readableFlowing).toBe(false);
    // What had reached the client process by then (the server was held back by TCP, not done writing).
    const receivedAtCompletion = slow.socket.bytesRead;
    const items = await f.json<{ data: Array<{ item: { type: string; text: string } }> }>(
      "GET",
      `${SESSIONS}/${sid}/items`,
    );
    expect(items.body.data.map((i) => i.item)).toEqual([
      expect.objectContaining({ type: "agent_message", text: parts.join("") }),
    ]);

    // While it does not read, the server holds no events for it: only its position and the one chunk its socket
    // has not taken (at most the 64 KiB coalescing size plus one frame), whatever the turn wrote after it.
    const [held] = f.service.core.streams.list().filter((x) => x.sessionId === sid);
    expect(held).toMatchObject({ mode: "lagging", bufferedEvents: 0 });
    expect(held!.pendingBytes).toBeLessThanOrEqual(65_536 + 4096);
    expect(held!.lastSeq).toBeLessThan(await f.service.core.store.lastEventSeq(sid)); // far behind, not done

    const body = await readAll(slow);
    expect(receivedAtCompletion).toBeLessThan(Buffer.byteLength(body) / 2);
    const frames = parseSse(body).frames;
    expect(frames[0]!.event).toBe("agent.session.turn.started");
    expect(frames.at(-1)!.event).toBe("agent.session.turn.completed");
    expectIncreasingIds(frames);
    const deltas = frames.filter(isDelta).map((e) => e.data.delta as string);
    expect(deltas).toHaveLength(parts.length);
    expect(deltas).toEqual(parts);
    const done = frames.filter((e) => e.event === "agent.session.output_item.done").map(itemOf);
    expect(done).toEqual([expect.objectContaining({ type: "agent_message", text: parts.join("") })]);
  }, 60_000);

  it("a client that disconnects mid-stream: the turn completes and everything is in the log and items", async () => {
    const sid = await newSession();
    const text = `Leave early ${tag()}`;
    const parts = Array.from({ length: 30 }, (_, i) => `d${i} `);
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(parts, { gate }), forText(text));

    const r = streamOf(await postTurn(sid, text));
    await gate.reached;
    const [started] = await r.until((e) => e.event === "agent.session.turn.started");
    const turnId = started!.data.turn_id as string;
    await r.cancel();
    // The server notices and drops the subscription, but the turn goes on.
    await waitFor(() => f.service.core.hub.subscriberCount(sid) === 0, 5000, "subscription closed");
    expect(await sessionStatus(sid)).toBe("in_progress");

    gate.release();
    await waitFor(async () => (await sessionStatus(sid)) === "idle", 10_000, "turn completed");
    const items = await f.json<{ data: Array<{ turn_id: string; item: { type: string; text: string } }> }>(
      "GET",
      `${SESSIONS}/${sid}/items`,
    );
    expect(items.body.data).toEqual([
      expect.objectContaining({ turn_id: turnId, item: expect.objectContaining({ text: parts.join("") }) }),
    ]);
    const types = (await f.service.core.store.readEvents(sid, 0, 10_000)).map((e) => e.type);
    expect(types.filter((t) => t === "item.delta")).toHaveLength(parts.length);
    expect(types).toContain("turn.completed");

    // What the client missed is still there for it.
    const rest = await streamOf(await getEvents(sid, { "last-event-id": started!.id! })).toEnd();
    expect(deltaText(rest)).toBe(parts.join(""));
    expect(rest.at(-1)).toMatchObject({
      event: "agent.session.turn.completed",
      data: { turn_id: turnId, status: "completed" },
    });
  });
});

describe("end of stream", () => {
  it("every stream ends after its turn's terminal frame, also for a failed turn", async () => {
    const sid = await newSession();
    const text = `Fail in stream ${tag()}`;
    f.mock.enqueue(scripts.failure(`stream failure ${tag()}`), forText(text));
    const post = streamOf(await postTurn(sid, text));
    const frames = await post.toEnd();
    expect(frames.at(-1)!.event).toBe("agent.session.turn.failed");
    expect(frames.some(isEnd)).toBe(false);
    expect(await sessionStatus(sid)).toBe("failed");
  });
});
