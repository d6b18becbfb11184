// How a restore goes (features/checkpoints/restore.ts), without git: a dry run changes nothing and claims nothing;
// a real one is refused in a shared workspace or while a turn runs, holds the session like a turn does while it
// writes, and happens whole or not at all — with `conversation: revert`, the current conversation is first copied
// into a backup thread the safety checkpoint names, and a conversation that cannot follow puts the files back. The
// store is a recording stand-in (support/checkpoint-stores.ts), the engine a recording one behind the SDK's Thread.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InvalidRequestError, Thread } from "@codex-agent-api/codex";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Config, loadConfig } from "../../../src/config/load.js";
import { CheckpointAnnouncer } from "../../../src/features/checkpoints/announce.js";
import { SessionClaims } from "../../../src/features/checkpoints/claims.js";
import { Housekeeping } from "../../../src/features/checkpoints/housekeeping.js";
import { CheckpointReader } from "../../../src/features/checkpoints/reads.js";
import { CheckpointRestore } from "../../../src/features/checkpoints/restore.js";
import { ConversationThreads } from "../../../src/features/checkpoints/threads.js";
import { StoreUsage } from "../../../src/features/checkpoints/usage.js";
import { ApiError } from "../../../src/kernel/errors.js";
import { InFlight } from "../../../src/kernel/in-flight.js";
import { publicId, sessionMeta } from "../../../src/model/checkpoint-names.js";
import type { CheckpointInfo } from "../../../src/model/checkpoints.js";
import { lockOf } from "../../../src/model/session-lock.js";
import { EventHub } from "../../../src/platform/stream/hub.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionRecord } from "../../../src/store/types.js";
import { finishItem, session, threadItem, turn } from "../../store/contract.js";
import { type RecordingRepo, RecordingStores } from "../../support/checkpoint-stores.js";
import { TestClock } from "../../support/clock.js";
import { stubEngines } from "../../support/fixture.js";

const logger = pino({ level: "silent" });
let dir: string;
let config: Config;
let store: SqliteStore;
let hub: EventHub;
let clock: TestClock;
let stores: RecordingStores;
let restorer: CheckpointRestore;
let s: SessionRecord;
let repo: RecordingRepo;
let c1: CheckpointInfo;
/** What the engine was asked; `thread/revert` fails when `revertFails`. */
let calls: Array<{ method: string; params: Record<string, unknown> }>;
let revertFails: boolean;
let saved: string[];
/** Who held the session while the restore wrote the files (its stored lock). */
let heldBy: Array<string | null>;

