// Official automations against the real service (engine, scripted model, SQLite), driven by the official SDK and an
// injected clock: cron occurrences in a timezone across DST changes, the downtime policy (the latest missed
// occurrence once, no backfill), restarts, one-time automations, pause/resume, manual runs, redelivery after a
// crash, an existing session's notification waiting while it is busy, projects, and 4xx shapes.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { sessionFieldsOf } from "../../../src/domain/automations/target.js";
import { deliveryTurnId } from "../../../src/features/automations/deliverer.js";
import {
  at,
  invocationsOf,
  modelSaw,
  moveTo,
  turnsOf,
  until,
  userMessage,
  waitForDelivered,
  waitForIdle,
  waitForInvocations,
} from "../../support/automation-helpers.js";
import { TestClock } from "../../support/clock.js";
import { cleanup, type ServerFixture, startServer, waitFor } from "../../support/fixture.js";
import { expectApiError, messageEvent, rejection, sdk } from "../../support/openai-helpers.js";

const newSession = (text: string, metadata: Record<string, string> = {}) => ({
  type: "new_session" as const,
  agent: { instructions: "Follow the user's directives exactly." },
  environment: { type: "none" as const },
  input: [userMessage(text)],
  metadata,
});

describe("a daily automation in Europe/Paris, across both DST changes", () => {
  const clock = new TestClock();
  let f: ServerFixture;
  let client: OpenAI;
  beforeAll(async () => {
    moveTo(clock, "2031-03-28T12:00:00Z");
    f = await startServer({ clock });
    client = sdk(f);
  });
  afterAll(async () => {
    await f?.close();
  });

  it("fires at 02:30 local time (03:00 on the spring-forward night), once per day, the latest missed occurrence once after a gap", async () => {
    const scheduler = f.service.core.workers.scheduler;
    const a = await client.beta.agents.automations.create({
      type: "periodic",
      name: "nightly",
      expression: "30 2 * * *",
      timezone: "Europe/Paris",
      target: newSession("Reply with exactly: nightly", { job: "nightly" }),
      metadata: { team: "ops" },
    });
    expect(a).toMatchObject({
      object: "agent.automation",
      type: "periodic",
      status: "active",
      expression: "30 2 * * *",
      timezone: "Europe/Paris",
      created_by: { type: "developer" },
      metadata: { team: "ops" },
    });
    // Creating it does not run it.
    expect(await invocationsOf(client, a.id)).toEqual([]);
    const nextRun = async () =>
      ((await client.beta.agents.automations.retrieve(a.id)) as unknown as { next_run_at: number | null })
        .next_run_at;
    expect(await nextRun()).toBe(at("2031-03-29T01:30:00Z")); // 02:30 CET

    // Each expected occurrence: nothing a second before it, exactly one invocation at it (fired by the timer).
    const expected = [
      "2031-03-29T01:30:00Z", // 02:30 CET, the day before the change
      "2031-03-30T01:00:00Z", // 02:30 does not exist that night (02:00 → 03:00): 03:00 CEST
      "2031-03-31T00:30:00Z", // 02:30 CEST
    ];
    for (const [n, iso] of expected.entries()) {
      expect(await nextRun()).toBe(at(iso));
      clock.advance(at(iso) - 1 - clock.now());
      expect(await scheduler.tick()).toBe(0);
      expect(await invocationsOf(client, a.id)).toHaveLength(n);
      moveTo(clock, iso);
      const list = await waitForInvocations(client, a.id, n + 1);
      expect(list[n]).toMatchObject({ scheduled_at: at(iso), source: { type: "automation" } });
      const inv = await waitForDelivered(client, a.id, list[n]!.id);
      expect(inv.status).toBe("completed");
      expect(inv.session_id).toMatch(/^sess_/);
      const turns = await waitForIdle(f, inv.session_id!);
      expect(turns.map((t) => [t.id, t.status])).toEqual([[deliveryTurnId(inv.id), "completed"]]);
      const session = await client.beta.agents.sessions.retrieve(inv.session_id!);
      expect(session.metadata).toEqual({ job: "nightly" });
    }
    expect(modelSaw(f, "Reply with exactly: nightly")).toBe(true);

    // Seven months pass without a tick (as if the service were down): the latest missed occurrence fires once.
    moveTo(clock, "2031-10-25T12:00:00Z");
    await scheduler.tick();
    const afterGap = await waitForInvocations(client, a.id, 4);
    expect(afterGap).toHaveLength(4);
    expect(afterGap[3]!.scheduled_at).toBe(at("2031-10-25T00:30:00Z"));
    await waitForIdle(f, (await waitForDelivered(client, a.id, afterGap[3]!.id)).session_id!);

    // The fall-back night: 02:30 happens twice (CEST, then CET) and fires once.
    expect(await nextRun()).toBe(at("2031-10-26T00:30:00Z"));
    moveTo(clock, "2031-10-26T00:30:00Z");
    const autumn = await waitForInvocations(client, a.id, 5);
    await waitForIdle(f, (await waitForDelivered(client, a.id, autumn[4]!.id)).session_id!);
    expect(await nextRun()).toBe(at("2031-10-27T01:30:00Z"));
    moveTo(clock, "2031-10-26T01:30:00Z"); // the second 02:30
    expect(await scheduler.tick()).toBe(0);
    const all = await invocationsOf(client, a.id);
    expect(all.map((i) => i.scheduled_at)).toEqual(
      [...expected, "2031-10-25T00:30:00Z", "2031-10-26T00:30:00Z"].map(at),
    );
    expect(new Set(all.map((i) => i.session_id)).size).toBe(5);
    // The scheduled invocations carry the automation as it was when they fired.
    expect(all[0]!.source).toMatchObject({ type: "automation", automation: { id: a.id, name: "nightly" } });
  });
});

