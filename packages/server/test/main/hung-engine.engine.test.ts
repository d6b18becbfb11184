// A hung engine (SIGSTOP) must not keep a turn open past its timeout: the runner kills the engine process, the
// turn fails with the timeout reason, the pool respawns the engine and the session keeps working.
import { Gate, scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { STOP_GRACE_MS } from "../../src/domain/turns/runner.js";
import { TestClock } from "../support/clock.js";
import { readSse, type ServerFixture, startServer, waitFor } from "../support/fixture.js";

let fx: ServerFixture;
const clock = new TestClock();
beforeAll(async () => {
  fx = await startServer({ env: { AGENT_TURN_TIMEOUT: "30" }, clock });
  await fx.service.core.engines.warm();
});
afterAll(async () => {
  await fx?.close();
});

it("kills an unresponsive engine after a stopped turn's grace period", async () => {
  const { body } = await fx.json<{ id: string }>("POST", "/v1/agents/sessions", { agent: {} });
  const gate = new Gate();
  fx.mock.enqueue(scripts.streamingMessage(["stuck"], { gate }));
  const res = fx.request("POST", `/v1/agents/sessions/${body.id}/events`, { input: "hang" });
  await gate.reached;
  const [before] = fx.service.core.engines.stats();
  process.kill(before!.pid!, "SIGSTOP");
  // The turn times out (it is interrupted, but the engine cannot answer), then the grace period ends.
  clock.advance(31);
  clock.advance(STOP_GRACE_MS / 1000);
  const events = await readSse(await res);
  expect(events.at(-1)?.event).toBe("agent.session.turn.failed");
  expect((events.at(-1)?.data.error as { message: string }).message).toMatch(/timeout/i);
  gate.release();
  await waitFor(
    () => {
      const [now] = fx.service.core.engines.stats();
      return now!.pid !== undefined && now!.pid !== before!.pid;
    },
    20_000,
    "engine respawned",
  );
  fx.mock.enqueueAssistantMessage("alive again");
  const next = await readSse(
    await fx.request("POST", `/v1/agents/sessions/${body.id}/events`, { input: "again" }),
  );
  expect(next.at(-1)?.event).toBe("agent.session.turn.completed");
}, 60_000);
