// Official webhook endpoints against the real service (engine, scripted model, SQLite), with a local receiver that
// verifies every delivery with the official SDK's `client.webhooks.unwrap`: the session lifecycle events, retries
// after a 500 (with backoff, bounded in time), the rotation overlap, the SSRF guard (and its allow flag), projects,
// and secrets: shown once, never in other responses, logs or the database file.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import OpenAI, { InvalidWebhookSignatureError } from "openai";
import type { UnwrapWebhookEvent, WebhookEndpointWithSecret } from "openai/resources/webhooks/webhooks";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/load.js";
import { type Service, startService } from "../../../src/main/service.js";
import { until } from "../../support/automation-helpers.js";
import { TestClock } from "../../support/clock.js";
import { cleanup, expectNothingLeft, type ServerFixture, startServer } from "../../support/fixture.js";
import { expectApiError, messageEvent, rejection, sdk } from "../../support/openai-helpers.js";
import { type Received, WebhookReceiver } from "../../support/webhook-receiver.js";

const ALL = [
  "agent.session.created",
  "agent.session.in_progress",
  "agent.session.action_required",
  "agent.session.idle",
  "agent.session.failed",
] as const;

interface Logged {
  service: Service;
  url: string;
  dataDir: string;
  logs: string[];
  close(): Promise<void>;
}

/** The service with every log line kept (level trace), to look for secrets in them. */
async function startLogged(clock: TestClock, args: string[]): Promise<Logged> {
  const dataDir = mkdtempSync(join(tmpdir(), "cas-webhooks-"));
  const config = loadConfig(["--mock-model", "--port", "0", "--data-dir", dataDir, ...args], {}, dataDir);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString("utf8"));
      done();
    },
  });
  const service = await startService(config, {
    logger: pino({ level: "trace" }, sink),
    mockCapture: true,
    clock,
  });
  return {
    service,
    url: service.url,
    dataDir,
    logs,
    async close() {
      await service.stop();
      expectNothingLeft(dataDir);
      cleanup(dataDir);
    },
  };
}

/** Verifies a received delivery the way a receiver would, with the official SDK. */
async function unwrap(client: OpenAI, r: Received, secret: string): Promise<UnwrapWebhookEvent> {
  return client.webhooks.unwrap(r.body, r.headers, secret);
}

async function unwrapFails(client: OpenAI, r: Received, secret: string): Promise<void> {
  await expect(client.webhooks.unwrap(r.body, r.headers, secret)).rejects.toBeInstanceOf(
    InvalidWebhookSignatureError,
  );
}

interface DeliveryObject {
  id: string;
  status: string;
  attempts: number;
  next_attempt_at: number | null;
  event: { id: string; type: string; data: { id: string } };
  last_attempt: { at: number; status_code: number | null; error: string | null } | null;
  attempt_log: Array<{ at: number; status_code: number | null; error: string | null }>;
}

async function deliveries(client: OpenAI, endpointId: string): Promise<DeliveryObject[]> {
  const page = (await client.get(`/webhook_endpoints/${endpointId}/deliveries`, {
    query: { limit: 100 },
  })) as { data: DeliveryObject[] };
  return page.data;
}

