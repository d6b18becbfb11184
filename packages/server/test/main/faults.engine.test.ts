// Faults: an engine process dying mid-turn, and a graceful SIGTERM of the CLI during a running turn.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Gate, scripts } from "@codex-agent-api/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HookFailure } from "../../src/domain/feature.js";
import { SqliteStore } from "../../src/store/sqlite/index.js";
import { type CliServer, isAlive, pidsRunning, startCliServer } from "../support/cli-process.js";
import { cleanup, readSse, type ServerFixture, startServer, waitFor } from "../support/fixture.js";

type SessionBody = {
  id: string;
  status: string;
  output: Array<{ item: { type: string; text?: string } }>;
};

const texts = (b: SessionBody) => b.output.map((o) => o.item.text);

describe("a session whose first turn never reached the engine", () => {
  let s: ServerFixture;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s?.close();
  });

  it("keeps working after an engine restart (its thread had nothing stored to resume)", async () => {
    const { engines: pool, runner, store } = s.service.core;
    // The first turn is refused after its thread was started, before the engine started the turn.
    let refuse = true;
    runner.use({
      beforeTurn: async () => {
        if (!refuse) return;
        refuse = false;
        throw new HookFailure("refused", "refused once");
      },
    });
    const created = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const id = created.body.id;
    const first = await s.json<SessionBody>("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Reply with exactly: refused",
      stream: false,
    });
    expect(first.status).toBe(200);
    const before = (await store.getSession(id))!;
    expect(before.error).toBe("refused once");
    expect(before.thread_id).toBeTruthy();
    const oldPid = pool.killEngine(0);
    await waitFor(() => (pool.stats()[0]!.pid ?? oldPid) !== oldPid, 20_000, "the engine to respawn");

    const next = await s.json<SessionBody>("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Reply with exactly: after the restart",
      stream: false,
    });
    expect(next.body.status).toBe("idle");
    expect(texts(next.body)).toContain("after the restart");
    const after = (await store.getSession(id))!;
    expect(after.error).toBeNull();
    expect(after.thread_id).not.toBe(before.thread_id);
  });
});

describe("an engine process dies mid-turn", () => {
  let s: ServerFixture;
  let gate: Gate;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    gate?.release();
    await s?.close();
  });

  it("fails the turn clearly, respawns the engine, and the session continues its thread", async () => {
    const { engines: pool, store } = s.service.core;
    const first = await s.json<SessionBody>("POST", "/v1/agents/sessions", {
      input: "Reply with exactly: before the crash",
      stream: false,
    });
    expect(first.status).toBe(200);
    expect(texts(first.body)).toContain("before the crash");
    const id = first.body.id;
    const threadId = (await store.getSession(id))!.thread_id!;
    expect(threadId).toBeTruthy();
    expect(s.mock.requests().at(-1)!.threadId).toBe(threadId);

    gate = new Gate();
    s.mock.enqueue(scripts.streamingMessage(["half an ", "answer"], { gate }), threadId);
    const res = await s.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "crash now",
      stream: true,
    });
    expect(res.status).toBe(200);
    const reading = readSse(res);
    reading.catch(() => {}); // awaited below
    await gate.reached;
    const oldPid = pool.stats()[0]!.pid;
    expect(oldPid).toBeGreaterThan(0);
    expect(pool.killEngine(0)).toBe(oldPid);

    const events = await reading;
    const last = events.at(-1)!;
    expect(last.event).toBe("agent.session.turn.failed");
    expect(last.data.status).toBe("failed");
    const error = last.data.error as { message: string; code: string };
    expect(error.message).toMatch(/Codex engine exited during the turn/);
    expect(error.message).toMatch(/restarted/);
    expect(events.map((e) => e.event)).not.toContain("agent.session.turn.completed");
    const turn = (await store.getTurn(id, String(last.data.turn_id)))!;
    expect(turn.status).toBe("failed");
    expect(turn.error?.message).toBe(error.message);

    // A new process replaces the dead one without anyone asking.
    const stats = (await waitFor(
      () => {
        const st = pool.stats()[0]!;
        return st.pid !== undefined && st.pid !== oldPid ? st : null;
      },
      20_000,
      "the engine to respawn",
    ))!;
    expect(stats.generation).toBeGreaterThan(1);
    expect(isAlive(oldPid!)).toBe(false);
    const health = await s.json<{ engines: Array<{ running: boolean }>; active_turns: number }>(
      "GET",
      "/health",
    );
    expect(health.body.engines[0]!.running).toBe(true);
    expect(health.body.active_turns).toBe(0);

    // The session is usable and its thread (resumed in the new process) still has the conversation.
    const session = await s.json<SessionBody>("GET", `/v1/agents/sessions/${id}`);
    expect(session.body.status).toBe("failed");
    const before = s.mock.requests().length;
    const next = await s.json<SessionBody>("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Reply with exactly: after the crash",
      stream: false,
    });
    expect(next.status).toBe(200);
    expect(next.body.status).toBe("idle");
    expect(texts(next.body)).toContain("after the crash");
    const req = s.mock.requests().at(-1)!;
    expect(s.mock.requests().length).toBeGreaterThan(before);
    expect(req.threadId).toBe(threadId);
    expect((await store.getSession(id))!.thread_id).toBe(threadId);
    expect(req.messageInputTexts("user")).toContain("Reply with exactly: before the crash");
    expect(req.messageInputTexts("assistant")).toContain("before the crash");
    expect(req.lastUserText()).toBe("Reply with exactly: after the crash");
    expect(pool.stats()[0]!.pid).toBe(stats.pid);
  });
});

