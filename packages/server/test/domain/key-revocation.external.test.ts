// Revoking an API key ends the streams it opened, wherever they are and whoever revokes it: the CLI in another
// process on the same SQLite file, KeyService in the server's own process, the CLI on a PostgreSQL database shared by
// several instances. The stream gets its dialect's error frame and then closes; new requests with the key are 401;
// the turn it was watching goes on; streams of other keys stay open.
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CapturedRequest, Gate, scripts } from "@codex-agent-api/testkit";
import type OpenAI from "openai";
import type { AgentSessionEvent } from "openai/resources/beta/agents/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliToExit } from "../support/cli-process.js";
import { cleanup, expectNothingLeft, type ServerFixture, startServer, waitFor } from "../support/fixture.js";
import { messageEvent, sdk } from "../support/openai-helpers.js";
import { dropTestDatabase, pgTestUrl } from "../support/postgres.js";
import { SseReader } from "../support/sse-client.js";

type Json = Record<string, unknown>;
const TOKEN = "operator-token";

async function keysCli(where: string[], ...args: string[]): Promise<Json> {
  const r = await runCliToExit([...args, ...where], {}, 20_000, "keys");
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split("\n")[0]!) as Json;
}

const tag = () => randomBytes(4).toString("hex");
const forText = (text: string) => (r: CapturedRequest) => r.lastUserText() === text;

/** An official session stream read with the SDK to its end: the events, and whether it ended by itself. */
function follow(client: OpenAI, sessionId: string) {
  const events: AgentSessionEvent[] = [];
  let failure: unknown = null;
  let ended = false;
  const opened = client.beta.agents.sessions.events.stream(sessionId);
  const reading = (async () => {
    try {
      for await (const e of await opened) events.push(e);
    } catch (err) {
      failure = err;
    }
    ended = true;
  })();
  return {
    events,
    reading,
    ended: () => ended,
    failure: () => failure,
    async abort() {
      (await opened).controller.abort();
      await reading;
    },
  };
}

const REVOKED = {
  type: "error",
  error: { type: "authentication_error", code: "invalid_api_key", param: null, message: expect.any(String) },
};

describe("revocation on SQLite", () => {
  let s: ServerFixture;
  let dir: string;
  const where = () => ["--data-dir", dir];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cas-revoke-"));
    s = await startServer({ dataDir: dir, args: ["--token", TOKEN] });
  });
  afterAll(async () => {
    await s?.close();
    cleanup(dir);
  });

  it("keys revoke from another process ends the key's open official streams (error event, then the end)", async () => {
    const doomed = await keysCli(where(), "create", "--project", "rev-a");
    const other = await keysCli(where(), "create", "--project", "rev-a");
    const client = sdk(s, { apiKey: String(doomed.key) });
    const bystander = sdk(s, { apiKey: String(other.key) });
    const session = await client.beta.agents.sessions.create({ environment: { type: "none" } });

    const watched = follow(client, session.id);
    const kept = follow(bystander, session.id);
    await waitFor(() => watched.events.length > 0 && kept.events.length > 0, 10_000, "both streams open");

    // A turn that streams, held (after the model's first event) while the key is revoked.
    const text = `Stream while revoked ${tag()}`;
    const gate = new Gate();
    const parts = Array.from({ length: 20 }, (_, i) => `r${i} `);
    s.mock.enqueue(scripts.streamingMessage(parts, { gate }), forText(text));
    await bystander.beta.agents.sessions.events.create(session.id, { events: [messageEvent(text)] });
    await gate.reached;
    await waitFor(
      () => watched.events.some((e) => e.type === "agent.session.turn.created"),
      10_000,
      "the turn on the doomed stream",
    );

    await keysCli(where(), "revoke", String(doomed.id));
    await waitFor(watched.ended, 10_000, "the revoked key's stream to end");
    // The npm SDK ends the iteration without throwing; the last event is the error, and nothing follows it.
    expect(watched.failure()).toBeNull();
    expect(watched.events.at(-1)).toMatchObject({ ...REVOKED, session_id: session.id });
    expect(watched.events.filter((e) => e.type === "error")).toHaveLength(1);
    const revokedAt = (watched.events.at(-1) as { event_id: string }).event_id;
    await waitFor(() => s.service.core.streams.keyIds().every((k) => k !== doomed.id), 5000, "unregistered");
    // Noticed by reading the keys (the store's change counter moved: another process wrote the file).
    expect(s.service.core.keyWatch.ended.read).toBe(1);

    // New requests with the key are refused; the turn goes on and the other key's stream sees it end.
    const again = await s.request("GET", `/v1/agents/sessions/${session.id}/events`, undefined, {
      authorization: `Bearer ${doomed.key}`,
      "openai-beta": "agents=v1",
    });
    expect(again.status).toBe(401);
    gate.release();
    await waitFor(
      () => kept.events.some((e) => e.type === "agent.session.turn.completed"),
      20_000,
      "the turn to complete on the other stream",
    );
    expect(kept.ended()).toBe(false);
    // The error's event_id resumes right after what the revoked stream delivered: the rest of the turn, once.
    const resumed = new SseReader(
      await s.request("GET", `/v1/agents/sessions/${session.id}/events`, undefined, {
        authorization: `Bearer ${other.key}`,
        "openai-beta": "agents=v1",
        "last-event-id": revokedAt,
      }),
    );
    const rest = await resumed.until((e) => e.event === "agent.session.turn.completed", "turn completed");
    await resumed.cancel();
    const seen = new Set(watched.events.map((e) => (e as { event_id: string }).event_id));
    expect(rest.filter((e) => seen.has(String(e.data.event_id)))).toEqual([]);
    expect(
      rest.filter((e) => e.event === "agent.session.turn.output_text.delta").map((e) => e.data.delta),
    ).toEqual(parts);
    expect(kept.events.filter((e) => e.type === "agent.session.turn.output_text.delta")).toHaveLength(
      parts.length,
    );
    expect(watched.events.some((e) => e.type === "agent.session.turn.output_text.delta")).toBe(false);
    await kept.abort();
  }, 60_000);

  it("a key revoked in the server's own process ends its template turn stream (error frame in the template shape)", async () => {
    const doomed = await keysCli(where(), "create", "--project", "rev-b");
    const auth = { authorization: `Bearer ${doomed.key}` };
    const created = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {}, auth);
    expect(created.status).toBe(200);
    const text = `Template while revoked ${tag()}`;
    const gate = new Gate();
    s.mock.enqueue(scripts.streamingMessage(["one ", "two "], { gate }), forText(text));
    const res = await s.request(
      "POST",
      `/v1/agents/sessions/${created.body.id}/events`,
      { input: text },
      auth,
    );
    const reader = new SseReader(res);
    await reader.until((e) => e.event === "agent.session.turn.started", "turn started");
    await gate.reached;

    const before = { ...s.service.core.keyWatch.ended };
    await s.service.core.keys.revoke(String(doomed.id));
    // Told directly (same process): the stream ends as the revocation returns.
    expect(s.service.core.keyWatch.ended).toEqual({ ...before, notice: before.notice + 1 });
    const rest = await reader.toEnd();
    expect(rest.at(-1)).toEqual({
      id: null,
      event: "error",
      data: { error: expect.stringMatching(/revoked/), type: "AuthError" },
    });
    expect(rest.some((e) => e.event === "agent.session.turn.completed")).toBe(false);
    // The turn itself goes on to its end.
    gate.release();
    await waitFor(
      async () => (await s.service.core.store.getSession(created.body.id))?.status === "idle",
      20_000,
      "the turn to complete",
    );
  }, 60_000);
});