describe("webhooks (targets on this machine allowed)", () => {
  const clock = new TestClock();
  let f: Logged;
  let client: OpenAI;
  let receiver: WebhookReceiver;
  const secrets: string[] = [];
  beforeAll(async () => {
    f = await startLogged(clock, ["--webhook-allow-private", "--webhook-allow-http"]);
    client = sdk(f);
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await f?.close();
    await receiver?.close();
  });

  const create = async (name: string, path: string, types: readonly string[] = ALL) => {
    const e = (await client.webhooks.create({
      name,
      url: receiver.urlOf(path),
      event_types: types as unknown as (typeof ALL)[number][],
    })) as WebhookEndpointWithSecret;
    secrets.push(e.signing_secret);
    return e;
  };

  it("every session lifecycle event is delivered, signed so that the official SDK verifies it", async () => {
    const e = await create("lifecycle", "/lifecycle");
    expect(e).toMatchObject({
      object: "webhook_endpoint",
      name: "lifecycle",
      url: receiver.urlOf("/lifecycle"),
      event_types: [...ALL],
      signing_secret_hint: `whsec_…${e.signing_secret.slice(-4)}`,
    });
    expect(e.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const shown = await client.webhooks.retrieve(e.id);
    expect(shown).toEqual({ ...e, signing_secret: undefined, _request_id: undefined, ...shown });
    expect(JSON.stringify(shown)).not.toContain(e.signing_secret);
    expect(shown).not.toHaveProperty("signing_secret");

    // A session whose turn waits for a function call: created, in progress, action required, in progress, idle.
    const s = await client.beta.agents.sessions.create({
      environment: { type: "none" },
      agent: {
        tools: [
          { type: "function", name: "lookup", description: "Looks up.", parameters: { type: "object" } },
        ],
      },
    });
    await client.beta.agents.sessions.events.create(s.id, {
      events: [
        messageEvent("Call the function lookup with arguments {}. Then reply with exactly: looked up"),
      ],
    });
    const waiting = await until(async () => {
      const x = await client.beta.agents.sessions.retrieve(s.id);
      return x.status === "requires_action" ? x : null;
    }, "the function call");
    const action = waiting.required_actions[0] as unknown as { call_id: string; turn_id: string };
    await client.beta.agents.sessions.events.create(s.id, {
      events: [
        {
          type: "agent.session.input.tool_result",
          turn_id: action.turn_id,
          call_id: action.call_id,
          success: true,
          output: "found",
        } as never,
      ],
    });
    const mine = () => receiver.at("/lifecycle", (ev) => ev.data.id === s.id);
    await until(() => (mine().length >= 5 ? true : null), "five deliveries");
    const events = await Promise.all(mine().map((r) => unwrap(client, r, e.signing_secret)));
    expect(events.map((ev) => ev.type).sort()).toEqual(
      [
        "agent.session.action_required",
        "agent.session.created",
        "agent.session.idle",
        "agent.session.in_progress",
        "agent.session.in_progress",
      ].sort(),
    );
    for (const ev of events) {
      expect(ev).toMatchObject({
        object: "event",
        id: expect.stringMatching(/^evt_/),
        created_at: expect.any(Number),
      });
      expect((ev.data as { id: string }).id).toBe(s.id);
      if (ev.type === "agent.session.action_required") {
        expect(ev.data).toEqual({ id: s.id, required_action: { type: "function_call" } });
      } else {
        expect(ev.data).toEqual({ id: s.id, environment_type: "none" });
      }
    }
    // Standard Webhooks headers; webhook-id is the event id.
    for (const r of mine()) {
      expect(r.headers["webhook-id"]).toBe(JSON.parse(r.body).id);
      expect(r.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
      expect(r.headers["content-type"]).toBe("application/json");
    }
    // Another secret does not verify them.
    await unwrapFails(client, mine()[0]!, `whsec_${Buffer.alloc(24, 1).toString("base64")}`);
    // The deliveries as the API shows them.
    const list = (await deliveries(client, e.id)).filter((d) => d.event.data.id === s.id);
    expect(list).toHaveLength(5);
    expect(
      list.every((d) => d.status === "delivered" && d.attempts === 1 && d.last_attempt?.status_code === 200),
    ).toBe(true);
  });

  it("an openai_hosted session's events name its environment: its type and id, as the session shows them", async () => {
    const e = await create("hosted", "/hosted", ["agent.session.created", "agent.session.idle"]);
    const s = await client.beta.agents.sessions.create({ environment: { type: "openai_hosted" } });
    const envId = (s.environment as { id: string }).id;
    expect(s.environment).toMatchObject({ type: "openai_hosted", id: expect.stringMatching(/^env_/) });
    await client.beta.agents.sessions.events.create(s.id, {
      events: [messageEvent("Reply with exactly: hosted")],
    });
    const mine = () => receiver.at("/hosted", (ev) => ev.data.id === s.id);
    await until(
      () => (mine().some((r) => JSON.parse(r.body).type === "agent.session.idle") ? true : null),
      "idle",
    );
    const events = await Promise.all(mine().map((r) => unwrap(client, r, e.signing_secret)));
    expect(events.map((ev) => ev.type)).toContain("agent.session.created");
    for (const ev of events) {
      expect(ev.data).toEqual({ id: s.id, environment_type: "openai_hosted", environment_id: envId });
    }
  });

  it("an endpoint subscribed to some types gets only those; a test event is sent and verified", async () => {
    const e = await create("idle only", "/idle", ["agent.session.idle"]);
    const dir = join(f.service.core.config.workspaceRoot, "self-hosted");
    mkdirSync(dir, { recursive: true });
    const s = await client.beta.agents.sessions.create({
      environment: { type: "self_hosted", workspace_directory: dir },
    });
    await client.beta.agents.sessions.events.create(s.id, {
      events: [messageEvent("Reply with exactly: quick")],
    });
    const toIdle = () => receiver.at("/idle", (ev) => ev.data.id === s.id);
    await until(
      () => (toIdle().some((r) => JSON.parse(r.body).type === "agent.session.idle") ? true : null),
      "idle",
    );
    const idle = (await deliveries(client, e.id)).filter((d) => d.event.data.id === s.id);
    expect(idle.map((d) => d.event.type)).toEqual(["agent.session.idle"]);
    expect(idle[0]!.event.data).toEqual({
      id: s.id,
      environment_type: "self_hosted",
      environment_id: expect.any(String),
    });

    const n = receiver.at("/idle").length;
    const result = await client.webhooks.test(e.id, { event_type: "agent.session.idle" });
    expect(result).toMatchObject({
      object: "webhook_endpoint.test",
      event_type: "agent.session.idle",
      status_code: 200,
      success: true,
      webhook_endpoint_id: e.id,
      delivered: true,
      error: null,
    });
    const sample = await unwrap(client, receiver.at("/idle")[n]!, e.signing_secret);
    expect(sample.type).toBe("agent.session.idle");
    expect((sample.data as { id: string }).id).toMatch(/^sess_test_/);
    // `success` is the official API's constant (the test request completed: status_code tells the answer);
    // `delivered` (this server's extension) is what a delivery counts as one: a 2xx only, never a redirect (not
    // followed) or an error.
    receiver.answerNext("/idle", 503, 302, 204);
    receiver.answerHeaders = { location: receiver.urlOf("/elsewhere") };
    try {
      for (const [status, delivered, error] of [
        [503, false, "answered 503"],
        [302, false, "answered 302: redirects are not followed"],
        [204, true, null],
      ] as const) {
        expect(await client.webhooks.test(e.id, { event_type: "agent.session.created" })).toMatchObject({
          status_code: status,
          success: true,
          delivered,
          error,
        });
      }
    } finally {
      receiver.answerHeaders = {};
    }
    expect(receiver.at("/elsewhere")).toEqual([]);
    expectApiError(
      await rejection(client.webhooks.test(e.id, { event_type: "batch.completed" })),
      OpenAI.BadRequestError,
      400,
    );
  });

  it("environments: ready and failed are delivered once each, made ahead or with a session, and verified", async () => {
    const types = [
      "agent.environment.ready",
      "agent.environment.failed",
      "agent.environment.expired",
    ] as const;
    const e = await create("environments", "/environments", types);
    const ready = await client.beta.agents.environments.create({
      environment: { type: "openai_hosted", setup_commands: [{ command: "echo prepared > ready.txt" }] },
    });
    const failed = await client.beta.agents.environments.create({
      environment: { type: "openai_hosted", setup_commands: [{ command: "exit 3" }] },
    });
    const session = await client.beta.agents.sessions.create({
      environment: { type: "openai_hosted", setup_commands: [{ command: "true" }] },
    });
    const sessionEnv = (session.environment as { id?: string }).id!;
    expect(sessionEnv).toMatch(/^env_/);
    const expected = new Map([
      [ready.id, "agent.environment.ready"],
      [failed.id, "agent.environment.failed"],
      [sessionEnv, "agent.environment.ready"],
    ]);
    const received = await until(async () => {
      const all = receiver.at("/environments");
      return all.length >= expected.size ? all : null;
    }, "three environment events");
    const events = await Promise.all(received.map((r) => unwrap(client, r, e.signing_secret)));
    expect(new Map(events.map((ev) => [(ev.data as { id: string }).id, ev.type]))).toEqual(expected);
    expect(events.every((ev) => Object.keys(ev.data).join() === "id")).toBe(true);
    // Once each: the deliveries of the endpoint are exactly these.
    const recorded = await deliveries(client, e.id);
    expect(recorded.map((d) => [d.event.data.id, d.event.type, d.status]).sort()).toEqual(
      [...expected].map(([id, type]) => [id, type, "delivered"]).sort(),
    );
    const sample = await client.webhooks.test(e.id, { event_type: "agent.environment.expired" });
    expect(sample.status_code).toBe(200);
    const last = await unwrap(client, receiver.at("/environments").at(-1)!, e.signing_secret);
    expect(last.type).toBe("agent.environment.expired");
  });

  it("a delivery answered 500 is retried later (re-signed) and then delivered; a failing one gives up in bounded time", async () => {
    const e = await create("retries", "/retry");
    receiver.answerNext("/retry", 500);
    const s = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    const mine = () => receiver.at("/retry", (ev) => ev.data.id === s.id);
    await until(() => (mine().length >= 1 ? true : null), "the first attempt");
    expect(mine()[0]!.status).toBe(500);
    const pending = await until(async () => {
      const [d] = (await deliveries(client, e.id)).filter((x) => x.event.data.id === s.id);
      return d && d.attempts === 1 && d.last_attempt ? d : null;
    }, "the failed attempt to be recorded");
    expect(pending).toMatchObject({
      status: "pending",
      last_attempt: { status_code: 500, error: "answered 500" },
    });
    // 30 s ± 25 % after the attempt (both times are whole seconds); the time since then is the test's, not the delay.
    const delay = pending.next_attempt_at! - pending.last_attempt!.at;
    expect(delay).toBeGreaterThanOrEqual(22);
    expect(delay).toBeLessThanOrEqual(38);
    clock.advance(pending.next_attempt_at! - clock.now() + 1);
    await until(() => (mine().length >= 2 ? true : null), "the retry");
    const [first, second] = mine();
    expect(second!.status).toBe(200);
    expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
    expect(second!.body).toBe(first!.body);
    await unwrap(client, first!, e.signing_secret);
    await unwrap(client, second!, e.signing_secret);
    const done = await until(async () => {
      const [d] = (await deliveries(client, e.id)).filter((x) => x.event.data.id === s.id);
      return d?.status === "delivered" ? d : null;
    }, "delivered");
    expect(done.attempts).toBe(2);
    expect(done.attempt_log.map((a) => a.status_code)).toEqual([500, 200]);
  });

  it("rotation: with the overlap both secrets verify for 24 hours, then only the new one; without it, at once", async () => {
    const e = await create("rotation", "/rotate");
    const old = e.signing_secret;
    const rotated = (await client.webhooks.rotateSecret(e.id, {
      keep_old_secret_active_for_24_hours: true,
    })) as WebhookEndpointWithSecret;
    secrets.push(rotated.signing_secret);
    expect(rotated.signing_secret).not.toBe(old);
    expect(rotated.signing_secret_hint).toBe(`whsec_…${rotated.signing_secret.slice(-4)}`);
    expect((await client.webhooks.retrieve(e.id)).updated_at).toBeGreaterThanOrEqual(e.updated_at ?? 0);

    const sendTest = async () => {
      const n = receiver.at("/rotate").length;
      await client.webhooks.test(e.id, { event_type: "agent.session.created" });
      return receiver.at("/rotate")[n]!;
    };
    const during = await sendTest();
    expect(during.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    await unwrap(client, during, rotated.signing_secret);
    await unwrap(client, during, old);

    clock.advance(24 * 3600 + 1);
    const after = await sendTest();
    expect(after.headers["webhook-signature"]!.split(" ")).toHaveLength(1);
    await unwrap(client, after, rotated.signing_secret);
    await unwrapFails(client, after, old);

    const again = (await client.webhooks.rotateSecret(e.id)) as WebhookEndpointWithSecret;
    secrets.push(again.signing_secret);
    const now = await sendTest();
    await unwrap(client, now, again.signing_secret);
    await unwrapFails(client, now, rotated.signing_secret);
  });

  it("CRUD: list newest first, update (updated_at moves only on change), delete; event types; bad input is a 400", async () => {
    const a = await create("first", "/a");
    const b = await create("second", "/b");
    const listed = await client.webhooks.list({ limit: 2 });
    expect(listed.data.map((x) => x.id)).toEqual([b.id, a.id]);
    expect(JSON.stringify(listed.data)).not.toMatch(/whsec_[A-Za-z0-9+/]{8}/);
    const same = await client.webhooks.update(a.id, { name: "first" });
    expect(same.updated_at).toBe(a.updated_at);
    clock.advance(5);
    const changed = await client.webhooks.update(a.id, {
      name: "renamed",
      event_types: ["agent.session.failed"],
    });
    expect(changed).toMatchObject({ name: "renamed", event_types: ["agent.session.failed"] });
    expect(changed.updated_at!).toBeGreaterThan(a.updated_at!);
    expect(await client.webhooks.eventTypes.list()).toEqual({
      object: "list",
      data: [
        ...ALL,
        "agent.environment.ready",
        "agent.environment.failed",
        "agent.environment.expired",
        "agent.session.repository.output",
      ],
    });
    expectApiError(
      await rejection(
        client.webhooks.create({ name: "x", url: receiver.urlOf("/x"), event_types: ["batch.completed"] }),
      ),
      OpenAI.BadRequestError,
      400,
    );
    expectApiError(
      await rejection(
        client.webhooks.create({ name: "x", url: "not a url", event_types: ["agent.session.idle"] }),
      ),
      OpenAI.BadRequestError,
      400,
    );
    expectApiError(
      await rejection(client.webhooks.create({ name: "x", url: receiver.urlOf("/x"), event_types: [] })),
      OpenAI.BadRequestError,
      400,
    );
    expect(await client.webhooks.delete(a.id)).toEqual({
      id: a.id,
      object: "webhook_endpoint.deleted",
      deleted: true,
    });
    expectApiError(await rejection(client.webhooks.retrieve(a.id)), OpenAI.NotFoundError, 404);
    // Answered in the official shape even with the template dialect's headers (the SDK sends no OpenAI-Beta).
    const res = await fetch(`${f.url}/v1/webhook_endpoints/${a.id}`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { type: "not_found_error", code: "not_found" } });
  });

  it("another project's endpoints are not found, and its sessions' events are not sent to them", async () => {
    const keys = f.service.core.keys;
    const mine = sdk(f, { apiKey: (await keys.create("proj_a", false)).key });
    const theirs = sdk(f, { apiKey: (await keys.create("proj_b", false)).key });
    try {
      const e = (await mine.webhooks.create({
        name: "mine",
        url: receiver.urlOf("/mine"),
        event_types: ["agent.session.created"],
      })) as WebhookEndpointWithSecret;
      secrets.push(e.signing_secret);
      expect((await theirs.webhooks.list()).data).toEqual([]);
      const calls: Array<() => Promise<unknown>> = [
        () => theirs.webhooks.retrieve(e.id),
        () => theirs.webhooks.update(e.id, { name: "x" }),
        () => theirs.webhooks.rotateSecret(e.id),
        () => theirs.webhooks.test(e.id, { event_type: "agent.session.idle" }),
        () => theirs.get(`/webhook_endpoints/${e.id}/deliveries`),
        () => theirs.webhooks.delete(e.id),
      ];
      for (const call of calls) expectApiError(await rejection(call()), OpenAI.NotFoundError, 404);
      const other = await theirs.beta.agents.sessions.create({ environment: { type: "none" } });
      const own = await mine.beta.agents.sessions.create({ environment: { type: "none" } });
      // The outbox is written with the event: what the endpoint will ever get is known now.
      const rows = (await f.service.core.store.listWebhookDeliveries(e.id, { limit: 100 })).data;
      expect(rows.map((d) => d.session_id)).toEqual([own.id]);
      expect(rows.map((d) => d.session_id)).not.toContain(other.id);
    } finally {
      for (const k of await keys.list()) if (!k.revoked_at) await keys.revoke(k.id);
    }
  });

  it("secrets: sealed at rest (key file 0600), never in logs or the database in clear", async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(6);
    const keyFile = join(f.dataDir, "secret.key");
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const sealed = await f.service.core.store.listWebhookEndpoints({ project_id: "default", limit: 100 });
    for (const e of sealed.data) expect(e.secret).toMatch(/^v1\.[0-9a-f]{8}\./);
    const files = readdirSync(f.dataDir)
      .filter((n) => n.startsWith("agents.db"))
      .map((n) => readFileSync(join(f.dataDir, n)));
    expect(files.length).toBeGreaterThanOrEqual(1);
    const logs = f.logs.join("");
    expect(logs).toContain("generated a secret key");
    for (const secret of secrets) {
      const key = secret.slice("whsec_".length);
      for (const bytes of files) {
        expect(bytes.includes(secret)).toBe(false);
        expect(bytes.includes(key)).toBe(false);
      }
      expect(logs).not.toContain(key);
    }
    expect(logs).not.toContain(readFileSync(keyFile, "utf8").trim());
  });
});

describe("webhooks, webhook targets on this machine refused (the default)", () => {
  let f: ServerFixture;
  let client: OpenAI;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    f = await startServer();
    client = sdk(f);
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await f?.close();
    await receiver?.close();
  });

  it("refuses loopback, private, link-local and plain-http URLs when they are created", async () => {
    for (const url of [
      receiver.urlOf("/hooks"), // http://127.0.0.1:…
      `https://127.0.0.1:${receiver.port}/hooks`,
      // IPv4 127.0.0.1 inside IPv6 forms (IPv4-compatible, IPv4-translated, IPv4-mapped).
      `https://[::7f00:1]:${receiver.port}/`,
      `https://[::ffff:0:7f00:1]:${receiver.port}/`,
      "https://[::ffff:127.0.0.1]/hooks",
      "https://[::1]/hooks",
      "https://0.0.0.0/hooks",
      "https://2130706433/hooks",
      "https://0x7f.1/hooks",
      "https://169.254.169.254/latest/meta-data",
      "https://10.1.2.3/hooks",
      "https://100.64.0.1/hooks",
      "https://192.168.1.1/hooks",
      "https://[fc00::1]/hooks",
      "https://[fe80::1]/hooks",
      "https://localhost/hooks",
      // This machine's own name resolves (through /etc/hosts) to a loopback or private address.
      `https://${hostname()}:${receiver.port}/hooks`,
      "https://user:pass@example.com/hooks",
    ]) {
      const err = expectApiError(
        await rejection(client.webhooks.create({ name: "x", url, event_types: ["agent.session.idle"] })),
        OpenAI.BadRequestError,
        400,
      );
      expect((err.error as { param: string }).param, url).toBe("url");
      expect(err.message, url).toMatch(/^400 'url': /);
    }
    expect(receiver.received).toEqual([]);
  });

  it("checks the address a name resolves to when it connects: registered while private targets were allowed, refused after", async () => {
    const url = `https://${hostname()}:${receiver.port}/hooks`;
    const dataDir = mkdtempSync(join(tmpdir(), "cas-webhooks-by-name-"));
    let g = await startServer({ dataDir, args: ["--allow-private-targets"] });
    try {
      const e = (await sdk(g).webhooks.create({
        name: "by name",
        url,
        event_types: ["agent.session.created"],
      })) as WebhookEndpointWithSecret;
      await g.close();
      // The operator no longer allows private targets: the stored endpoint's deliveries are refused when connecting.
      g = await startServer({ dataDir });
      const c = sdk(g);
      const s = await c.beta.agents.sessions.create({ environment: { type: "none" } });
      const failed = await until(async () => {
        const [d] = await deliveries(c, e.id);
        return d?.last_attempt ? d : null;
      }, "the refused attempt");
      expect(failed).toMatchObject({ status: "pending", event: { data: { id: s.id } } });
      expect(failed.last_attempt!.status_code).toBeNull();
      expect(failed.last_attempt!.error).toMatch(/resolves to \S+, a (loopback|private) address/);
      expect(receiver.received).toEqual([]);
    } finally {
      await g.close();
      cleanup(dataDir);
    }
  });
});