describe("restart and downtime", () => {
  const clock = new TestClock();
  let dir: string;
  let f: ServerFixture | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "cas-automations-"));
    moveTo(clock, "2031-01-01T00:10:00Z");
  });
  afterAll(async () => {
    await f?.close();
    cleanup(dir);
  });

  it("an occurrence fires once across a restart; after downtime only the latest missed one fires, then the schedule goes on", async () => {
    f = await startServer({ clock, dataDir: dir });
    let client = sdk(f);
    const a = await client.beta.agents.automations.create({
      type: "periodic",
      name: "hourly",
      expression: "0 * * * *",
      timezone: "UTC",
      target: newSession("Reply with exactly: hourly"),
    });
    moveTo(clock, "2031-01-01T01:00:00Z");
    const [first] = await waitForInvocations(client, a.id, 1);
    await waitForIdle(f, (await waitForDelivered(client, a.id, first!.id)).session_id!);
    await f.close({ keepData: true });

    // Down for five hours and a bit: 02:00 … 06:00 are missed.
    moveTo(clock, "2031-01-01T06:10:00Z");
    f = await startServer({ clock, dataDir: dir });
    client = sdk(f);
    const list = await waitForInvocations(client, a.id, 2);
    await waitForIdle(f, (await waitForDelivered(client, a.id, list[1]!.id)).session_id!);
    expect(await f.service.core.workers.scheduler.tick()).toBe(0);
    expect((await invocationsOf(client, a.id)).map((i) => i.scheduled_at)).toEqual([
      at("2031-01-01T01:00:00Z"),
      at("2031-01-01T06:00:00Z"),
    ]);
    moveTo(clock, "2031-01-01T07:00:00Z");
    const next = await waitForInvocations(client, a.id, 3);
    expect(next.map((i) => i.scheduled_at)).toEqual(
      ["2031-01-01T01:00:00Z", "2031-01-01T06:00:00Z", "2031-01-01T07:00:00Z"].map(at),
    );
    await waitForIdle(f, (await waitForDelivered(client, a.id, next[2]!.id)).session_id!);
    expect(new Set(next.map((i) => i.id)).size).toBe(3);
  });
});

