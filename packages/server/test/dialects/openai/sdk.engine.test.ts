// Official dialect through the real `openai` SDK (7.55.0): agents, sessions (plain and streamed creation, the
// sessions.stream() helper), items and turns, artifacts, and the docs walkthrough in one sequence.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type CapturedRequest, ev, Gate, scripts } from "@codex-agent-api/testkit";
import type OpenAI from "openai";
import { BadRequestError, NotFoundError } from "openai";
import type { Agent, AgentSessionItem } from "openai/resources/beta/agents/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse, type ServerFixture, startServer, waitFor } from "../../support/fixture.js";
import {
  type AgentSessionEvent,
  bodyOf,
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

const lastUserIs = (text: string) => (r: CapturedRequest) => r.lastUserText() === text;
const usage = (input: number, cached: number, output: number, reasoning: number) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: cached },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: reasoning },
  total_tokens: input + output,
});

function textOf(item: AgentSessionItem): string {
  if (item.type !== "message") return "";
  return item.content.map((c) => ("text" in c ? c.text : "")).join("");
}

async function all<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of pages) out.push(x);
  return out;
}

async function settledSession(id: string) {
  return waitFor(
    async () => {
      const s = await client.beta.agents.sessions.retrieve(id);
      return s.status !== "in_progress" ? s : null;
    },
    20_000,
    `session ${id} to settle`,
  );
}

describe("agents", () => {
  it("partial settings are merged with the documented defaults, and sessions inherit them", async () => {
    const a = await client.beta.agents.create({
      model: "mock-model",
      text: { verbosity: "low" } as never,
      reasoning: { effort: "high" } as never,
      multi_agent: { enabled: true } as never,
    });
    expect(a.text).toEqual({ format: { type: "text" }, verbosity: "low" });
    expect(a.reasoning).toEqual({ effort: "high", summary: null });
    expect(a.multi_agent).toEqual({ enabled: true, max_concurrent_subagents: null });
    expect(a.service_tier).toBe("auto");
    const updated = await client.beta.agents.update(a.id, {
      text: { format: { type: "json_schema", schema: { type: "object" } } } as never,
    });
    expect(updated.text).toEqual({
      format: { type: "json_schema", schema: { type: "object" } },
      verbosity: "medium",
    });
    expect(updated.reasoning).toEqual({ effort: "high", summary: null });
    const s = await client.beta.agents.sessions.create({
      agent_id: a.id,
      environment: { type: "none" },
      agent: { reasoning: { summary: "concise" } as never },
    });
    expect(s.agent.reasoning).toEqual({ effort: null, summary: "concise" });
    expect(s.agent.text).toEqual(updated.text);
    const bad = await rejection(
      client.beta.agents.create({ model: "m", reasoning: { effort: "extreme" } as never }),
    );
    expect(bad).toBeInstanceOf(BadRequestError);
  });

  it("create, retrieve, update (POST) and delete", async () => {
    const created = await client.beta.agents.create({
      model: "mock-model",
      name: "Researcher",
      instructions: "Answer briefly.",
      metadata: { team: "docs", tier: "gold" },
      reasoning: { effort: "low", summary: "auto" },
      tools: [{ type: "web_search" }],
    });
    expect(created).toMatchObject({
      object: "agent",
      name: "Researcher",
      instructions: "Answer briefly.",
      model: "mock-model",
      metadata: { team: "docs", tier: "gold" },
      reasoning: { effort: "low", summary: "auto" },
      tools: [{ type: "web_search" }],
      service_tier: "auto",
      text: { format: { type: "text" }, verbosity: "medium" },
      multi_agent: { enabled: false },
    });
    expect(created.id).toMatch(/^agent_/);
    expect(Number.isInteger(created.created_at)).toBe(true);
    expect(created.updated_at).toBeGreaterThanOrEqual(created.created_at);

    expect(await client.beta.agents.retrieve(created.id)).toEqual(created);

    const updated = await client.beta.agents.update(created.id, {
      name: "Senior researcher",
      metadata: { team: "core" },
      instructions: null,
    });
    expect(updated).toMatchObject({
      id: created.id,
      object: "agent",
      name: "Senior researcher",
      instructions: null,
      metadata: { team: "core" },
      model: "mock-model",
      reasoning: { effort: "low", summary: "auto" },
    });
    expect(await client.beta.agents.retrieve(created.id)).toEqual(updated);
    // The SDK sends `{}` for an update without a body: nothing changes.
    expect(await client.beta.agents.update(created.id)).toMatchObject({ name: "Senior researcher" });

    const deleted = await client.beta.agents.delete(created.id);
    expect(deleted).toEqual({ id: created.id, object: "agent.deleted", deleted: true });
    expectApiError(await rejection(client.beta.agents.retrieve(created.id)), NotFoundError, 404);
    expectApiError(await rejection(client.beta.agents.delete(created.id)), NotFoundError, 404);
  });

  it("list: cursor pages (after, limit, order, has_more, first_id/last_id) and auto-pagination", async () => {
    const mine: Agent[] = [];
    for (let i = 0; i < 5; i++) {
      mine.push(await client.beta.agents.create({ model: "mock-model", name: `paged-${i}` }));
    }
    const ids = new Set(mine.map((a) => a.id));

    // Newest first by default.
    const first = await client.beta.agents.list({ limit: 2 });
    expect(first.data.map((a) => a.id)).toEqual([mine[4]!.id, mine[3]!.id]);
    expect(first.has_more).toBe(true);
    expect(bodyOf(first)).toMatchObject({
      object: "list",
      first_id: mine[4]!.id,
      last_id: mine[3]!.id,
      has_more: true,
    });
    expect(first.hasNextPage()).toBe(true);
    const second = await first.getNextPage();
    expect(second.data.map((a) => a.id)).toEqual([mine[2]!.id, mine[1]!.id]);

    // Explicit cursor and ascending order.
    const after = await client.beta.agents.list({ after: mine[1]!.id, order: "asc", limit: 10 });
    expect(after.data.map((a) => a.id)).toEqual([mine[2]!.id, mine[3]!.id, mine[4]!.id]);
    expect(after.has_more).toBe(false);
    expect(bodyOf(after)).toMatchObject({ first_id: mine[2]!.id, last_id: mine[4]!.id });

    // Auto-pagination over several pages returns every agent exactly once.
    const seen: string[] = [];
    for await (const a of client.beta.agents.list({ limit: 2 })) seen.push(a.id);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => ids.has(id))).toEqual(mine.map((a) => a.id).reverse());
    const total = seen.length;
    expect(total).toBeGreaterThanOrEqual(5);
    const asc: string[] = [];
    for await (const a of client.beta.agents.list({ limit: 3, order: "asc" })) asc.push(a.id);
    expect(asc).toEqual([...seen].reverse());

    // An empty last page is well formed.
    const none = await client.beta.agents.list({ after: seen.at(-1)!, limit: 2 });
    expect(none.data).toEqual([]);
    expect(none.has_more).toBe(false);
    expect(bodyOf(none)).toMatchObject({ first_id: null, last_id: null });
  });
});

