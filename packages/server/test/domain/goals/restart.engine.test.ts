// Crash recovery of goals: SIGKILL the server while a goal runs, start it again: the goal is paused with reason
// server_restart, the session is usable, the engine does not continue on its own, and a resume continues the same
// objective on the same thread. The mock model lives in the test process so it outlives the server.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Gate, MockResponsesServer, scripts } from "@codex-agent-api/testkit";
import { afterAll, expect, it } from "vitest";
import { type CliServer, startCliServer } from "../../support/cli-process.js";
import { waitFor } from "../../support/fixture.js";

const dataDir = mkdtempSync(join(tmpdir(), "cas-goal-restart-"));
let mock: MockResponsesServer;
let server: CliServer | null = null;

const start = () => startCliServer(dataDir, [], {}, { modelUrl: mock.url });

async function call<T = Record<string, unknown>>(method: string, path: string, body?: unknown) {
  const res = await fetch(server!.url + path, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as T };
}

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  await mock?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it("a SIGKILLed server comes back with the goal paused, no silent continuation, and resumable", async () => {
  mock = await MockResponsesServer.start({ fallback: () => scripts.assistantMessage("still working") });
  const gate = new Gate();
  mock.enqueue(scripts.streamingMessage(["continuation ", "in flight"], { gate }), (r) =>
    r.isGoalContinuation(),
  );
  server = await start();
  const { body: session } = await call<{ id: string }>("POST", "/v1/agents/sessions", { agent: {} });
  void fetch(`${server.url}/v1/agents/sessions/${session.id}/events`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input: "Endless goal", goal: { max_turns: 50 } }),
  }).then(
    (r) => r.body?.cancel().catch(() => {}),
    () => {},
  );
  await gate.reached;
  const threadId = mock.requests()[0]!.threadId;
  server.child.kill("SIGKILL");
  await server.exited;
  gate.release();
  server = await start();
  const seen = mock.requests().length;

  const goal = await call("GET", `/v1/agents/sessions/${session.id}/goal`);
  expect(goal.body).toMatchObject({
    status: "paused",
    status_reason: "server_restart",
    objective: "Endless goal",
  });
  const after = await call<{ status: string }>("GET", `/v1/agents/sessions/${session.id}`);
  expect(after.body.status).toBe("idle");

  // The session is usable, and the engine did not continue by itself: one plain turn = exactly one request.
  mock.enqueueAssistantMessage("plain after restart");
  const plain = await call<{ output: Array<{ item: { text: string } }> }>(
    "POST",
    `/v1/agents/sessions/${session.id}/events`,
    {
      input: "are you there?",
      stream: false,
    },
  );
  expect(plain.body.output.at(-1)?.item.text).toBe("plain after restart");
  expect(mock.requests()).toHaveLength(seen + 1);
  expect(mock.requests().at(-1)!.lastUserText()).toBe("are you there?");
  expect(mock.requests().at(-1)!.threadId).toBe(threadId);

  // Resume: the same objective on the same thread.
  mock.enqueue([scripts.updateGoal("complete"), scripts.assistantMessage("Finally done.")]);
  const resumed = await call("POST", `/v1/agents/sessions/${session.id}/goal`, { status: "active" });
  expect(resumed.status).toBe(200);
  await waitFor(
    async () => (await call("GET", `/v1/agents/sessions/${session.id}/goal`)).body.status === "complete",
    20_000,
    "resumed goal completes",
  );
  const resumedRequest = mock.requests()[seen + 1]!;
  expect(resumedRequest.threadId).toBe(threadId);
  expect(resumedRequest.goalObjective()).toBe("Endless goal");
  expect(resumedRequest.isGoalContinuation()).toBe(true);
}, 120_000);
