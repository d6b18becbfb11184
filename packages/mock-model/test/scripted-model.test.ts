import { describe, expect, it } from "vitest";
import { CapturedRequest, type ResponseScript, type SseEvent, scriptedModel } from "../src/index.js";
import {
  functionCall,
  functionCallOutput,
  GOAL_PROMPT,
  goalObjectiveItem,
  prelude,
  requestBody,
  userMessage,
} from "./fixtures.js";

const request = (input: unknown[]) => CapturedRequest.fromBody(requestBody(input));

function events(script: ResponseScript): SseEvent[] {
  if (script.kind !== "sse") throw new Error(`expected an SSE script, got ${script.kind}`);
  return script.events;
}

function text(script: ResponseScript): string | undefined {
  const done = events(script).find(
    (e) => e.type === "response.output_item.done" && (e.item as { type: string }).type === "message",
  );
  return (done?.item as { content: Array<{ text: string }> } | undefined)?.content[0]?.text;
}

function call(script: ResponseScript): { call_id: string; name: string; arguments: string } | undefined {
  const done = events(script).find(
    (e) => e.type === "response.output_item.done" && (e.item as { type: string }).type === "function_call",
  );
  return done?.item as { call_id: string; name: string; arguments: string } | undefined;
}

interface CallItem {
  call_id: string;
  name: string;
  namespace?: string;
  arguments: string;
}

function calls(script: ResponseScript): CallItem[] {
  return events(script)
    .filter(
      (e) => e.type === "response.output_item.done" && (e.item as { type: string }).type === "function_call",
    )
    .map((e) => e.item as CallItem);
}

/** The request after the engine ran `made` and answered each call with `outputs[i]`. */
function answered(input: unknown[], made: CallItem[], outputs: unknown[]) {
  return request([
    ...input,
    ...made.map((c) => ({ type: "function_call", ...c })),
    ...made.map((c, i) => functionCallOutput(c.call_id, outputs[i])),
  ]);
}

