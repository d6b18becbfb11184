// Tools, with the real engine and the scripted mock model: the client's function tools (official SDK toolHandlers,
// raw HTTP in both dialects, parallel calls, failures, cancel, restart), MCP servers (HTTP with authorization,
// stdio, allowed_tools, required), approvals, and the tool set the model sees (web search, subagents).
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CapturedRequest, mcpStdioServerPath, startMcpHttpServer } from "@codex-agent-api/testkit";
import type OpenAI from "openai";
import { BadRequestError } from "openai";
import type { AgentSessionItem } from "openai/resources/beta/agents/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliServer, descendantPids, isAlive, startCliServer } from "../support/cli-process.js";
import { cleanup as cleanupDir, type ServerFixture, startServer, waitFor } from "../support/fixture.js";
import { EventLog, expectApiError, messageEvent, rejection, sdk } from "../support/openai-helpers.js";
import { onContainerBackend } from "../support/sandbox.js";
import { SseReader } from "../support/sse-client.js";

let f: ServerFixture;
let client: OpenAI;

beforeAll(async () => {
  // The tests' MCP servers listen on 127.0.0.1: private targets allowed (platform/net/outbound-targets.test.ts: refused otherwise).
  f = await startServer({ args: ["--allow-private-targets"] });
  client = sdk(f);
});
afterAll(async () => {
  await f.close();
});

