// A turn whose end cannot be recorded (the store fails on the end-of-turn write) must not leave its session claimed
// until the next restart: it is ended as a turn nobody runs would be (failed, `internal_error`), whoever waits for
// it is answered, and the session takes input again. No engine: the stub engines fail every turn at once, which is
// enough to reach the end-of-turn write.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseInput } from "../../../src/model/input.js";
import { defaultScope } from "../../../src/model/scope.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { Queries, Store, TurnRecord } from "../../../src/store/types.js";
import { type AppFixture, startApp, waitFor } from "../../support/fixture.js";

/** A store whose next write of a terminal turn (once armed) fails, as a lost connection would make it. */
function failingOnce(): { store: Store; arm: () => void; failed: () => number } {
  const inner = SqliteStore.open(":memory:");
  let armed = false;
  let failures = 0;
  const terminal = (patch: Partial<TurnRecord>) =>
    patch.status !== undefined && patch.status !== "in_progress" && patch.status !== "queued";
  /** The turn's end (one store write) fails like the other writes of a terminal turn. */
  const endTurn =
    (target: Queries): Queries["endTurn"] =>
    async (sessionId, turnId, end, log, fence) => {
      if (armed && terminal(end.turn)) {
        armed = false;
        failures++;
        throw new Error("connection lost");
      }
      return target.endTurn(sessionId, turnId, end, log, fence);
    };
  const tx = (t: Queries): Queries =>
    new Proxy(t, {
      get(target, key) {
        if (key === "endTurn") return endTurn(target);
        if (key === "updateTurn") {
          return async (sessionId: string, turnId: string, patch: Partial<TurnRecord>) => {
            if (armed && terminal(patch)) {
              armed = false;
              failures++;
              throw new Error("connection lost");
            }
            return target.updateTurn(sessionId, turnId, patch);
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  const store = new Proxy(inner, {
    get(target, key) {
      if (key === "transaction") {
        return <T>(fn: (q: Queries) => Promise<T>) => target.transaction((q) => fn(tx(q)));
      }
      if (key === "endTurn") return endTurn(target);
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    store,
    arm: () => {
      armed = true;
    },
    failed: () => failures,
  };
}

let f: AppFixture;
let faults: ReturnType<typeof failingOnce>;
beforeAll(async () => {
  faults = failingOnce();
  f = await startApp({ store: faults.store });
});
afterAll(async () => {
  await f?.close();
});

describe("a turn whose end cannot be recorded", () => {
  it("is ended failed (internal_error), its waiter answered and its session idle and usable again", async () => {
    const { core } = f;
    const session = await core.sessions.create(defaultScope, {}, { workspace: "session" });
    faults.arm();
    const { turn } = await core.messages.send(session, parseInput("hello"), { whileBusy: "refuse" });
    const ended = await core.runner.waitFor(session.id, turn.id);
    expect(faults.failed()).toBe(1);
    expect(ended.status).toBe("failed");
    expect(ended.error?.code).toBe("internal_error");
    await waitFor(
      async () => (await core.store.getSession(session.id))?.status === "idle",
      5000,
      "the session idle",
    );
    const stored = await core.store.getSession(session.id);
    expect(stored?.active_turn_id).toBeNull();
    expect((await core.store.getTurn(session.id, turn.id))?.status).toBe("failed");
    expect(core.runner.isActive(session.id)).toBe(false);
    // The session takes input again (its next turn runs and ends as the stub engines end every turn).
    const next = await core.messages.send(stored!, parseInput("again"), { whileBusy: "refuse" });
    expect((await core.runner.waitFor(session.id, next.turn.id)).id).toBe(next.turn.id);
  });
});