describe("scriptedModel", () => {
  it("reply with exactly: X (case-insensitive, rest of the message)", () => {
    const model = scriptedModel();
    expect(
      text(model(request([...prelude, userMessage("Please REPLY WITH EXACTLY:   Hello, world.  ")]))),
    ).toBe("Hello, world.");
    expect(text(model(request([...prelude, userMessage("Reply with exactly: line one\nline two")])))).toBe(
      "line one\nline two",
    );
  });

  it("reads only the last user message", () => {
    const model = scriptedModel();
    const req = request([...prelude, userMessage("reply with exactly: old"), userMessage("something else")]);
    expect(text(model(req))).toBe("OK: something else");
  });

  it("streams the reply as deltas and reports non-zero usage", () => {
    const script = scriptedModel()(request([...prelude, userMessage("reply with exactly: a b c")]));
    const evs = events(script);
    expect(evs.map((e) => e.type)).toEqual([
      "response.created",
      "response.output_item.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(evs.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta)).toEqual([
      "a ",
      "b ",
      "c",
    ]);
    const usage = (evs.at(-1)!.response as { usage: { input_tokens: number; total_tokens: number } }).usage;
    expect(usage.input_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(15);
  });

  it("default reply and custom defaultReply", () => {
    const long = `${"x".repeat(70)}`;
    expect(text(scriptedModel()(request([...prelude, userMessage(`  ${long}  `)])))).toBe(
      `OK: ${"x".repeat(60)}`,
    );
    const custom = scriptedModel({ defaultReply: (t) => `echo ${t}` });
    expect(text(custom(request([...prelude, userMessage("hi")])))).toBe("echo hi");
  });

  it("shell directive: exec_command call first, then the reply once its output is present", () => {
    const model = scriptedModel();
    const directive =
      "Run this exact shell command and wait for it to finish: echo hi > a.txt. Then reply with exactly: done!";
    const input = [...prelude, userMessage(directive)];
    const first = call(model(request(input)));
    expect(first).toBeDefined();
    expect(first!.name).toBe("exec_command");
    expect(JSON.parse(first!.arguments)).toEqual({
      cmd: "echo hi > a.txt",
      login: false,
      yield_time_ms: 30_000,
    });
    expect(first!.call_id).toMatch(/^call_mock_exec_/);
    // deterministic
    expect(call(model(request(input)))!.call_id).toBe(first!.call_id);

    const followUp = request([
      ...input,
      functionCall(first!.call_id, "exec_command", JSON.parse(first!.arguments)),
      functionCallOutput(first!.call_id, "Process exited with code 0\nOutput:\n"),
    ]);
    expect(text(model(followUp))).toBe("done!");

    // an earlier turn's output for the same command does not count
    const nextTurn = request([
      ...followUp.inputItems(),
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "done!" }] },
      userMessage(directive),
    ]);
    expect(call(model(nextTurn))?.name).toBe("exec_command");
  });

  it("shell directive without a reply part", () => {
    const model = scriptedModel();
    const input = [
      ...prelude,
      userMessage("run this exact shell command and wait for it to finish: touch b.txt."),
    ];
    const c = call(model(request(input)))!;
    expect(JSON.parse(c.arguments).cmd).toBe("touch b.txt");
    const done = request([
      ...input,
      functionCall(c.call_id, c.name, {}),
      functionCallOutput(c.call_id, "ok"),
    ]);
    expect(text(model(done))).toBe("Done.");
  });

  it("goal prompt as last user message: update_goal complete, then a final reply", () => {
    const model = scriptedModel();
    const input = [
      ...prelude,
      goalObjectiveItem("Ship it"),
      userMessage(GOAL_PROMPT),
      userMessage("reply with exactly: started"),
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "started" }] },
      goalObjectiveItem("Ship it"),
      userMessage(GOAL_PROMPT),
    ];
    const c = call(model(request(input)))!;
    expect(c.name).toBe("update_goal");
    expect(JSON.parse(c.arguments)).toEqual({ status: "complete" });
    const after = request([
      ...input,
      functionCall(c.call_id, "update_goal", {}),
      functionCallOutput(c.call_id, "{}"),
    ]);
    expect(text(model(after))).toBe("Goal complete.");
  });

  it("the user's message in the first goal request still follows directives", () => {
    const req = request([
      ...prelude,
      goalObjectiveItem("Ship it"),
      userMessage(GOAL_PROMPT),
      userMessage("reply with exactly: started"),
    ]);
    expect(text(scriptedModel()(req))).toBe("started");
  });

  it("goal objective directives: mark the goal as blocked / keep the goal active", () => {
    const blocked = request([
      ...prelude,
      goalObjectiveItem("Try it; mark the goal as blocked"),
      userMessage(GOAL_PROMPT),
    ]);
    expect(JSON.parse(call(scriptedModel()(blocked))!.arguments)).toEqual({ status: "blocked" });
    const active = request([
      ...prelude,
      goalObjectiveItem("Please keep the goal active"),
      userMessage(GOAL_PROMPT),
    ]);
    const script = scriptedModel()(active);
    expect(call(script)).toBeUndefined();
    expect(text(script)).toBe("Working on: Please keep the goal active");
  });

  it("function directive: one call with the JSON text as written, then the reply", () => {
    const model = scriptedModel();
    const input = [
      ...prelude,
      userMessage(
        'Call the function lookup with arguments {"q": "a. b {c}", "n": [1, 2]}. Then reply with exactly: found it',
      ),
    ];
    const first = calls(model(request(input)));
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ name: "lookup", arguments: '{"q": "a. b {c}", "n": [1, 2]}' });
    expect(first[0]!.namespace).toBeUndefined();
    expect(first[0]!.call_id).toMatch(/^call_mock_fn_\d+_0_[0-9a-f]{8}$/);
    expect(calls(model(request(input)))[0]!.call_id).toBe(first[0]!.call_id);
    expect(text(model(answered(input, first, ["whatever"])))).toBe("found it");
  });

  it("function directive: 'Then reply with its output', namespaces, and no Then part", () => {
    const model = scriptedModel();
    const input = [
      ...prelude,
      userMessage("call the function lookup with arguments {}. Then reply with its output."),
    ];
    const c = calls(model(request(input)));
    expect(text(model(answered(input, c, ["plain string output"])))).toBe("plain string output");
    const parts = [
      { type: "input_text", text: "line 1" },
      { type: "input_image", image_url: "x" },
      { type: "input_text", text: "line 2" },
    ];
    expect(text(model(answered(input, c, [parts])))).toBe("line 1\nline 2");

    const ns = [...prelude, userMessage('Call the function find in namespace tools with arguments {"a":1}')];
    const nc = calls(model(request(ns)));
    expect(nc[0]).toMatchObject({ name: "find", namespace: "tools", arguments: '{"a":1}' });
    expect(text(model(answered(ns, nc, ["x"])))).toBe("Done.");
  });

  it("functions directive: every call in one response; the reply once all outputs are present", () => {
    const model = scriptedModel();
    const input = [
      ...prelude,
      userMessage(
        'Call the functions first with {"n": 1} and second with arguments {"n": 2}. Then reply with its output',
      ),
    ];
    const made = calls(model(request(input)));
    expect(made.map((c) => [c.name, c.arguments])).toEqual([
      ["first", '{"n": 1}'],
      ["second", '{"n": 2}'],
    ]);
    expect(new Set(made.map((c) => c.call_id)).size).toBe(2);
    expect(calls(model(answered(input, made.slice(0, 1), ["one"])))).toHaveLength(2);
    expect(text(model(answered(input, made, ["one", "two"])))).toBe("one\ntwo");

    const three = [
      ...prelude,
      userMessage("call the functions a with {}, b with {} and c with {}. Then reply with exactly: ok"),
    ];
    const made3 = calls(model(request(three)));
    expect(made3.map((c) => c.name)).toEqual(["a", "b", "c"]);
    expect(text(model(answered(three, made3, ["", "", ""])))).toBe("ok");
  });

  it("MCP directive: a call in namespace mcp__LABEL; its output without the engine's wall-time preamble", () => {
    const model = scriptedModel();
    const input = [
      ...prelude,
      userMessage(
        'Call the MCP tool echo on server demo with arguments {"text":"hi"}. Then reply with its output',
      ),
    ];
    const made = calls(model(request(input)));
    expect(made).toEqual([
      {
        type: "function_call",
        call_id: expect.stringMatching(/^call_mock_mcp_/),
        name: "echo",
        namespace: "mcp__demo",
        arguments: '{"text":"hi"}',
      },
    ]);
    const output = [
      { type: "input_text", text: "Wall time: 0.0058 seconds\nOutput:" },
      { type: "input_text", text: "hi" },
    ];
    expect(text(model(answered(input, made, [output])))).toBe("hi");
  });

  it("spawn directive: spawn_agent {message}, then wait_agent for the child, then the reply", () => {
    const model = scriptedModel();
    const message =
      "Run this exact shell command and wait for it to finish: ls. Then reply with exactly: listed";
    const input = [
      ...prelude,
      userMessage(`Spawn a subagent with the message: ${message}. Then reply with exactly: spawned`),
    ];
    const made = calls(model(request(input)));
    expect(made).toEqual([
      {
        type: "function_call",
        call_id: expect.stringMatching(/^call_mock_spawn_/),
        name: "spawn_agent",
        namespace: "multi_agent_v1",
        arguments: JSON.stringify({ message }),
      },
    ]);
    const spawned = answered(input, made, ['{"agent_id":"child-1","nickname":"N"}']);
    const wait = calls(model(spawned));
    expect(wait).toEqual([
      {
        type: "function_call",
        call_id: expect.stringMatching(/^call_mock_wait_/),
        name: "wait_agent",
        namespace: "multi_agent_v1",
        arguments: JSON.stringify({ targets: ["child-1"], timeout_ms: 600_000 }),
      },
    ]);
    const waitOutput = '{"status":{"child-1":{"completed":"listed"}},"timed_out":false}';
    const waited = answered(spawned.inputItems(), wait, [waitOutput]);
    expect(text(model(waited))).toBe("spawned");
    // the engine appends the child's completion notice as a user message: still the same directive
    const notice = userMessage(
      '<subagent_notification>\n{"agent_path":"child-1","status":{"completed":"listed"}}\n</subagent_notification>',
    );
    expect(text(model(request([...waited.inputItems(), notice])))).toBe("spawned");
    // …and once the reply was given, a late notice gets an empty response
    const late = model(
      request([
        ...waited.inputItems(),
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "spawned" }] },
        notice,
      ]),
    );
    expect(events(late).map((e) => e.type)).toEqual(["response.created", "response.completed"]);

    // "its output" is the child's final message; the child's own request follows the directives
    const withOutput = [
      ...prelude,
      userMessage("Spawn a subagent with the message: hi. Then reply with its output"),
    ];
    const s1 = calls(model(request(withOutput)));
    const r1 = answered(withOutput, s1, ['{"agent_id":"child-1"}']);
    const w1 = calls(model(r1));
    expect(text(model(answered(r1.inputItems(), w1, [waitOutput])))).toBe("listed");
    expect(calls(model(request([...prelude, userMessage(message)])))[0]!.name).toBe("exec_command");
  });

  it("directives without a parsable JSON object fall through to the others", () => {
    const model = scriptedModel();
    expect(
      text(
        model(
          request([
            ...prelude,
            userMessage("Call the function f with arguments {oops. Reply with exactly: no"),
          ]),
        ),
      ),
    ).toBe("no");
  });
});
