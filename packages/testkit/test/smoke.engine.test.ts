import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockEnvironment, scriptedModel, scripts, startMockEnvironment } from "../src/index.js";
import { AppServerProcess, findCodexBinary } from "./helpers.js";

const bin = findCodexBinary();

describe("real engine smoke test (codex app-server over stdio)", () => {
  // The pinned binary comes with `npm ci` (@openai/codex): missing is a broken install, not a reason to skip.
  beforeAll(() => {
    if (!bin) throw new Error("the pinned Codex binary (@openai/codex) is missing: run npm ci");
  });
  let env: MockEnvironment;
  let engine: AppServerProcess;
  let threadId: string;

  beforeAll(async () => {
    env = await startMockEnvironment({ sandboxMode: "workspace-write" });
    engine = new AppServerProcess(bin!, env.home.env);
    await engine.initialize();
    const started = await engine.request<{ thread: { id: string } }>("thread/start", {
      cwd: env.home.workspace,
    });
    threadId = started.thread.id;
  });

  afterAll(async () => {
    await engine?.close();
    await env?.close();
  });

  it("plain turn: streamed reply reaches the client, the mock captured the user text", async () => {
    env.mock.enqueue(scripts.streamingMessage(["Hello ", "from ", "mock"]), threadId);
    const turn = await engine.runTurn(threadId, "say hello");
    expect(turn.status).toBe("completed");
    const agentMessages = (turn.items as Array<{ type: string; text?: string }>).filter(
      (i) => i.type === "agentMessage",
    );
    expect(agentMessages.map((i) => i.text)).toEqual(["Hello from mock"]);
    const deltas = engine.notifications
      .filter((n) => n.method === "item/agentMessage/delta")
      .map((n) => n.params?.delta);
    expect(deltas).toEqual(["Hello ", "from ", "mock"]);

    const [req] = await env.mock.waitForRequests(1, { route: threadId });
    expect(req!.lastUserText()).toBe("say hello");
    expect(req!.toolNames()).toEqual(expect.arrayContaining(["exec_command", "update_goal"]));
    expect(req!.isGoalContinuation()).toBe(false);
    expect(env.mock.pending()).toBe(0);
  });

  it("function-call round trip: scripted exec_command runs in the workspace, then the reply", async () => {
    env.mock.setFallback(scriptedModel());
    const turn = await engine.runTurn(
      threadId,
      "Run this exact shell command and wait for it to finish: echo made > made.txt. Then reply with exactly: file made",
    );
    expect(turn.status).toBe("completed");
    expect((turn.items as Array<{ type: string; text?: string }>).at(-1)).toMatchObject({
      type: "agentMessage",
      text: "file made",
    });
    expect(existsSync(join(env.home.workspace, "made.txt"))).toBe(true);
    const requests = env.mock.requests(threadId);
    expect(requests).toHaveLength(3);
    const outputs = requests[2]!.functionCallOutputs();
    expect(outputs.at(-1)).toMatchObject({ callId: expect.stringMatching(/^call_mock_exec_/) });
    expect(outputs.at(-1)!.output).toContain("Process exited with code 0");
  });
});
