// SSE that every standard parser reads the same way: keep-alives never become an (empty) event, the retry advice
// rides on a real frame, and a client resumes with either id form (the SSE id, or the official event_id).
// Parsed here with a spec-following parser (eventsource-parser); the Python SDK suite checks the same with its own.
import { Gate, scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerFixture, startServer, waitFor } from "../support/fixture.js";
import { parseSse, SseReader } from "../support/sse-client.js";

const OFFICIAL = { "openai-beta": "agents=v1" };

describe("SSE framing", () => {
  let f: ServerFixture;
  beforeAll(async () => {
    f = await startServer({ env: { AGENT_SSE_KEEPALIVE_MS: "30" } });
  });
  afterAll(async () => {
    await f?.close();
  });

  const newSession = async () =>
    (
      await f.json<{ id: string }>(
        "POST",
        "/v1/agents/sessions",
        { agent: { model: "mock-model" } },
        OFFICIAL,
      )
    ).body.id;

  it("keep-alives during a long silence are comments only: no empty event, whatever the last id was", async () => {
    const sid = await newSession();
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["after ", "a pause"], { gate }));
    const stream = await f.request("GET", `/v1/agents/sessions/${sid}/events`, undefined, OFFICIAL);
    const body = stream.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const reading = (async () => {
      for (;;) {
        const { value, done } = await body.read();
        if (done) return;
        text += decoder.decode(value, { stream: true });
      }
    })();
    await f.request(
      "POST",
      `/v1/agents/sessions/${sid}/events`,
      {
        events: [{ type: "agent.session.input.message", input: "hold on" }],
      },
      OFFICIAL,
    );
    await gate.reached;
    // Several keep-alive periods pass while the model is silent (frames with ids came before).
    const before = (text.match(/: keepalive/g) ?? []).length;
    await waitFor(() => (text.match(/: keepalive/g) ?? []).length >= before + 3, 10_000, "keep-alives");
    gate.release();
    await waitFor(() => text.includes("agent.session.turn.completed"), 10_000, "the turn to end");
    await body.cancel();
    await reading.catch(() => undefined);
    const parsed = parseSse(text);
    expect(parsed.comments.filter((c) => c.trim() === "keepalive").length).toBeGreaterThanOrEqual(3);
    expect(parsed.empty).toBe(0);
    // Never a blank line right after a keep-alive (that would dispatch an event in id-keeping parsers).
    expect(text).not.toMatch(/: keepalive\n\n/);
    // The retry advice comes once, inside the first frame.
    expect(parsed.retries).toEqual([3000]);
    expect(text.startsWith("retry: 3000\nid: ")).toBe(true);
    expect(parsed.frames.every((fr) => typeof fr.data.type === "string")).toBe(true);
  });

  it("resumes after an official event_id as well as after an SSE id, without loss or duplicates", async () => {
    const sid = await newSession();
    const all = new SseReader(
      await f.request("GET", `/v1/agents/sessions/${sid}/events`, undefined, {
        ...OFFICIAL,
        "last-event-id": "0",
      }),
    );
    await f.request(
      "POST",
      `/v1/agents/sessions/${sid}/events`,
      {
        events: [{ type: "agent.session.input.message", input: "Reply with exactly: one two three four" }],
      },
      OFFICIAL,
    );
    let ended = false;
    const frames = await all.until((e) => {
      if (e.data.type === "agent.session.turn.completed") ended = true;
      return ended && e.data.type === "agent.session.idle";
    });
    await all.cancel();
    // Pick a frame in the middle that is not the last frame of its event (turn.created is frame 0 of two).
    const k = frames.findIndex((e) => e.data.type === "agent.session.turn.created");
    expect(k).toBeGreaterThan(0);
    const rest = frames.slice(k + 1).map((e) => e.data.event_id);
    for (const cursor of [String(frames[k]!.data.event_id), String(frames[k]!.id)]) {
      const resumed = new SseReader(
        await f.request("GET", `/v1/agents/sessions/${sid}/events`, undefined, {
          ...OFFICIAL,
          "last-event-id": cursor,
        }),
      );
      const got = await resumed.until((e) => e.data.event_id === rest.at(-1), `resume from ${cursor}`);
      await resumed.cancel();
      expect(
        got.map((e) => e.data.event_id),
        cursor,
      ).toEqual(rest);
    }
    // The current-state frame's event_id resumes after the event it stands for.
    const idle = new SseReader(
      await f.request("GET", `/v1/agents/sessions/${sid}/events`, undefined, OFFICIAL),
    );
    const state = (await idle.next())!;
    await idle.cancel();
    expect(String(state.data.event_id)).toMatch(/_state$/);
    const after = await f.request("GET", `/v1/agents/sessions/${sid}/events`, undefined, {
      ...OFFICIAL,
      "last-event-id": String(state.data.event_id),
    });
    expect(after.status).toBe(200);
    await after.body?.cancel();
    // Another session's event id, or garbage, is a 400 in the official shape.
    const other = await newSession();
    for (const bad of [
      String(frames[k]!.data.event_id).replace(sid.slice(5), other.slice(5)),
      "evt_nope",
      "abc",
    ]) {
      const r = await f.json<{ error: { type: string } }>(
        "GET",
        `/v1/agents/sessions/${sid}/events`,
        undefined,
        {
          ...OFFICIAL,
          "last-event-id": bad,
        },
      );
      expect(r.status, bad).toBe(400);
      expect(r.body.error.type).toBe("invalid_request_error");
    }
  });
});
