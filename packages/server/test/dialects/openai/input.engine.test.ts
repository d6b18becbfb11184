// Official dialect through the real `openai` SDK: input events (start, steer, cancel, Idempotency-Key) and the
// session event stream (vocabulary, SSE framing, Last-Event-ID resume).
import { type CapturedRequest, Gate, scripts } from "@codex-agent-api/testkit";
import type OpenAI from "openai";
import { BadRequestError, ConflictError } from "openai";
import type { AgentSessionItem } from "openai/resources/beta/agents/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse, type ServerFixture, type SseEvent, startServer, waitFor } from "../../support/fixture.js";
import {
  countingSdk,
  EventLog,
  expectApiError,
  message,
  messageEvent,
  rejection,
  sdk,
} from "../../support/openai-helpers.js";

let f: ServerFixture;
let client: OpenAI;

beforeAll(async () => {
  f = await startServer();
  client = sdk(f);
});
afterAll(async () => {
  await f.close();
});

const BETA = { "OpenAI-Beta": "agents=v1" };

const lastUserIs = (text: string) => (r: CapturedRequest) => r.lastUserText() === text;
const requestsWithUserText = (text: string) =>
  f.mock.requests().filter((r) => r.messageInputTexts("user").includes(text));

async function newSession(): Promise<string> {
  const s = await client.beta.agents.sessions.create({ environment: { type: "none" } });
  expect(s.status).toBe("idle");
  return s.id;
}

async function allItems(sessionId: string): Promise<AgentSessionItem[]> {
  const out: AgentSessionItem[] = [];
  for await (const item of client.beta.agents.sessions.items.list(sessionId, { order: "asc" }))
    out.push(item);
  return out;
}

function texts(items: AgentSessionItem[], role: "user" | "assistant"): string[] {
  return items.flatMap((i) =>
    i.type === "message" && i.role === role
      ? [i.content.map((c) => ("text" in c ? c.text : "")).join("")]
      : [],
  );
}