describe("sessions", () => {
  it("create from an agent id without input, retrieve, update, delete", async () => {
    const agent = await client.beta.agents.create({
      model: "mock-model",
      name: "Saved",
      instructions: "Saved agent instructions.",
    });
    const s = await client.beta.agents.sessions.create({
      agent_id: agent.id,
      environment: { type: "none" },
      metadata: { user: "u1" },
    });
    expect(s).toMatchObject({
      object: "agent.session",
      status: "idle",
      error: null,
      metadata: { user: "u1" },
      required_actions: [],
      vault_ids: [],
      agent: { id: agent.id, name: "Saved", instructions: "Saved agent instructions.", model: "mock-model" },
      usage: usage(0, 0, 0, 0),
    });
    expect(s.id).toMatch(/^sess_/);
    expect(s.environment).toEqual(expect.objectContaining({ type: expect.any(String) }));
    expect(s.last_active_at).toBeGreaterThanOrEqual(s.created_at);
    expect(await client.beta.agents.sessions.retrieve(s.id)).toMatchObject({ id: s.id, status: "idle" });

    const updated = await client.beta.agents.sessions.update(s.id, {
      metadata: { user: "u2", plan: "pro" },
      agent: { model: "mock-model-updated" },
    });
    expect(updated).toMatchObject({ id: s.id, metadata: { user: "u2", plan: "pro" } });
    expect(updated.agent.model).toBe("mock-model-updated");
    // Model settings apply to the next turn.
    const result = await client.beta.agents.sessions
      .stream(s.id, { input: "Reply with exactly: on the new model" })
      .finalResult();
    expect(result.output_text).toBe("on the new model");
    const req = f.mock.requests().find((r) => r.lastUserText() === "Reply with exactly: on the new model");
    expect(req?.model).toBe("mock-model-updated");
    expect(req?.rawBody).toContain("Saved agent instructions.");

    // agent_id with inline overrides: the overrides win, the rest comes from the saved agent.
    const overridden = await client.beta.agents.sessions.create({
      agent_id: agent.id,
      agent: { instructions: "Overridden instructions." },
      environment: { type: "none" },
    });
    expect(overridden.agent).toMatchObject({
      id: agent.id,
      name: "Saved",
      model: "mock-model",
      instructions: "Overridden instructions.",
    });

    const deleted = await client.beta.agents.sessions.delete(s.id);
    expect(deleted).toEqual({ id: s.id, object: "agent.session.deleted", deleted: true });
    expectApiError(await rejection(client.beta.agents.sessions.retrieve(s.id)), NotFoundError, 404);
  });

  it("create with an inline agent and input starts a turn", async () => {
    const text = "Reply with exactly: inline agent answer";
    const s = await client.beta.agents.sessions.create({
      agent: { model: "mock-inline-model", instructions: "Inline instructions ZQX." },
      environment: { type: "none" },
      input: text,
    });
    expect(s.status).toBe("in_progress");
    // An inline agent is named after its session (the official type requires an id; it is not a saved agent).
    expect(s.agent).toMatchObject({
      id: `agent_${s.id.slice(5)}`,
      model: "mock-inline-model",
      instructions: "Inline instructions ZQX.",
    });
    const done = (await settledSession(s.id))!;
    expect(done.status).toBe("idle");
    expect(done.usage?.input_tokens).toBeGreaterThan(0);
    const req = f.mock.requests().find((r) => r.lastUserText() === text);
    expect(req?.model).toBe("mock-inline-model");
    expect(req?.rawBody).toContain("Inline instructions ZQX.");
    const items = await client.beta.agents.sessions.items.list(s.id, { order: "asc" });
    expect(items.data.map(textOf)).toEqual([text, "inline agent answer"]);

    // Input as a list of messages works the same.
    const s2 = await client.beta.agents.sessions.create({
      environment: { type: "none" },
      input: [message("Reply with exactly: from a message list")],
    });
    await settledSession(s2.id);
    const items2 = await client.beta.agents.sessions.items.list(s2.id, { order: "asc" });
    expect(items2.data.map(textOf)).toEqual([
      "Reply with exactly: from a message list",
      "from a message list",
    ]);
  });

  it("create with stream: true returns the official SSE stream; finalResult() gives the final text", async () => {
    const agent = await client.beta.agents.create({ model: "mock-model", name: "Streamer" });
    const text = "Stream the creation turn";
    f.mock.enqueue(scripts.streamingMessage(["Hello ", "from ", "the stream"]), lastUserIs(text));
    const stream = await client.beta.agents.sessions.create({
      agent_id: agent.id,
      environment: { type: "none" },
      input: text,
      stream: true,
    });
    const events: AgentSessionEvent[] = [];
    for await (const e of stream) events.push(e);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe("agent.session.created");
    const created = events[0] as Extract<AgentSessionEvent, { type: "agent.session.created" }>;
    expect(created.session).toMatchObject({ object: "agent.session", agent: { id: agent.id } });
    const sid = created.session.id;
    expect(types).toContain("agent.session.turn.created");
    expect(types).toContain("agent.session.turn.in_progress");
    expect(types.filter((t) => t === "agent.session.turn.output_text.delta")).toHaveLength(3);
    expect(types.slice(-2)).toEqual(["agent.session.turn.completed", "agent.session.idle"]);
    expect(new Set(events.map((e) => e.event_id)).size).toBe(events.length);
    const done = events.filter(
      (e): e is Extract<AgentSessionEvent, { type: "agent.session.turn.item.done" }> =>
        e.type === "agent.session.turn.item.done",
    );
    expect(done.map((e) => e.item)).toEqual([
      expect.objectContaining({
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "Hello from the stream" }],
      }),
    ]);
    expect((await client.beta.agents.sessions.retrieve(sid)).status).toBe("idle");

    // The same call, consumed with finalResult().
    const again = await client.beta.agents.sessions.create({
      agent_id: agent.id,
      environment: { type: "none" },
      input: [message("Reply with exactly: final from create")],
      stream: true,
    });
    const result = await again.finalResult();
    expect(result.output_text).toBe("final from create");
    expect(result.turn).toMatchObject({
      object: "agent.session.turn",
      status: "completed",
      subagent_id: null,
    });
    expect(result.messages).toHaveLength(1);
    expect(result.session_id).toMatch(/^sess_/);
    expect(result.session_id).not.toBe(sid);
  });

  it("list filters by agent_id and metadata[key], with cursor pages", async () => {
    const a1 = await client.beta.agents.create({ model: "mock-model", name: "filter-a" });
    const a2 = await client.beta.agents.create({ model: "mock-model", name: "filter-b" });
    const env = { type: "none" as const };
    const s1 = await client.beta.agents.sessions.create({
      agent_id: a1.id,
      environment: env,
      metadata: { k: "x" },
    });
    const s2 = await client.beta.agents.sessions.create({
      agent_id: a1.id,
      environment: env,
      metadata: { k: "y" },
    });
    const s3 = await client.beta.agents.sessions.create({
      agent_id: a2.id,
      environment: env,
      metadata: { k: "x" },
    });

    const byAgent = await client.beta.agents.sessions.list({ agent_id: a1.id });
    expect(byAgent.data.map((s) => s.id)).toEqual([s2.id, s1.id]);
    expect(byAgent.has_more).toBe(false);
    const byMeta = await all(client.beta.agents.sessions.list({ metadata: { k: "x" } }));
    expect(byMeta.map((s) => s.id)).toContain(s1.id);
    expect(byMeta.map((s) => s.id)).toContain(s3.id);
    expect(byMeta.every((s) => s.metadata.k === "x")).toBe(true);
    const both = await client.beta.agents.sessions.list({ agent_id: a1.id, metadata: { k: "x" } });
    expect(both.data.map((s) => s.id)).toEqual([s1.id]);

    const page = await client.beta.agents.sessions.list({ agent_id: a1.id, limit: 1, order: "asc" });
    expect(page.data.map((s) => s.id)).toEqual([s1.id]);
    expect(page.has_more).toBe(true);
    expect(bodyOf(page)).toMatchObject({ object: "list", first_id: s1.id, last_id: s1.id });
    const rest = await page.getNextPage();
    expect(rest.data.map((s) => s.id)).toEqual([s2.id]);
    expect(rest.has_more).toBe(false);
    const paged = await all(client.beta.agents.sessions.list({ agent_id: a1.id, limit: 1 }));
    expect(paged.map((s) => s.id)).toEqual([s2.id, s1.id]);
  });

  it("sessions.stream() helper: events end with turn.completed then agent.session.idle; usage is reported", async () => {
    const s = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    const events: AgentSessionEvent[] = [];
    for await (const e of client.beta.agents.sessions.stream(s.id, {
      input: "Reply with exactly: via helper",
    })) {
      events.push(e);
    }
    const types = events.map((e) => e.type);
    expect(types.slice(-2)).toEqual(["agent.session.turn.completed", "agent.session.idle"]);
    expect(types).toContain("agent.session.turn.created");
    expect(types).toContain("agent.session.turn.output_text.delta");

    // Usage with cached and reasoning tokens, per turn and accumulated on the session.
    const text = "Count my tokens";
    f.mock.enqueue(
      scripts.sse([
        ev.responseCreated("resp-usage"),
        ev.assistantMessage("msg-usage", "counted"),
        ev.completed("resp-usage", {
          inputTokens: 7,
          cachedInputTokens: 2,
          outputTokens: 3,
          reasoningOutputTokens: 1,
        }),
      ]),
      lastUserIs(text),
    );
    const before = (await client.beta.agents.sessions.retrieve(s.id)).usage!;
    const result = await client.beta.agents.sessions.stream(s.id, { input: text }).finalResult();
    expect(result.output_text).toBe("counted");
    expect(result.turn.status).toBe("completed");
    expect(result.turn.usage).toEqual(usage(7, 2, 3, 1));
    const after = await client.beta.agents.sessions.retrieve(s.id);
    expect(after.status).toBe("idle");
    expect(after.usage).toEqual({
      input_tokens: before.input_tokens + 7,
      input_tokens_details: { cached_tokens: before.input_tokens_details.cached_tokens + 2 },
      output_tokens: before.output_tokens + 3,
      output_tokens_details: { reasoning_tokens: before.output_tokens_details.reasoning_tokens + 1 },
      total_tokens: before.total_tokens + 10,
    });
    const turn = await client.beta.agents.sessions.turns.retrieve(result.turn_id, { session_id: s.id });
    expect(turn.usage).toEqual(usage(7, 2, 3, 1));
  });

  it("a failed turn: turn.failed then idle (no error event), the session stays idle and usable (also by the helper)", async () => {
    const text = "Please fail";
    f.mock.enqueue(scripts.failure("the model broke"), lastUserIs(text));
    const stream = await client.beta.agents.sessions.create({
      environment: { type: "none" },
      input: text,
      stream: true,
    });
    const err = (await rejection(stream.finalResult())) as {
      name: string;
      reason: string;
      session_id?: string;
      turn?: { id: string; status: string; error: { code: string; message: string } | null };
    };
    expect(err.name).toBe("AgentTurnResultError");
    expect(err.reason).toBe("failed");
    expect(err.turn?.status).toBe("failed");
    const sid = err.session_id!;
    const session = await client.beta.agents.sessions.retrieve(sid);
    // A failed turn does not fail the session (its error is on the turn).
    expect(session.status).toBe("idle");
    expect(session.error).toBeNull();
    const turn = await client.beta.agents.sessions.turns.retrieve(err.turn!.id, { session_id: sid });
    expect(turn.status).toBe("failed");
    expect(turn.completed_at).toEqual(expect.any(Number));
    expect(turn.error).toEqual({ code: expect.any(String), message: expect.any(String) });

    // On the stream (replayed from the start): turn.failed (its turn carries the error), then agent.session.idle. No
    // `error` event: the Python SDK raises on any streamed payload with a top-level `error`.
    const replay = await readSse(
      await fetch(`${f.url}/v1/agents/sessions/${sid}/events`, {
        headers: { "OpenAI-Beta": "agents=v1", "Last-Event-ID": "0" },
      }),
      (e) => e.data.type === "agent.session.idle" && e.id !== null,
    );
    const types = replay.map((e) => e.data.type);
    expect(types.slice(-2)).toEqual(["agent.session.turn.failed", "agent.session.idle"]);
    expect(types).not.toContain("error");
    expect(replay.some((e) => "error" in e.data)).toBe(false);
    expect(replay.at(-2)!.data).toMatchObject({
      turn_id: turn.id,
      turn: { status: "failed", error: turn.error },
      usage: expect.toSatisfy((u: unknown) => u === null || typeof u === "object"),
    });
    expect(replay.at(-1)!.data).toMatchObject({ session: { id: sid, status: "idle", error: null } });

    // The SDK helper accepts the session right away.
    f.mock.enqueueAssistantMessage("helper works", { route: lastUserIs("after failure") });
    const helper = await client.beta.agents.sessions.stream(sid, { input: "after failure" });
    expect((await helper.finalResult()).output_text).toBe("helper works");
    const log = await EventLog.open(client, sid);
    await client.beta.agents.sessions.events.create(sid, {
      events: [messageEvent("Reply with exactly: recovered")],
    });
    const { end, status } = await log.waitForSettled(await log.turnCreated());
    expect(end.type).toBe("agent.session.turn.completed");
    expect(status.type).toBe("agent.session.idle");
    const again = await client.beta.agents.sessions.retrieve(sid);
    expect(again).toMatchObject({ status: "idle", error: null });
    await log.close();
  });
});

