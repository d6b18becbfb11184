// Turns nobody runs any more (domain/turns/orphans.ts, takeover.ts): left `in_progress` in the store by a process
// that died (start-up recovery) or by a dead instance (the cluster's takeover). Each is failed with the reason —
// `required_action_lost` when it waited for the client —, the items clients saw start are kept incomplete, and the
// session takes input again. Sessions are set up in the store as a dead process would have left them.
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GoalBook } from "../../../src/domain/goals/book.js";
import { OWNER_LOST_MESSAGE, Takeover } from "../../../src/domain/turns/takeover.js";
import { parseInput } from "../../../src/model/input.js";
import { newRestoreLock } from "../../../src/model/session-lock.js";
import type { Cluster } from "../../../src/platform/cluster/types.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { RequiredAction, SessionRecord } from "../../../src/store/types.js";
import { finishItem, goal, session, startItem, threadItem, turn } from "../../store/contract.js";
import { type FakeCore, fakeCore } from "../../support/fake-engine.js";

let store: SqliteStore;
let f: FakeCore;

const action: RequiredAction = {
  type: "function_call",
  id: "call_1",
  turn_id: "t2",
  name: "lookup",
  arguments: "{}",
  created_at: 1000,
};

/** A session a dead process left running turn `turnId` (in the store as the claim wrote it). */
async function leftRunning(id: string, turnId: string, over: Partial<SessionRecord> = {}): Promise<void> {
  await store.insertSession(
    session(id, 1000, { status: "in_progress", active_turn_id: turnId, owner_instance: "dead", ...over }),
  );
  await store.insertTurn(turn(id, turnId, 1000, { status: "in_progress", started_at: 1000 }));
}

beforeEach(async () => {
  store = SqliteStore.open(":memory:");
  // s1: a command started, a message finished.
  await leftRunning("s1", "t1");
  await store.appendEvents("s1", [
    finishItem("t1", threadItem("m1", "said")),
    startItem("t1", threadItem("c1", "ls", "commandExecution")),
  ]);
  // s2: waited for the client's tool result.
  await leftRunning("s2", "t2", { status: "requires_action", required_actions: [action] });
  // s3: its turn was ended, the session's lock was not released.
  await leftRunning("s3", "t3");
  await store.updateTurn("s3", "t3", { status: "completed", completed_at: 1001 });
  // s4: a restore held it.
  await store.insertSession(session("s4", 1000, { active_turn_id: newRestoreLock().id }));
  // s5: idle.
  await store.insertSession(session("s5"));
  f = fakeCore({ store });
});
afterEach(async () => {
  await f.close();
});

const typesOf = async (sessionId: string) => (await store.readEvents(sessionId, 0, 1000)).map((e) => e.type);

