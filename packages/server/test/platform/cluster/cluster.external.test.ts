// Several instances on one PostgreSQL database (a database created for this run), sharing one workspace root,
// each with its own data directory and engines: any instance serves any request; a turn runs on the instance that
// claimed it and every other instance streams it, steers, cancels and answers it; the conversation follows the
// session from instance to instance; a killed owner's turns are taken over and ended; a zombie stops its engines.
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MockResponsesServer, scriptedModel } from "@codex-agent-api/testkit";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliServer,
  descendantPids,
  isAlive,
  pidsRunning,
  startCliServer,
} from "../../support/cli-process.js";
import {
  cleanup,
  expectNothingLeft,
  readSse,
  type ServerFixture,
  startServer,
  waitFor,
} from "../../support/fixture.js";
import { EventLog, messageEvent, sdk } from "../../support/openai-helpers.js";
import { dropTestDatabase, pgTestUrl } from "../../support/postgres.js";
import { tcpProxy } from "../../support/tcp-proxy.js";

let dir: string;
let dbUrl: string;
let workspace: string;
let mock: MockResponsesServer;
const instances: ServerFixture[] = [];
const clis: CliServer[] = [];

/** A cluster instance in this process (its own data dir and engines; the shared database and workspace). */
async function instance(extra: string[] = []): Promise<ServerFixture> {
  const f = await startServer({
    args: ["--database-url", dbUrl, "--workspace", workspace, ...extra],
    env: { AGENT_CLUSTER_DEAD_AFTER: "5" },
  });
  instances.push(f);
  return f;
}

/** A cluster instance as a separate process (to be killed), on the test's mock model. */
async function cliInstance(url = dbUrl): Promise<CliServer> {
  const data = mkdtempSync(join(dir, "cli-"));
  const cli = await startCliServer(
    data,
    ["--database-url", url, "--workspace", workspace],
    { AGENT_CLUSTER_DEAD_AFTER: "5" },
    { modelUrl: mock.url },
  );
  clis.push(cli);
  return cli;
}

const OFFICIAL = { "content-type": "application/json", "openai-beta": "agents=v1" };
const post = (base: string, path: string, body: unknown) =>
  fetch(base + path, { method: "POST", headers: OFFICIAL, body: JSON.stringify(body) });

/**
 * A shell command that records its pid, then waits for a flag file (so a test controls when it ends). Both files are
 * in the session's own workspace: the only place its commands may write.
 */
function waitingCommand(
  sessionId: string,
  name: string,
): { command: string; started: string; release: () => void; pids: () => number[] } {
  const started = join(workspace, sessionId, `${name}.started`);
  const flag = join(workspace, sessionId, `${name}.go`);
  return {
    command: `touch ${name}.started; while [ ! -f ${name}.go ]; do sleep 0.05; done`,
    started,
    release: () => writeFileSync(flag, ""),
    // (Its own `$$` is a pid in the sandbox's namespace: find it from here by its command line.)
    pids: () => pidsRunning(`${name}.go`),
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cas-cluster-"));
  workspace = join(dir, "workspace");
  mkdirSync(workspace);
  dbUrl = await pgTestUrl();
  mock = await MockResponsesServer.start({ fallback: scriptedModel() });
});

afterAll(async () => {
  for (const cli of clis) {
    if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill("SIGKILL");
  }
  await Promise.all(instances.map((f) => f.close().catch(() => undefined)));
  await mock?.close();
  if (dbUrl) await dropTestDatabase(dbUrl);
  cleanup(dir);
});