const WEATHER = {
  type: "function" as const,
  name: "get_weather",
  description: "The weather in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

/** The model request that carried this user text (the first one of its turn). */
const requestFor = (text: string): CapturedRequest | undefined =>
  f.mock.requests().find((r) => r.lastUserText() === text);

async function items(sessionId: string): Promise<AgentSessionItem[]> {
  const out: AgentSessionItem[] = [];
  for await (const item of client.beta.agents.sessions.items.list(sessionId, { order: "asc" }))
    out.push(item);
  return out;
}

describe("function tools, official dialect", () => {
  it("sessions.stream with toolHandlers: the model calls the function, the handler's output reaches it, finalResult works", async () => {
    const agent = await client.beta.agents.create({ model: "mock-model", tools: [WEATHER] });
    const s = await client.beta.agents.sessions.create({ agent_id: agent.id, environment: { type: "none" } });
    const text = 'Call the function get_weather with arguments {"city":"Paris"}. Then reply with its output';
    const seen: Array<Record<string, unknown>> = [];
    const result = await client.beta.agents.sessions
      .stream(s.id, {
        input: text,
        toolHandlers: {
          get_weather: async (args: Record<string, unknown>) => {
            seen.push(args);
            return `Sunny in ${String(args.city)}`;
          },
        },
      })
      .finalResult();
    expect(seen).toEqual([{ city: "Paris" }]);
    expect(result.output_text).toBe("Sunny in Paris");
    expect(result.turn.status).toBe("completed");

    // What the model saw: the declaration, then the output of its call.
    const first = requestFor(text)!;
    const declared = (first.body.tools as Array<Record<string, unknown>>).find(
      (t) => t.name === "get_weather",
    );
    expect(declared).toEqual({
      type: "function",
      name: "get_weather",
      description: "The weather in a city.",
      strict: false,
      parameters: WEATHER.parameters,
    });
    const answered = f.mock
      .requests()
      .find((r) => r.functionCallOutputs().some((o) => o.output === "Sunny in Paris"));
    expect(answered).toBeDefined();

    // History: the call, then its output, then the reply.
    const history = await items(s.id);
    const call = history.find((i) => i.type === "function_call");
    const output = history.find((i) => i.type === "function_call_output");
    expect(call).toMatchObject({ name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" });
    expect(output).toMatchObject({
      call_id: (call as { call_id: string }).call_id,
      output: "Sunny in Paris",
      error: null,
    });
    expect(history.indexOf(output!)).toBeGreaterThan(history.indexOf(call!));
    const after = await client.beta.agents.sessions.retrieve(s.id);
    expect(after.status).toBe("idle");
    expect(after.required_actions).toEqual([]);
  });
});

type Action = {
  type: string;
  call_id?: string;
  action_id?: string;
  turn_id: string;
  name?: string;
  arguments?: string;
};

/** A session with the given tools, and a log of its stream opened before anything runs. */
async function sessionWith(tools: unknown[], extra: Record<string, unknown> = {}) {
  const s = await client.beta.agents.sessions.create({
    environment: { type: "none" },
    agent: { model: "mock-model", tools, ...extra } as never,
  });
  return { id: s.id, log: await EventLog.open(client, s.id) };
}

/** Waits for `agent.session.requires_action` listing `n` actions; returns them. */
async function requiredActions(log: EventLog, n = 1, from = 0): Promise<Action[]> {
  const e = await log.waitFor(
    (x) =>
      x.type === "agent.session.requires_action" && (x.session.required_actions as unknown[]).length >= n,
    `${n} required action(s)`,
    from,
  );
  return (e as { session: { required_actions: Action[] } }).session.required_actions;
}

const send = (sessionId: string, events: unknown[]) =>
  client.beta.agents.sessions.events.create(sessionId, { events: events as never });

const toolResult = (a: Action, fields: Record<string, unknown>) => ({
  type: "agent.session.input.tool_result",
  turn_id: a.turn_id,
  call_id: a.call_id,
  ...fields,
});

describe("function tools over HTTP, official dialect", () => {
  it("the call is an item first, then a required action (session requires_action); the answer continues the turn", async () => {
    const { id, log } = await sessionWith([WEATHER]);
    const text = 'Call the function get_weather with arguments {"city":"Oslo"}. Then reply with its output';
    await send(id, [messageEvent(text)]);
    const turnId = await log.turnCreated();
    const [action] = await requiredActions(log);
    expect(action).toEqual({
      type: "function_call",
      call_id: expect.any(String),
      name: "get_weather",
      arguments: '{"city":"Oslo"}',
      turn_id: turnId,
    });
    const added = log.events.findIndex(
      (e) => e.type === "agent.session.turn.item.added" && e.item.type === "function_call",
    );
    const requires = log.events.findIndex((e) => e.type === "agent.session.requires_action");
    expect(added).toBeGreaterThanOrEqual(0);
    expect(added).toBeLessThan(requires);
    const waiting = await client.beta.agents.sessions.retrieve(id);
    expect(waiting.status).toBe("requires_action");
    expect(waiting.required_actions).toEqual([action]);

    await send(id, [toolResult(action!, { success: true, output: "Rain in Oslo" })]);
    const { end } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.completed");
    const reply = log.events.find(
      (e) => e.type === "agent.session.turn.item.done" && e.item.type === "message" && e.turn_id === turnId,
    ) as { item: { content: Array<{ text: string }> } };
    expect(reply.item.content[0]!.text).toBe("Rain in Oslo");
    // After the answer: back in progress, the output item, the call done.
    const back = log.events.findIndex((e, i) => i > requires && e.type === "agent.session.in_progress");
    const outputAdded = log.events.findIndex(
      (e) => e.type === "agent.session.turn.item.added" && e.item.type === "function_call_output",
    );
    expect(back).toBeGreaterThan(requires);
    expect(outputAdded).toBeGreaterThan(back);
    const ended = await client.beta.agents.sessions.retrieve(id);
    expect(ended.required_actions).toEqual([]);
    await log.close();
  });

  it("two calls in one model response are two actions answered independently; the model gets both outputs", async () => {
    const { id, log } = await sessionWith([
      WEATHER,
      {
        type: "function",
        name: "get_time",
        description: "The time in a city.",
        parameters: { type: "object" },
      },
    ]);
    const text =
      'Call the functions get_weather with {"city":"Rome"} and get_time with {"city":"Rome"}. Then reply with its output';
    await send(id, [messageEvent(text)]);
    const turnId = await log.turnCreated();
    const actions = await requiredActions(log, 2);
    expect(actions.map((a) => a.name).sort()).toEqual(["get_time", "get_weather"]);
    const byName = (n: string) => actions.find((a) => a.name === n)!;
    // Answer the second one first, in its own request; the turn still waits for the other.
    await send(id, [toolResult(byName("get_time"), { success: true, output: "noon" })]);
    const one = await client.beta.agents.sessions.retrieve(id);
    expect(one.status).toBe("requires_action");
    expect((one.required_actions as Action[]).map((a) => a.name)).toEqual(["get_weather"]);
    await send(id, [toolResult(byName("get_weather"), { success: true, output: "warm" })]);
    const { end } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.completed");
    const next = f.mock
      .requests()
      .find((r) => r.functionCallOutputs().length >= 2 && r.lastUserText() === text)!;
    expect(next.functionCallOutputs().map((o) => o.output)).toEqual(["warm", "noon"]);
    await log.close();
  });

  it("unknown, answered-twice and wrong-turn results get the 400 the SDK retries on; failures and content reach the model", async () => {
    const { id, log } = await sessionWith([WEATHER]);
    const unknown = expectApiError(
      await rejection(
        send(id, [
          {
            type: "agent.session.input.tool_result",
            turn_id: "turn_x",
            call_id: "call_nope",
            success: true,
            output: "x",
          },
        ]),
      ),
      BadRequestError,
      400,
    );
    expect(unknown.error).toMatchObject({
      message: "Unknown pending tool call: call_nope",
      code: "invalid_request_error",
    });

    // A failed call: the model sees the error text, the output item carries it as error.
    const text =
      'Call the function get_weather with arguments {"city":"Nowhere"}. Then reply with its output';
    await send(id, [messageEvent(text)]);
    const turnId = await log.turnCreated();
    const [action] = await requiredActions(log);
    const wrongTurn = expectApiError(
      await rejection(
        send(id, [{ ...toolResult(action!, { success: true, output: "x" }), turn_id: "turn_other" }]),
      ),
      BadRequestError,
      400,
    );
    expect(wrongTurn.error).toMatchObject({ message: `Unknown pending tool call: ${action!.call_id}` });
    await send(id, [toolResult(action!, { success: false, error: "no such city" })]);
    const again = expectApiError(
      await rejection(send(id, [toolResult(action!, { success: true, output: "late" })])),
      BadRequestError,
      400,
    );
    expect(again.error).toMatchObject({ message: `Unknown pending tool call: ${action!.call_id}` });
    await log.waitForSettled(turnId);
    expect(
      f.mock.requests().some((r) => r.functionCallOutputs().some((o) => o.output === "no such city")),
    ).toBe(true);
    const out = (await items(id)).find((i) => i.type === "function_call_output");
    expect(out).toMatchObject({ output: null, error: "no such city" });

    // Content parts (text + image) and a JSON object as output.
    const text2 = 'Call the function get_weather with arguments {"city":"Lima"}. Then reply with its output';
    const from = log.events.length;
    await send(id, [messageEvent(text2)]);
    const [a2] = await requiredActions(log, 1, from);
    const image =
      "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    await send(id, [
      toolResult(a2!, {
        success: true,
        output: [
          { type: "input_text", text: "cloudy" },
          { type: "input_image", image_url: image },
        ],
      }),
    ]);
    const t2 = await log.turnCreated(1);
    await log.waitForSettled(t2);
    const outputOf = (r: CapturedRequest) =>
      r
        .inputItems()
        .find(
          (i) =>
            (i as { type?: string }).type === "function_call_output" &&
            (i as { call_id?: string }).call_id === a2!.call_id,
        ) as { output: unknown } | undefined;
    const raw = outputOf(f.mock.requests().find((r) => outputOf(r) !== undefined)!)!;
    expect(raw.output).toMatchObject([
      { type: "input_text", text: "cloudy" },
      { type: "input_image", image_url: image },
    ]);
    const outputs = (await items(id)).filter((i) => i.type === "function_call_output");
    expect(outputs.at(-1)).toMatchObject({
      output: [
        { type: "input_text", text: "cloudy" },
        { type: "input_image", image_url: image },
      ],
    });

    const text3 = 'Call the function get_weather with arguments {"city":"Kyiv"}. Then reply with its output';
    const from3 = log.events.length;
    await send(id, [messageEvent(text3)]);
    const [a3] = await requiredActions(log, 1, from3);
    await send(id, [toolResult(a3!, { success: true, output: { temp: 3, sky: "grey" } })]);
    const t3 = await log.turnCreated(2);
    await log.waitForSettled(t3);
    expect(
      f.mock
        .requests()
        .some((r) => r.functionCallOutputs().some((o) => o.output === '{"temp":3,"sky":"grey"}')),
    ).toBe(true);
    await log.close();
  });

  it("cancel while waiting: the turn is cancelled, the actions cleared, the session usable", async () => {
    const { id, log } = await sessionWith([WEATHER]);
    await send(id, [
      messageEvent(
        'Call the function get_weather with arguments {"city":"Bern"}. Then reply with its output',
      ),
    ]);
    const turnId = await log.turnCreated();
    const [action] = await requiredActions(log);
    await send(id, [{ type: "agent.session.input.cancel" }]);
    const { end, status } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.cancelled");
    expect(status.type).toBe("agent.session.idle");
    const s = await client.beta.agents.sessions.retrieve(id);
    expect(s.required_actions).toEqual([]);
    const late = expectApiError(
      await rejection(send(id, [toolResult(action!, { success: true, output: "late" })])),
      BadRequestError,
      400,
    );
    expect(late.error).toMatchObject({ message: `Unknown pending tool call: ${action!.call_id}` });
    const next = await client.beta.agents.sessions
      .stream(id, { input: "Reply with exactly: still here" })
      .finalResult();
    expect(next.output_text).toBe("still here");
    await log.close();
  });

  it("tool declarations are checked: built-in names, duplicates, async tools; function tools are fixed once the conversation started", async () => {
    for (const [tools, message] of [
      [
        [{ ...WEATHER, name: "exec_command" }],
        'Function tool "exec_command" has the name of one of the agent\'s built-in tools',
      ],
      [[WEATHER, WEATHER], 'Function tool "get_weather" is declared twice'],
      [[{ ...WEATHER, async: true }], 'Function tool "get_weather": async tools are not supported'],
      [[{ ...WEATHER, name: "bad name" }], "'tools[0].name' must be 1-128 characters"],
      [
        [{ type: "mcp", server_label: "x", transport: { type: "stdio", command: "sh" } }],
        "stdio MCP servers are disabled on this server",
      ],
      [[{ type: "code_interpreter" }], 'tools of type "code_interpreter" are not supported'],
    ] as const) {
      const err = expectApiError(
        await rejection(client.beta.agents.create({ model: "mock-model", tools: tools as never })),
        BadRequestError,
        400,
      );
      expect(err.message).toContain(message);
    }
    const s = await client.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: { model: "mock-model", tools: [WEATHER] },
    });
    // Before the first turn the tools may change; after it, function tools may not (MCP and web search may).
    await client.beta.agents.sessions.update(s.id, { agent: { tools: [{ ...WEATHER, description: "v2" }] } });
    await client.beta.agents.sessions.stream(s.id, { input: "Reply with exactly: started" }).finalResult();
    const fixed = expectApiError(
      await rejection(client.beta.agents.sessions.update(s.id, { agent: { tools: [] } })),
      BadRequestError,
      400,
    );
    expect(fixed.message).toContain("function tools cannot change once its conversation has started");
    const withSearch = await client.beta.agents.sessions.update(s.id, {
      agent: { tools: [{ ...WEATHER, description: "v2" }, { type: "web_search" }] },
    });
    expect(withSearch.agent.tools.map((t) => t.type)).toEqual(["function", "web_search"]);
  });
});

