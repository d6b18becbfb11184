// Subagents with the real engine: the agent's multi-agent tools (enabled by multi_agent) open a child thread; it
// becomes a subagent of the session with its own turns and items, shown through the official resources and
// events while the root turn's result stays what the client follows.
import type OpenAI from "openai";
import type { AgentSessionItem } from "openai/resources/beta/agents/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSse, type ServerFixture, startServer } from "../../support/fixture.js";
import { EventLog, sdk } from "../../support/openai-helpers.js";

let f: ServerFixture;
let client: OpenAI;

beforeAll(async () => {
  f = await startServer();
  client = sdk(f);
});
afterAll(async () => {
  await f.close();
});

const SPAWN =
  "Spawn a subagent with the message: Reply with exactly: child says hi. Then reply with its output";

describe("subagents", () => {
  it("a spawned child is a subagent with its own turn and items; the root turn's result is unchanged", async () => {
    const s = await client.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: { model: "mock-model", multi_agent: { enabled: true } },
    });
    const log = await EventLog.open(client, s.id);
    const result = await client.beta.agents.sessions.stream(s.id, { input: SPAWN }).finalResult();
    expect(result.output_text).toBe("child says hi");
    expect(result.turn.subagent_id).toBeNull();

    const subagents = (await client.beta.agents.sessions.subagents.list(s.id)).data;
    expect(subagents).toHaveLength(1);
    const sub = subagents[0]!;
    expect(sub).toMatchObject({
      object: "agent.session.subagent",
      session_id: s.id,
      parent_agent_id: s.agent.id,
      status: "active",
      instructions: [{ type: "output_text", text: "Reply with exactly: child says hi" }],
    });
    expect(await client.beta.agents.sessions.subagents.retrieve(sub.id, { session_id: s.id })).toEqual(sub);

    // Its turn is a turn of the session, marked with the subagent; its items are listed under it.
    const turns = (await client.beta.agents.sessions.turns.list(s.id, { order: "asc" })).data;
    const child = turns.find((t) => t.subagent_id === sub.id)!;
    expect(child.status).toBe("completed");
    expect(turns.filter((t) => t.subagent_id === null)).toHaveLength(1);
    const childItems: AgentSessionItem[] = [];
    for await (const i of client.beta.agents.sessions.subagents.items.list(sub.id, { session_id: s.id })) {
      childItems.push(i);
    }
    expect(childItems.every((i) => i.turn_id === child.id)).toBe(true);
    const said = childItems.flatMap((i) =>
      i.type === "message" && i.role === "assistant" ? i.content.map((c) => ("text" in c ? c.text : "")) : [],
    );
    expect(said).toEqual(["child says hi"]);

    // The subagent's turns resource: the same turn, and its items.
    const viaSub = (await client.beta.agents.sessions.subagents.turns.list(sub.id, { session_id: s.id }))
      .data;
    expect(viaSub.map((t) => t.id)).toEqual([child.id]);
    expect(
      await client.beta.agents.sessions.subagents.turns.retrieve(child.id, {
        session_id: s.id,
        subagent_id: sub.id,
      }),
    ).toEqual(child);
    const turnItems: AgentSessionItem[] = [];
    for await (const i of client.beta.agents.sessions.subagents.turns.items.list(child.id, {
      session_id: s.id,
      subagent_id: sub.id,
    })) {
      turnItems.push(i);
    }
    expect(turnItems.map((i) => i.id)).toEqual(childItems.map((i) => i.id));
    // The root turn is not one of the subagent's.
    const notHers = await client.beta.agents.sessions.subagents.turns
      .retrieve(result.turn.id, { session_id: s.id, subagent_id: sub.id })
      .catch((e: { status?: number }) => e.status);
    expect(notHers).toBe(404);

    // The root turn's own items: the spawn and the wait, addressed to the subagent.
    const rootItems: AgentSessionItem[] = [];
    for await (const i of client.beta.agents.sessions.turns.items.list(result.turn.id, {
      session_id: s.id,
    })) {
      rootItems.push(i);
    }
    expect(rootItems.find((i) => i.type === "create_subagent_call")).toMatchObject({
      agent_id: s.agent.id,
      content: [{ type: "output_text", text: "Reply with exactly: child says hi" }],
      status: "completed",
    });
    expect(rootItems.find((i) => i.type === "wait_for_subagents_call")).toMatchObject({
      sender_agent_id: s.agent.id,
      recipient_agent_ids: [sub.id],
    });
    // The session's items are the root agent's: the subagent's are its own history (above), not among them.
    const sessionItems: AgentSessionItem[] = [];
    for await (const i of client.beta.agents.sessions.items.list(s.id, { limit: 2 })) {
      sessionItems.push(i);
    }
    expect(sessionItems.map((i) => i.id)).toEqual(rootItems.map((i) => i.id));
    expect(sessionItems.some((i) => i.turn_id === child.id)).toBe(false);

    // On the stream: the subagent's creation, and its turn (created with subagent_id) before the root's end.
    const created = log.events.find((e) => e.type === "agent.session.subagent.created");
    expect(created).toMatchObject({ subagent: { id: sub.id } });
    const childCreated = log.events.findIndex(
      (e) => e.type === "agent.session.turn.created" && e.turn.subagent_id === sub.id,
    );
    const rootDone = log.events.findIndex(
      (e) => e.type === "agent.session.turn.completed" && e.turn_id === result.turn.id,
    );
    expect(childCreated).toBeGreaterThan(-1);
    expect(childCreated).toBeLessThan(rootDone);
    await log.close();
  });

  it("template dialect: agents there have no multi_agent setting, so the subagent tools stay off", async () => {
    const text =
      "Spawn a subagent with the message: Reply with exactly: not here. Then reply with exactly: done";
    const res = await f.request("POST", "/v1/agents/sessions", {
      agent: { model: "mock-model" },
      input: text,
      stream: true,
    });
    const frames = await readSse(res);
    expect(frames.at(-1)!.event).toBe("agent.session.turn.completed");
    expect(frames.some((e) => e.event?.startsWith("agent.session.subagent."))).toBe(false);
    const request = f.mock.requests().find((r) => r.lastUserText() === text)!;
    expect(request.toolNames()).not.toContain("multi_agent_v1");
  });
});
