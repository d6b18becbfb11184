// The conversation side of a restore (features/checkpoints/threads.ts), without git or an engine: which thread holds
// the conversation a checkpoint kept and how many of its engine turns that point keeps (the plan), then making it the
// session's conversation — its thread reverted in place, a kept thread copied, or none. The engine is a recording
// stand-in behind the SDK's own Thread; the checkpoint store only lists checkpoints.
import { Thread } from "@codex-agent-api/codex";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { conversationPrefix } from "../../../src/features/checkpoints/conversation.js";
import { ConversationThreads } from "../../../src/features/checkpoints/threads.js";
import { ApiError } from "../../../src/kernel/errors.js";
import type { CheckpointInfo } from "../../../src/model/checkpoints.js";
import type { Engines } from "../../../src/platform/engine/types.js";
import type { ShadowRepo } from "../../../src/platform/git-store/shadow-repo.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionRecord } from "../../../src/store/types.js";
import { finishItem, session, threadItem, turn } from "../../store/contract.js";
import { stubEngines } from "../../support/fixture.js";

type Call = { method: string; params: Record<string, unknown> };

let store: SqliteStore;
let calls: Call[];
let saved: string[];
let forgotten: string[];
/** The engine turns of each thread, as `thread/turns/list` answers them. */
let threadTurns: Record<string, Array<{ id: string; items: Array<{ id: string }> }>>;
let s1: SessionRecord;

const engineTurn = (id: string, ...items: string[]) => ({ id, items: items.map((i) => ({ id: i })) });

/** What the engine answers (recorded in `calls`). */
function answer(method: string, params: Record<string, unknown>): unknown {
  calls.push({ method, params });
  switch (method) {
    case "thread/turns/list":
      return { data: threadTurns[String(params.threadId)] ?? [], nextCursor: null };
    case "thread/fork":
      return { thread: { id: `fork_of_${String(params.threadId)}` } };
    default:
      return {};
  }
}

const thread = () =>
  new Thread(
    {
      request: async <T>(method: string, params: unknown) =>
        answer(method, params as Record<string, unknown>) as T,
      route: () => {},
      unroute: () => {},
    },
    "thr_1",
    false,
  );

function threads(): ConversationThreads {
  const engines: Engines = {
    ...stubEngines(),
    call: async <T>(method: string, params: unknown) =>
      answer(method, params as Record<string, unknown>) as T,
    forget: (id) => {
      forgotten.push(id);
    },
  };
  return new ConversationThreads({
    store,
    runner: { withThread: (_s, fn) => fn(thread()) },
    engines,
    rollouts: {
      save: async (id) => {
        saved.push(id);
      },
    },
    logger: pino({ level: "silent" }),
  });
}

const checkpoint = (id: string, meta: Record<string, string>): CheckpointInfo => ({
  id,
  parent: null,
  created_at: 1,
  label: "turn",
  meta: { session_id: "s1", project_id: "proj_1", kind: "turn", ...meta },
  stats: { files: 1, insertions: 1, deletions: 0 },
  skipped: [],
  skipped_more: 0,
  workspace_git: null,
});

/** The session's checkpoint store, as far as a plan reads it (its checkpoints, oldest first). */
const listing = (checkpoints: CheckpointInfo[]) =>
  // A stand-in for the git store: only `list` is read.
  ({ list: async () => checkpoints }) as unknown as ShadowRepo;

