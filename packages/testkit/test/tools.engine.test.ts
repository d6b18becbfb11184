/**
 * The scripted model's tool directives against the real engine: client function tools (dynamicTools),
 * MCP servers over streamable HTTP and stdio (the real @modelcontextprotocol/sdk server), sub-agents.
 * One engine for the whole file (the CI machine has 2 cores).
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type McpHttpServer,
  type MockEnvironment,
  mcpStdioServerPath,
  scriptedModel,
  startMcpHttpServer,
  startMockEnvironment,
} from "../src/index.js";
import { AppServerProcess, findCodexBinary, type RpcMessage } from "./helpers.js";

const bin = findCodexBinary();

type Item = Record<string, unknown> & { type: string; id: string };

describe("tool directives against the real engine", () => {
  // The pinned binary comes with `npm ci` (@openai/codex): missing is a broken install, not a reason to skip.
  beforeAll(() => {
    if (!bin) throw new Error("the pinned Codex binary (@openai/codex) is missing: run npm ci");
  });
  let env: MockEnvironment;
  let engine: AppServerProcess;
  let mcp: McpHttpServer;
  const toolAnswers = new Map<string, string>();

  beforeAll(async () => {
    if (!existsSync(mcpStdioServerPath))
      throw new Error(`${mcpStdioServerPath} is missing: run \`npx tsc -b\``);
    env = await startMockEnvironment({ fallback: scriptedModel() });
    mcp = await startMcpHttpServer();
    engine = new AppServerProcess(bin!, env.home.env, (method, params) => {
      if (method !== "item/tool/call") throw new Error(`unexpected ${method}`);
      const text = toolAnswers.get(String(params.tool)) ?? `no answer for ${String(params.tool)}`;
      return { contentItems: [{ type: "inputText", text }], success: true };
    });
    await engine.initialize();
  });

  afterAll(async () => {
    await engine?.close();
    await mcp?.close();
    await env?.close();
  });

  const startThread = async (extra: Record<string, unknown> = {}) =>
    (await engine.request<{ thread: { id: string } }>("thread/start", { cwd: env.home.workspace, ...extra }))
      .thread.id;

  /** Runs a turn; returns the completed turn, its completed items (from notifications) and last reply. */
  async function turn(threadId: string, text: string) {
    const done = await engine.runTurn(threadId, text);
    const items = engine.notifications
      .filter(
        (n) =>
          n.method === "item/completed" && n.params?.threadId === threadId && n.params?.turnId === done.id,
      )
      .map((n) => n.params!.item as Item);
    const reply = items.filter((i) => i.type === "agentMessage").at(-1)?.text;
    return { done, items, reply };
  }

  const toolCalls = (threadId: string): RpcMessage[] =>
    engine.serverRequests.filter((r) => r.method === "item/tool/call" && r.params?.threadId === threadId);

  const lookupTool = {
    type: "function",
    name: "lookup",
    description: "Looks a word up.",
    inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  };

  it("function directive: the engine asks the client (item/tool/call), then the model replies", async () => {
    toolAnswers.set("lookup", "a small dog");
    const threadId = await startThread({
      dynamicTools: [lookupTool, { ...lookupTool, name: "define", description: "Defines a word." }],
    });
    const first = await turn(
      threadId,
      'Call the function lookup with arguments {"q": "pug"}. Then reply with exactly: looked up',
    );
    expect(first.done.status).toBe("completed");
    expect(first.reply).toBe("looked up");
    expect(toolCalls(threadId).map((r) => r.params)).toEqual([
      expect.objectContaining({
        tool: "lookup",
        arguments: { q: "pug" },
        callId: expect.stringMatching(/^call_mock_fn_/),
      }),
    ]);
    expect(first.items.find((i) => i.type === "dynamicToolCall")).toMatchObject({
      tool: "lookup",
      status: "completed",
      success: true,
    });

    // what the model saw: the declaration, then our call and the client's output
    const reqs = env.mock.requests(threadId);
    const declared = (reqs[0]!.body.tools as Array<Record<string, unknown>>).find((t) => t.name === "lookup");
    expect(declared).toEqual({
      type: "function",
      name: "lookup",
      description: "Looks a word up.",
      strict: false,
      parameters: lookupTool.inputSchema,
    });
    expect(reqs.at(-1)!.functionCallOutputs().at(-1)).toMatchObject({ output: "a small dog" });

    const second = await turn(
      threadId,
      'call the function lookup with arguments {"q":"cat"}. Then reply with its output',
    );
    expect(second.reply).toBe("a small dog");

    toolAnswers.set("define", "a word");
    const both = await turn(
      threadId,
      'Call the functions lookup with {"q":"x"} and define with {"q":"y"}. Then reply with its output',
    );
    expect(both.reply).toBe("a small dog\na word");
    const bothRequests = env.mock.requests(threadId).slice(-2);
    // both calls came in ONE model response: one request made them, the next holds both outputs
    expect(
      bothRequests[1]!
        .functionCalls()
        .slice(-2)
        .map((c) => c.name),
    ).toEqual(["lookup", "define"]);
    expect(
      bothRequests[1]!
        .functionCallOutputs()
        .slice(-2)
        .map((o) => o.output),
    ).toEqual(["a small dog", "a word"]);
    // the engine runs both at once: their client requests arrive in either order
    expect(
      toolCalls(threadId)
        .slice(-2)
        .map((r) => String(r.params?.tool))
        .sort(),
    ).toEqual(["define", "lookup"]);
  });

  it("MCP directive over streamable HTTP: the call runs without a prompt and the header reaches the server", async () => {
    const threadId = await startThread({
      config: {
        mcp_servers: {
          demo: {
            url: mcp.url,
            http_headers: { Authorization: "Bearer t" },
            default_tools_approval_mode: "approve",
          },
        },
      },
    });
    const echo = await turn(
      threadId,
      'Call the MCP tool echo on server demo with arguments {"text":"hello mcp"}. Then reply with its output',
    );
    expect(echo.done.status).toBe("completed");
    expect(echo.reply).toBe("hello mcp");
    expect(echo.items.find((i) => i.type === "mcpToolCall")).toMatchObject({
      server: "demo",
      tool: "echo",
      status: "completed",
      arguments: { text: "hello mcp" },
      result: { content: [{ type: "text", text: "hello mcp" }] },
    });

    const who = await turn(
      threadId,
      "Call the MCP tool whoami on server demo with arguments {}. Then reply with its output",
    );
    expect(who.reply).toBe("Bearer t");
    const calls = mcp.requests.filter((r) => r.method === "tools/call");
    expect(calls.map((r) => (r.params as { name: string }).name)).toEqual(["echo", "whoami"]);
    expect(calls.every((r) => r.headers.authorization === "Bearer t")).toBe(true);
    expect(mcp.requests.map((r) => r.method)).toEqual(expect.arrayContaining(["initialize", "tools/list"]));

    const failed = await turn(
      threadId,
      "Call the MCP tool fail on server demo with arguments {}. Then reply with exactly: it failed",
    );
    expect(failed.reply).toBe("it failed");
    expect(failed.items.find((i) => i.type === "mcpToolCall")).toMatchObject({
      tool: "fail",
      status: "failed",
    });

    const add = await turn(
      threadId,
      'Call the MCP tool add on server demo with arguments {"a": 2, "b": 40}. Then reply with its output',
    );
    expect(add.reply).toBe("42");

    // the model-visible declaration: a namespace `mcp__demo` holding the server's tools
    const ns = (env.mock.requests(threadId)[0]!.body.tools as Array<Record<string, unknown>>).find(
      (t) => t.name === "mcp__demo",
    );
    expect(ns).toMatchObject({ type: "namespace", name: "mcp__demo" });
    expect((ns!.tools as Array<{ name: string }>).map((t) => t.name).sort()).toEqual([
      "add",
      "ask",
      "echo",
      "fail",
      "whoami",
    ]);
    expect(engine.serverRequests.filter((r) => r.params?.threadId === threadId)).toEqual([]);
  });

  it("MCP directive over stdio (node dist/mcp-stdio.js): env reaches the server", async () => {
    const threadId = await startThread({
      config: {
        mcp_servers: {
          local: {
            command: process.execPath,
            args: [mcpStdioServerPath],
            env: { MCP_SECRET: "s3cret" },
            default_tools_approval_mode: "approve",
            // The thread waits for it (otherwise a first turn waits about 1 s, then runs without its tools: a node
            // process can take longer to start on a busy machine).
            required: true,
          },
        },
      },
    });
    const who = await turn(
      threadId,
      "Call the MCP tool whoami on server local with arguments {}. Then reply with its output",
    );
    expect(who.done.status).toBe("completed");
    expect(who.reply).toBe("s3cret");
    expect(who.items.find((i) => i.type === "mcpToolCall")).toMatchObject({
      server: "local",
      tool: "whoami",
      status: "completed",
    });
    const echo = await turn(
      threadId,
      'Call the MCP tool echo on server local with arguments {"text":"via stdio"}. Then reply with exactly: echoed',
    );
    expect(echo.reply).toBe("echoed");
  });

  it("spawn directive: a sub-agent runs its own message through the same directives; the parent waits for it", async () => {
    const threadId = await startThread();
    const parent = await turn(
      threadId,
      "Spawn a subagent with the message: Reply with exactly: child says hi. Then reply with exactly: spawned",
    );
    expect(parent.done.status).toBe("completed");
    expect(parent.items.filter((i) => i.type === "agentMessage").map((i) => i.text)).toEqual(["spawned"]);
    const last = env.mock.requests(threadId).at(-1)!;
    expect(last.functionCalls().map((c) => [c.namespace, c.name])).toEqual([
      ["multi_agent_v1", "spawn_agent"],
      ["multi_agent_v1", "wait_agent"],
    ]);
    expect(last.functionCalls()[0]!.arguments).toBe('{"message":"Reply with exactly: child says hi"}');
    const childId = (JSON.parse(last.functionCallOutputs()[0]!.output) as { agent_id: string }).agent_id;
    expect(childId).not.toBe(threadId);
    expect(parent.items.filter((i) => i.type === "collabAgentToolCall").map((i) => i.tool)).toEqual([
      "spawnAgent",
      "wait",
    ]);

    // the child's own request: its last user message is the message; routed by its own thread id
    const [childReq] = env.mock.requests(childId);
    expect(childReq!.lastUserMessageText()).toBe("Reply with exactly: child says hi");
    expect(childReq!.promptCacheKey).toBe(threadId);
    expect(childReq!.toolNames()).not.toContain("multi_agent_v1");
    const childReply = engine.notifications.find(
      (m) =>
        m.method === "item/completed" &&
        m.params?.threadId === childId &&
        (m.params.item as Item).type === "agentMessage",
    );
    expect((childReply!.params!.item as Item).text).toBe("child says hi");

    // "its output": the child's final message (from wait_agent). Children do NOT get the parent's
    // function tools (the engine answers the child's call itself) but do get its MCP servers.
    const withTools = await startThread({
      dynamicTools: [lookupTool],
      config: { mcp_servers: { demo: { url: mcp.url, default_tools_approval_mode: "approve" } } },
    });
    const relay = await turn(
      withTools,
      'Spawn a subagent with the message: Call the function lookup with arguments {"q":"kid"}. Then reply with its output. Then reply with its output',
    );
    expect(relay.reply).toBe("unsupported call: lookup");
    expect(toolCalls(withTools)).toEqual([]);
    const viaMcp = await turn(
      withTools,
      'Spawn a subagent with the message: Call the MCP tool echo on server demo with arguments {"text":"from the child"}. Then reply with its output. Then reply with its output',
    );
    expect(viaMcp.reply).toBe("from the child");
  });
});
