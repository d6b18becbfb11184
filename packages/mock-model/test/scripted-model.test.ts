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
});
