import { randomInt } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { cmdline, Gate, pidsRunning, scriptedModel, scripts } from "@codex-agent-api/testkit";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Codex, type ServerRequest, TransportClosedError, type TurnEvent } from "../src/index.js";
import { agentMessages, type Fixture, fixturePool } from "./fixture.js";

const pool = fixturePool();
let f: Fixture;
afterEach(() => pool.release());
afterAll(() => pool.close());

describe("command output", () => {
  const run = (cmd: string) =>
    scripts.functionCall(
      "exec_command",
      { cmd, login: false, yield_time_ms: 30_000 },
      { callId: "call-out" },
    );

  it("a quick command's output arrives as deltas that add up to its final output", async () => {
    f = await pool.take();
    f.mock.enqueue([run("printf 'one\\ntwo\\n'"), scripts.assistantMessage("printed")]);
    const thread = await f.codex.startThread({ sandbox: "workspace-write" });
    const turn = await thread.turn("print two lines");
    const events: TurnEvent[] = [];
    for await (const e of turn.stream()) events.push(e);
    const deltas = events.flatMap((e) =>
      e.method === "item/commandExecution/outputDelta" ? [e.params.delta] : [],
    );
    const done = events.find(
      (e) => e.method === "item/completed" && e.params.item.type === "commandExecution",
    ) as { params: { item: { aggregatedOutput: string } } };
    expect(done.params.item.aggregatedOutput).toBe("one\ntwo\n");
    expect(deltas.join("")).toBe("one\ntwo\n");
    // Every delta comes before the item's completion.
    const lastDelta = events.map((e) => e.method).lastIndexOf("item/commandExecution/outputDelta");
    expect(lastDelta).toBeLessThan(events.indexOf(done as TurnEvent));
  });
});

describe("processes of an interrupted turn", () => {
  /** Pids of the processes whose arguments are exactly `sleep <seconds>`. */
  const sleeping = (seconds: string) => pidsRunning(seconds).filter((p) => cmdline(p) === `sleep ${seconds}`);
  const until = async (check: () => boolean, what: string) => {
    for (const deadline = Date.now() + 20_000; !check(); await new Promise((r) => setTimeout(r, 25))) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    }
  };
  const exec = (cmd: string, callId: string, yieldMs: number) =>
    scripts.functionCall("exec_command", { cmd, login: false, yield_time_ms: yieldMs }, { callId });

  it("outlive the interrupt; stopProcesses ends this turn's whole process tree and leaves earlier turns' alone", async () => {
    f = await pool.take();
    const earlier = `59.${randomInt(100_000, 999_999)}`;
    const held = `58.${randomInt(100_000, 999_999)}`;
    // The first turn's command goes on in the background once its tool call returns (after 250 ms).
    f.mock.enqueue([exec(`sleep ${earlier}`, "call-earlier", 250), scripts.assistantMessage("left running")]);
    // The second turn's command (a subtree: a shell, a child in a new session, a grandchild) is interrupted.
    f.mock.enqueue(exec(`setsid sleep ${held} & sleep ${held}; wait`, "call-held", 30_000));
    const thread = await f.codex.startThread({ sandbox: "workspace-write" });
    expect((await thread.run("start it")).finalResponse).toBe("left running");
    // (On a busy machine its sandbox may still be starting when the tool call returns.)
    await until(() => sleeping(earlier).length === 1, "the first turn's command");

    const turn = await thread.turn("hold it");
    let started = false;
    const events = (async () => {
      for await (const e of turn.stream()) {
        if (e.method === "item/started" && e.params.item.type === "commandExecution") started = true;
      }
    })();
    // (Interrupted before the engine reports the command started, the command dies with the turn.)
    await until(() => started && sleeping(held).length === 2, "the held command's processes");
    await turn.interrupt();
    await events;
    expect((await turn.run()).status).toBe("interrupted");
    // The engine keeps an interrupted turn's command running (the reason stopProcesses exists).
    const listed = await thread.backgroundProcesses();
    expect(listed.map((p) => p.itemId).sort()).toEqual(["call-earlier", "call-held"]);
    expect(sleeping(held)).toHaveLength(2);

    expect(await turn.stopProcesses()).toEqual(["call-held"]);
    await until(() => pidsRunning(held).length === 0, "the held command's process tree to end");
    expect(sleeping(earlier)).toHaveLength(1);
    expect((await thread.backgroundProcesses()).map((p) => p.itemId)).toEqual(["call-earlier"]);

    // A process is ended by its id too; ending it again says it was gone.
    const [first] = listed.filter((p) => p.itemId === "call-earlier");
    expect(await thread.terminateProcess(first!.processId)).toBe(true);
    await until(() => pidsRunning(earlier).length === 0, "the earlier command to end");
    expect(await thread.terminateProcess(first!.processId)).toBe(false);
  });
});

