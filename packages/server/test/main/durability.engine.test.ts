// Durability: everything survives a restart on the same data directory, and a SIGKILL during a running turn
// leaves a turn marked failed ("server_restart") and a usable session.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliServer, descendantPids, isAlive, startCliServer } from "../support/cli-process.js";
import {
  cleanup,
  readSse,
  type ServerFixture,
  type SseEvent,
  startServer,
  waitFor,
} from "../support/fixture.js";
import { SseReader } from "../support/sse-client.js";

type SessionBody = {
  id: string;
  status: string;
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
  output: Array<{ item: { type: string; text?: string } }>;
};

const texts = (b: SessionBody) => b.output.map((o) => o.item.text);

describe("restart on the same data directory", () => {
  let dir: string;
  let first: ServerFixture | undefined;
  let second: ServerFixture | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cas-restart-"));
  });
  afterAll(async () => {
    await first?.close({ keepData: true });
    await second?.close({ keepData: true });
    cleanup(dir);
  });

  it("keeps agents, sessions, turns, items, usage and the event log, and resumes the engine thread", async () => {
    first = await startServer({ dataDir: dir });
    const s1 = first;
    const agent = await s1.json<{ id: string }>("POST", "/v1/agents", {
      name: "keeper",
      model: "mock-model",
      instructions: "Be terse.",
      tools: [{ type: "function", name: "noop" }],
      metadata: { team: "durability" },
    });
    expect(agent.status).toBe(200);
    const created = await s1.json<SessionBody>("POST", "/v1/agents/sessions", {
      agent: agent.body.id,
      input: "Reply with exactly: alpha",
      stream: false,
      metadata: { case: "restart" },
    });
    expect(created.status).toBe(200);
    const id = created.body.id;
    const fromSeq = await s1.service.core.store.lastEventSeq(id);
    const live = await readSse(
      await s1.request("POST", `/v1/agents/sessions/${id}/events`, { input: "Reply with exactly: beta" }),
    );
    expect(live.at(-1)?.event).toBe("agent.session.turn.completed");
    const idle = await s1.json<SessionBody>("POST", "/v1/agents/sessions", {
      agent: { model: "mock-model" },
    });

    const store1 = s1.service.core.store;
    const threadId = (await store1.getSession(id))!.thread_id!;
    expect(threadId).toBeTruthy();
    const snapshot = async (s: ServerFixture) => ({
      agent: await s.json("GET", `/v1/agents/${agent.body.id}`),
      agents: await s.json("GET", "/v1/agents"),
      session: await s.json<SessionBody>("GET", `/v1/agents/sessions/${id}`),
      idle: await s.json("GET", `/v1/agents/sessions/${idle.body.id}`),
      sessions: await s.json("GET", "/v1/agents/sessions"),
      items: await s.json<{ data: Array<{ item: { text?: string } }> }>(
        "GET",
        `/v1/agents/sessions/${id}/items`,
      ),
      record: await s.service.core.store.getSession(id),
      turns: (await s.service.core.store.listTurns(id, { order: "asc", limit: 100 })).data,
      events: await s.service.core.store.readEvents(id, 0, 10_000),
    });
    const before = await snapshot(s1);
    expect(before.session.body.status).toBe("idle");
    expect(before.session.body.usage.input_tokens).toBeGreaterThan(0);
    expect(texts(before.session.body)).toEqual(expect.arrayContaining(["alpha", "beta"]));
    expect(before.items.body.data.map((i) => i.item.text)).toEqual(["alpha", "beta"]);
    expect(before.record!.usage.input_tokens).toBe(before.session.body.usage.input_tokens);
    expect(before.turns.map((t) => t.status)).toEqual(["completed", "completed"]);
    expect(before.turns.every((t) => t.usage && t.usage.input_tokens > 0)).toBe(true);
    expect(before.events.length).toBeGreaterThan(10);

    await s1.close({ keepData: true });
    first = undefined;
    second = await startServer({ dataDir: dir });
    const s2 = second;
    expect(s2.url).not.toBe(s1.url);

    const after = await snapshot(s2);
    expect(after).toEqual(before);

    // The event log replays exactly what a live client saw.
    const replay = await readSse(
      await s2.request("GET", `/v1/agents/sessions/${id}/events?after=${fromSeq}`),
    );
    const frames = (es: SseEvent[]) => es.map((e) => ({ id: e.id, event: e.event, data: e.data }));
    expect(frames(replay)).toEqual(frames(live));

    // The next turn continues the same engine thread: the model sees the whole conversation.
    const next = await s2.json<SessionBody>("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Reply with exactly: gamma",
      stream: false,
    });
    expect(next.status).toBe(200);
    expect(texts(next.body)).toContain("gamma");
    const req = s2.mock.requests().at(-1)!;
    expect(req.threadId).toBe(threadId);
    expect(req.messageInputTexts("user")).toEqual(
      expect.arrayContaining(["Reply with exactly: alpha", "Reply with exactly: beta"]),
    );
    expect(req.messageInputTexts("assistant")).toEqual(expect.arrayContaining(["alpha", "beta"]));
    expect(req.lastUserText()).toBe("Reply with exactly: gamma");
    expect(next.body.usage.input_tokens).toBeGreaterThan(before.session.body.usage.input_tokens);
    expect((await s2.service.core.store.getSession(id))!.thread_id).toBe(threadId);
    expect((await s2.service.core.store.listTurns(id, { limit: 100 })).data).toHaveLength(3);
  });
});