describe("webhooks: a delivery that keeps failing gives up", () => {
  const clock = new TestClock();
  let f: ServerFixture;
  let client: OpenAI;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    f = await startServer({
      clock,
      args: ["--webhook-allow-private", "--webhook-allow-http", "--webhook-retry-hours", "1"],
    });
    client = sdk(f);
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await f?.close();
    await receiver?.close();
  });

  it("retried with growing delays until the retry window (1 h here) is over, then failed", async () => {
    receiver.answerNext("/down", ...Array<number>(20).fill(500));
    const e = await client.webhooks.create({
      name: "down",
      url: receiver.urlOf("/down"),
      event_types: ["agent.session.created"],
    });
    await client.beta.agents.sessions.create({ environment: { type: "none" } });
    const waits: number[] = [];
    let last: DeliveryObject | undefined;
    for (let attempt = 1; attempt <= 10; attempt++) {
      last = await until(async () => {
        const [d] = await deliveries(client, e.id);
        return d && d.attempts === attempt && d.last_attempt && d.attempt_log.length === attempt ? d : null;
      }, `attempt ${attempt}`);
      if (last.status !== "pending") break;
      // The delay the deliverer chose, from the attempt's own time (the test reads it later, by a load-dependent
      // amount); the clock is then moved past the retry time.
      waits.push(last.next_attempt_at! - last.last_attempt!.at);
      clock.advance(last.next_attempt_at! - clock.now() + 1);
    }
    expect(last!.status).toBe("failed");
    expect(last!.attempt_log.every((a) => a.status_code === 500)).toBe(true);
    expect(receiver.at("/down").length).toBe(last!.attempts);
    // 30 s, 2 min, 8 min, 32 min (±25 %): the next (~2 h) would fall after the hour.
    expect(waits).toHaveLength(4);
    for (const [i, w] of waits.entries()) {
      expect(w).toBeGreaterThan(30 * 4 ** i * 0.74);
      expect(w).toBeLessThan(30 * 4 ** i * 1.26);
    }
  });
});