describe("the tool set follows the configuration", () => {
  it("no subagent tools or web search unless the agent enables them", async () => {
    const names = async (agent: Record<string, unknown>, text: string) => {
      const s = await client.beta.agents.sessions.create({
        environment: { type: "none" },
        agent: { model: "mock-model", ...agent } as never,
      });
      await client.beta.agents.sessions.stream(s.id, { input: text }).finalResult();
      return requestFor(text)!.toolNames();
    };
    const plain = await names({}, "Reply with exactly: plain tools");
    expect(plain).not.toContain("multi_agent_v1");
    expect(plain).not.toContain("web_search");
    expect(plain).toContain("exec_command");
    const both = await names(
      { multi_agent: { enabled: true, max_concurrent_subagents: 2 }, tools: [{ type: "web_search" }] },
      "Reply with exactly: all tools",
    );
    expect(both).toContain("multi_agent_v1");
    expect(both).toContain("web_search");
    const disabled = await names(
      { tools: [{ type: "web_search", mode: "disabled" }] },
      "Reply with exactly: no search",
    );
    expect(disabled).not.toContain("web_search");
  });
});

describe("function tools, template dialect", () => {
  it("the call arrives as an action on the stream and is answered at /actions/{id}; the output is an item", async () => {
    const body = {
      agent: { model: "mock-model", tools: [WEATHER] },
      input: 'Call the function get_weather with arguments {"city":"Quito"}. Then reply with its output',
      stream: true,
    };
    const res = await f.request("POST", "/v1/agents/sessions", body);
    expect(res.status).toBe(200);
    const sse = new SseReader(res);
    const upTo = await sse.until((e) => e.event === "agent.session.action.required", "action.required");
    const sessionId = String(upTo[0]!.data.id);
    const required = upTo.at(-1)!.data as {
      action: { id: string; type: string; name: string; arguments: string };
    };
    expect(required.action).toMatchObject({
      type: "function_call",
      name: "get_weather",
      arguments: '{"city":"Quito"}',
    });
    const call = upTo.find(
      (e) =>
        e.event === "agent.session.output_item.added" &&
        e.data.item &&
        (e.data.item as { type: string }).type === "function_call",
    );
    expect(call).toBeDefined();
    const waiting = await f.json<{ status: string; required_actions: unknown[] }>(
      "GET",
      `/v1/agents/sessions/${sessionId}`,
    );
    expect(waiting.body.status).toBe("requires_action");
    expect(waiting.body.required_actions).toHaveLength(1);

    const bad = await f.json("POST", `/v1/agents/sessions/${sessionId}/actions/call_nope`, { output: "x" });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: "Unknown pending tool call: call_nope", type: "ValueError" });
    const answered = await f.json<{ status: string; required_actions: unknown[] }>(
      "POST",
      `/v1/agents/sessions/${sessionId}/actions/${required.action.id}`,
      { output: "Cool in Quito" },
    );
    expect(answered.status).toBe(200);
    expect(answered.body.required_actions).toEqual([]);
    const rest = await sse.toEnd();
    const names = rest.map((e) => e.event);
    expect(names).toContain("agent.session.action.resolved");
    const output = rest.find(
      (e) =>
        e.event === "agent.session.output_item.done" &&
        (e.data.item as { type: string }).type === "function_call_output",
    );
    expect(output!.data.item as Record<string, unknown>).toMatchObject({
      output: "Cool in Quito",
      call_id: required.action.id,
    });
    const reply = rest.find(
      (e) =>
        e.event === "agent.session.output_item.done" &&
        (e.data.item as { type: string }).type === "agent_message",
    );
    expect((reply!.data.item as { text: string }).text).toBe("Cool in Quito");
    expect(names.at(-1)).toBe("agent.session.turn.completed");
  });
});