describe("items and turns", () => {
  let sid: string;
  const turnIds: string[] = [];
  const runEvents: AgentSessionEvent[] = [];

  beforeAll(async () => {
    sid = (await client.beta.agents.sessions.create({ environment: { type: "none" } })).id;
    const say = await client.beta.agents.sessions
      .stream(sid, { input: "Reply with exactly: first answer" })
      .finalResult();
    turnIds.push(say.turn_id);
    const runStream = client.beta.agents.sessions
      .stream(sid, {
        input:
          "Run this exact shell command and wait for it to finish: echo items-cmd-output. Then reply with exactly: command ran",
      })
      .withResultCollection();
    for await (const e of runStream) runEvents.push(e);
    const run = await runStream.finalResult();
    expect(run.output_text).toBe("command ran");
    turnIds.push(run.turn_id);
    const think = "Think before answering";
    f.mock.enqueue(
      scripts.sse([
        ev.responseCreated("resp-think"),
        { type: "response.output_item.added", item: { type: "reasoning", id: "rs_think", summary: [] } },
        {
          type: "response.reasoning_summary_text.delta",
          item_id: "rs_think",
          summary_index: 0,
          delta: "Weighing the options",
        },
        {
          type: "response.output_item.done",
          item: {
            type: "reasoning",
            id: "rs_think",
            summary: [{ type: "summary_text", text: "Weighing the options" }],
          },
        },
        ev.assistantMessage("msg-think", "thought it through"),
        ev.completed("resp-think"),
      ]),
      lastUserIs(think),
    );
    const thought = await client.beta.agents.sessions.stream(sid, { input: think }).finalResult();
    expect(thought.output_text).toBe("thought it through");
    turnIds.push(thought.turn_id);
  });

  it("items.list maps items to official types, newest first, with cursor pages", async () => {
    const items = await all(client.beta.agents.sessions.items.list(sid, { order: "asc" }));
    expect(items.map((i) => i.type)).toEqual([
      "message",
      "message",
      "message",
      "command_execution",
      "message",
      "message",
      "reasoning",
      "message",
    ]);
    expect(items[0]).toMatchObject({
      type: "message",
      role: "user",
      phase: null,
      status: "completed",
      turn_id: turnIds[0],
      content: [{ type: "input_text", text: "Reply with exactly: first answer" }],
    });
    expect(items[1]).toMatchObject({
      type: "message",
      role: "assistant",
      status: "completed",
      phase: "final_answer",
      turn_id: turnIds[0],
      content: [{ type: "output_text", text: "first answer" }],
    });
    const cmd = items[3]!;
    expect(cmd).toMatchObject({
      type: "command_execution",
      status: "completed",
      exit_code: 0,
      turn_id: turnIds[1],
    });
    if (cmd.type !== "command_execution") throw new Error("unreachable");
    expect(cmd.command).toContain("echo items-cmd-output");
    expect(cmd.output).toContain("items-cmd-output");
    // Where it ran, inside the session's environment (not this host's directory).
    expect(cmd.cwd).toBe("/workspace");
    expect(cmd.duration_ms).toEqual(expect.any(Number));
    // On the stream: added while running, done with the result.
    const cmdEvents = runEvents.filter(
      (e) =>
        (e.type === "agent.session.turn.item.added" || e.type === "agent.session.turn.item.done") &&
        e.item.id === cmd.id,
    );
    expect(
      cmdEvents.map((e) => [e.type, "item" in e ? (e.item as { status?: unknown }).status : null]),
    ).toEqual([
      ["agent.session.turn.item.added", "in_progress"],
      ["agent.session.turn.item.done", "completed"],
    ]);
    expect(items[6]).toMatchObject({
      type: "reasoning",
      turn_id: turnIds[2],
      summary: [{ type: "summary_text", text: "Weighing the options" }],
    });
    expect(items[7]).toMatchObject({
      role: "assistant",
      content: [{ type: "output_text", text: "thought it through" }],
    });
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);

    // Default order is newest first (the documented default).
    const newest = await client.beta.agents.sessions.items.list(sid, { limit: 2 });
    expect(newest.data.map((i) => i.id)).toEqual([items[7]!.id, items[6]!.id]);
    expect(newest.has_more).toBe(true);
    expect(bodyOf(newest)).toMatchObject({ object: "list", first_id: items[7]!.id, last_id: items[6]!.id });
    // Auto-pagination with small pages returns every item once, in order.
    const paged = await all(client.beta.agents.sessions.items.list(sid, { limit: 3 }));
    expect(paged.map((i) => i.id)).toEqual(items.map((i) => i.id).reverse());
    const after = await client.beta.agents.sessions.items.list(sid, { after: items[4]!.id!, order: "asc" });
    expect(after.data.map((i) => i.id)).toEqual(items.slice(5).map((i) => i.id));
  });

  it("an item page carries an ETag of the log position: unchanged → 304, a new turn → a new page", async () => {
    const sid = (await client.beta.agents.sessions.create({ environment: { type: "none" } })).id;
    await client.beta.agents.sessions.stream(sid, { input: "Reply with exactly: one" }).finalResult();
    const path = `/v1/agents/sessions/${sid}/items?limit=10&order=asc`;
    const first = await f.request("GET", path, undefined, { "openai-beta": "agents=v1" });
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"sess_[0-9a-f]+\.\d+"$/);
    const body = (await first.json()) as { data: unknown[] };
    expect(body.data).toHaveLength(2);
    const again = await f.request("GET", path, undefined, {
      "openai-beta": "agents=v1",
      "if-none-match": etag!,
    });
    expect(again.status).toBe(304);
    await client.beta.agents.sessions.stream(sid, { input: "Reply with exactly: two" }).finalResult();
    const changed = await f.request("GET", path, undefined, {
      "openai-beta": "agents=v1",
      "if-none-match": etag!,
    });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("etag")).not.toBe(etag);
    expect(((await changed.json()) as { data: unknown[] }).data).toHaveLength(4);
  });

  it("engine items with no official type are skipped without breaking pages", async () => {
    const other = (await client.beta.agents.sessions.create({ environment: { type: "none" } })).id;
    const a = await client.beta.agents.sessions
      .stream(other, { input: "Reply with exactly: A" })
      .finalResult();
    // Engine items the official API has no type for (e.g. a context compaction marker), between two turns.
    for (let i = 0; i < 3; i++) {
      const item = { type: "contextCompaction", id: `compaction-${i}` } as const;
      await f.service.core.hub.append(
        other,
        { type: "item.completed", data: { item, output_index: 0 } },
        {
          turn_id: a.turn_id,
          item: {
            kind: "finish",
            turn_id: a.turn_id,
            item,
            created_at: Date.now() / 1000,
            state: "completed",
          },
        },
      );
    }
    await client.beta.agents.sessions.stream(other, { input: "Reply with exactly: B" }).finalResult();
    const paged = await all(client.beta.agents.sessions.items.list(other, { limit: 2, order: "asc" }));
    expect(paged.map(textOf)).toEqual(["Reply with exactly: A", "A", "Reply with exactly: B", "B"]);
    const second = await (
      await client.beta.agents.sessions.items.list(other, { limit: 2, order: "asc" })
    ).getNextPage();
    expect(second.data.map(textOf)).toEqual(["Reply with exactly: B", "B"]);
    const turnItems = await all(
      client.beta.agents.sessions.turns.items.list(a.turn_id, { session_id: other, limit: 2, order: "asc" }),
    );
    expect(turnItems.map(textOf)).toEqual(["Reply with exactly: A", "A"]);
  });

  it("turns.list / turns.retrieve report each turn with its usage", async () => {
    const turns = await client.beta.agents.sessions.turns.list(sid);
    expect(turns.data.map((t) => t.id)).toEqual([...turnIds].reverse());
    for (const t of turns.data) {
      expect(t).toMatchObject({
        object: "agent.session.turn",
        session_id: sid,
        agent_id: `agent_${sid.slice(5)}`,
        subagent_id: null,
        status: "completed",
        error: null,
      });
      expect(t.started_at).toEqual(expect.any(Number));
      expect(t.completed_at).toBeGreaterThanOrEqual(t.created_at);
      expect(t.usage?.input_tokens).toBeGreaterThan(0);
      expect(t.usage?.input_tokens_details.cached_tokens).toEqual(expect.any(Number));
      expect(t.usage?.output_tokens_details.reasoning_tokens).toEqual(expect.any(Number));
    }
    const paged = await all(client.beta.agents.sessions.turns.list(sid, { limit: 1, order: "asc" }));
    expect(paged.map((t) => t.id)).toEqual(turnIds);
    const one = await client.beta.agents.sessions.turns.retrieve(turnIds[1]!, { session_id: sid });
    expect(one).toEqual(turns.data[1]);
    expectApiError(
      await rejection(client.beta.agents.sessions.turns.retrieve("turn_missing", { session_id: sid })),
      NotFoundError,
      404,
    );
  });

  it("turns.items.list returns one turn's items (ConversationCursorPage, last_id)", async () => {
    const page = await client.beta.agents.sessions.turns.items.list(turnIds[1]!, {
      session_id: sid,
      order: "asc",
    });
    expect(page.data.map((i) => i.type)).toEqual(["message", "command_execution", "message"]);
    expect(page.data.every((i) => i.turn_id === turnIds[1])).toBe(true);
    expect(page.last_id).toBe(page.data.at(-1)!.id);
    expect(page.has_more).toBe(false);
    const small = await client.beta.agents.sessions.turns.items.list(turnIds[1]!, {
      session_id: sid,
      limit: 1,
    });
    expect(small.has_more).toBe(true);
    expect(small.last_id).toBe(small.data[0]!.id);
    const paged = await all(
      client.beta.agents.sessions.turns.items.list(turnIds[1]!, { session_id: sid, limit: 1, order: "asc" }),
    );
    expect(paged.map((i) => i.id)).toEqual(page.data.map((i) => i.id));
  });
});