describe("three instances on one database", () => {
  let a: ServerFixture;
  let b: ServerFixture;
  let c: ServerFixture;
  let ca: OpenAI;
  let cb: OpenAI;
  let cc: OpenAI;
  beforeAll(async () => {
    [a, b, c] = await Promise.all([instance(), instance(), instance()]);
    [ca, cb, cc] = [sdk(a), sdk(b), sdk(c)];
  });

  it("create on A, stream from B, input on C: B sees the turn live; every instance reads the result", async () => {
    const s = await ca.beta.agents.sessions.create({ environment: { type: "none" } });
    const log = await EventLog.open(cb, s.id);
    await cc.beta.agents.sessions.events.create(s.id, {
      events: [messageEvent("Reply with exactly: from C")],
    });
    const turnId = await log.turnCreated();
    const { end, status } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.completed");
    expect(status.type).toBe("agent.session.idle");
    expect(log.types()).toContain("agent.session.turn.output_text.delta");
    const done = log.events.find(
      (e) => e.type === "agent.session.turn.item.done" && e.item.type === "message",
    );
    expect((done as { item: { content: Array<{ text: string }> } }).item.content[0]!.text).toBe("from C");
    // The instance that ran it is C (its own engine asked its own model).
    expect(c.mock.requests().some((r) => r.lastUserText() === "Reply with exactly: from C")).toBe(true);
    expect(a.mock.requests().some((r) => r.lastUserText() === "Reply with exactly: from C")).toBe(false);
    for (const client of [ca, cb, cc]) {
      const turn = await client.beta.agents.sessions.turns.retrieve(turnId, { session_id: s.id });
      expect(turn.status).toBe("completed");
    }
    await log.close();
  });

  it("the conversation follows the session across instances, and back to one that had an older copy", async () => {
    const s = await ca.beta.agents.sessions.create({ environment: { type: "none" } });
    await ca.beta.agents.sessions.stream(s.id, { input: "Reply with exactly: one on A" }).finalResult();
    await cb.beta.agents.sessions.stream(s.id, { input: "Reply with exactly: two on B" }).finalResult();
    const onB = b.mock.requests().find((r) => r.lastUserText() === "Reply with exactly: two on B")!;
    expect(onB.messageInputTexts("assistant")).toContain("one on A");
    // A still has the thread loaded as it was after turn one: that copy must not be used.
    await ca.beta.agents.sessions.stream(s.id, { input: "Reply with exactly: three on A" }).finalResult();
    const onA = a.mock.requests().find((r) => r.lastUserText() === "Reply with exactly: three on A")!;
    expect(onA.messageInputTexts("user")).toEqual(
      expect.arrayContaining(["Reply with exactly: one on A", "Reply with exactly: two on B"]),
    );
    expect(onA.messageInputTexts("assistant")).toEqual(expect.arrayContaining(["one on A", "two on B"]));
    // And on to C, which never saw it.
    await cc.beta.agents.sessions.stream(s.id, { input: "Reply with exactly: four on C" }).finalResult();
    const onC = c.mock.requests().find((r) => r.lastUserText() === "Reply with exactly: four on C")!;
    expect(onC.messageInputTexts("assistant")).toEqual(
      expect.arrayContaining(["one on A", "two on B", "three on A"]),
    );
  });

  it("steer and cancel posted to other instances reach the turn's owner", async () => {
    const s = await ca.beta.agents.sessions.create({ environment: { type: "none" } });
    const log = await EventLog.open(cc, s.id);
    const cmd = waitingCommand(s.id, "steer");
    await ca.beta.agents.sessions.events.create(s.id, {
      events: [
        messageEvent(
          `Run this exact shell command and wait for it to finish: ${cmd.command}. Then reply with exactly: ran`,
        ),
      ],
    });
    const turnId = await log.turnCreated();
    await waitFor(() => existsSync(cmd.started), 20_000, "the command to start");
    // Steer through B (a message to a busy session steers it; B does not run it: A does).
    await cb.beta.agents.sessions.events.create(s.id, { events: [messageEvent("Also mention the steer")] });
    cmd.release();
    const { end } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.completed");
    expect(
      a.mock.requests().some((r) => r.messageInputTexts("user").includes("Also mention the steer")),
    ).toBe(true);
    expect(
      b.mock.requests().some((r) => r.messageInputTexts("user").includes("Also mention the steer")),
    ).toBe(false);
    const turns = await cc.beta.agents.sessions.turns.list(s.id);
    expect(turns.data).toHaveLength(1);

    // Cancel through C a turn A runs.
    const cmd2 = waitingCommand(s.id, "cancel");
    const from = log.events.length;
    await ca.beta.agents.sessions.events.create(s.id, {
      events: [
        messageEvent(
          `Run this exact shell command and wait for it to finish: ${cmd2.command}. Then reply with exactly: never`,
        ),
      ],
    });
    const second = await log.turnCreated(1);
    await waitFor(() => existsSync(cmd2.started), 20_000, "the second command to start");
    await cc.beta.agents.sessions.events.create(s.id, { events: [{ type: "agent.session.input.cancel" }] });
    const cancelled = await log.waitFor(
      (e) => e.type === "agent.session.turn.cancelled" && e.turn_id === second,
      "turn.cancelled",
      from,
    );
    expect(cancelled).toBeDefined();
    cmd2.release();
    await log.close();
  });

  it("a tool result posted to another instance answers the owner's pending call", async () => {
    const tool = {
      type: "function" as const,
      name: "lookup",
      description: "Looks up.",
      parameters: { type: "object" },
    };
    const s = await ca.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: { model: "mock-model", tools: [tool] },
    });
    // The SDK's handler posts the result through B; A runs the turn.
    const log = await EventLog.open(cb, s.id);
    await ca.beta.agents.sessions.events.create(s.id, {
      events: [messageEvent('Call the function lookup with arguments {"q":"x"}. Then reply with its output')],
    });
    const turnId = await log.turnCreated();
    const req = (await log.waitFor((e) => e.type === "agent.session.requires_action", "requires_action")) as {
      session: { required_actions: Array<{ call_id: string }> };
    };
    const callId = req.session.required_actions[0]!.call_id;
    await cb.beta.agents.sessions.events.create(s.id, {
      events: [
        {
          type: "agent.session.input.tool_result",
          turn_id: turnId,
          call_id: callId,
          success: true,
          output: "found it",
        },
      ],
    });
    const { end } = await log.waitForSettled(turnId);
    expect(end.type).toBe("agent.session.turn.completed");
    expect((await cc.beta.agents.sessions.retrieve(s.id)).required_actions).toEqual([]);
    await log.close();
  });

  it("two instances claim one idle session at once: exactly one turn runs", async () => {
    const created = await a.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const id = created.body.id;
    const [r1, r2] = await Promise.all([
      b.request("POST", `/v1/agents/sessions/${id}/events`, {
        input: "Reply with exactly: race one",
        stream: true,
      }),
      c.request("POST", `/v1/agents/sessions/${id}/events`, {
        input: "Reply with exactly: race two",
        stream: true,
      }),
    ]);
    const statuses = [r1.status, r2.status].sort();
    expect(statuses).toEqual([200, 409]);
    const winner = r1.status === 200 ? r1 : r2;
    const frames = await readSse(winner);
    expect(frames.at(-1)!.event).toBe("agent.session.turn.completed");
    const turns = await a.service.core.store.listTurns(id, { limit: 10 });
    expect(turns.data).toHaveLength(1);
  });

  it("a goal paused through another instance stops the owner's continuations", async () => {
    const created = await a.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    const id = created.body.id;
    const res = await a.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Objective: keep the goal active and keep polishing",
      goal: { max_turns: 50 },
    });
    const reading = readSse(res);
    await waitFor(
      async () =>
        ((await b.json<{ turns_used: number }>("GET", `/v1/agents/sessions/${id}/goal`)).body.turns_used ??
          0) >= 1,
      20_000,
      "a continuation",
    );
    const paused = await b.json<{ status: string }>("POST", `/v1/agents/sessions/${id}/goal`, {
      status: "paused",
    });
    expect(paused.status).toBe(200);
    const frames = await reading;
    expect(frames.at(-1)!.event).toBe("agent.session.turn.completed");
    const goal = await c.json<{ status: string; status_reason: string; turns_used: number }>(
      "GET",
      `/v1/agents/sessions/${id}/goal`,
    );
    expect(goal.body).toMatchObject({ status: "paused", status_reason: "user_paused" });
    expect(goal.body.turns_used).toBeLessThan(50);
  });

  it("every instance restarts: sessions, history and conversations carry on", async () => {
    const s = await ca.beta.agents.sessions.create({ environment: { type: "none" } });
    await cb.beta.agents.sessions
      .stream(s.id, { input: "Reply with exactly: before the restart" })
      .finalResult();
    const dataDirs = [a, b, c].map((f) => f.dataDir);
    // The instances share the workspace root, where each one's engine runs until it stops: nothing may be left
    // once all have stopped (checked then, not after the first).
    await Promise.all([a, b, c].map((f) => f.service.stop()));
    expectNothingLeft(...[a, b, c].flatMap((f) => [f.dataDir, f.workspace]));
    instances.splice(0);
    const again = await Promise.all(
      dataDirs.map((d) =>
        startServer({
          dataDir: d,
          args: ["--database-url", dbUrl, "--workspace", workspace],
          env: { AGENT_CLUSTER_DEAD_AFTER: "5" },
        }),
      ),
    );
    instances.push(...again);
    [a, b, c] = again as [ServerFixture, ServerFixture, ServerFixture];
    [ca, cb, cc] = [sdk(a), sdk(b), sdk(c)];
    const r = await cc.beta.agents.sessions
      .stream(s.id, { input: "Reply with exactly: after the restart" })
      .finalResult();
    expect(r.output_text).toBe("after the restart");
    const onC = c.mock.requests().find((q) => q.lastUserText() === "Reply with exactly: after the restart")!;
    expect(onC.messageInputTexts("assistant")).toContain("before the restart");
  });
});