describe("MCP servers", () => {
  it("an HTTP server with authorization: allowed_tools filter, mcp_call item, start-up status; the secret never shows", async () => {
    const mcp = await startMcpHttpServer();
    const secret = "s3cret-token-value";
    try {
      const agent = await client.beta.agents.create({
        model: "mock-model",
        tools: [
          {
            type: "mcp",
            server_label: "demo server",
            transport: {
              type: "http",
              server_url: mcp.url,
              authorization: secret,
              headers: { "X-Team": "blue" },
            },
            allowed_tools: ["whoami", "echo"],
          },
        ] as never,
      });
      expect(JSON.stringify(agent)).not.toContain(secret);
      const tool = agent.tools[0] as unknown as Record<string, unknown>;
      expect(tool).toMatchObject({
        type: "mcp",
        server_label: "demo_server",
        allowed_tools: ["whoami", "echo"],
      });
      const s = await client.beta.agents.sessions.create({
        agent_id: agent.id,
        environment: { type: "none" },
      });
      const log = await EventLog.open(client, s.id);
      // (echo, not whoami: the secret must not come back through the tool's own output either.)
      const text =
        'Call the MCP tool echo on server demo_server with arguments {"text":"over MCP"}. Then reply with its output';
      const result = await client.beta.agents.sessions.stream(s.id, { input: text }).finalResult();
      expect(result.output_text).toBe("over MCP");
      const call = mcp.requests.find((r) => r.method === "tools/call")!;
      expect(call.headers.authorization).toBe(`Bearer ${secret}`);
      expect(call.headers["x-team"]).toBe("blue");
      // The model sees only the allowed tools of the server.
      const ns = (
        requestFor(text)!.body.tools as Array<{ name?: string; tools?: Array<{ name: string }> }>
      ).find((t) => t.name === "mcp__demo_server")!;
      expect(ns.tools!.map((t) => t.name).sort()).toEqual(["echo", "whoami"]);
      const history = await items(s.id);
      expect(history.find((i) => i.type === "mcp_call")).toMatchObject({
        server_label: "demo_server",
        name: "echo",
        arguments: { text: "over MCP" },
        status: "completed",
      });
      const status = await log.waitFor(
        (e) =>
          (e.type as string) === "agent.session.mcp_server.status" &&
          (e as unknown as { status: string }).status === "ready",
        "MCP server ready",
      );
      expect(status).toMatchObject({ server_label: "demo_server", error: null });
      // Nowhere to be read back: responses, the stream, the engine's state on disk.
      expect(JSON.stringify(await client.beta.agents.sessions.retrieve(s.id))).not.toContain(secret);
      for (const e of log.events) expect(JSON.stringify(e), e.type).not.toContain(secret);
      expect(filesContaining(join(f.dataDir, "codex-home"), secret)).toEqual([]);
      await log.close();
    } finally {
      await mcp.close();
    }
  });

  it("required: true fails the turn clearly when the server cannot start; a missing optional server is skipped", async () => {
    const gone = "http://127.0.0.1:9/mcp";
    const s = await client.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: {
        model: "mock-model",
        tools: [
          {
            type: "mcp",
            server_label: "must",
            transport: { type: "http", server_url: gone },
            required: true,
          },
        ],
      } as never,
    });
    const err = (await rejection(
      client.beta.agents.sessions.stream(s.id, { input: "Reply with exactly: never" }).finalResult(),
    )) as { turn?: { error?: { message: string } } };
    const turns = await client.beta.agents.sessions.turns.list(s.id);
    expect(turns.data[0]!.status).toBe("failed");
    expect(turns.data[0]!.error!.message).toContain("required MCP servers failed to initialize");
    expect(err).toBeDefined();

    const optional = await client.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: {
        model: "mock-model",
        tools: [{ type: "mcp", server_label: "maybe", transport: { type: "http", server_url: gone } }],
      } as never,
    });
    const ok = await client.beta.agents.sessions
      .stream(optional.id, { input: "Reply with exactly: fine without it" })
      .finalResult();
    expect(ok.output_text).toBe("fine without it");
  });

  it("template dialect: the seed's form (url at the top level, name as label) and an mcp_tool_call item", async () => {
    const mcp = await startMcpHttpServer();
    try {
      const res = await f.request("POST", "/v1/agents/sessions", {
        agent: {
          model: "mock-model",
          tools: [
            { type: "mcp", name: "seed.demo", url: mcp.url, headers: { Authorization: "Bearer seed" } },
            { type: "mcp", connector_id: "connector_x", server_label: "hosted" },
          ],
        },
        input:
          'Call the MCP tool echo on server seed_demo with arguments {"text":"from the template"}. Then reply with its output',
        stream: true,
      });
      const frames = await new SseReader(res).toEnd();
      const call = frames.find(
        (e) =>
          e.event === "agent.session.output_item.done" &&
          (e.data.item as { type: string }).type === "mcp_tool_call",
      );
      expect(call!.data.item).toMatchObject({
        server: "seed_demo",
        tool: "echo",
        status: "completed",
        arguments: { text: "from the template" },
      });
      expect(frames.at(-1)!.event).toBe("agent.session.turn.completed");
      expect(mcp.requests.find((r) => r.method === "tools/call")!.headers.authorization).toBe("Bearer seed");
      const sessionId = String(frames[0]!.data.id);
      const session = await f.json<{ tools: Array<Record<string, unknown>> }>(
        "GET",
        `/v1/agents/sessions/${sessionId}`,
      );
      expect(JSON.stringify(session.body.tools)).not.toContain("Bearer seed");
      expect(session.body.tools[1]).toEqual({
        type: "mcp",
        connector_id: "connector_x",
        server_label: "hosted",
      });
    } finally {
      await mcp.close();
    }
  });
});

