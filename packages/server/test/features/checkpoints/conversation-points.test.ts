// Where a checkpoint's conversation stood (features/checkpoints/conversation.ts): the point written into its meta
// (`conv`), read back whatever was stored, and how many of the thread's engine turns that point keeps now — the plan
// a restore with `conversation: revert` and a fork follow. Engine turns are mapped to the service's turns through
// the items the service stored; a continuation inherits the turn before it, a forked thread's inherited turns
// belong to none (every point keeps them).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ConvPoint,
  conversationPrefix,
  currentConv,
  formatConv,
  parseConv,
} from "../../../src/features/checkpoints/conversation.js";
import { ApiError } from "../../../src/kernel/errors.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { Store } from "../../../src/store/types.js";
import { finishItem, session, threadItem, turn } from "../../store/contract.js";

describe("conversation points", () => {
  it("are written and read back", () => {
    const points: ConvPoint[] = [
      { kind: "base" },
      { kind: "before", turn: "turn_a" },
      { kind: "upto", turn: "turn_a" },
      { kind: "after", turn: "turn_a", engineTurn: null },
      { kind: "after", turn: "turn_a", engineTurn: 3 },
    ];
    expect(points.map(formatConv)).toEqual([
      "base",
      "before:turn_a",
      "upto:turn_a",
      "after:turn_a",
      "after:turn_a:3",
    ]);
    for (const p of points) expect(parseConv(formatConv(p))).toEqual(p);
  });

  it("anything else stored reads as the whole turn, or as the base", () => {
    expect(parseConv("after:turn_a:0")).toEqual({ kind: "after", turn: "turn_a", engineTurn: null });
    expect(parseConv("after:turn_a:x")).toEqual({ kind: "after", turn: "turn_a", engineTurn: null });
    expect(parseConv("after:turn_a:1.5")).toEqual({ kind: "after", turn: "turn_a", engineTurn: null });
    expect(parseConv(undefined)).toEqual({ kind: "base" });
    expect(parseConv("")).toEqual({ kind: "base" });
    expect(parseConv("before:")).toEqual({ kind: "base" });
    expect(parseConv("sideways:turn_a")).toEqual({ kind: "base" });
  });
});

let store: Store;
beforeEach(async () => {
  store = SqliteStore.open(":memory:");
  await store.insertSession(session("s1"));
  await store.insertTurn(turn("s1", "plain", 1));
  await store.insertTurn(turn("s1", "goal", 2));
  await store.insertTurn(turn("s1", "never", 3)); // ended before the engine started it
  await store.insertTurn(turn("s1", "reverted", 4)); // reverted away from the thread since
  await store.insertTurn(turn("s1", "later", 5));
  await store.appendEvents("s1", [
    finishItem("plain", threadItem("u1", "hi", "userMessage")),
    finishItem("plain", threadItem("m1")),
    finishItem("goal", threadItem("u2", "goal", "userMessage")),
    finishItem("goal", threadItem("m2")),
    finishItem("goal", threadItem("m3")),
    finishItem("reverted", threadItem("u4", "gone", "userMessage")),
    finishItem("later", threadItem("u5", "later", "userMessage")),
  ]);
});
afterEach(async () => {
  await store.close();
});

/** The thread: one turn it inherited from another session, then the plain turn, the goal's two, the later one. */
const engineTurns = [
  { id: "inherited", itemIds: ["elsewhere"] },
  { id: "e1", itemIds: ["u1", "m1"] },
  { id: "e2", itemIds: ["u2", "m2"] },
  { id: "e3", itemIds: ["m3"] },
  { id: "e5", itemIds: ["u5"] },
];

const prefix = (point: ConvPoint, turns = engineTurns) => conversationPrefix(store, "s1", point, turns);

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe("how many engine turns a point keeps", () => {
  it("base and before a turn: the inherited ones, and those of earlier turns", async () => {
    expect(await prefix({ kind: "base" })).toBe(1);
    expect(await prefix({ kind: "before", turn: "plain" })).toBe(1);
    expect(await prefix({ kind: "before", turn: "goal" })).toBe(2);
    expect(await prefix({ kind: "before", turn: "later" })).toBe(4);
  });

  it("up to a turn: everything the thread holds of it and before", async () => {
    expect(await prefix({ kind: "upto", turn: "plain" })).toBe(2);
    expect(await prefix({ kind: "upto", turn: "goal" })).toBe(4);
    expect(await prefix({ kind: "upto", turn: "later" })).toBe(5);
  });

  it("after a goal turn's k-th engine turn: through that one (all of them without k, or past its last)", async () => {
    expect(await prefix({ kind: "after", turn: "goal", engineTurn: 1 })).toBe(3);
    expect(await prefix({ kind: "after", turn: "goal", engineTurn: 2 })).toBe(4);
    expect(await prefix({ kind: "after", turn: "goal", engineTurn: null })).toBe(4);
    expect(await prefix({ kind: "after", turn: "goal", engineTurn: 9 })).toBe(4);
    expect(await prefix({ kind: "after", turn: "plain", engineTurn: 1 })).toBe(2);
  });

  it("a continuation none of whose items is stored belongs to the turn before it", async () => {
    const unknown = [
      ...engineTurns.slice(0, 3),
      { id: "e3", itemIds: ["not-stored"] },
      ...engineTurns.slice(4),
    ];
    expect(await prefix({ kind: "after", turn: "goal", engineTurn: null }, unknown)).toBe(4);
    expect(await prefix({ kind: "before", turn: "later" }, unknown)).toBe(4);
  });

  it("after a turn that never reached the engine: the conversation as it stood before it", async () => {
    expect(await prefix({ kind: "after", turn: "never", engineTurn: null })).toBe(4);
  });

  it("after a turn reverted away since: 409 conversation_unavailable; a turn that is gone: 404", async () => {
    const reverted = await refusal(prefix({ kind: "after", turn: "reverted", engineTurn: null }));
    expect(reverted.kind).toBe("conflict");
    expect(reverted.code).toBe("conversation_unavailable");
    const gone = await refusal(prefix({ kind: "before", turn: "turn_nope" }));
    expect(gone.kind).toBe("not_found");
    expect(gone.param).toBe("turn_id");
  });
});

describe("where the conversation stands now", () => {
  it("up to the session's last turn, or the base before any", async () => {
    expect(await currentConv(store, "s1")).toBe("upto:later");
    await store.insertSession(session("s2"));
    expect(await currentConv(store, "s2")).toBe("base");
  });
});