describe("an instance dies", () => {
  it("kill -9 of the owner mid-turn: another instance fails the turn (owner_lost) and the next turn continues", async () => {
    const survivor = await instance();
    const client = sdk(survivor);
    const owner = await cliInstance();
    const s = (await (
      await post(owner.url, "/v1/agents/sessions", { environment: { type: "none" } })
    ).json()) as {
      id: string;
    };
    expect(
      (
        await post(owner.url, `/v1/agents/sessions/${s.id}/events`, {
          events: [messageEvent("Reply with exactly: kept")],
        })
      ).status,
    ).toBe(202);
    await waitFor(
      async () => (await client.beta.agents.sessions.retrieve(s.id)).status === "idle",
      20_000,
      "turn one",
    );
    const log = await EventLog.open(client, s.id);
    const cmd = waitingCommand(s.id, "killed");
    await post(owner.url, `/v1/agents/sessions/${s.id}/events`, {
      events: [
        messageEvent(
          `Run this exact shell command and wait for it to finish: ${cmd.command}. Then reply with exactly: lost`,
        ),
      ],
    });
    const turnId = await log.turnCreated(0);
    await waitFor(() => existsSync(cmd.started), 20_000, "the command to start");
    const engines = descendantPids(owner.pid);
    owner.child.kill("SIGKILL");
    for (const pid of engines) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    const killedAt = Date.now();
    const failed = await log.waitFor(
      (e) => e.type === "agent.session.turn.failed" && e.turn_id === turnId,
      "the takeover",
    );
    const tookMs = Date.now() - killedAt;
    expect((failed as { turn: { error: { code: string } } }).turn.error).toBeDefined();
    const stored = await survivor.service.core.store.getTurn(s.id, turnId);
    expect(stored!.error!.code).toBe("owner_lost");
    await log.waitFor((e) => e.type === "agent.session.idle", "idle after the takeover");
    process.stdout.write(`takeover after SIGKILL: ${tookMs} ms\n`);
    const next = await client.beta.agents.sessions
      .stream(s.id, { input: "Reply with exactly: continued" })
      .finalResult();
    expect(next.output_text).toBe("continued");
    const request = survivor.mock
      .requests()
      .find((r) => r.lastUserText() === "Reply with exactly: continued")!;
    expect(request.messageInputTexts("assistant")).toContain("kept");
    await log.close();
  });

  it("kill -9 of the owner mid-goal: the turn fails and the goal is paused (owner_lost)", async () => {
    const survivor = await instance();
    const owner = await cliInstance();
    const created = (await (
      await fetch(`${owner.url}/v1/agents/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      })
    ).json()) as { id: string };
    const id = created.id;
    const res = await fetch(`${owner.url}/v1/agents/sessions/${id}/events`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "Objective: keep the goal active forever", goal: { max_turns: 100 } }),
    });
    const reading = readSse(res).catch(() => []);
    await waitFor(
      async () =>
        ((await survivor.json<{ turns_used?: number }>("GET", `/v1/agents/sessions/${id}/goal`)).body
          .turns_used ?? 0) >= 1,
      20_000,
      "the goal to continue",
    );
    const engines = descendantPids(owner.pid);
    owner.child.kill("SIGKILL");
    for (const pid of engines) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    await reading;
    await waitFor(
      async () =>
        (await survivor.json<{ status: string }>("GET", `/v1/agents/sessions/${id}/goal`)).body.status ===
        "paused",
      20_000,
      "the goal to be paused",
    );
    const goal = await survivor.json<{ status_reason: string }>("GET", `/v1/agents/sessions/${id}/goal`);
    expect(goal.body.status_reason).toBe("owner_lost");
    const turns = await survivor.service.core.store.listTurns(id, { limit: 5 });
    expect(turns.data[0]!.error!.code).toBe("owner_lost");
    const session = await survivor.service.core.store.getSession(id);
    expect(session).toMatchObject({ status: "idle", active_turn_id: null });
  });

  it("an owner that loses the database fences itself: its command is stopped before the turn is taken over", async () => {
    const proxy = await tcpProxy(5432);
    const url = new URL(dbUrl);
    url.port = String(proxy.port);
    const survivor = await instance();
    const client = sdk(survivor);
    const owner = await cliInstance(url.toString());
    const s = (await (
      await post(owner.url, "/v1/agents/sessions", { environment: { type: "none" } })
    ).json()) as {
      id: string;
    };
    const log = await EventLog.open(client, s.id);
    const cmd = waitingCommand(s.id, "zombie");
    await post(owner.url, `/v1/agents/sessions/${s.id}/events`, {
      events: [
        messageEvent(
          `Run this exact shell command and wait for it to finish: ${cmd.command}. Then reply with exactly: zombie`,
        ),
      ],
    });
    const turnId = await log.turnCreated(0);
    await waitFor(() => existsSync(cmd.started), 20_000, "the command to start");
    const commandPid = cmd.pids()[0] ?? 0;
    expect(commandPid).toBeGreaterThan(0);
    void proxy.cut();
    // The owner process lives on, but it must stop its engines (and so the command) by itself.
    await waitFor(() => !isAlive(commandPid), 20_000, "the zombie's command to be stopped");
    expect(owner.child.exitCode, `the owner exited: ${owner.stderr().slice(-3000)}`).toBeNull();
    // A load balancer's health check sends requests elsewhere meanwhile.
    const health = await fetch(`${owner.url}/health`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as { status: string }).status).toBe("fenced");
    await log.waitFor((e) => e.type === "agent.session.turn.failed" && e.turn_id === turnId, "the takeover");
    expect((await survivor.service.core.store.getTurn(s.id, turnId))!.error!.code).toBe("owner_lost");
    expect(owner.logs().some((l) => String(l.msg).includes("fencing this instance"))).toBe(true);
    await log.close();
    await proxy.close();
  });
});