/** Opens the raw SSE stream (as a browser / curl would, with the official dialect header). */
function rawStream(sessionId: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${f.url}/v1/agents/sessions/${sessionId}/events`, {
    headers: { ...BETA, Accept: "text/event-stream", ...headers },
  });
}

/** A stop predicate: the first `agent.session.idle` after a `turn.completed`. */
function untilIdleAfterCompletion(): (e: SseEvent) => boolean {
  let completed = false;
  return (e) => {
    if (e.data.type === "agent.session.turn.completed") completed = true;
    return completed && e.data.type === "agent.session.idle";
  };
}

describe("input events", () => {
  it("a message to an idle session starts a turn (202)", async () => {
    const sid = await newSession();
    const log = await EventLog.open(client, sid);
    const res = await client.beta.agents.sessions.events
      .create(sid, { events: [messageEvent("Reply with exactly: started by a message")] })
      .asResponse();
    expect(res.status).toBe(202);
    const turnId = await log.turnCreated();
    const { end, status } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.completed");
    expect(status.type).toBe("agent.session.idle");
    const turns = await client.beta.agents.sessions.turns.list(sid);
    expect(turns.data.map((t) => [t.id, t.status])).toEqual([[turnId, "completed"]]);
    const items = await allItems(sid);
    expect(texts(items, "user")).toEqual(["Reply with exactly: started by a message"]);
    expect(texts(items, "assistant")).toEqual(["started by a message"]);
    await log.close();
  });

  it("a message during an active turn steers it: same turn, the model's next request ends with it", async () => {
    const sid = await newSession();
    const log = await EventLog.open(client, sid);
    const first = `Hold this turn open (${sid})`;
    const steer = "Reply with exactly: steered into place";
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["working ", "on it"], { gate }), lastUserIs(first));
    await client.beta.agents.sessions.events.create(sid, { events: [messageEvent(first)] });
    const turnId = await log.turnCreated();
    await gate.reached;
    expect((await client.beta.agents.sessions.retrieve(sid)).status).toBe("in_progress");

    const res = await client.beta.agents.sessions.events
      .create(sid, { events: [messageEvent(steer)] })
      .asResponse();
    expect(res.status).toBe(202);
    gate.release();

    const { end, status } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.completed");
    expect(status.type).toBe("agent.session.idle");
    // One turn only: the steer did not start another.
    const turns = await client.beta.agents.sessions.turns.list(sid);
    expect(turns.data.map((t) => t.id)).toEqual([turnId]);
    expect(log.events.filter((e) => e.type === "agent.session.turn.created")).toHaveLength(1);
    // The model saw the first message alone, then a follow-up request whose last user input is the steer.
    const reqs = requestsWithUserText(first);
    expect(reqs).toHaveLength(2);
    expect(reqs[0]!.messageInputTexts("user")).not.toContain(steer);
    expect(reqs[1]!.lastUserText()).toBe(steer);
    // The steer is recorded as a user message of the same turn, and answered in it.
    const items = await allItems(sid);
    expect(texts(items, "user")).toEqual([first, steer]);
    expect(texts(items, "assistant")).toEqual(["working on it", "steered into place"]);
    expect(new Set(items.map((i) => i.turn_id))).toEqual(new Set([turnId]));
    const steerAdded = log.events.find(
      (e) =>
        e.type === "agent.session.turn.item.added" &&
        e.item.type === "message" &&
        e.item.role === "user" &&
        texts([e.item], "user")[0] === steer,
    );
    expect(steerAdded).toMatchObject({ turn_id: turnId, output_index: null });
    await log.close();
  });

  it("a message racing the end of a turn (the engine refuses the steer) starts the next turn, no 5xx", async () => {
    const sid = await newSession();
    const log = await EventLog.open(client, sid);
    const first = `Finishing right now (${sid})`;
    const late = "Reply with exactly: the next turn";
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["almost ", "done"], { gate }), lastUserIs(first));
    await client.beta.agents.sessions.events.create(sid, { events: [messageEvent(first)] });
    const firstTurn = await log.turnCreated(0);
    await gate.reached;
    // Fault injection: the engine turn ended between the server's check and its steer (the runner then
    // answers "nothing to steer", as it does when the engine refuses with "no active turn to steer").
    const runner = f.service.core.runner;
    const steer = runner.steer;
    let refused = 0;
    runner.steer = async () => {
      refused++;
      return null;
    };
    try {
      const posting = client.beta.agents.sessions.events
        .create(sid, { events: [messageEvent(late)] })
        .asResponse();
      await waitFor(() => refused === 1, 10_000, "the refused steer");
      gate.release();
      expect((await posting).status).toBe(202);
    } finally {
      runner.steer = steer;
    }
    expect((await log.waitForSettled(firstTurn)).end.type).toBe("agent.session.turn.completed");
    const nextTurn = await log.turnCreated(1);
    expect(nextTurn).not.toBe(firstTurn);
    expect((await log.waitForSettled(nextTurn)).end.type).toBe("agent.session.turn.completed");
    const items = await client.beta.agents.sessions.turns.items.list(nextTurn, {
      session_id: sid,
      order: "asc",
    });
    expect(items.data.map((i) => texts([i], i.type === "message" ? i.role : "user")[0])).toEqual([
      late,
      "the next turn",
    ]);
    await log.close();
  });

  it("agent.session.input.cancel interrupts the active turn; the session stays usable", async () => {
    const sid = await newSession();
    const log = await EventLog.open(client, sid);
    const text = `Never finish this (${sid})`;
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["never ", "finished"], { gate }), lastUserIs(text));
    await client.beta.agents.sessions.events.create(sid, { events: [messageEvent(text)] });
    const turnId = await log.turnCreated();
    await gate.reached;

    const res = await client.beta.agents.sessions.events
      .create(sid, { events: [{ type: "agent.session.input.cancel" }] })
      .asResponse();
    expect(res.status).toBe(202);
    const { end, status } = await log.waitForSettled(turnId);
    gate.release();
    expect(end.type).toBe("agent.session.turn.cancelled");
    expect(end).toMatchObject({ turn_id: turnId, turn: { id: turnId, status: "cancelled", error: null } });
    expect(status.type).toBe("agent.session.idle");
    const turn = await client.beta.agents.sessions.turns.retrieve(turnId, { session_id: sid });
    expect(turn.status).toBe("cancelled");
    expect(turn.completed_at).toEqual(expect.any(Number));
    expect(turn.error).toBeNull();
    const session = await client.beta.agents.sessions.retrieve(sid);
    expect(session.status).toBe("idle");
    expect(session.error).toBeNull();

    // Cancelling an idle session is a harmless no-op.
    await client.beta.agents.sessions.events.create(sid, {
      events: [{ type: "agent.session.input.cancel" }],
    });
    // Usable afterwards, through the high-level helper.
    const result = await client.beta.agents.sessions
      .stream(sid, { input: "Reply with exactly: back in business" })
      .finalResult();
    expect(result.output_text).toBe("back in business");
    expect(result.turn.status).toBe("completed");
    await log.close();
  });

  it("cancelling a turn followed by sessions.stream() rejects finalResult() with reason 'cancelled'", async () => {
    const sid = await newSession();
    const text = `Cancel me from the helper (${sid})`;
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["half ", "done"], { gate }), lastUserIs(text));
    const pending = rejection(client.beta.agents.sessions.stream(sid, { input: text }).finalResult());
    await gate.reached;
    await client.beta.agents.sessions.events.create(sid, {
      events: [{ type: "agent.session.input.cancel" }],
    });
    const err = (await pending) as { name: string; reason: string; turn?: { status: string } };
    gate.release();
    expect(err.name).toBe("AgentTurnResultError");
    expect(err.reason).toBe("cancelled");
    expect(err.turn?.status).toBe("cancelled");
  });

  it("Idempotency-Key: the same key and body is applied once and answered the same", async () => {
    const sid = await newSession();
    const log = await EventLog.open(client, sid);
    const once = `Reply with exactly: applied once ${sid.slice(-6)}`;
    const body = { events: [messageEvent(once)], "Idempotency-Key": "k1" };
    const a = await client.beta.agents.sessions.events.create(sid, body).asResponse();
    const b = await client.beta.agents.sessions.events.create(sid, body).asResponse();
    expect(a.status).toBe(202);
    expect(b.status).toBe(a.status);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    await log.waitForSettled(await log.turnCreated(0));

    // Concurrent duplicates (a client retrying while the first is still in flight).
    const twice = `Reply with exactly: concurrent once ${sid.slice(-6)}`;
    const body2 = { events: [messageEvent(twice)], "Idempotency-Key": "k2" };
    const [c, d] = await Promise.all([
      client.beta.agents.sessions.events.create(sid, body2).asResponse(),
      client.beta.agents.sessions.events.create(sid, body2).asResponse(),
    ]);
    expect([c.status, d.status]).toEqual([202, 202]);
    await log.waitForSettled(await log.turnCreated(1));

    const turns = await client.beta.agents.sessions.turns.list(sid);
    expect(turns.data).toHaveLength(2);
    // Applied once each: one user message (a second application would have steered or started a turn).
    const items = await allItems(sid);
    expect(texts(items, "user")).toEqual([once, twice]);
    const asked = (text: string) => f.mock.requests().filter((r) => r.lastUserText() === text);
    expect(asked(once)).toHaveLength(1);
    expect(asked(twice)).toHaveLength(1);
    expect(log.events.filter((e) => e.type === "agent.session.turn.created")).toHaveLength(2);
    await log.close();
  });

  it("Idempotency-Key reused with a different body: 409 ConflictError, thrown and not retried", async () => {
    const sid = await newSession();
    const log = await EventLog.open(client, sid);
    const { client: retrying, requests } = countingSdk(f);
    const first = "Reply with exactly: the original";
    await retrying.beta.agents.sessions.events.create(sid, {
      events: [messageEvent(first)],
      "Idempotency-Key": "k-reused",
    });
    await log.waitForSettled(await log.turnCreated());
    const before = requests();
    const err = await rejection(
      retrying.beta.agents.sessions.events.create(sid, {
        events: [messageEvent("Reply with exactly: something else")],
        "Idempotency-Key": "k-reused",
      }),
    );
    const e = expectApiError(err, ConflictError, 409);
    expect(e.code).toBe("idempotency_key_reused");
    expect(e.message).toMatch(/Idempotency-Key/);
    expect(e.headers?.get("x-should-retry")).toBe("false");
    expect(requests() - before).toBe(1);
    // The second body was not applied.
    expect(texts(await allItems(sid), "user")).toEqual([first]);
    expect((await client.beta.agents.sessions.turns.list(sid)).data).toHaveLength(1);
    await log.close();
  });

  it("Idempotency-Key: a rejected request is not remembered (a retry is validated again, not 'replayed')", async () => {
    const sid = await newSession();
    const bad = {
      events: [{ type: "agent.session.input.message" as const, input: [message("   ")] }],
      "Idempotency-Key": "k-bad",
    };
    const first = await rejection(client.beta.agents.sessions.events.create(sid, bad));
    expectApiError(first, BadRequestError, 400);
    const again = await rejection(client.beta.agents.sessions.events.create(sid, bad));
    expectApiError(again, BadRequestError, 400);
    expect((await client.beta.agents.sessions.turns.list(sid)).data).toHaveLength(0);
  });
});

describe("session event stream", () => {
  it("events.stream speaks the official vocabulary with SSE ids and unique event_ids", async () => {
    const sid = await newSession();
    const text = `Stream three parts (${sid})`;
    f.mock.enqueue(scripts.streamingMessage(["alpha ", "beta ", "gamma"]), lastUserIs(text));
    const res = await rawStream(sid);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reading = readSse(res, untilIdleAfterCompletion());
    await client.beta.agents.sessions.events.create(sid, { events: [messageEvent(text)] });
    const events = await reading;

    // SSE framing: every record has an id and an event name equal to the JSON type.
    for (const e of events) {
      expect(e.id).toMatch(/^\d+(:\d+)?$/);
      expect(e.event).toBe(e.data.type);
      expect(e.data.event_id).toEqual(expect.any(String));
    }
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(new Set(events.map((e) => e.data.event_id)).size).toBe(events.length);
    const seqs = events.map((e) => e.id!.split(":").map(Number) as [number, number?]);
    for (let i = 1; i < seqs.length; i++) {
      const [a, x = 0] = seqs[i - 1]!;
      const [b, y = 0] = seqs[i]!;
      expect(b > a || (b === a && y > x), `ids increase: ${events[i - 1]!.id} then ${events[i]!.id}`).toBe(
        true,
      );
    }

    // The current state first, then the turn in order.
    const types = events.map((e) => e.data.type as string);
    expect(types[0]).toBe("agent.session.idle");
    const at = (t: string) => types.indexOf(t);
    const turnCreated = events[at("agent.session.turn.created")]!.data;
    const turnId = turnCreated.turn_id as string;
    expect(turnCreated).toMatchObject({ session_id: sid, turn: { id: turnId, status: "queued" } });
    expect(at("agent.session.turn.created")).toBeGreaterThan(0);
    expect(at("agent.session.turn.in_progress")).toBeGreaterThan(at("agent.session.turn.created"));
    expect(at("agent.session.in_progress")).toBeGreaterThan(0);
    expect(at("agent.session.turn.item.added")).toBeGreaterThan(at("agent.session.turn.created"));
    expect(at("agent.session.turn.output_text.delta")).toBeGreaterThan(at("agent.session.turn.item.added"));
    expect(at("agent.session.turn.item.done")).toBeGreaterThan(at("agent.session.turn.output_text.delta"));
    expect(at("agent.session.turn.completed")).toBeGreaterThan(at("agent.session.turn.item.done"));
    expect(types.at(-1)).toBe("agent.session.idle");
    expect(types.at(-2)).toBe("agent.session.turn.completed");
    for (const t of types) expect(t).toMatch(/^agent\.(session|output)\./);

    // Turn-scoped events carry the session and the turn.
    for (const e of events.filter((x) => (x.data.type as string).startsWith("agent.session.turn."))) {
      expect(e.data).toMatchObject({ session_id: sid, turn_id: turnId });
    }
    // Session-level events carry the session snapshot, not a session_id.
    for (const e of events.filter((x) =>
      /^agent\.session\.(idle|in_progress)$/.test(x.data.type as string),
    )) {
      expect(e.data).toMatchObject({ session: { id: sid, object: "agent.session" } });
    }
    // Deltas rebuild the assistant message; the done item has the full text and status completed.
    const done = events.find(
      (e) =>
        e.data.type === "agent.session.turn.item.done" &&
        (e.data.item as { role?: string }).role === "assistant",
    )!.data as { item: { id: string; content: Array<{ text: string }>; status: string; phase: string } };
    const deltas = events
      .filter((e) => e.data.type === "agent.session.turn.output_text.delta")
      .map((e) => e.data as { item_id: string; delta: string; content_index: number });
    expect(deltas.map((d) => d.delta)).toEqual(["alpha ", "beta ", "gamma"]);
    expect(deltas.every((d) => d.item_id === done.item.id && d.content_index === 0)).toBe(true);
    expect(done.item).toMatchObject({
      type: "message",
      role: "assistant",
      status: "completed",
      phase: "final_answer",
      content: [{ type: "output_text", text: "alpha beta gamma" }],
    });
    const completed = events.at(-2)!.data as { usage: Record<string, unknown>; turn: { status: string } };
    expect(completed.turn.status).toBe("completed");
    expect(completed.usage).toMatchObject({
      input_tokens: expect.any(Number),
      input_tokens_details: { cached_tokens: expect.any(Number) },
      output_tokens_details: { reasoning_tokens: expect.any(Number) },
    });

    // The SDK reads the same stream: a subscriber after the turn gets the current state.
    const log = await EventLog.open(client, sid);
    const first = await log.waitFor(() => true, "the state event");
    expect(first).toMatchObject({ type: "agent.session.idle", session: { id: sid, status: "idle" } });
    await log.close();
  });

  it("Last-Event-ID resumes a dropped stream without loss or duplicates", async () => {
    const sid = await newSession();
    const text = `Resume me (${sid})`;
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["one ", "two ", "three"], { gate }), lastUserIs(text));

    // First connection: dropped right after the user's message shows up.
    const readingA = readSse(
      await rawStream(sid),
      (e) =>
        e.data.type === "agent.session.turn.item.added" && (e.data.item as { role?: string }).role === "user",
    );
    await client.beta.agents.sessions.events.create(sid, { events: [messageEvent(text)] });
    const A = await readingA;
    await gate.reached;
    expect(A[0]!.data.type).toBe("agent.session.idle");

    // A subscriber joining mid-turn gets the running turn from its start.
    const midTurn = await EventLog.open(client, sid);
    const joined = await midTurn.waitFor(() => true, "first event mid-turn");
    expect(joined.type).toBe("agent.session.turn.created");
    await midTurn.close();

    // Reconnect with the last id seen; the turn finishes meanwhile.
    const readingB = readSse(
      await rawStream(sid, { "Last-Event-ID": A.at(-1)!.id! }),
      untilIdleAfterCompletion(),
    );
    gate.release();
    const B = await readingB;
    expect(B[0]!.data.type).not.toBe("agent.session.idle");

    // The whole log, replayed from the start.
    const lastEventId = B.at(-1)!.data.event_id;
    const full = await readSse(
      await rawStream(sid, { "Last-Event-ID": "0" }),
      (e) => e.data.event_id === lastEventId,
    );
    expect(full[0]!.data.type).toBe("agent.session.created");
    const seen = [...A.slice(1), ...B].map((e) => e.data.event_id);
    expect(new Set(seen).size).toBe(seen.length);
    const fullIds = full.map((e) => e.data.event_id);
    const start = fullIds.indexOf(seen[0]);
    expect(start).toBeGreaterThan(0);
    expect(seen).toEqual(fullIds.slice(start));
    expect(B.map((e) => e.data.type)).toContain("agent.session.turn.output_text.delta");

    // Resuming from the state event's id continues right after it: the turn's first event.
    const afterState = await readSse(await rawStream(sid, { "Last-Event-ID": A[0]!.id! }), () => true);
    expect(afterState[0]!.data.type).toBe("agent.session.turn.created");
    // Ids address single frames: turn.created and turn.in_progress come from one log entry ("N:0", "N:1").
    const created = full.find((e) => e.data.type === "agent.session.turn.created")!;
    expect(created.id).toMatch(/^\d+:0$/);
    const next = await readSse(await rawStream(sid, { "Last-Event-ID": created.id! }), () => true);
    expect(next[0]!.data.type).toBe("agent.session.turn.in_progress");
    expect(next[0]!.id).toBe(created.id!.replace(/:0$/, ":1"));
  });

  it("an invalid Last-Event-ID is a 400 in the official shape", async () => {
    const sid = await newSession();
    const res = await rawStream(sid, { "Last-Event-ID": "not-a-cursor" });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: "invalid_request_error", param: "Last-Event-ID" });
  });
});
