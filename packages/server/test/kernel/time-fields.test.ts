// Times clients give are whole Unix seconds in range, at the edge and below it: a one-time automation's run_at
// (the API, both stores' guard in store/contract.ts, the agent's own automations tool), an OAuth token endpoint's
// expires_in, and the service clock's timers for caps longer than setTimeout can wait (a goal's max duration).
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { refreshAccessToken } from "../../src/domain/vaults/oauth.js";
import { runAutomationsTool } from "../../src/features/automations/agent-tool.js";
import { systemClock } from "../../src/kernel/clock.js";
import { type AppFixture, startApp } from "../support/fixture.js";

const OFFICIAL = { "openai-beta": "agents=v1" };
const LAST = 253_402_300_799; // 9999-12-31T23:59:59Z

type Json = Record<string, unknown>;
type ApiError = { error: { message: string; param: string | null; type: string } };

describe("a one-time automation's run_at", () => {
  let f: AppFixture;
  let sessionId: string;
  beforeAll(async () => {
    f = await startApp();
    sessionId = (await f.json<{ id: string }>("POST", "/v1/agents/sessions", {})).body.id;
  });
  afterAll(async () => {
    await f?.close();
  });

  const target = {
    type: "new_session",
    agent: { instructions: "Follow the user's directives exactly." },
    environment: { type: "none" },
    input: [{ role: "user", content: "Reply with exactly: later" }],
  };
  const create = (runAt: unknown) =>
    f.request(
      "POST",
      "/v1/agents/automations",
      { type: "once", name: "later", run_at: runAt, target },
      OFFICIAL,
    );

  it("is whole seconds up to the end of year 9999: anything else is a 400 naming it, on create and update", async () => {
    const future = Math.floor(Date.now() / 1000) + 3600;
    const ok = await create(future);
    expect(ok.status, await ok.clone().text()).toBe(200);
    const created = (await ok.json()) as Json & { id: string };
    for (const bad of [
      "100000000000000000000", // 1e20, as a client writes it
      "9007199254740992",
      "1e400",
      String(LAST + 1),
      `${future}.5`,
      "-1",
      '"2031-01-01T00:00:00Z"',
    ]) {
      const raw = `{"type":"once","name":"x","run_at":${bad},"target":${JSON.stringify(target)}}`;
      for (const [method, path, body] of [
        ["POST", "/v1/agents/automations", raw],
        ["POST", `/v1/agents/automations/${created.id}`, `{"run_at":${bad}}`],
      ] as const) {
        const res = await f.request(method, path, body, OFFICIAL);
        const answer = (await res.json()) as ApiError;
        expect({ status: res.status, param: answer.error.param }, `${path} ${bad}`).toEqual({
          status: 400,
          param: "run_at",
        });
        expect(answer.error.type).toBe("invalid_request_error");
      }
    }
    const huge = (await (await create(1e20)).json()) as ApiError;
    expect(huge.error.message).toBe(
      "Invalid 'run_at': expected a Unix timestamp in whole seconds, from 0 to 253402300799 (9999-12-31T23:59:59Z)",
    );
    // The last second of year 9999 is taken and shown as the same integer.
    const last = await create(LAST);
    expect(last.status).toBe(200);
    const text = await last.text();
    expect(text).toContain(`"run_at":${LAST}`);
    expect(text).toContain(`"next_run_at":${LAST}`);
    // Nothing out of range was stored.
    const list = await f.json<{ data: Array<{ run_at?: number; next_run_at: number | null }> }>(
      "GET",
      "/v1/agents/automations?limit=100",
      undefined,
      OFFICIAL,
    );
    expect(list.body.data).toHaveLength(2);
    for (const a of list.body.data) {
      expect(Number.isInteger(a.run_at) && a.run_at! <= LAST).toBe(true);
      expect(Number.isInteger(a.next_run_at) && a.next_run_at! <= LAST).toBe(true);
    }
  });

  it("the agent's automations tool: an ISO time's fraction is rounded up, numbers must be whole and in range", async () => {
    const call = (args: Json) =>
      runAutomationsTool(f.core.automations, {
        sessionId,
        projectId: "default",
        callId: "call_1",
        arguments: { action: "create", instructions: "check back", ...args },
      });
    const rounded = await call({ run_at: "2031-05-01T09:30:00.250Z" });
    expect(rounded.success).toBe(true);
    const id = (JSON.parse(rounded.text) as { automation_id: string }).automation_id;
    const stored = await f.core.store.getAutomation(id);
    expect(stored).toMatchObject({ run_at: Date.parse("2031-05-01T09:30:01Z") / 1000 });
    expect(stored?.next_run_at).toBe(stored?.run_at);
    for (const run_at of [1e20, 1_900_000_000.5, "+275760-09-13T00:00:00Z"]) {
      const refused = await call({ run_at });
      expect(refused, String(run_at)).toMatchObject({ success: false });
      expect(refused.text).toMatch(/'run_at' must be a Unix timestamp in whole seconds/);
    }
  });
});

describe("an OAuth token endpoint's expires_in", () => {
  const answering = (body: Json) => (async () => Response.json(body)) as unknown as typeof fetch;
  const refresh = (body: Json) =>
    refreshAccessToken(
      {
        token_endpoint: "https://auth.example.invalid/token",
        client_id: "c",
        auth: "none",
        client_secret: null,
        refresh_token: "r",
        resource: null,
        scope: null,
      },
      1_800_000_000.25,
      answering(body),
    );

  it("gives whole seconds; one past any real time is no known expiry (the token is kept)", async () => {
    expect(await refresh({ access_token: "a", expires_in: 3600.9 })).toMatchObject({
      access_token: "a",
      expires_at: 1_800_003_601,
    });
    for (const expires_in of [1e20, "1e300", 9_007_199_254_740_992]) {
      expect(await refresh({ access_token: "b", expires_in })).toMatchObject({
        access_token: "b",
        expires_at: null,
      });
    }
  });
});

describe("the service clock", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("waits the whole delay when it is longer than setTimeout can (about 24.8 days)", () => {
    vi.useFakeTimers();
    const thirtyDays = 30 * 86_400_000;
    const fired = vi.fn();
    systemClock.after(thirtyDays, fired);
    vi.advanceTimersByTime(1000);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(2 ** 31);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(thirtyDays - 2 ** 31 - 1001);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
    // Cancelled between two steps: never.
    const cancelled = vi.fn();
    const timer = systemClock.after(thirtyDays, cancelled);
    vi.advanceTimersByTime(2 ** 31);
    timer.cancel();
    vi.advanceTimersByTime(thirtyDays);
    expect(cancelled).not.toHaveBeenCalled();
  });
});