describe("approvals (approval_policy, this server's extension)", () => {
  type Approval = {
    type: string;
    action_id: string;
    kind: string;
    message: string;
    details: Record<string, unknown>;
  };

  it("untrusted: a command waits for approval; approve runs it, deny declines it", async () => {
    const { id, log } = await sessionWith([], { approval_policy: "untrusted" });
    const session = await client.beta.agents.sessions.retrieve(id);
    expect((session.agent as unknown as { approval_policy: string }).approval_policy).toBe("untrusted");
    const workspace = await f.workspaceOf(id);

    await send(id, [
      messageEvent(
        "Run this exact shell command and wait for it to finish: touch approved.txt. Then reply with exactly: made it",
      ),
    ]);
    const t1 = await log.turnCreated();
    const [a1] = (await requiredActions(log)) as unknown as Approval[];
    expect(a1).toMatchObject({ type: "approval_request", kind: "command_execution" });
    expect(String(a1!.details.command)).toContain("touch approved.txt");
    expect(existsSync(join(workspace, "approved.txt"))).toBe(false);
    await send(id, [
      { type: "agent.session.input.approval_result", action_id: a1!.action_id, decision: "approve" },
    ]);
    const { end } = await log.waitForSettled(t1);
    expect(end.type).toBe("agent.session.turn.completed");
    expect(existsSync(join(workspace, "approved.txt"))).toBe(true);

    const from = log.events.length;
    await send(id, [
      messageEvent(
        "Run this exact shell command and wait for it to finish: touch denied.txt. Then reply with exactly: was refused",
      ),
    ]);
    const t2 = await log.turnCreated(1);
    const [a2] = (await requiredActions(log, 1, from)) as unknown as Approval[];
    await send(id, [
      { type: "agent.session.input.approval_result", action_id: a2!.action_id, decision: "deny" },
    ]);
    await log.waitForSettled(t2);
    expect(existsSync(join(workspace, "denied.txt"))).toBe(false);
    const cmd = (await items(id)).filter((i) => i.type === "command_execution").at(-1);
    expect(cmd).toMatchObject({ status: "failed" });
    // A decision for something else is refused like an unknown call.
    const err = expectApiError(
      await rejection(
        send(id, [
          { type: "agent.session.input.approval_result", action_id: a2!.action_id, decision: "approve" },
        ]),
      ),
      BadRequestError,
      400,
    );
    expect(err.message).toContain(`Unknown pending tool call: ${a2!.action_id}`);
    const bad = expectApiError(
      await rejection(
        send(id, [{ type: "agent.session.input.approval_result", action_id: "act_x", decision: "maybe" }]),
      ),
      BadRequestError,
      400,
    );
    expect(bad.message).toContain("decision' must be one of approve, approve_for_session, deny, cancel");
    await log.close();
  });

  it("untrusted: an MCP tool call is an approval request; template answers it at /actions/{id}", async () => {
    const mcp = await startMcpHttpServer();
    try {
      const res = await f.request("POST", "/v1/agents/sessions", {
        agent: {
          model: "mock-model",
          approval_policy: "untrusted",
          tools: [{ type: "mcp", server_label: "demo", url: mcp.url }],
        },
        input:
          'Call the MCP tool echo on server demo with arguments {"text":"approved call"}. Then reply with its output',
        stream: true,
      });
      const sse = new SseReader(res);
      const upTo = await sse.until((e) => e.event === "agent.session.action.required", "action.required");
      const sessionId = String(upTo[0]!.data.id);
      const action = (upTo.at(-1)!.data as { action: Record<string, unknown> }).action;
      expect(action).toMatchObject({ type: "approval_request", kind: "mcp_tool_call" });
      expect(action.details).toMatchObject({ server_label: "demo" });
      expect(mcp.requests.some((r) => r.method === "tools/call")).toBe(false);
      const answered = await f.json("POST", `/v1/agents/sessions/${sessionId}/actions/${String(action.id)}`, {
        decision: "approve",
      });
      expect(answered.status).toBe(200);
      const rest = await sse.toEnd();
      const reply = rest.find(
        (e) =>
          e.event === "agent.session.output_item.done" &&
          (e.data.item as { type: string }).type === "agent_message",
      );
      expect((reply!.data.item as { text: string }).text).toBe("approved call");
      expect(mcp.requests.some((r) => r.method === "tools/call")).toBe(true);
    } finally {
      await mcp.close();
    }
  });
});

