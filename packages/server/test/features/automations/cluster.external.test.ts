// Automations on two instances sharing one PostgreSQL database (and one workspace), under one injected clock that
// both schedulers follow: every occurrence fires exactly once (one invocation, one session) however the instances'
// ticks and deliverers race, and queued runs are delivered once each.
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  at,
  invocationsOf,
  moveTo,
  until,
  userMessage,
  waitForDelivered,
  waitForIdle,
} from "../../support/automation-helpers.js";
import { TestClock } from "../../support/clock.js";
import { cleanup, expectNothingLeft, type ServerFixture, startServer } from "../../support/fixture.js";
import { sdk } from "../../support/openai-helpers.js";
import { dropTestDatabase, pgTestUrl } from "../../support/postgres.js";

let dir: string;
let dbUrl: string;
const clock = new TestClock();
const instances: ServerFixture[] = [];

async function instance(): Promise<ServerFixture> {
  const f = await startServer({
    clock,
    args: ["--database-url", dbUrl, "--workspace", join(dir, "workspace")],
    // Instances sharing a database share the key sealing secrets at rest.
    env: { AGENT_SECRET_KEY: Buffer.alloc(32, 7).toString("base64") },
  });
  instances.push(f);
  return f;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cas-auto-cluster-"));
  mkdirSync(join(dir, "workspace"));
  dbUrl = await pgTestUrl();
  moveTo(clock, "2031-02-01T00:00:30Z");
});

afterAll(async () => {
  // The instances share the workspace root, where each one's engine runs until it stops: nothing may be left once
  // all have stopped (checked then: right after the first, another's engine may still be stopping there).
  await Promise.all(instances.map((f) => f.service.stop()));
  expectNothingLeft(...instances.flatMap((f) => [f.dataDir, f.workspace]));
  await Promise.all(instances.map((f) => f.close()));
  if (dbUrl) await dropTestDatabase(dbUrl);
  cleanup(dir);
});

describe("two instances, one database", () => {
  let a: ServerFixture;
  let b: ServerFixture;
  beforeAll(async () => {
    [a, b] = await Promise.all([instance(), instance()]);
  });

  it("each occurrence fires once and creates one session, whichever instance ticks", async () => {
    const ca = sdk(a);
    const cb = sdk(b);
    const auto = await ca.beta.agents.automations.create({
      type: "periodic",
      name: "every minute",
      expression: "* * * * *",
      timezone: "UTC",
      target: {
        type: "new_session",
        agent: {},
        environment: { type: "none" },
        input: [userMessage("Reply with exactly: cluster tick")],
        metadata: { from: "cluster" },
      },
    });
    const expected: number[] = [];
    for (let minute = 1; minute <= 3; minute++) {
      const iso = `2031-02-01T00:0${minute}:00Z`;
      expected.push(at(iso));
      moveTo(clock, iso); // both instances' timers fire
      // …and both tick again at once, for good measure.
      await Promise.all([
        a.service.core.workers.scheduler.tick(),
        b.service.core.workers.scheduler.tick(),
        a.service.core.workers.scheduler.tick(),
        b.service.core.workers.scheduler.tick(),
      ]);
      const list = await until(async () => {
        const l = await invocationsOf(cb, auto.id);
        return l.length >= minute ? l : null;
      }, `occurrence ${minute}`);
      const inv = await waitForDelivered(ca, auto.id, list[minute - 1]!.id);
      expect(inv.status).toBe("completed");
      // (turns run on the instance that delivered; its own store view is the shared one)
      await waitForIdle(a, inv.session_id!);
    }
    const all = await invocationsOf(ca, auto.id);
    expect(all.map((i) => i.scheduled_at)).toEqual(expected);
    expect(all.every((i) => i.status === "completed")).toBe(true);
    const sessions = await a.service.core.sessions.list(
      { projectId: "default", admin: true },
      { limit: 100, metadata: { from: "cluster" } },
    );
    expect(sessions.data.map((s) => s.id).sort()).toEqual(all.map((i) => i.session_id!).sort());
    expect(sessions.data).toHaveLength(3);
    await ca.beta.agents.automations.delete(auto.id);
  });

  it("manual runs queued at once on both instances are each delivered once", async () => {
    const ca = sdk(a);
    const cb = sdk(b);
    const auto = await cb.beta.agents.automations.create({
      type: "periodic",
      name: "manual only",
      expression: "0 0 1 1 *",
      timezone: "UTC",
      target: {
        type: "new_session",
        agent: {},
        environment: { type: "none" },
        input: [userMessage("Reply with exactly: manual")],
        metadata: { from: "manual" },
      },
    });
    const runs = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? ca : cb).beta.agents.automations.invocations.create(auto.id),
      ),
    );
    // Both deliverers race for them.
    await Promise.all([a.service.core.workers.invocations.pass(), b.service.core.workers.invocations.pass()]);
    const delivered = await Promise.all(runs.map((r) => waitForDelivered(ca, auto.id, r.id)));
    expect(delivered.every((d) => d.status === "completed")).toBe(true);
    for (const d of delivered) {
      const owner = (await a.service.core.store.getSession(d.session_id!))!;
      expect(owner).toBeDefined();
    }
    const sessions = await a.service.core.sessions.list(
      { projectId: "default", admin: true },
      { limit: 100, metadata: { from: "manual" } },
    );
    expect(sessions.data.map((s) => s.id).sort()).toEqual(delivered.map((d) => d.session_id!).sort());
    expect(new Set(delivered.map((d) => d.session_id)).size).toBe(6);
    // Let every turn end before the instances stop.
    await Promise.all(
      delivered.map((d) =>
        until(async () => {
          const s = await a.service.core.store.getSession(d.session_id!);
          return s && !s.active_turn_id ? s : null;
        }, `session ${d.session_id} idle`),
      ),
    );
  });
});