describe("start-up recovery", () => {
  it("fails the turns a dead process left running, keeps their started items incomplete, frees the sessions", async () => {
    expect(await f.core.runner.recover()).toBe(4);
    const t1 = await store.getTurn("s1", "t1");
    expect(t1).toMatchObject({
      status: "failed",
      error: { code: "server_restart", message: "The server stopped while this turn was running." },
    });
    expect(t1?.completed_at).not.toBeNull();
    const items = (await store.listItems("s1", { order: "asc" })).data;
    expect(items.map((i) => [i.id, i.state])).toEqual([
      ["m1", "completed"],
      ["c1", "incomplete"],
    ]);
    expect(items[1]?.data).toMatchObject({ status: "failed" });
    expect((await typesOf("s1")).slice(-3)).toEqual(["item.completed", "turn.failed", "session.status"]);
    for (const id of ["s1", "s2", "s3", "s4"]) {
      const s = await store.getSession(id);
      expect(s).toMatchObject({ status: "idle", active_turn_id: null, required_actions: [] });
    }
    // Nothing busy is left: a second recovery finds nothing.
    expect(await f.core.runner.recover()).toBe(0);
  });

  it("a turn that waited for the client ends required_action_lost, naming what it waited for", async () => {
    await f.core.runner.recover();
    const t2 = await store.getTurn("s2", "t2");
    expect(t2?.status).toBe("failed");
    expect(t2?.error?.code).toBe("required_action_lost");
    expect(t2?.error?.message).toContain("The server stopped while this turn was running.");
    expect(t2?.error?.message).toContain("(call_1)");
    const events = await store.readEvents("s2", 0, 100);
    expect(events.find((e) => e.type === "action.resolved")?.data).toEqual({
      action_id: "call_1",
      action_type: "function_call",
      answer: null,
    });
  });

  it("a session whose turn had ended, or that a restore held, is only freed; an idle one is left alone", async () => {
    const before = {
      s3: await typesOf("s3"),
      s5: await typesOf("s5"),
    };
    await f.core.runner.recover();
    expect((await store.getTurn("s3", "t3"))?.status).toBe("completed");
    expect(await typesOf("s3")).toEqual([...before.s3, "session.status"]);
    expect((await store.getSession("s4"))?.active_turn_id).toBeNull();
    expect(await typesOf("s5")).toEqual(before.s5);
  });

  it("the recovered session runs its next turn, and waiting for the failed turn answers at once", async () => {
    await f.core.runner.recover();
    expect((await f.core.runner.waitFor("s1", "t1")).status).toBe("failed");
    const s1 = (await store.getSession("s1"))!;
    const next = await f.core.messages.send(s1, parseInput("again"), { whileBusy: "refuse" });
    expect((await f.core.runner.waitFor("s1", next.turn.id)).status).toBe("completed");
  });
});

describe("takeover of a dead instance's turns", () => {
  /** A cluster whose sweep finds `orphans` (claimed for this instance), or fails. */
  function cluster(orphans: () => Promise<SessionRecord[]>): Cluster {
    return {
      instanceId: "here",
      healthy: true,
      start: async () => {},
      published: () => {},
      send: async () => null,
      claimOrphans: orphans,
      stats: () => ({ kind: "test", instance: "here", healthy: true }),
      stop: async () => {},
    };
  }

  function takeover(orphans: () => Promise<SessionRecord[]>): { sweeper: Takeover; book: GoalBook } {
    const { core } = f;
    const book = new GoalBook(core.store, core.hub, core.clock, core.config.goals);
    const logger = pino({ level: "silent" });
    return { sweeper: new Takeover({ cluster: cluster(orphans), runner: core.runner, book, logger }), book };
  }

  it("ends each turn owner_lost and pauses an active goal, saying why", async () => {
    await store.putGoal(goal("s1", 1, { turn_id: "t1" }, "active"));
    await store.putGoal(goal("s3", 1, {}, "paused"));
    const { sweeper, book } = takeover(async () => [(await store.getSession("s1"))!]);
    expect(await sweeper.sweep()).toBe(1);
    expect(await store.getTurn("s1", "t1")).toMatchObject({
      status: "failed",
      error: { code: "owner_lost", message: OWNER_LOST_MESSAGE },
    });
    expect((await store.getSession("s1"))?.active_turn_id).toBeNull();
    expect(await book.get("s1")).toMatchObject({
      status: "paused",
      status_reason: "owner_lost",
      turn_id: "t1",
    });
    // What it did not take over is as it was.
    expect((await store.getTurn("s2", "t2"))?.status).toBe("in_progress");
    expect(await book.get("s3")).toMatchObject({ status: "paused", status_reason: "created" });
  });

  it("a sweep that fails ends nothing and says none; one already sweeping is not run twice", async () => {
    const failing = takeover(() => Promise.reject(new Error("database gone")));
    expect(await failing.sweeper.sweep()).toBe(0);
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const slow = takeover(async () => {
      await held;
      return [(await store.getSession("s1"))!];
    });
    const first = slow.sweeper.sweep();
    expect(await slow.sweeper.sweep()).toBe(0);
    release();
    expect(await first).toBe(1);
    expect((await store.getTurn("s1", "t1"))?.error?.code).toBe("owner_lost");
  });
});