describe("SIGKILL during a running turn", () => {
  let dir: string;
  let cli: CliServer | undefined;
  let restarted: ServerFixture | undefined;
  let engines: number[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cas-sigkill-"));
  });
  afterAll(async () => {
    writeFileSync(join(dir, "release"), "");
    if (cli && cli.child.exitCode === null && cli.child.signalCode === null) {
      cli.child.kill("SIGKILL");
      await cli.exited;
    }
    for (const pid of engines) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    await restarted?.close({ keepData: true });
    cleanup(dir);
  });

  it("marks the turn failed with a server_restart reason, and the session works", async () => {
    const dataDir = join(dir, "data");
    cli = await startCliServer(dataDir, ["--sandbox", "danger-full-access"]);
    const post = (path: string, body: unknown) =>
      fetch(`${cli!.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const firstTurn = await post("/v1/agents/sessions", { input: "Reply with exactly: one", stream: false });
    expect(firstTurn.status).toBe(200);
    const id = ((await firstTurn.json()) as SessionBody).id;

    const started = join(dir, "started");
    const release = join(dir, "release");
    const command = `touch ${started}; while [ ! -f ${release} ]; do sleep 0.05; done`;
    const res = await post(`/v1/agents/sessions/${id}/events`, {
      input: `Run this exact shell command and wait for it to finish: ${command}. Then reply with exactly: two`,
      stream: true,
    });
    expect(res.status).toBe(200);
    // What this client sees before the crash: the command item has started.
    const stream = new SseReader(res);
    const seen = await stream.until(
      (e) =>
        e.event === "agent.session.output_item.added" &&
        (e.data.item as { type: string }).type === "command_execution",
      "the command item",
    );
    const commandItem = seen.at(-1)!.data.item as { id: string };
    const reading = stream.toEnd().catch(() => null); // the connection dies with the process
    await waitFor(() => existsSync(started), 30_000, "the command to start");
    engines = descendantPids(cli.pid);
    expect(engines.length).toBeGreaterThan(0);

    cli.child.kill("SIGKILL");
    expect(await cli.exited).toEqual({ code: null, signal: "SIGKILL" });
    await reading;
    // The orphaned engine (and its command) end once released; they must be gone before a new engine
    // opens the same CODEX_HOME.
    writeFileSync(release, "");
    await waitFor(() => engines.every((pid) => !isAlive(pid)), 20_000, "the orphaned engine to exit").catch(
      () => {
        for (const pid of engines) if (isAlive(pid)) process.kill(pid, "SIGKILL");
      },
    );
    await waitFor(() => engines.every((pid) => !isAlive(pid)), 10_000, "the orphaned engine to die");

    restarted = await startServer({ dataDir });
    const s = restarted;
    const { store } = s.service.core;
    const turns = (await store.listTurns(id, { order: "asc", limit: 10 })).data;
    expect(turns.map((t) => t.status)).toEqual(["completed", "failed"]);
    const killed = turns[1]!;
    expect(killed.error?.code).toBe("server_restart");
    expect(killed.error?.message).toMatch(/server stopped while this turn was running/i);
    expect(killed.completed_at).not.toBeNull();
    const record = (await store.getSession(id))!;
    expect(record.status).toBe("idle");
    expect(record.active_turn_id).toBeNull();
    expect(await store.listBusySessions()).toHaveLength(0);

    const session = await s.json<SessionBody>("GET", `/v1/agents/sessions/${id}`);
    expect(session.body.status).toBe("idle");
    expect(texts(session.body)).toContain("one");
    const idleEvents = await s.json("GET", `/v1/agents/sessions/${id}/events`);
    expect(idleEvents.body).toEqual({ status: "idle", message: "No active turn" });

    // The command item the client saw is still there, marked failed, in both dialects.
    const templateItems = await s.json<{ data: Array<{ item: { id: string; status: string } }> }>(
      "GET",
      `/v1/agents/sessions/${id}/items`,
    );
    expect(templateItems.body.data.find((i) => i.item.id === commandItem.id)?.item.status).toBe("failed");
    const officialItems = await s.json<{ data: Array<{ id: string; type: string; status: string }> }>(
      "GET",
      `/v1/agents/sessions/${id}/items?order=asc`,
      undefined,
      { "openai-beta": "agents=v1" },
    );
    expect(officialItems.body.data.find((i) => i.id === commandItem.id)).toMatchObject({
      type: "command_execution",
      status: "failed",
    });

    // A client replaying the log sees the killed turn end, with the reason.
    const startedSeq = (await store.firstEventSeqOfTurn(id, killed.id))!;
    const replay = await readSse(
      await s.request("GET", `/v1/agents/sessions/${id}/events?after=${startedSeq - 1}`),
    );
    expect(replay[0]?.event).toBe("agent.session.turn.started");
    const end = replay.at(-1)!;
    expect(end.event).toBe("agent.session.turn.failed");
    expect(end.data).toMatchObject({
      turn_id: killed.id,
      status: "failed",
      error: { code: "server_restart" },
    });

    // The session is usable and resumes its thread.
    const threadId = record.thread_id!;
    expect(threadId).toBeTruthy();
    const next = await s.json<SessionBody>("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Reply with exactly: recovered",
      stream: false,
    });
    expect(next.status).toBe(200);
    expect(next.body.status).toBe("idle");
    expect(texts(next.body)).toContain("recovered");
    const req = s.mock.requests().at(-1)!;
    expect(req.threadId).toBe(threadId);
    expect(req.messageInputTexts("user")).toContain("Reply with exactly: one");
    expect(req.messageInputTexts("assistant")).toContain("one");
  });
});