describe("SIGTERM", () => {
  let dir: string;
  let server: CliServer | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cas-sigterm-"));
  });
  afterAll(async () => {
    writeFileSync(join(dir, "release"), ""); // lets a leftover command end
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill("SIGKILL");
      await server.exited;
    }
    cleanup(dir);
  });

  it("stops accepting, ends the running turn with a reason, flushes and exits 0", async () => {
    const dataDir = join(dir, "data");
    server = await startCliServer(dataDir, ["--sandbox", "danger-full-access"]);
    const { url } = server;
    const created = await fetch(`${url}/v1/agents/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    const id = ((await created.json()) as { id: string }).id;

    // A turn that runs a command which waits for a file that never comes.
    const started = join(dir, "started");
    const release = join(dir, "release");
    const command = `touch ${started}; while [ ! -f ${release} ]; do sleep 0.05; done`;
    const res = await fetch(`${url}/v1/agents/sessions/${id}/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        input: `Run this exact shell command and wait for it to finish: ${command}. Then reply with exactly: finished`,
        stream: true,
      }),
    });
    expect(res.status).toBe(200);
    const reading = readSse(res);
    reading.catch(() => {}); // awaited below; a failure before that must not be an unhandled rejection
    await waitFor(() => existsSync(started), 30_000, "the command to start");

    server.child.kill("SIGTERM");
    // The client of the running turn gets its end, then the stream closes.
    const events = await reading;
    // By then the server no longer accepts work (it is still flushing and closing the engine).
    const late = await fetch(`${url}/v1/agents/sessions`).then(
      (r) => r.status,
      () => "refused",
    );
    expect(late === "refused" || late === 503, `late request: ${late}`).toBe(true);

    const last = events.at(-1)!;
    expect(last.event).toBe("agent.session.turn.cancelled");
    expect(last.data.status).toBe("cancelled");
    expect((last.data.error as { message: string }).message).toBe("server shutting down");
    expect(events.map((e) => e.event)).not.toContain("agent.session.turn.completed");

    expect(await server.exited).toEqual({ code: 0, signal: null });
    const logs = server.logs().map((l) => l.msg);
    expect(logs).toContain("shutting down");
    expect(logs.at(-1)).toBe("stopped");
    expect(existsSync(release)).toBe(false);
    // The interrupted command did not outlive the server.
    await waitFor(() => pidsRunning(release).length === 0, 10_000, "the command to be gone");

    // What was recorded: the turn ended with its reason, the session is idle, the log has the terminal event.
    const store = SqliteStore.open(join(dataDir, "agents.db"));
    try {
      const session = (await store.getSession(id))!;
      expect(session.status).toBe("idle");
      expect(session.active_turn_id).toBeNull();
      const turnId = String(last.data.turn_id);
      const turn = (await store.getTurn(id, turnId))!;
      expect(turn.status).toBe("cancelled");
      expect(turn.error).toEqual({ code: "cancelled", message: "server shutting down" });
      expect(turn.completed_at).not.toBeNull();
      const log = await store.readEvents(id, 0, 1000);
      expect(log.filter((e) => e.turn_id === turnId).map((e) => e.type)).toContain("turn.cancelled");
      expect(log.at(-1)!.seq).toBe(await store.lastEventSeq(id));
      expect(await store.listBusySessions()).toHaveLength(0);
    } finally {
      await store.close();
    }
  });
});
