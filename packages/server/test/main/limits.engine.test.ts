// Limits: the session cap (429), idle-session expiry (TTL) and the per-turn timeout (which stops the turn's commands).
import { randomInt } from "node:crypto";
import { cmdline, Gate, pidsRunning, scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestClock } from "../support/clock.js";
import { readSse, type ServerFixture, startServer, waitFor } from "../support/fixture.js";

type SessionBody = {
  id: string;
  status: string;
  output: Array<{ item: { type: string; text?: string } }>;
};

const texts = (b: SessionBody) => b.output.map((o) => o.item.text);

describe("AGENT_MAX_SESSIONS", () => {
  let s: ServerFixture;
  beforeAll(async () => {
    s = await startServer({ env: { AGENT_MAX_SESSIONS: "2" } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("answers 429 CapacityError beyond the cap, and accepts again once a session is gone", async () => {
    const a = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const b = await s.json<{ id: string }>("POST", "/v1/agents/sessions", { agent: { model: "mock-model" } });
    expect([a.status, b.status]).toEqual([200, 200]);

    const full = await s.json("POST", "/v1/agents/sessions", {});
    expect(full.status).toBe(429);
    expect(full.body).toEqual({ error: "Too many active sessions", type: "CapacityError" });
    // Input does not get around the cap, and no turn starts.
    const withInput = await s.json("POST", "/v1/agents/sessions", {
      input: "Reply with exactly: no",
      stream: false,
    });
    expect(withInput.status).toBe(429);
    expect(withInput.body).toMatchObject({ type: "CapacityError" });
    const streaming = await s.request("POST", "/v1/agents/sessions", { input: "hi", stream: true });
    expect(streaming.status).toBe(429);
    expect(streaming.headers.get("content-type")).toMatch(/application\/json/);
    expect(((await streaming.json()) as { type: string }).type).toBe("CapacityError");
    // The official dialect maps it to a rate-limit error.
    const official = await s.json<{ error: { type: string } }>(
      "POST",
      "/v1/agents/sessions",
      {},
      { "openai-beta": "agents=v1" },
    );
    expect(official.status).toBe(429);
    expect(official.body.error.type).toBe("rate_limit_error");
    expect(s.mock.requests()).toHaveLength(0);

    const list = await s.json<{ data: Array<{ id: string }> }>("GET", "/v1/agents/sessions");
    expect(list.body.data.map((x) => x.id).sort()).toEqual([a.body.id, b.body.id].sort());

    // Existing sessions keep working at the cap.
    const turn = await s.json<SessionBody>("POST", `/v1/agents/sessions/${a.body.id}/events`, {
      input: "Reply with exactly: at capacity",
      stream: false,
    });
    expect(turn.status).toBe(200);
    expect(texts(turn.body)).toContain("at capacity");

    expect((await s.json("DELETE", `/v1/agents/sessions/${b.body.id}`)).status).toBe(200);
    const again = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    expect(again.status).toBe(200);
    expect((await s.json("POST", "/v1/agents/sessions", {})).status).toBe(429);
  });
});

describe("AGENT_SESSION_TTL", () => {
  let s: ServerFixture;
  const clock = new TestClock();
  beforeAll(async () => {
    s = await startServer({ env: { AGENT_SESSION_TTL: "60" }, clock });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("deletes sessions idle longer than the TTL, but never one with a running turn", async () => {
    expect(s.config.sessionTtlSeconds).toBe(60);
    // Session `busy` runs a turn held mid-response by a gate for the whole test.
    const busy = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const gate = new Gate();
    s.mock.enqueue(scripts.streamingMessage(["held ", "turn"], { gate }));
    const busyTurn = s.json<SessionBody>("POST", `/v1/agents/sessions/${busy.body.id}/events`, {
      input: "hold on",
      stream: false,
    });
    await gate.reached;

    const idle = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    expect(idle.status).toBe(200);
    expect((await s.json("GET", `/v1/agents/sessions/${idle.body.id}`)).status).toBe(200);
    clock.advance(30);
    expect((await s.json("GET", `/v1/agents/sessions/${idle.body.id}`)).status).toBe(200);
    clock.advance(31);

    const gone = await waitFor(
      async () => (await s.json("GET", `/v1/agents/sessions/${idle.body.id}`)).status === 404,
      15_000,
      "the idle session to expire",
    );
    expect(gone).toBe(true);
    const after = await s.json<{ type: string }>("GET", `/v1/agents/sessions/${idle.body.id}`);
    expect(after.body.type).toBe("NotFoundError");
    const listed = await s.json<{ data: Array<{ id: string }> }>("GET", "/v1/agents/sessions");
    expect(listed.body.data.map((x) => x.id)).toEqual([busy.body.id]);

    // The running session outlived the TTL and is intact.
    const running = await s.json<SessionBody>("GET", `/v1/agents/sessions/${busy.body.id}`);
    expect(running.status).toBe(200);
    expect(running.body.status).toBe("in_progress");

    gate.release();
    const done = await busyTurn;
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("idle");
    expect(texts(done.body)).toContain("held turn");

    // Once idle, it expires too.
    clock.advance(61);
    await waitFor(
      async () => (await s.json("GET", `/v1/agents/sessions/${busy.body.id}`)).status === 404,
      15_000,
      "the finished session to expire",
    );
    const events = await s.json("GET", `/v1/agents/sessions/${busy.body.id}/events`);
    expect(events.status).toBe(404);
    expect(await s.service.core.store.countSessions()).toBe(0);
  });
});

describe("AGENT_TURN_TIMEOUT", () => {
  let s: ServerFixture;
  let gate: Gate;
  const clock = new TestClock();
  beforeAll(async () => {
    // Long in real time (a busy machine may take seconds to reach the model), short on the test clock.
    s = await startServer({ env: { AGENT_TURN_TIMEOUT: "600" }, clock });
  });
  afterAll(async () => {
    gate?.release();
    await s?.close();
  });

  it("fails a turn that exceeds it, interrupts the engine turn, and keeps the session usable", async () => {
    expect(s.config.turnTimeoutSeconds).toBe(600);
    const created = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const id = created.body.id;
    const events = `/v1/agents/sessions/${id}/events`;
    gate = new Gate(); // never released: only the timeout can end this turn
    s.mock.enqueue(scripts.streamingMessage(["never ", "finishes"], { gate }));
    const res = await s.request("POST", events, { input: "take forever", stream: true });
    expect(res.status).toBe(200);
    let ended = false;
    const reading = readSse(res).finally(() => {
      ended = true;
    });
    await Promise.race([gate.reached, reading]);
    expect(gate.isReached, "the model was reached before the turn ended").toBe(true);
    // The turn has reached the model (and is held there); its time runs out: once its timer is armed, the clock
    // moves past it (and only past it: the stop's own grace period must not run out here, whatever the load).
    await waitFor(() => clock.armed(600_000), 10_000, "the turn's timeout to be armed");
    clock.advance(601);
    await waitFor(() => ended, 30_000, "the timed-out turn to end");
    const frames = await reading;
    expect(gate.isReached, "the model was reached before the timeout").toBe(true);
    expect(gate.isReleased).toBe(false);
    const last = frames.at(-1)!;
    expect(last.event).toBe("agent.session.turn.failed");
    const error = last.data.error as { message: string; code: string };
    expect(error.message).toMatch(/timeout/i);
    expect(error.message).toContain("600 s");
    expect(error.code).toBe("request_timeout");
    expect(last.data.status).toBe("failed");
    expect(frames.map((e) => e.event)).not.toContain("agent.session.turn.completed");

    // Recorded: the turn failed with the reason; the session is no longer busy.
    const turnId = String(last.data.turn_id);
    const turn = (await s.service.core.store.getTurn(id, turnId))!;
    expect(turn.status).toBe("failed");
    expect(turn.error).toEqual({ code: "request_timeout", message: error.message });
    expect(turn.completed_at).not.toBeNull();
    const session = await s.json<{ status: string }>("GET", `/v1/agents/sessions/${id}`);
    expect(session.body.status).toBe("failed");
    expect(s.service.core.runner.isActive(id)).toBe(false);

    // The engine's turn was interrupted too (not left running on the thread).
    const threadId = (await s.service.core.store.getSession(id))!.thread_id!;
    expect(threadId).toBeTruthy();
    const lease = await s.service.core.engines.lease(threadId, {});
    try {
      // (The engine may answer "list_turns is not supported yet" while it still writes the thread out.)
      const thread = (await waitFor(
        () => lease.thread.read({ includeTurns: true }).catch(() => null),
        10_000,
        "thread/read",
      ))!;
      expect(thread.turns.map((t) => t.status)).toEqual(["interrupted"]);
      expect(lease.thread.busy).toBe(false);
    } finally {
      lease.release();
    }

    // The next turn on the same session works and continues the same thread.
    const next = await s.json<SessionBody>("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Reply with exactly: after the timeout",
      stream: false,
    });
    expect(next.status).toBe(200);
    expect(next.body.status).toBe("idle");
    expect(texts(next.body)).toContain("after the timeout");
    const reqs = s.mock.requests();
    expect(reqs.at(-1)!.threadId).toBe(threadId);
    expect(reqs.at(-1)!.messageInputTexts("user")).toContain("take forever");
  });

  /**
   * Starts a turn running `sleep <marker>` (a shell with a child in a new session, and a grandchild) and waits until
   * the command runs and its item is recorded. Returns the turn's SSE frames once it ends.
   */
  async function runningCommand(sessionId: string, marker: string) {
    const res = await s.request("POST", `/v1/agents/sessions/${sessionId}/events`, {
      input: `Run this exact shell command and wait for it to finish: setsid sleep ${marker} & sleep ${marker}; wait. Then reply with exactly: too late`,
      stream: true,
    });
    expect(res.status).toBe(200);
    let ended = false;
    const frames = readSse(res).finally(() => {
      ended = true;
    });
    await waitFor(
      async () => {
        if (ended) throw new Error(`the turn ended before its command ran: ${JSON.stringify(await frames)}`);
        const items = await s.service.core.store.listItems(sessionId, { states: ["started"] });
        return items.data.some((i) => i.type === "commandExecution") && sleeping(marker).length === 2;
      },
      30_000,
      "the command to run",
    );
    return { frames, ended: () => ended };
  }

  /** The command item as each dialect lists it. */
  async function commandItems(sessionId: string) {
    const template = await s.json<{ data: Array<{ item: Record<string, unknown> }> }>(
      "GET",
      `/v1/agents/sessions/${sessionId}/items`,
    );
    const official = await s.json<{ data: Array<Record<string, unknown>> }>(
      "GET",
      `/v1/agents/sessions/${sessionId}/items`,
      undefined,
      { "openai-beta": "agents=v1" },
    );
    return {
      template: template.body.data.map((d) => d.item).find((i) => i.type === "command_execution")!,
      official: official.body.data.find((i) => i.type === "command_execution")!,
    };
  }

  it("stops the running command's whole process tree, as a cancel does, and its item says the timeout stopped it", async () => {
    const created = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const id = created.body.id;
    const marker = `59.${randomInt(100_000, 999_999)}`;
    const turn = await runningCommand(id, marker);
    await waitFor(() => clock.armed(600_000), 10_000, "the turn's timeout to be armed");
    clock.advance(601);
    await waitFor(turn.ended, 30_000, "the timed-out turn to end");
    const frames = await turn.frames;
    expect(frames.at(-1)!.event).toBe("agent.session.turn.failed");
    expect(frames.at(-1)!.data.error).toMatchObject({ code: "request_timeout" });
    // Not left running unwatched: the shell, its children and their sandbox are gone.
    await waitFor(() => pidsRunning(marker).length === 0, 10_000, "the command's processes to end");

    const note = "[command stopped: Turn timeout exceeded (600 s)]";
    const done = frames.find(
      (f) =>
        f.event === "agent.session.output_item.done" &&
        (f.data.item as { type: string }).type === "command_execution",
    );
    expect(done?.data.item).toMatchObject({ status: "failed", aggregated_output: note });
    const items = await commandItems(id);
    expect(items.template).toMatchObject({ status: "failed", aggregated_output: note, exit_code: null });
    expect(items.official).toMatchObject({ status: "failed", output: note });
  });

  it("a cancel stops the command's process tree the same way, and its item says so", async () => {
    const created = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const id = created.body.id;
    const marker = `59.${randomInt(100_000, 999_999)}`;
    const turn = await runningCommand(id, marker);
    const cancel = await s.json("POST", `/v1/agents/sessions/${id}/events`, {
      type: "agent.session.input.cancel",
    });
    expect(cancel.body).toMatchObject({ cancelled: true });
    await waitFor(turn.ended, 30_000, "the cancelled turn to end");
    expect((await turn.frames).at(-1)!.event).toBe("agent.session.turn.cancelled");
    await waitFor(() => pidsRunning(marker).length === 0, 10_000, "the command's processes to end");
    const items = await commandItems(id);
    expect(items.template).toMatchObject({
      status: "failed",
      aggregated_output: "[command stopped: Cancelled by the user]",
    });
  });
});

describe("AGENT_TURN_TIMEOUT while the turn waits for its environment", () => {
  let s: ServerFixture;
  const clock = new TestClock();
  beforeAll(async () => {
    s = await startServer({ env: { AGENT_TURN_TIMEOUT: "600" }, clock });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("ends the wait at once, as a cancel does (the preparation would take two minutes)", async () => {
    const marker = `58.${randomInt(100_000, 999_999)}`;
    const official = { "openai-beta": "agents=v1" };
    const created = await s.json<{ id: string }>(
      "POST",
      "/v1/agents/sessions",
      {
        agent: { model: "mock-model" },
        environment: { type: "openai_hosted", setup_commands: [{ command: `sleep ${marker}` }] },
      },
      official,
    );
    expect(created.status).toBe(200);
    const id = created.body.id;
    await waitFor(() => sleeping(marker).length > 0, 30_000, "the setup command to run");
    const sent = await s.request(
      "POST",
      `/v1/agents/sessions/${id}/events`,
      {
        events: [
          {
            type: "agent.session.input.message",
            input: [{ role: "user", content: [{ type: "input_text", text: "Reply with exactly: never" }] }],
          },
        ],
      },
      official,
    );
    expect(sent.status).toBe(202);
    await waitFor(() => clock.armed(600_000), 10_000, "the turn's timeout to be armed");
    clock.advance(601);
    const ended = await waitFor(
      async () => {
        const turns = await s.service.core.store.listTurns(id, {});
        return turns.data.find((t) => t.status !== "in_progress");
      },
      20_000,
      "the timed-out turn to end",
    );
    expect(ended).toMatchObject({ status: "failed", error: { code: "request_timeout" } });
    expect(s.mock.requests()).toHaveLength(0);
  });
});

/** Pids of the processes whose arguments are exactly `sleep <seconds>`. */
function sleeping(seconds: string): number[] {
  return pidsRunning(seconds).filter((p) => cmdline(p) === `sleep ${seconds}`);
}