describe("MCP elicitations (approval_policy on-request)", () => {
  it("an MCP server's question to the user is an approval request answered with content", async () => {
    const mcp = await startMcpHttpServer();
    try {
      const { id, log } = await sessionWith(
        [{ type: "mcp", server_label: "desk", transport: { type: "http", server_url: mcp.url } }],
        { approval_policy: "on-request" },
      );
      await send(id, [
        messageEvent(
          'Call the MCP tool ask on server desk with arguments {"question":"Favourite colour?"}. Then reply with its output',
        ),
      ]);
      const turnId = await log.turnCreated();
      type Approval = { action_id: string; kind: string; message: string; details: Record<string, unknown> };
      // The tool call itself may be asked about first (MCP calls ask under a policy that asks): approve it.
      let seen = 0;
      let question: Approval | undefined;
      while (!question) {
        const e = await log.waitFor(
          (x) => x.type === "agent.session.requires_action",
          "an approval request",
          seen,
        );
        seen = log.events.indexOf(e) + 1;
        const [a] = (e as unknown as { session: { required_actions: Approval[] } }).session.required_actions;
        if (!a) continue;
        if (a.kind === "mcp_elicitation") question = a;
        else {
          expect(a.kind).toBe("mcp_tool_call");
          await send(id, [
            { type: "agent.session.input.approval_result", action_id: a.action_id, decision: "approve" },
          ]);
        }
      }
      expect(question.message).toBe("Favourite colour?");
      expect(question.details).toMatchObject({ server_label: "desk", mode: "form" });
      await send(id, [
        {
          type: "agent.session.input.approval_result",
          action_id: question.action_id,
          decision: "approve",
          content: { answer: "blue" },
        },
      ]);
      const { end } = await log.waitForSettled(turnId);
      expect(end.type).toBe("agent.session.turn.completed");
      const reply = (await items(id)).filter((i) => i.type === "message").at(-1) as {
        content: Array<{ text: string }>;
      };
      expect(reply.content[0]!.text).toBe("answer: blue");
      await log.close();
    } finally {
      await mcp.close();
    }
  });
});