describe("subagents", () => {
  it("a child thread's work enters the parent turn's stream, wrapped with the child's thread id", async () => {
    f = await pool.take();
    f.mock.setFallback(scriptedModel());
    const thread = await f.codex.startThread();
    const turn = await thread.turn(
      "Spawn a subagent with the message: Reply with exactly: child says hi. Then reply with its output",
    );
    const events: TurnEvent[] = [];
    for await (const e of turn.stream()) events.push(e);
    const child = events.flatMap((e) => (e.method === "client/subagent/notification" ? [e.params] : []));
    expect(child.length).toBeGreaterThan(0);
    const childThread = child[0]!.childThreadId;
    expect(childThread).not.toBe(thread.id);
    expect(
      child.every((c) => c.threadId === thread.id && c.turnId === turn.id && c.childThreadId === childThread),
    ).toBe(true);
    const methods = child.map((c) => c.notification.method);
    expect(methods).toContain("turn/started");
    expect(methods).toContain("turn/completed");
    // The child's turn names the parent's turn as its root: that is how its work is routed here even when it
    // starts before the spawning tool call completes.
    const started = child.find((c) => c.notification.method === "turn/started")!.notification;
    expect(started.method === "turn/started" && started.params.turn.rootTurnId).toBe(turn.id);
    const said = child.flatMap((c) =>
      c.notification.method === "item/completed" && c.notification.params.item.type === "agentMessage"
        ? [c.notification.params.item.text]
        : [],
    );
    expect(said).toEqual(["child says hi"]);
    expect((await turn.run()).finalResponse).toBe("child says hi");
  });
});