beforeEach(async () => {
  store = SqliteStore.open(":memory:");
  calls = [];
  saved = [];
  forgotten = [];
  s1 = session("s1", 1000, { thread_id: "thr_1" });
  await store.insertSession(s1);
  await store.insertTurn(turn("s1", "t1", 1));
  await store.insertTurn(turn("s1", "t2", 2));
  await store.insertTurn(turn("s1", "t3", 3));
  await store.appendEvents("s1", [
    finishItem("t1", threadItem("u1", "one", "userMessage")),
    finishItem("t2", threadItem("u2", "two", "userMessage")),
    finishItem("t3", threadItem("u3", "three", "userMessage")),
  ]);
  // Turn t3 was reverted away from the session's thread; an earlier restore kept the thread that still has it.
  threadTurns = {
    thr_1: [engineTurn("e1", "u1"), engineTurn("e2", "u2")],
    thr_kept: [engineTurn("k1", "u1"), engineTurn("k2", "u2"), engineTurn("k3", "u3")],
    thr_older: [engineTurn("o1", "u1")],
  };
});
afterEach(async () => {
  await store.close();
});

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe("planning a restore's conversation", () => {
  it("on the session's thread: its engine turns, and how many the checkpoint's point keeps", async () => {
    const plan = await threads().planConversation(s1, checkpoint("c1", { conv: "after:t1:1" }), listing([]));
    expect(plan).toEqual({
      thread: "thr_1",
      turns: [
        { id: "e1", itemIds: ["u1"] },
        { id: "e2", itemIds: ["u2"] },
      ],
      prefix: 1,
    });
    expect(calls.map((c) => [c.method, c.params.threadId])).toEqual([["thread/turns/list", "thr_1"]]);
    // The same answer the point's own count gives.
    expect(
      await conversationPrefix(store, "s1", { kind: "after", turn: "t1", engineTurn: 1 }, plan.turns),
    ).toBe(1);
  });

  it("on the thread the checkpoint names (one a restore kept)", async () => {
    const target = checkpoint("c1", { conv: "upto:t3", conv_thread: "thr_kept" });
    const plan = await threads().planConversation(s1, target, listing([]));
    expect(plan.thread).toBe("thr_kept");
    expect(plan.prefix).toBe(3);
  });

  it("a checkpoint another session made: its conversation is not this session's (409)", async () => {
    const theirs = checkpoint("c1", { conv: "base", session_id: "s2" });
    const e = await refusal(threads().planConversation(s1, theirs, listing([])));
    expect(e.code).toBe("conversation_unavailable");
    expect(calls).toEqual([]);
  });

  it("a session without a thread: nothing to keep", async () => {
    const bare = { ...s1, thread_id: null };
    expect(
      await threads().planConversation(bare, checkpoint("c1", { conv: "after:t1" }), listing([])),
    ).toEqual({
      thread: null,
      turns: [],
      prefix: 0,
    });
    expect(calls).toEqual([]);
  });

  it("a point reverted away since: found on the newest kept thread that still holds it, else 409", async () => {
    const target = checkpoint("c3", { conv: "after:t3" });
    const kept = [
      checkpoint("b1", { kind: "before_restore", conv_thread: "thr_kept" }),
      checkpoint("b2", { kind: "before_restore", conv_thread: "thr_older" }),
      checkpoint("x", { kind: "before_restore", conv_thread: "thr_theirs", session_id: "s2" }),
    ];
    const plan = await threads().planConversation(s1, target, listing(kept));
    expect(plan).toMatchObject({ thread: "thr_kept", prefix: 3 });
    // Newest first, another session's kept thread never looked at.
    expect(calls.map((c) => c.params.threadId)).toEqual(["thr_1", "thr_older", "thr_kept"]);
    calls = [];
    const e = await refusal(threads().planConversation(s1, target, listing(kept.slice(1))));
    expect(e.code).toBe("conversation_unavailable");
  });
});

describe("applying the plan", () => {
  const turns = [
    { id: "e1", itemIds: ["u1"] },
    { id: "e2", itemIds: ["u2"] },
  ];

  it("the whole of the session's thread: nothing changes", async () => {
    await threads().applyConversation(s1, { thread: "thr_1", turns, prefix: 2 });
    expect(calls).toEqual([]);
    expect((await store.getSession("s1"))?.thread_id).toBe("thr_1");
  });

  it("part of the session's thread: reverted in place before the first dropped engine turn, then shared", async () => {
    await threads().applyConversation(s1, { thread: "thr_1", turns, prefix: 1 });
    expect(calls).toEqual([{ method: "thread/revert", params: { threadId: "thr_1", beforeTurnId: "e2" } }]);
    expect(saved).toEqual(["thr_1"]);
    expect((await store.getSession("s1"))?.thread_id).toBe("thr_1");
    expect(forgotten).toEqual([]);
  });

  it("nothing kept: the session starts a new conversation, its old thread forgotten", async () => {
    await threads().applyConversation(s1, { thread: "thr_1", turns, prefix: 0 });
    expect(calls).toEqual([]);
    expect((await store.getSession("s1"))?.thread_id).toBeNull();
    expect(forgotten).toEqual(["thr_1"]);
  });

  it("a kept thread: copied through the last kept engine turn into the session's workspace", async () => {
    const keptTurns = threadTurns.thr_kept!.map((t) => ({ id: t.id, itemIds: t.items.map((i) => i.id) }));
    await threads().applyConversation(s1, { thread: "thr_kept", turns: keptTurns, prefix: 2 });
    expect(calls).toEqual([
      {
        method: "thread/fork",
        params: { threadId: "thr_kept", lastTurnId: "k2", cwd: s1.workspace, excludeTurns: true },
      },
      { method: "thread/unsubscribe", params: { threadId: "fork_of_thr_kept" } },
    ]);
    expect(saved).toEqual(["fork_of_thr_kept"]);
    expect((await store.getSession("s1"))?.thread_id).toBe("fork_of_thr_kept");
    expect(forgotten).toEqual(["thr_1"]);
  });

  it("a fork of the session's own thread goes through its loaded thread; sharing it may fail quietly", async () => {
    const t = threads();
    expect(await t.forkThread(s1, "thr_1", "e1", "/elsewhere")).toBe("fork_of_thr_1");
    expect(calls[0]).toEqual({
      method: "thread/fork",
      params: { threadId: "thr_1", excludeTurns: true, lastTurnId: "e1", cwd: "/elsewhere" },
    });
    expect(saved).toEqual(["fork_of_thr_1"]);
    const failing = new ConversationThreads({
      store,
      runner: { withThread: (_s, fn) => fn(thread()) },
      engines: stubEngines(),
      rollouts: {
        save: () => Promise.reject(new Error("no shared store")),
      },
      logger: pino({ level: "silent" }),
    });
    await expect(failing.shareThread("thr_1")).resolves.toBeUndefined();
  });
});