function answer(method: string, params: Record<string, unknown>): unknown {
  calls.push({ method, params });
  if (method === "thread/turns/list") {
    const data = [
      { id: "e1", items: [{ id: "u1" }] },
      { id: "e2", items: [{ id: "u2" }] },
    ];
    return { data, nextCursor: null };
  }
  if (method === "thread/fork") return { thread: { id: "thr_backup" } };
  if (method === "thread/revert" && revertFails) throw new InvalidRequestError("cannot revert now");
  return {};
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

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "cas-restore-"));
  config = loadConfig(["--port", "0", "--data-dir", dir], {}, dir);
  store = SqliteStore.open(":memory:");
  clock = new TestClock();
  hub = new EventHub(store, { now: () => clock.now() });
  calls = [];
  revertFails = false;
  saved = [];
  heldBy = [];
  const settings = config.checkpoints;
  const work = new InFlight();
  const usage = new StoreUsage(settings, work);
  stores = new RecordingStores({ config, clock, logger });
  const runner = {
    isActive: () => false,
    withThread: <T>(_s: SessionRecord, fn: (t: Thread) => Promise<T>) => fn(thread()),
  };
  const housekeeping = new Housekeeping({
    settings,
    clock,
    logger,
    runner,
    stores,
    usage,
    work,
    closed: () => false,
  });
  const rollouts = {
    save: async (id: string) => {
      saved.push(id);
    },
  };
  const cluster = { instanceId: "inst_here", healthy: true };
  restorer = new CheckpointRestore({
    store,
    runner,
    logger,
    stores,
    reader: new CheckpointReader({ settings, stores }),
    claims: new SessionClaims({ store, runner, clock, logger, cluster }),
    threads: new ConversationThreads({ store, runner, engines: stubEngines(), rollouts, logger }),
    announcer: new CheckpointAnnouncer({ settings, hub, logger, usage }),
    housekeeping,
    handOver: async (held) => {
      heldBy.push((await store.getSession(held.id))?.active_turn_id ?? null);
    },
  });
  s = session("sess_1", 1000, {
    workspace: join(config.workspaceRoot, "sess_1"),
    thread_id: "thr_1",
    extra: { workspace_mode: "session" },
  });
  await store.insertSession(s);
  await store.insertTurn(turn(s.id, "t1", 1));
  await store.insertTurn(turn(s.id, "t2", 2));
  await store.appendEvents(s.id, [
    finishItem("t1", threadItem("u1", "one", "userMessage")),
    finishItem("t2", threadItem("u2", "two", "userMessage")),
  ]);
  repo = stores.repo(stores.of(s).key);
  c1 = repo.add("turn", sessionMeta(s, { kind: "turn", turn_id: "t1", conv: "after:t1:1" }));
  repo.add("turn", sessionMeta(s, { kind: "turn", turn_id: "t2", conv: "after:t2:1" }));
  repo.changed = false; // the workspace is as the latest checkpoint has it
});
afterEach(async () => {
  hub.closeAll();
  await hub.drain();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

async function announcedLabels(): Promise<string[]> {
  await hub.flush(s.id);
  return (await store.readEvents(s.id, 0, 1000))
    .filter((e) => e.type === "checkpoint.created")
    .map((e) => (e.data as { checkpoint: { label: string } }).checkpoint.label);
}

describe("a dry run", () => {
  it("lists what would change; claims nothing, writes nothing, reverts nothing", async () => {
    const out = await restorer.restore(s, publicId(c1.id), { dryRun: true, conversation: "revert" });
    expect(out).toMatchObject({
      target: { id: c1.id },
      dryRun: true,
      conversation: "revert",
      changes: [{ path: "a.txt", action: "write" }],
      safety: null,
      restored: null,
      conversationTurns: { kept: 1, dropped: 1 },
    });
    expect(repo.restores).toEqual([{ id: c1.id, opts: { dryRun: true } }]);
    expect(calls.map((c) => c.method)).toEqual(["thread/turns/list"]);
    expect(heldBy).toEqual([]);
    const kept = await restorer.restore(s, publicId(c1.id), { dryRun: true, conversation: "keep" });
    expect(kept.conversationTurns).toBeNull();
  });

  it("is allowed in a shared workspace, where a real restore is refused", async () => {
    const shared = session("sa", 1000, { workspace: config.workspaceRoot });
    await store.insertSession(shared);
    const sharedRepo = stores.repo(stores.of(shared).key);
    const c = sharedRepo.add("manual", sessionMeta(shared, { kind: "manual", conv: "base" }));
    const dry = await restorer.restore(shared, publicId(c.id), { dryRun: true, conversation: "keep" });
    expect(dry.dryRun).toBe(true);
    const e = await refusal(
      restorer.restore(shared, publicId(c.id), { dryRun: false, conversation: "keep" }),
    );
    expect(e.code).toBe("workspace_shared");
    expect(sharedRepo.restores).toHaveLength(1);
  });
});

describe("a restore", () => {
  it("holds the session while it writes, then gives it back; the restored checkpoint announced", async () => {
    const out = await restorer.restore(s, publicId(c1.id), { dryRun: false, conversation: "keep" });
    expect(heldBy).toHaveLength(1);
    expect(lockOf(heldBy[0] ?? null)?.kind).toBe("restore");
    expect((await store.getSession(s.id))?.active_turn_id).toBeNull();
    expect(out).toMatchObject({ dryRun: false, safety: null, conversationTurns: null });
    expect(out.restored?.meta).toMatchObject({ kind: "restore", conv: "upto:t2", session_id: s.id });
    const [r] = repo.restores;
    expect(r?.opts).toMatchObject({
      forceSafety: false,
      safetyMeta: { kind: "before_restore", conv: "upto:t2" },
    });
    expect(calls).toEqual([]);
    expect(await announcedLabels()).toEqual(["restore"]);
    // The store's housekeeping is due once it has been idle.
    expect(clock.armed(config.checkpoints.idleSeconds * 1000)).toBe(true);
  });

  it("refused while a turn holds the session: nothing written", async () => {
    await store.updateSession(s.id, { active_turn_id: "turn_running" });
    const e = await refusal(restorer.restore(s, publicId(c1.id), { dryRun: false, conversation: "keep" }));
    expect(e.code).toBe("session_busy");
    expect(repo.restores).toEqual([]);
    expect((await store.getSession(s.id))?.active_turn_id).toBe("turn_running");
  });

  it("of a checkpoint the session does not have: 404; of something not a checkpoint id: 400", async () => {
    const missing = await refusal(
      restorer.restore(s, publicId("f".repeat(40)), { dryRun: false, conversation: "keep" }),
    );
    expect(missing.kind).toBe("not_found");
    const bad = await refusal(restorer.restore(s, "ckpt_nope", { dryRun: true, conversation: "keep" }));
    expect(bad.kind).toBe("bad_request");
    expect(bad.param).toBe("checkpoint_id");
  });

  it("with the conversation: a backup thread first, named by the safety checkpoint; then the thread reverted", async () => {
    const out = await restorer.restore(s, publicId(c1.id), { dryRun: false, conversation: "revert" });
    expect(calls.map((c) => c.method)).toEqual([
      "thread/turns/list",
      "thread/fork",
      "thread/unsubscribe",
      "thread/revert",
    ]);
    expect(calls[1]?.params).toMatchObject({ threadId: "thr_1", cwd: s.workspace });
    expect(calls[3]?.params).toEqual({ threadId: "thr_1", beforeTurnId: "e2" });
    expect(saved).toEqual(["thr_backup", "thr_1"]);
    const [r] = repo.restores;
    expect(r?.opts.forceSafety).toBe(true);
    expect(out.safety?.meta).toMatchObject({
      kind: "before_restore",
      conv: "upto:t2",
      conv_thread: "thr_backup",
    });
    expect(out.conversationTurns).toEqual({ kept: 1, dropped: 1 });
    expect(await announcedLabels()).toEqual(["before restore", "restore"]);
    expect((await store.getSession(s.id))?.active_turn_id).toBeNull();
  });

  it("whose conversation cannot follow puts the files back and fails; the session is given back", async () => {
    revertFails = true;
    await expect(
      restorer.restore(s, publicId(c1.id), { dryRun: false, conversation: "revert" }),
    ).rejects.toThrow("cannot revert now");
    expect(repo.restores.map((r) => r.id)).toHaveLength(2);
    const [first, undo] = repo.restores;
    expect(first?.id).toBe(c1.id);
    // Back to the safety checkpoint the first restore made.
    expect(undo?.id).toBe(repo.checkpoints.find((c) => c.label === "before restore")?.id);
    expect(undo?.opts.restoredMeta).toMatchObject({ kind: "restore", conv: "upto:t2" });
    expect((await store.getSession(s.id))?.active_turn_id).toBeNull();
    expect((await store.getSession(s.id))?.thread_id).toBe("thr_1");
    // Every checkpoint the attempt made is in the store, and each is announced like any other.
    expect(await announcedLabels()).toEqual(["before restore", "restore", "restore"]);
  });
});