describe("plain turns", () => {
  it("runs a turn: final response, items, usage, timing", async () => {
    f = await pool.take();
    f.mock.enqueueAssistantMessage("Hello world", {
      usage: {
        inputTokens: 7,
        cachedInputTokens: 2,
        outputTokens: 3,
        reasoningOutputTokens: 1,
        totalTokens: 10,
      },
    });
    const thread = await f.codex.startThread();
    const result = await thread.run("say hello");
    const [request] = await f.mock.waitForRequests(1);
    expect(result.status).toBe("completed");
    expect(result.finalResponse).toBe("Hello world");
    expect(agentMessages(result.items)).toEqual(["Hello world"]);
    expect(result.usage?.last).toMatchObject({ inputTokens: 7, cachedInputTokens: 2, outputTokens: 3 });
    expect(result.usage?.turn).toMatchObject({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
    expect(result.startedAt).toBeTypeOf("number");
    expect(result.engineTurns).toBe(1);
    expect(request!.lastUserText()).toBe("say hello");
    expect(request!.threadId).toBe(thread.id);
    expect(f.codex.activeRoutes).toBe(0);
  });

  it("passes model, outputSchema and effort to the request and reports per-turn usage on follow-ups", async () => {
    f = await pool.take();
    f.mock.enqueueAssistantMessage("first");
    f.mock.enqueueAssistantMessage('{"summary":"ok"}', {
      usage: { inputTokens: 20, outputTokens: 4, totalTokens: 24 },
    });
    const thread = await f.codex.startThread();
    const first = await thread.run("one");
    const schema = { type: "object", properties: { summary: { type: "string" } }, required: ["summary"] };
    const second = await thread.run("two", { model: "other-model", outputSchema: schema, effort: "low" });
    const requests = await f.mock.waitForRequests(2);
    const body = requests[1]!.body as {
      model: string;
      text: { format: { schema: unknown } };
      reasoning: unknown;
    };
    expect(body.model).toBe("other-model");
    expect(body.text.format.schema).toEqual(schema);
    expect(body.reasoning).toMatchObject({ effort: "low" });
    expect(second.finalResponse).toBe('{"summary":"ok"}');
    expect(second.usage!.total.totalTokens).toBe(first.usage!.total.totalTokens + 24);
    expect(second.usage!.turn.totalTokens).toBe(24);
  });

  it("streams deltas and one completion; a local image reaches the model", async () => {
    f = await pool.take();
    const image = join(f.home.workspace, "pixel.png");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(
      image,
      Buffer.from(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
        "base64",
      ),
    );
    f.mock.enqueue(scripts.streamingMessage(["a", "b", "c"]));
    const turn = await (await f.codex.startThread()).turn([
      { type: "text", text: "describe" },
      { type: "localImage", path: image },
    ]);
    const events: TurnEvent[] = [];
    for await (const e of turn.stream()) events.push(e);
    const [request] = await f.mock.waitForRequests(1);
    expect(events.flatMap((e) => (e.method === "item/agentMessage/delta" ? [e.params.delta] : []))).toEqual([
      "a",
      "b",
      "c",
    ]);
    expect(events.filter((e) => e.method === "turn/completed")).toHaveLength(1);
    expect(events.at(-1)?.method).toBe("turn/completed");
    expect(JSON.stringify(request!.body)).toContain("data:image/png;base64,");
  });

  it("sends text with a lone UTF-16 surrogate (the engine would drop the line and never answer)", async () => {
    f = await pool.take();
    f.mock.enqueueAssistantMessage("fine");
    const result = await (await f.codex.startThread()).run("broken \ud800 text");
    const [request] = await f.mock.waitForRequests(1);
    expect(result.finalResponse).toBe("fine");
    expect(request!.lastUserText()).toBe("broken \ufffd text");
  });

  it("rejects a second turn while one is running (the engine would silently steer)", async () => {
    f = await pool.take();
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["slow ", "reply"], { gate }));
    const thread = await f.codex.startThread();
    const turn = await thread.turn("first");
    await expect(thread.turn("second")).rejects.toThrow(/already has an active turn/);
    gate.release();
    expect((await turn.run()).finalResponse).toBe("slow reply");
  });

  it("interrupts a plain turn", async () => {
    f = await pool.take();
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["never ", "finished"], { gate }));
    f.mock.enqueueAssistantMessage("after");
    const thread = await f.codex.startThread();
    const turn = await thread.turn("work");
    await gate.reached;
    expect(await turn.interrupt()).toEqual({});
    expect((await turn.run()).status).toBe("interrupted");
    gate.release();
    expect((await thread.run("again")).finalResponse).toBe("after");
  });

  it("fails every pending call and stream when the engine dies during a plain turn", async () => {
    f = await pool.take();
    const gate = new Gate();
    f.mock.enqueue(scripts.streamingMessage(["never"], { gate }));
    const thread = await f.codex.startThread();
    const turn = await thread.turn("work");
    const stream = turn.stream();
    await gate.reached;
    process.kill(f.codex.pid!, "SIGKILL");
    // Sent after the kill: it can never be answered, so it must be failed by the transport's close.
    const pending = thread.read();
    const drained = (async () => {
      for await (const _ of stream) {
        /* drain until the transport error */
      }
    })();
    await expect(drained).rejects.toThrow(TransportClosedError);
    await expect(pending).rejects.toThrow(TransportClosedError);
    await expect(thread.run("more")).rejects.toThrow(TransportClosedError);
    expect(f.codex.closed).toBe(true);
    expect(f.codex.activeRoutes).toBe(0);
    gate.release();
  });

  it("resumes a thread in a fresh app-server: the model sees the earlier conversation", async () => {
    f = await pool.take();
    f.mock.enqueueAssistantMessage("The secret is noted.");
    f.mock.enqueueAssistantMessage("It was pineapple.");
    const thread = await f.codex.startThread();
    await thread.run("Remember the secret word: pineapple");
    await f.codex.close();
    const second = await f.startCodex();
    const resumed = await second.resumeThread(thread.id);
    const result = await resumed.run("What was the secret word?");
    const requests = await f.mock.waitForRequests(2);
    expect(result.finalResponse).toBe("It was pineapple.");
    expect(requests[1]!.threadId).toBe(thread.id);
    expect(requests[1]!.messageInputTexts("user")).toContain("Remember the secret word: pineapple");
    expect(requests[1]!.messageInputTexts("assistant")).toContain("The secret is noted.");
  });
});