// This server is this host's node running the testkit's script, which a session's container does not have: the local
// backend's test. On the container backend a stdio server runs in the session's container
// (test/domain/sandboxes/container-sessions.external.test.ts).
describe.skipIf(onContainerBackend)("with stdio MCP allowed, one thread per engine", () => {
  let g: ServerFixture;
  let c: OpenAI;
  beforeAll(async () => {
    g = await startServer({ args: ["--allow-mcp-stdio"], env: { AGENT_MAX_THREADS_PER_ENGINE: "1" } });
    c = sdk(g);
  });
  afterAll(async () => {
    await g?.close();
  });

  it("a stdio MCP server gets its environment; its values are never shown", async () => {
    const s = await c.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: {
        model: "mock-model",
        tools: [
          {
            type: "mcp",
            server_label: "local",
            transport: {
              type: "stdio",
              command: process.execPath,
              args: [mcpStdioServerPath],
              env: { MCP_SECRET: "stdio-secret" },
            },
          },
        ],
      } as never,
    });
    expect(JSON.stringify(s)).not.toContain("stdio-secret");
    const r = await c.beta.agents.sessions
      .stream(s.id, {
        input: "Call the MCP tool whoami on server local with arguments {}. Then reply with its output",
      })
      .finalResult();
    expect(r.output_text).toBe("stdio-secret");
  });

  it("an engine with a turn waiting for a tool result is not recycled while other sessions come and go", async () => {
    const waiting = await c.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: { model: "mock-model", tools: [WEATHER] },
    });
    const log = await EventLog.open(c, waiting.id);
    await c.beta.agents.sessions.events.create(waiting.id, {
      events: [
        messageEvent(
          'Call the function get_weather with arguments {"city":"Lyon"}. Then reply with its output',
        ),
      ],
    });
    const turnId = await log.turnCreated();
    const e = await log.waitFor((x) => x.type === "agent.session.requires_action", "requires_action");
    const action = (e as { session: { required_actions: Action[] } }).session.required_actions[0]!;
    const pid = g.service.core.engines.stats()[0]!.pid;
    // Two more threads on the only engine (more than the one it may hold): it would be recycled if idle.
    for (const text of ["Reply with exactly: other one", "Reply with exactly: other two"]) {
      const other = await c.beta.agents.sessions.create({ environment: { type: "none" } });
      await c.beta.agents.sessions.stream(other.id, { input: text }).finalResult();
    }
    expect(g.service.core.engines.stats()[0]!.pid).toBe(pid);
    await c.beta.agents.sessions.events.create(waiting.id, {
      events: [
        {
          type: "agent.session.input.tool_result",
          turn_id: turnId,
          call_id: action.call_id!,
          success: true,
          output: "mild",
        },
      ],
    });
    const { end } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.completed");
    await log.close();
  });
});