describe("revocation on PostgreSQL, two instances", () => {
  let dbUrl: string;
  let dir: string;
  let a: ServerFixture;
  let b: ServerFixture;
  const where = () => ["--database-url", dbUrl];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cas-revoke-pg-"));
    dbUrl = await pgTestUrl();
    const args = ["--database-url", dbUrl, "--workspace", join(dir, "workspace"), "--token", TOKEN];
    a = await startServer({ args });
    b = await startServer({ args });
  });
  afterAll(async () => {
    // The instances share the workspace root, where each one's engine runs until it stops: nothing may be left once
    // both have stopped (checked then: right after the first, the other's engine may still be stopping there).
    const both = [a, b].filter((f): f is ServerFixture => f !== undefined);
    await Promise.all(both.map((f) => f.service.stop()));
    expectNothingLeft(...both.flatMap((f) => [f.dataDir, f.workspace]));
    await Promise.all(both.map((f) => f.close()));
    if (dbUrl) await dropTestDatabase(dbUrl);
    cleanup(dir);
  });

  it("keys revoke from the CLI ends the key's streams on every instance; other keys' streams stay open", async () => {
    const doomed = await keysCli(where(), "create", "--project", "rev-pg");
    const other = await keysCli(where(), "create", "--project", "rev-pg");
    const onA = sdk(a, { apiKey: String(doomed.key) });
    const onB = sdk(b, { apiKey: String(doomed.key) });
    const session = await onA.beta.agents.sessions.create({ environment: { type: "none" } });
    const streams = [follow(onA, session.id), follow(onB, session.id)];
    const kept = follow(sdk(b, { apiKey: String(other.key) }), session.id);
    await waitFor(
      () => streams.every((x) => x.events.length > 0) && kept.events.length > 0,
      10_000,
      "the streams to open",
    );

    await keysCli(where(), "revoke", String(doomed.id));
    for (const x of streams) {
      await waitFor(x.ended, 10_000, "a revoked key's stream to end");
      expect(x.failure()).toBeNull();
      expect(x.events.at(-1)).toMatchObject(REVOKED);
    }
    // Each instance was told by the database (NOTIFY), not by its own poll.
    for (const f of [a, b]) expect(f.service.core.keyWatch.ended).toEqual({ notice: 1, read: 0 });
    expect(a.service.core.streams.keyIds()).not.toContain(doomed.id);
    expect(b.service.core.streams.keyIds()).not.toContain(doomed.id);
    expect(kept.ended()).toBe(false);
    expect(b.service.core.streams.keyIds()).toContain(other.id);
    await kept.abort();
  }, 60_000);
});