describe("server requests (approvals)", () => {
  const execCall = () =>
    scripts.functionCall(
      "exec_command",
      { cmd: "touch created.txt", sandbox_permissions: "require_escalated", justification: "create a file" },
      { callId: "call-exec" },
    );

  // config.toml no longer accepts approval_policy = "untrusted" (0.169.0); thread/start still does.
  it("accepts through a handler: the command runs and the decision is in the stream", async () => {
    f = await pool.take();
    f.mock.enqueue([execCall(), scripts.assistantMessage("made it")]);
    const seen: ServerRequest[] = [];
    const thread = await f.codex.startThread({
      sandbox: "workspace-write",
      approvalPolicy: "untrusted",
      onServerRequest: (r) => {
        seen.push(r);
        return { decision: "accept" };
      },
    });
    const turn = await thread.turn("create the file");
    const events: TurnEvent[] = [];
    for await (const e of turn.stream()) events.push(e);
    expect(seen.map((r) => r.method)).toEqual(["item/commandExecution/requestApproval"]);
    expect(existsSync(join(f.home.workspace, "created.txt"))).toBe(true);
    const answered = events.find((e) => e.method === "client/serverRequest/answered");
    expect(answered?.params).toMatchObject({
      response: { decision: "accept" },
      defaulted: false,
      turnId: turn.id,
    });
  });

  it("declines by default: nothing runs and the model is told", async () => {
    f = await pool.take();
    f.mock.enqueue([execCall(), scripts.assistantMessage("could not")]);
    const thread = await f.codex.startThread({ sandbox: "workspace-write", approvalPolicy: "untrusted" });
    const turn = await thread.turn("create the file");
    const events: TurnEvent[] = [];
    for await (const e of turn.stream()) events.push(e);
    const requests = await f.mock.waitForRequests(2);
    expect(existsSync(join(f.home.workspace, "created.txt"))).toBe(false);
    const answered = events.find((e) => e.method === "client/serverRequest/answered");
    expect(answered?.params).toMatchObject({ response: { decision: "decline" }, defaulted: true });
    const output = requests[1]!.functionCallOutputs().find((o) => o.callId === "call-exec");
    expect(output?.output).toMatch(/reject/i);
  });
});

describe("client lifecycle", () => {
  it("starts with explicit binary, env and config overrides and closes cleanly", async () => {
    f = await pool.take();
    const c = await Codex.start({ env: f.home.env, config: { model: "override-model" } });
    f.mock.enqueueAssistantMessage("hi");
    const thread = await c.startThread();
    await thread.run("hello");
    const [request] = await f.mock.waitForRequests(1);
    expect(request!.model).toBe("override-model");
    await c.close();
    expect(c.closed).toBe(true);
    await expect(c.startThread()).rejects.toThrow(TransportClosedError);
  });
});
