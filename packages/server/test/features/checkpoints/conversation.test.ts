// Which history a fork gets (features/checkpoints/conversation.ts): the service turns the forked engine turns belong to, and
// where a goal turn the fork holds only part of stops.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { conversationHistory } from "../../../src/features/checkpoints/conversation.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { Store } from "../../../src/store/types.js";
import { finishItem, session, threadItem, turn } from "../../store/contract.js";

let store: Store;
beforeEach(async () => {
  store = SqliteStore.open(":memory:");
  await store.insertSession(session("s1"));
  await store.insertTurn(turn("s1", "plain", 1));
  await store.insertTurn(turn("s1", "goal", 2));
  await store.appendEvents("s1", [
    finishItem("plain", threadItem("u1", "hi", "userMessage")), // 0
    finishItem("plain", threadItem("cmd1", "ls", "commandExecution")), // 1: not in the engine's turn listing
    finishItem("plain", threadItem("m1")), // 2
    finishItem("goal", threadItem("u2", "goal", "userMessage")), // 3: its first engine turn
    finishItem("goal", threadItem("m2")), // 4
    finishItem("goal", threadItem("m3")), // 5: its continuation
  ]);
});
afterEach(async () => {
  await store.close();
});

/** The engine's turns: the plain one, the goal's first, a continuation (whose items the store also has). */
const engineTurns = [
  { id: "e1", itemIds: ["u1", "m1"] },
  { id: "e2", itemIds: ["u2", "m2"] },
  { id: "e3", itemIds: ["m3"] },
];

describe("conversationHistory", () => {
  it("whole turns: every item of the turns the engine turns belong to", async () => {
    expect(await conversationHistory(store, "s1", engineTurns, 1)).toEqual({
      turn_ids: ["plain"],
      through_ordinal: null,
    });
    expect(await conversationHistory(store, "s1", engineTurns, 3)).toEqual({
      turn_ids: ["plain", "goal"],
      through_ordinal: null,
    });
    expect(await conversationHistory(store, "s1", engineTurns, 0)).toEqual({
      turn_ids: [],
      through_ordinal: null,
    });
  });

  it("part of a goal turn: its items up to the last one of the engine turns held", async () => {
    expect(await conversationHistory(store, "s1", engineTurns, 2)).toEqual({
      turn_ids: ["plain", "goal"],
      through_ordinal: 4,
    });
    // An engine turn none of whose items is stored belongs to the turn before it (a continuation).
    const unknown = [...engineTurns.slice(0, 2), { id: "e3", itemIds: ["not-stored"] }];
    expect(await conversationHistory(store, "s1", unknown, 2)).toEqual({
      turn_ids: ["plain", "goal"],
      through_ordinal: 4,
    });
  });

  it("the copy a fork gets from it", async () => {
    await store.insertSession(session("fork"));
    await store.copyHistory("s1", "fork", await conversationHistory(store, "s1", engineTurns, 2));
    const copied = await store.listItems("fork", {});
    expect(copied.data.map((i) => [i.turn_id, i.id])).toEqual([
      ["plain", "u1"],
      ["plain", "cmd1"],
      ["plain", "m1"],
      ["goal", "u2"],
      ["goal", "m2"],
    ]);
  });
});
