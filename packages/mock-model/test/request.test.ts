import { describe, expect, it } from "vitest";
import { CapturedRequest } from "../src/index.js";
import {
  functionCall,
  functionCallOutput,
  GOAL_PROMPT,
  goalObjectiveItem,
  prelude,
  requestBody,
  userMessage,
} from "./fixtures.js";

describe("CapturedRequest", () => {
  const req = CapturedRequest.fromBody(
    requestBody(
      [
        ...prelude,
        goalObjectiveItem("Improve benchmark coverage\n\nDocument the results"),
        userMessage(GOAL_PROMPT),
        userMessage(" Improve benchmark coverage ", "Document the results"),
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Initial pass." }] },
        { type: "message", role: "user", content: "plain string content" },
        functionCall("call-1", "exec_command", { cmd: "ls" }),
        functionCallOutput("call-1", [
          { type: "input_text", text: "a" },
          { type: "input_text", text: "b" },
        ]),
      ],
      { threadId: "T1", turnTrigger: "goal" },
    ),
  );

  it("exposes thread id, model and input items", () => {
    expect(req.threadId).toBe("T1");
    expect(req.model).toBe("mock-model");
    expect(req.inputItems()).toHaveLength(10);
  });

  it("messageInputTexts mirrors the Python helper", () => {
    expect(req.messageInputTexts("user")).toEqual([
      "<environment_context>\n  <cwd>/tmp/ws</cwd>\n</environment_context>",
      GOAL_PROMPT,
      " Improve benchmark coverage ",
      "Document the results",
      "plain string content",
    ]);
    expect(req.messageInputTexts("developer")).toEqual(["You are a coding agent", "<skills_instructions>"]);
    expect(req.messageInputTexts("assistant")).toEqual(["Initial pass."]);
    expect(req.messageInputTexts("system")).toEqual([]);
    expect(req.lastUserText()).toBe("plain string content");
  });

  it("lastUserMessageText joins the parts of the last user message", () => {
    const r = CapturedRequest.fromBody(requestBody([...prelude, userMessage("first", "second")]));
    expect(r.lastUserText()).toBe("second");
    expect(r.lastUserMessageText()).toBe("first\nsecond");
  });

  it("function calls, outputs (normalised to strings) and the goal objective", () => {
    expect(req.functionCalls()).toEqual([
      { callId: "call-1", name: "exec_command", arguments: '{"cmd":"ls"}' },
    ]);
    expect(req.functionCallOutputs()).toEqual([
      { name: "goal_objective", output: "Improve benchmark coverage\n\nDocument the results" },
      { callId: "call-1", output: "ab" },
    ]);
    expect(req.goalObjective()).toBe("Improve benchmark coverage\n\nDocument the results");
  });

  it("turn metadata, goal continuation and tool names", () => {
    expect(req.turnMetadata()).toMatchObject({ turn_trigger: "goal", request_kind: "turn" });
    expect(req.isGoalContinuation()).toBe(true);
    const plain = CapturedRequest.fromBody(requestBody([...prelude, userMessage("hi")]));
    expect(plain.isGoalContinuation()).toBe(false);
    expect(plain.goalObjective()).toBeUndefined();
    expect(req.toolNames()).toEqual([
      "exec_command",
      "write_stdin",
      "multi_agent_v1",
      "update_goal",
      "web_search",
    ]);
  });

  it("tolerates bodies that are not JSON objects", () => {
    const r = new CapturedRequest({
      method: "POST",
      path: "/v1/responses",
      headers: { A: "b" },
      rawBody: "nope",
    });
    expect(r.body).toEqual({});
    expect(r.rawBody).toBe("nope");
    expect(r.headers).toEqual({ a: "b" });
    expect(r.inputItems()).toEqual([]);
    expect(r.lastUserText()).toBeUndefined();
    expect(r.threadId).toBeUndefined();
    expect(r.isGoalContinuation()).toBe(false);
  });

  it("threadId is the turn metadata's thread id (a sub-agent's prompt_cache_key is the root thread's)", () => {
    const body = requestBody([...prelude, userMessage("hi")], { threadId: "child" });
    const child = CapturedRequest.fromBody({ ...body, prompt_cache_key: "root" });
    expect(child.threadId).toBe("child");
    expect(child.promptCacheKey).toBe("root");
    const bare = CapturedRequest.fromBody({ prompt_cache_key: "T", input: [] });
    expect(bare.threadId).toBe("T");
    expect(bare.promptCacheKey).toBe("T");
  });
});
