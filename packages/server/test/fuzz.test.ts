// What the fuzz run found, each made to happen every time.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/store/sqlite/index.js";
import type { SessionRecord, Store } from "../src/store/types.js";
import { type AppFixture, startApp } from "./fixture.js";

describe("found by the fuzz run", () => {
  /** A store on which a session is deleted right after a turn claims it (a DELETE landing in between). */
  function deletingOnClaim(): { store: Store; victim: { id: string | null } } {
    const inner = SqliteStore.open(":memory:");
    const victim: { id: string | null } = { id: null };
    const store = new Proxy(inner, {
      get(target, key) {
        if (key === "claimSession") {
          return async (id: string, ...rest: unknown[]) => {
            const claimed = await (
              target.claimSession as (...a: unknown[]) => Promise<SessionRecord | undefined>
            )(id, ...rest);
            if (claimed && id === victim.id) await target.deleteSession(id);
            return claimed;
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    return { store, victim };
  }

  let f: AppFixture;
  let victim: { id: string | null };
  beforeAll(async () => {
    const made = deletingOnClaim();
    victim = made.victim;
    f = await startApp({ store: made.store });
  });
  afterAll(async () => {
    await f?.close();
  });

  it("a session deleted while its turn starts is not found (it was a 500: the turn's insert failed)", async () => {
    const official = { "openai-beta": "agents=v1" };
    const message = {
      events: [
        {
          type: "agent.session.input.message",
          input: [{ role: "user", content: [{ type: "input_text", text: "Reply with exactly: gone" }] }],
        },
      ],
    };
    const cases: Array<[Record<string, string>, string, unknown]> = [
      [{}, "events", { input: "Reply with exactly: gone", stream: false }],
      [{}, "events", { input: "Reply with exactly: gone", stream: true }],
      [official, "events", message],
      [{}, "goal", { objective: "Reply with exactly: gone" }],
      [official, "goal", { objective: "Reply with exactly: gone" }],
    ];
    for (const [headers, what, body] of cases) {
      const created = await f.json<{ id: string }>("POST", "/v1/agents/sessions", {}, headers);
      victim.id = created.body.id;
      const res = await f.request("POST", `/v1/agents/sessions/${victim.id}/${what}`, body, headers);
      const answer = await res.json();
      const label = `${JSON.stringify(headers)} ${what} ${JSON.stringify(body).slice(0, 40)}`;
      expect(res.status, `${label}: ${JSON.stringify(answer)}`).toBe(404);
      expect(answer, label).toEqual(
        headers["openai-beta"]
          ? {
              error: {
                message: `Session ${victim.id} not found`,
                type: "not_found_error",
                param: "session_id",
                code: "not_found",
              },
            }
          : { error: `Session ${victim.id} not found`, type: "NotFoundError" },
      );
      expect(await f.core.store.getSession(victim.id)).toBeUndefined();
    }
  });

  it("the webhook routes answer every refusal in the official shape, with or without the header", async () => {
    const refusals: Array<[string, string, unknown, Record<string, string>, number]> = [
      ["POST", "/v1/webhook_endpoints", "a=b", { "content-type": "application/x-www-form-urlencoded" }, 415],
      ["GET", "/v1/webhook_endpoints", undefined, { origin: "https://evil.example" }, 403],
      ["GET", "/v1/webhook_event_types", undefined, { host: "evil.example" }, 421],
      ["PATCH", "/v1/webhook_endpoints/whe_x", undefined, {}, 404],
      ["GET", "/v1/webhook_endpoints/%E0%A4%A", undefined, {}, 400],
      ["POST", "/v1/webhook_endpoints", '{"a":', { "content-type": "application/json" }, 400],
    ];
    for (const [method, path, body, headers, status] of refusals) {
      const res = await f.request(method, path, body, headers);
      const answer = (await res.json()) as { error: { message: unknown; type: unknown } };
      expect(res.status, `${method} ${path}`).toBe(status);
      expect(typeof answer.error.message, `${method} ${path}: ${JSON.stringify(answer)}`).toBe("string");
      expect(typeof answer.error.type).toBe("string");
    }
    // Paths that only start like them stay the template's.
    const other = await f.json<{ error: unknown; type: unknown }>("GET", "/v1/webhook_endpointsx");
    expect(other.body).toEqual({ error: "Not found: /v1/webhook_endpointsx", type: "ValueError" });
  });
});