describe("artifacts", () => {
  it("list, retrieve, content (bytes + content type) and delete workspace files", async () => {
    const s = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    // Every official session works in its own directory under the workspace root (a session created with
    // environment "none" reports it as such).
    const ws = join(f.workspace, s.id);
    expect(s.environment).toEqual({ type: "none" });
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 255]);
    mkdirSync(join(ws, "art"), { recursive: true });
    writeFileSync(join(ws, "art", "report.txt"), "hello artifact\n");
    writeFileSync(join(ws, "art", "pixel.png"), png);
    writeFileSync(join(ws, "art", "values.json"), '{"a":1}');
    writeFileSync(join(f.workspace, "outside-the-session.txt"), "not this session's");
    // Clients see the session's files inside its environment (/workspace/…), never where they are on this host.
    const abs = (name: string) => `/workspace/art/${name}`;

    const listed = await all(client.beta.agents.sessions.artifacts.list(s.id, { limit: 1 }));
    const byPath = new Map(listed.map((a) => [a.path, a]));
    expect(new Set(listed.map((a) => a.id)).size).toBe(listed.length);
    expect(listed).toHaveLength(3);
    expect(listed.map((a) => a.path).sort()).toEqual([
      abs("pixel.png"),
      abs("report.txt"),
      abs("values.json"),
    ]);
    const report = byPath.get(abs("report.txt"));
    expect(report).toMatchObject({
      object: "agent.session.artifact",
      session_id: s.id,
      size_bytes: 15,
      environment_id: "env_local",
      // Written by no turn of the session (there is none).
      turn_id: "",
    });
    expect(byPath.get(abs("pixel.png"))?.size_bytes).toBe(png.length);
    const descending = await all(
      client.beta.agents.sessions.artifacts.list(s.id, { limit: 2, order: "desc" }),
    );
    expect(descending.map((a) => a.id)).toEqual(listed.map((a) => a.id).reverse());

    expect(await client.beta.agents.sessions.artifacts.retrieve(report!.id, { session_id: s.id })).toEqual(
      report,
    );
    const text = await client.beta.agents.sessions.artifacts.content(report!.id, { session_id: s.id });
    expect(text.status).toBe(200);
    expect(text.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await text.text()).toBe("hello artifact\n");
    const image = await client.beta.agents.sessions.artifacts.content(byPath.get(abs("pixel.png"))!.id, {
      session_id: s.id,
    });
    expect(image.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await image.arrayBuffer())).toEqual(png);
    const json = await client.beta.agents.sessions.artifacts.content(byPath.get(abs("values.json"))!.id, {
      session_id: s.id,
    });
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await json.text()).toBe('{"a":1}');

    const deleted = await client.beta.agents.sessions.artifacts.delete(report!.id, { session_id: s.id });
    expect(deleted).toEqual({ id: report!.id, object: "agent.session.artifact.deleted", deleted: true });
    const after = await all(client.beta.agents.sessions.artifacts.list(s.id));
    expect(after.map((a) => a.path)).not.toContain(abs("report.txt"));
    expect(after.map((a) => a.path)).toContain(abs("pixel.png"));
    expectApiError(
      await rejection(client.beta.agents.sessions.artifacts.retrieve(report!.id, { session_id: s.id })),
      NotFoundError,
      404,
    );
    expectApiError(
      await rejection(client.beta.agents.sessions.artifacts.content(report!.id, { session_id: s.id })),
      NotFoundError,
      404,
    );
  });

  it("a file written by a shell command turn is an artifact of that turn (artifacts.forResult)", async () => {
    const s = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    const result = await client.beta.agents.sessions
      .stream(s.id, {
        input:
          "Run this exact shell command and wait for it to finish: printf made-by-a-turn > turn-output.txt. Then reply with exactly: file written",
      })
      .finalResult();
    expect(result.output_text).toBe("file written");
    const path = "/workspace/turn-output.txt";
    const artifact = await client.beta.agents.sessions.artifacts.forResult(result).retrieve(path);
    expect(artifact).toMatchObject({ path, turn_id: result.turn_id, session_id: s.id, size_bytes: 14 });
    const content = await client.beta.agents.sessions.artifacts.forResult(result).content(path);
    expect(await content.text()).toBe("made-by-a-turn");
  });
});