describe("a restart while a turn waits for a tool result", () => {
  it("fails the turn with required_action_lost; the session is usable", async () => {
    let g = await startServer();
    const dataDir = g.dataDir;
    try {
      const c = sdk(g);
      const s = await c.beta.agents.sessions.create({
        environment: { type: "none" },
        agent: { model: "mock-model", tools: [WEATHER] },
      });
      const log = await EventLog.open(c, s.id);
      await c.beta.agents.sessions.events.create(s.id, {
        events: [
          messageEvent(
            'Call the function get_weather with arguments {"city":"Riga"}. Then reply with its output',
          ),
        ],
      });
      await log.waitFor((x) => x.type === "agent.session.requires_action", "requires_action");
      await log.close();
      await g.close({ keepData: true });
      g = await startServer({ dataDir });
      const c2 = sdk(g);
      const after = await c2.beta.agents.sessions.retrieve(s.id);
      expect(after.status).toBe("idle");
      expect(after.required_actions).toEqual([]);
      const [turn] = (await c2.beta.agents.sessions.turns.list(s.id)).data;
      expect(turn!.status).toBe("failed");
      expect(turn!.error!.message).toContain("cannot keep a pending tool call or approval across a restart");
      expect((await g.service.core.store.getTurn(s.id, turn!.id))!.error!.code).toBe("required_action_lost");
      const again = await c2.beta.agents.sessions
        .stream(s.id, { input: "Reply with exactly: back again" })
        .finalResult();
      expect(again.output_text).toBe("back again");
    } finally {
      await g.close();
      cleanupDir(dataDir);
    }
  });
});

describe("a crash while a turn waits for a tool result", () => {
  it("recovery fails the turn with required_action_lost and clears the actions", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cas-tools-kill-"));
    const dataDir = join(dir, "data");
    let cli: CliServer | undefined;
    let restarted: ServerFixture | undefined;
    let engines: number[] = [];
    try {
      cli = await startCliServer(dataDir);
      const official = { "content-type": "application/json", "openai-beta": "agents=v1" };
      const created = await fetch(`${cli.url}/v1/agents/sessions`, {
        method: "POST",
        headers: official,
        body: JSON.stringify({
          environment: { type: "none" },
          agent: { model: "mock-model", tools: [WEATHER] },
          input: 'Call the function get_weather with arguments {"city":"Turin"}. Then reply with its output',
        }),
      });
      expect(created.status).toBe(200);
      const id = ((await created.json()) as { id: string }).id;
      await waitFor(
        async () => {
          const s = await fetch(`${cli!.url}/v1/agents/sessions/${id}`, { headers: official });
          return ((await s.json()) as { status: string }).status === "requires_action";
        },
        20_000,
        "requires_action",
      );
      engines = descendantPids(cli.pid);
      cli.child.kill("SIGKILL");
      await cli.exited;
      // The orphaned engine loses its client and exits; it must be gone before a new one opens its state.
      await waitFor(() => engines.every((pid) => !isAlive(pid)), 20_000, "the orphaned engine to exit");

      restarted = await startServer({ dataDir });
      const { store } = restarted.service.core;
      const session = (await store.getSession(id))!;
      expect(session).toMatchObject({ status: "idle", required_actions: [], active_turn_id: null });
      const [turn] = (await store.listTurns(id, { order: "asc", limit: 10 })).data;
      expect(turn!.status).toBe("failed");
      expect(turn!.error).toMatchObject({ code: "required_action_lost" });
      expect(turn!.error!.message).toContain("The server stopped while this turn was running.");
      const again = await sdk(restarted)
        .beta.agents.sessions.stream(id, { input: "Reply with exactly: recovered" })
        .finalResult();
      expect(again.output_text).toBe("recovered");
    } finally {
      if (cli && cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill("SIGKILL");
      for (const pid of engines) if (isAlive(pid)) process.kill(pid, "SIGKILL");
      await restarted?.close({ keepData: true });
      cleanupDir(dir);
    }
  });
});

/** Files under `dir` whose content contains `needle`. */
function filesContaining(dir: string, needle: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) found.push(...filesContaining(path, needle));
    else if (st.size < 50 * 1024 * 1024 && readFileSync(path).includes(needle)) found.push(path);
  }
  return found;
}