describe("one-time automations, pause and resume, manual runs, redelivery, busy sessions", () => {
  const clock = new TestClock();
  let f: ServerFixture;
  let client: OpenAI;
  beforeAll(async () => {
    moveTo(clock, "2031-05-05T10:00:30Z");
    f = await startServer({ clock });
    client = sdk(f);
  });
  afterAll(async () => {
    await f?.close();
  });
  afterEach(async () => {
    // Each test's automations end with it (their schedules would fire in the next tests).
    for await (const a of client.beta.agents.automations.list())
      await client.beta.agents.automations.delete(a.id);
  });

  it("a one-time automation notifies an existing session at run_at and completes", async () => {
    const s = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    const runAt = Math.floor(clock.now()) + 3600;
    const a = await client.beta.agents.automations.create({
      type: "once",
      name: "reminder",
      run_at: runAt,
      target: { type: "existing_session", session_id: s.id, instructions: "Reply with exactly: reminded" },
    });
    expect(a).toMatchObject({ type: "once", status: "active", run_at: runAt });
    expect((await client.beta.agents.automations.list({ session_id: s.id })).data.map((x) => x.id)).toEqual([
      a.id,
    ]);
    expect((await client.beta.agents.automations.list({ session_id: "sess_other" })).data).toEqual([]);
    clock.advance(3599);
    expect(await f.service.core.workers.scheduler.tick()).toBe(0);
    clock.advance(1);
    const [inv] = await waitForInvocations(client, a.id, 1);
    expect(inv).toMatchObject({ scheduled_at: runAt, skip_reason: null });
    const done = await waitForDelivered(client, a.id, inv!.id);
    expect(done).toMatchObject({ status: "completed", session_id: s.id, error: null });
    expect((await waitForIdle(f, s.id)).map((t) => t.id)).toEqual([deliveryTurnId(inv!.id)]);
    expect(modelSaw(f, "Reply with exactly: reminded")).toBe(true);
    const completed = await client.beta.agents.automations.retrieve(a.id);
    expect(completed.status).toBe("completed");
    // Nothing left to pause; resuming a completed automation changes nothing.
    expectApiError(await rejection(client.beta.agents.automations.pause(a.id)), OpenAI.ConflictError, 409);
    expect((await client.beta.agents.automations.resume(a.id)).status).toBe("completed");
    clock.advance(7200);
    expect(await f.service.core.workers.scheduler.tick()).toBe(0);
    expect(await invocationsOf(client, a.id)).toHaveLength(1);
  });

  it("a paused one-time automation does not fire; resuming needs a future run_at", async () => {
    const runAt = Math.floor(clock.now()) + 600;
    const a = await client.beta.agents.automations.create({
      type: "once",
      name: "later",
      run_at: runAt,
      target: newSession("Reply with exactly: later"),
    });
    expect((await client.beta.agents.automations.pause(a.id)).status).toBe("paused");
    expect((await client.beta.agents.automations.pause(a.id)).status).toBe("paused"); // idempotent
    clock.advance(700);
    expect(await f.service.core.workers.scheduler.tick()).toBe(0);
    expect(await invocationsOf(client, a.id)).toEqual([]);
    const late = expectApiError(
      await rejection(client.beta.agents.automations.resume(a.id)),
      OpenAI.BadRequestError,
      400,
    );
    expect(late.message).toContain("run_at");
    const newRunAt = Math.floor(clock.now()) + 60;
    expect((await client.beta.agents.automations.update(a.id, { run_at: newRunAt })) as object).toMatchObject(
      {
        run_at: newRunAt,
        status: "paused",
      },
    );
    expect((await client.beta.agents.automations.resume(a.id)).status).toBe("active");
    clock.advance(60);
    const [inv] = await waitForInvocations(client, a.id, 1);
    expect(inv!.scheduled_at).toBe(newRunAt);
    await waitForIdle(f, (await waitForDelivered(client, a.id, inv!.id)).session_id!);
    // run_at cannot move once the occurrence exists.
    expectApiError(
      await rejection(client.beta.agents.automations.update(a.id, { run_at: newRunAt + 3600 })),
      OpenAI.ConflictError,
      409,
    );
  });

  it("pause stops scheduled occurrences (no backfill on resume); manual runs go through while paused", async () => {
    const a = await client.beta.agents.automations.create({
      type: "periodic",
      name: "every minute",
      expression: "* * * * *",
      timezone: "UTC",
      target: newSession("Reply with exactly: minutely"),
    });
    expect((await client.beta.agents.automations.pause(a.id)).status).toBe("paused");
    clock.advance(180);
    expect(await f.service.core.workers.scheduler.tick()).toBe(0);
    expect(await invocationsOf(client, a.id)).toEqual([]);

    const manual = await client.beta.agents.automations.invocations.create(a.id);
    expect(manual).toMatchObject({
      object: "agent.automation.invocation",
      automation_id: a.id,
      scheduled_at: null,
      source: { type: "manual" },
    });
    const delivered = await waitForDelivered(client, a.id, manual.id);
    expect(delivered.status).toBe("completed");
    await waitForIdle(f, delivered.session_id!);
    expect(modelSaw(f, "Reply with exactly: minutely")).toBe(true);

    const resumed = await client.beta.agents.automations.resume(a.id);
    expect(resumed.status).toBe("active");
    const next = (resumed as unknown as { next_run_at: number }).next_run_at;
    expect(next).toBe(Math.floor(clock.now() / 60) * 60 + 60);
    expect(await f.service.core.workers.scheduler.tick()).toBe(0); // the paused minutes are not fired
    clock.advance(next - clock.now());
    const list = await waitForInvocations(client, a.id, 2);
    expect(list.map((i) => i.scheduled_at)).toEqual([null, next]);
    await waitForIdle(f, (await waitForDelivered(client, a.id, list[1]!.id)).session_id!);
  });

  it("a redelivery after a crash reuses the session (and the turn) the crashed delivery made", async () => {
    const { core } = f.service;
    const a = await client.beta.agents.automations.create({
      type: "periodic",
      name: "crashy",
      expression: "0 0 1 1 *",
      timezone: "UTC",
      target: newSession("Reply with exactly: once only", { run: "crash" }),
    });
    const record = (await core.store.getAutomation(a.id))!;
    const target = record.target as Extract<typeof record.target, { type: "new_session" }>;
    const scope = { projectId: record.project_id, admin: false };
    const sessionsTagged = async () =>
      (await core.sessions.list(scope, { limit: 100, metadata: { run: "crash" } })).data.map((s) => s.id);
    const before = await sessionsTagged();

    // Two invocations claimed by an instance that then died: the first after creating its session, the second
    // after also starting its turn. Their leases run for two minutes.
    const now = clock.now();
    const crashed = (id: string) => ({
      id,
      automation_id: a.id,
      project_id: record.project_id,
      created_at: now,
      scheduled_at: null,
      source: "manual" as const,
      snapshot: null,
      target,
      status: "queued" as const,
      skip_reason: null,
      session_id: null,
      error: null,
      claims: 1,
      next_attempt_at: now,
      lease_owner: "inst_dead",
      lease_until: now + 120,
      completed_at: null,
    });
    const tags = (id: string) => ({ automation_id: a.id, automation_invocation_id: id });
    const inv1 = "ainv_0000000000000000000000c1";
    const inv2 = "ainv_0000000000000000000000c2";
    await core.store.insertInvocation(crashed(inv1));
    await core.store.insertInvocation(crashed(inv2));
    const s1 = await core.sessions.create(scope, sessionFieldsOf(target, tags(inv1)), {
      workspace: "session",
      startingTurn: true,
    });
    const s2 = await core.sessions.create(scope, sessionFieldsOf(target, tags(inv2)), {
      workspace: "session",
      startingTurn: true,
    });
    await core.runner.start(
      s2,
      { items: [{ type: "text", text: "Reply with exactly: once only" }] },
      {
        turnId: deliveryTurnId(inv2),
      },
    );
    await waitForIdle(f, s2.id);
    // Nobody may deliver them while the dead instance's lease lasts.
    await core.workers.invocations.pass();
    expect((await core.store.getInvocation(inv1))!.status).toBe("queued");

    clock.advance(121);
    const [d1, d2] = await Promise.all([
      waitForDelivered(client, a.id, inv1),
      waitForDelivered(client, a.id, inv2),
    ]);
    expect(d1).toMatchObject({ status: "completed", session_id: s1.id });
    expect(d2).toMatchObject({ status: "completed", session_id: s2.id });
    expect((await sessionsTagged()).sort()).toEqual([...before, s1.id, s2.id].sort());
    expect((await waitForIdle(f, s1.id)).map((t) => t.id)).toEqual([deliveryTurnId(inv1)]);
    expect((await turnsOf(f, s2.id)).map((t) => t.id)).toEqual([deliveryTurnId(inv2)]);
  });

  it("a notification waits while its session is busy (later occurrences are skipped), then is delivered", async () => {
    const s = await client.beta.agents.sessions.create({ environment: { type: "none" } });
    const dir = join(f.workspace, s.id);
    await client.beta.agents.sessions.events.create(s.id, {
      events: [
        messageEvent(
          "Run this exact shell command and wait for it to finish: touch started; while [ ! -f go ]; do sleep 0.05; " +
            "done. Then reply with exactly: released",
        ),
      ],
    });
    await waitFor(() => existsSync(join(dir, "started")), 20_000, "the long command to start");
    const a = await client.beta.agents.automations.create({
      type: "periodic",
      name: "ping",
      expression: "* * * * *",
      timezone: "UTC",
      target: { type: "existing_session", session_id: s.id, instructions: "Reply with exactly: notified" },
    });
    const manual = await client.beta.agents.automations.invocations.create(a.id);
    // A delivery was attempted (it names the session) and it waits, queued.
    const waiting = await until(async () => {
      const i = await client.beta.agents.automations.invocations.retrieve(manual.id, { automation_id: a.id });
      return i.session_id === s.id ? i : null;
    }, "the delivery to wait");
    expect(waiting.status).toBe("queued");
    await f.service.core.workers.invocations.pass();
    expect(
      (await client.beta.agents.automations.invocations.retrieve(manual.id, { automation_id: a.id })).status,
    ).toBe("queued");
    // The next occurrence fires while it waits: skipped.
    clock.advance(60);
    const list = await waitForInvocations(client, a.id, 2);
    expect(list[1]).toMatchObject({
      status: "skipped",
      skip_reason: "pending_delivery",
      source: { type: "automation" },
    });
    await client.beta.agents.automations.pause(a.id);

    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(dir, "go"), "");
    const delivered = await waitForDelivered(client, a.id, manual.id);
    expect(delivered).toMatchObject({ status: "completed", session_id: s.id });
    const turns = await waitForIdle(f, s.id, 2);
    expect(turns.map((t) => t.status)).toEqual(["completed", "completed"]);
    expect(turns[1]!.id).toBe(deliveryTurnId(manual.id));
    expect(modelSaw(f, "Reply with exactly: notified")).toBe(true);
  });

  it("bad input is a 400 in the official shape; an unknown target is a 404", async () => {
    const base = { type: "periodic" as const, name: "x", timezone: "UTC", target: newSession("hi") };
    const bad = async (body: Record<string, unknown>, param: string) => {
      const e = expectApiError(
        await rejection(
          client.post("/agents/automations", { body, headers: { "OpenAI-Beta": "agents=v1" } }),
        ),
        OpenAI.BadRequestError,
        400,
      );
      expect((e.error as { param: string }).param).toBe(param);
    };
    await bad({ ...base, expression: "0 0 * * * *" }, "expression");
    await bad({ ...base, expression: "61 * * * *" }, "expression");
    await bad({ ...base, expression: "0 0 31 2 *" }, "expression");
    await bad({ ...base, expression: "0 0 * * *", timezone: "Mars/Olympus" }, "timezone");
    await bad(
      { ...base, expression: "0 0 * * *", target: { ...newSession("hi"), agent_id: "agent_x" } },
      "target.agent",
    );
    await bad(
      { ...base, expression: "0 0 * * *", target: { ...newSession("hi"), input: [] } },
      "target.input",
    );
    await bad({ ...base, expression: "0 0 * * *", created_by: { type: "developer" } }, "created_by");
    await bad(
      { type: "once", name: "x", run_at: Math.floor(clock.now()) - 1, target: newSession("hi") },
      "run_at",
    );
    expectApiError(
      await rejection(
        client.beta.agents.automations.create({
          ...base,
          expression: "0 0 * * *",
          target: { type: "existing_session", session_id: "sess_missing", instructions: "x" },
        }),
      ),
      OpenAI.NotFoundError,
      404,
    );
    expectApiError(
      await rejection(client.beta.agents.automations.retrieve("auto_missing")),
      OpenAI.NotFoundError,
      404,
    );
    const a = await client.beta.agents.automations.create({ ...base, expression: "0 0 * * *" });
    expectApiError(
      await rejection(client.beta.agents.automations.update(a.id, { run_at: Math.floor(clock.now()) + 60 })),
      OpenAI.BadRequestError,
      400,
    );
    expectApiError(
      await rejection(
        client.beta.agents.automations.update(a.id, {
          target: { type: "existing_session", session_id: "sess_x", instructions: "x" },
        }),
      ),
      OpenAI.NotFoundError,
      404,
    );
    const renamed = await client.beta.agents.automations.update(a.id, {
      name: "renamed",
      expression: "15 3 * * *",
      timezone: "America/New_York",
    });
    expect(renamed).toMatchObject({
      name: "renamed",
      expression: "15 3 * * *",
      timezone: "America/New_York",
    });
    expect(await client.beta.agents.automations.delete(a.id)).toEqual({
      id: a.id,
      object: "agent.automation.deleted",
      deleted: true,
    });
    expectApiError(await rejection(client.beta.agents.automations.retrieve(a.id)), OpenAI.NotFoundError, 404);
  });

  it("another project's automations are not found", async () => {
    // A service of its own: once a key was made, the service stays closed to requests without one (revoking every
    // key does not reopen it), and the other tests here use none.
    const g = await startServer({ clock });
    const keys = g.service.core.keys;
    const mine = sdk(g, { apiKey: (await keys.create("proj_mine", false)).key });
    const theirs = sdk(g, { apiKey: (await keys.create("proj_theirs", false)).key });
    try {
      const a = await mine.beta.agents.automations.create({
        type: "periodic",
        name: "mine",
        expression: "0 0 * * *",
        timezone: "UTC",
        target: newSession("hi"),
      });
      expect((await mine.beta.agents.automations.list()).data.map((x) => x.id)).toEqual([a.id]);
      expect((await theirs.beta.agents.automations.list()).data).toEqual([]);
      const calls: Array<() => Promise<unknown>> = [
        () => theirs.beta.agents.automations.retrieve(a.id),
        () => theirs.beta.agents.automations.update(a.id, { name: "x" }),
        () => theirs.beta.agents.automations.pause(a.id),
        () => theirs.beta.agents.automations.resume(a.id),
        () => theirs.beta.agents.automations.delete(a.id),
        () => theirs.beta.agents.automations.invocations.create(a.id),
        () => theirs.beta.agents.automations.invocations.list(a.id),
      ];
      for (const call of calls) expectApiError(await rejection(call()), OpenAI.NotFoundError, 404);
      expect((await mine.beta.agents.automations.retrieve(a.id)).name).toBe("mine");
      // A target in another project is not found either.
      const s = await theirs.beta.agents.sessions.create({ environment: { type: "none" } });
      expectApiError(
        await rejection(
          mine.beta.agents.automations.create({
            type: "periodic",
            name: "x",
            expression: "0 0 * * *",
            timezone: "UTC",
            target: { type: "existing_session", session_id: s.id, instructions: "x" },
          }),
        ),
        OpenAI.NotFoundError,
        404,
      );
      await mine.beta.agents.automations.delete(a.id);
    } finally {
      await g.close();
    }
  });
});