describe("docs walkthrough", () => {
  it("agent → streamed session → follow-up → steer → cancel → items/turns/artifacts → delete", async () => {
    // 1. Create a reusable agent.
    const agent = await client.beta.agents.create({
      model: "mock-model",
      name: "Walkthrough",
      instructions: "You are a helpful coding agent.",
    });

    // 2. Start a session with a streamed first turn.
    const stream = await client.beta.agents.sessions.create({
      agent_id: agent.id,
      environment: { type: "none" },
      input: "Reply with exactly: Hi! Ready to help.",
      stream: true,
    });
    const events: AgentSessionEvent[] = [];
    let sessionId: string | undefined;
    for await (const event of stream) {
      events.push(event);
      if (event.type === "agent.session.created") sessionId = event.session.id;
    }
    expect(events[0]?.type).toBe("agent.session.created");
    expect(events.at(-1)?.type).toBe("agent.session.idle");
    const deltas = events.flatMap((e) =>
      e.type === "agent.session.turn.output_text.delta" ? [e.delta] : [],
    );
    expect(deltas.join("")).toBe("Hi! Ready to help.");
    const sid = sessionId!;

    // 3. Follow-up message with the high-level helper.
    const followUp = await client.beta.agents.sessions
      .stream(sid, {
        input:
          "Run this exact shell command and wait for it to finish: printf walkthrough > walkthrough.txt. Then reply with exactly: Created the file.",
      })
      .finalResult();
    expect(followUp.output_text).toBe("Created the file.");

    // 4. Steer a running turn: subscribe first, send, then send more while it runs.
    const log = await EventLog.open(client, sid);
    const gate = new Gate();
    const long = "Write a long report";
    f.mock.enqueue(scripts.streamingMessage(["Drafting ", "the report"], { gate }), lastUserIs(long));
    await client.beta.agents.sessions.events.create(sid, { events: [messageEvent(long)] });
    const steeredTurn = await log.turnCreated(0);
    await gate.reached;
    await client.beta.agents.sessions.events.create(sid, {
      events: [messageEvent("Reply with exactly: Keeping it short.")],
    });
    gate.release();
    expect((await log.waitForSettled(steeredTurn)).end.type).toBe("agent.session.turn.completed");

    // 5. Cancel a running turn.
    const gate2 = new Gate();
    const endless = "Work forever";
    f.mock.enqueue(scripts.streamingMessage(["Still ", "working"], { gate: gate2 }), lastUserIs(endless));
    await client.beta.agents.sessions.events.create(sid, { events: [messageEvent(endless)] });
    const cancelledTurn = await log.turnCreated(1);
    await gate2.reached;
    await client.beta.agents.sessions.events.create(sid, {
      events: [{ type: "agent.session.input.cancel" }],
    });
    const cancelled = await log.waitForSettled(cancelledTurn);
    gate2.release();
    expect(cancelled.end.type).toBe("agent.session.turn.cancelled");
    expect(cancelled.status.type).toBe("agent.session.idle");
    await log.close();

    // 6. Inspect history: items, turns, artifacts.
    const turns = await all(client.beta.agents.sessions.turns.list(sid, { order: "asc" }));
    expect(turns.map((t) => t.status)).toEqual(["completed", "completed", "completed", "cancelled"]);
    expect(turns.map((t) => t.id).slice(2)).toEqual([steeredTurn, cancelledTurn]);
    const items = await all(client.beta.agents.sessions.items.list(sid, { order: "asc" }));
    const said = items.filter((i) => i.type === "message" && i.role === "assistant").map(textOf);
    expect(said).toEqual([
      "Hi! Ready to help.",
      "Created the file.",
      "Drafting the report",
      "Keeping it short.",
    ]);
    expect(items.some((i) => i.type === "command_execution")).toBe(true);
    const steered = await client.beta.agents.sessions.turns.items.list(steeredTurn, {
      session_id: sid,
      order: "asc",
    });
    expect(steered.data.filter((i) => i.type === "message" && i.role === "user").map(textOf)).toEqual([
      long,
      "Reply with exactly: Keeping it short.",
    ]);
    const file = await client.beta.agents.sessions.artifacts
      .forResult(followUp)
      .retrieve("/workspace/walkthrough.txt");
    const bytes = await client.beta.agents.sessions.artifacts.content(file.id, { session_id: sid });
    expect(await bytes.text()).toBe("walkthrough");
    const session = await client.beta.agents.sessions.retrieve(sid);
    expect(session.status).toBe("idle");
    expect(session.usage?.total_tokens).toBeGreaterThan(0);

    // 7. Clean up.
    expect(await client.beta.agents.sessions.delete(sid)).toMatchObject({ object: "agent.session.deleted" });
    expect(await client.beta.agents.delete(agent.id)).toMatchObject({ object: "agent.deleted" });
    expectApiError(await rejection(client.beta.agents.sessions.retrieve(sid)), NotFoundError, 404);
  });
});
