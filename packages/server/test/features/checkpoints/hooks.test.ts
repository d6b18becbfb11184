// Which checkpoints the lifecycle of sessions and turns makes, and how they are named (features/checkpoints/hooks.ts,
// announce.ts), without git: a baseline when a workspace is first used; before a turn, one when the tree changed
// outside the agent; after every engine turn (no scan after a plain turn whose recorded items include no tool),
// with the marks of the turn's bounds; after a turn that failed or was stopped; each announced in the turn's span or outside it. The
// stores are recording stand-ins (support/checkpoint-stores.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Config, loadConfig } from "../../../src/config/load.js";
import type { TurnActivity } from "../../../src/domain/feature.js";
import { CheckpointAnnouncer } from "../../../src/features/checkpoints/announce.js";
import { CheckpointHooks } from "../../../src/features/checkpoints/hooks.js";
import { Housekeeping } from "../../../src/features/checkpoints/housekeeping.js";
import { StoreUsage } from "../../../src/features/checkpoints/usage.js";
import { InFlight } from "../../../src/kernel/in-flight.js";
import { EventHub } from "../../../src/platform/stream/hub.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionRecord, TurnRecord } from "../../../src/store/types.js";
import { session, turn } from "../../store/contract.js";
import { type RecordingRepo, RecordingStores } from "../../support/checkpoint-stores.js";
import { TestClock } from "../../support/clock.js";

let dir: string;
let config: Config;
let store: SqliteStore;
let hub: EventHub;
let clock: TestClock;
let stores: RecordingStores;
let hooks: CheckpointHooks;
let own: SessionRecord;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "cas-ckpt-"));
  config = loadConfig(["--port", "0", "--data-dir", dir], {}, dir);
  store = SqliteStore.open(":memory:");
  clock = new TestClock();
  hub = new EventHub(store, { now: () => clock.now() });
  const logger = pino({ level: "silent" });
  const settings = config.checkpoints;
  const work = new InFlight();
  const usage = new StoreUsage(settings, work);
  stores = new RecordingStores({ config, clock, logger });
  const runner = { isActive: () => false };
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
  const announcer = new CheckpointAnnouncer({ settings, hub, logger, usage });
  hooks = new CheckpointHooks({ logger, stores, announcer, housekeeping, usage });
  own = session("sess_1", 1000, {
    workspace: join(config.workspaceRoot, "sess_1"),
    extra: { workspace_mode: "session" },
  });
  await store.insertSession(own);
});
afterEach(async () => {
  hub.closeAll();
  await hub.drain();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const repoOf = (s: SessionRecord): RecordingRepo => stores.repo(stores.of(s).key);

/** What each turn of the test has recorded: the types of its items (as the runner's recorder hands them over). */
const activities = new Map<string, TurnActivity>();

/** A turn of `s` that has recorded items of these types. */
function turnWith(s: SessionRecord, id: string, items: string[], over: Partial<TurnRecord> = {}): TurnRecord {
  activities.set(id, { itemTypes: new Set(items) });
  return turn(s.id, id, 1000, { status: "in_progress", ...over });
}

/** The end of an engine turn of `t`, with what `t` recorded. */
const afterEngineTurn = (s: SessionRecord, t: TurnRecord) =>
  hooks.afterEngineTurn(s, t, activities.get(t.id) ?? { itemTypes: new Set() });

/** The `checkpoint.created` events: the turn whose span holds each, and the turn its checkpoint names. */
async function announced(
  s: SessionRecord,
): Promise<Array<{ span: string | null; label: string; turn: string | null }>> {
  await hub.flush(s.id);
  return (await store.readEvents(s.id, 0, 1000))
    .filter((e) => e.type === "checkpoint.created")
    .map((e) => {
      const c = (e.data as { checkpoint: { label: string; turn_id: string | null } }).checkpoint;
      return { span: e.turn_id, label: c.label, turn: c.turn_id };
    });
}

describe("a session's first checkpoint", () => {
  it("is its workspace's baseline, announced unless the workspace is empty", async () => {
    await hooks.baseline(own);
    expect(repoOf(own).records).toEqual([
      {
        label: "baseline",
        meta: { session_id: "sess_1", project_id: own.project_id, kind: "baseline", conv: "base" },
        opts: {},
      },
    ]);
    expect(await announced(own)).toEqual([{ span: null, label: "baseline", turn: null }]);
    const empty = session("sess_2", 1000, {
      workspace: join(config.workspaceRoot, "sess_2"),
      extra: { workspace_mode: "session" },
    });
    await store.insertSession(empty);
    repoOf(empty).files = 0;
    await hooks.baseline(empty);
    expect(repoOf(empty).records).toHaveLength(1);
    expect(await announced(empty)).toEqual([]);
  });

  it("none for a forked session (its checkpoint comes with it), none for a shared directory already used", async () => {
    const forked = { ...own, extra: { ...own.extra, checkpoint_fork: "ckpt_x" } };
    await hooks.baseline(forked);
    expect(repoOf(own).records).toEqual([]);
    const a = session("sa", 1000, { workspace: config.workspaceRoot });
    const b = session("sb", 1000, { workspace: config.workspaceRoot });
    await hooks.baseline(a);
    await hooks.baseline(b);
    expect(stores.of(a)).toBe(stores.of(b));
    expect(repoOf(a).records.map((r) => [r.label, r.meta.session_id])).toEqual([["baseline", "sa"]]);
  });
});

describe("a turn's checkpoints", () => {
  it("before it, one named external when the tree changed outside the agent", async () => {
    await hooks.baseline(own);
    const t = turnWith(own, "turn_1", []);
    await hooks.beforeTurn(own, t);
    const before = repoOf(own).records[1];
    expect(before?.label).toBe("changed outside the agent");
    expect(before?.meta).toMatchObject({ kind: "external", turn_id: "turn_1", conv: "before:turn_1" });
    expect((await announced(own)).at(-1)).toEqual({
      span: "turn_1",
      label: "changed outside the agent",
      turn: "turn_1",
    });
  });

  it("after a plain turn that only talked: no scan, only the marks of its bounds", async () => {
    await hooks.baseline(own);
    const head = repoOf(own).head!.id;
    repoOf(own).changed = false;
    const t = turnWith(own, "turn_1", ["userMessage", "reasoning", "agentMessage"]);
    await hooks.beforeTurn(own, t);
    await afterEngineTurn(own, t);
    expect(repoOf(own).records.at(-1)).toEqual({
      label: "turn",
      meta: {
        session_id: "sess_1",
        project_id: own.project_id,
        kind: "turn",
        turn_id: "turn_1",
        engine_turn: "1",
        conv: "after:turn_1:1",
      },
      opts: {
        marks: { "sessions/sess_1/turns/turn_1/before": head, "sessions/sess_1/turns/turn_1/after": null },
        prefetchExcluded: true,
        unchanged: true,
      },
    });
  });

  it("after an engine turn that ran a command, or any of a goal's: scanned, announced in the turn", async () => {
    await hooks.baseline(own);
    const t = turnWith(own, "turn_1", ["userMessage", "commandExecution", "agentMessage"]);
    await hooks.beforeTurn(own, t);
    await afterEngineTurn(own, t);
    expect(repoOf(own).records.at(-1)?.opts.unchanged).toBe(false);
    const g = turnWith(own, "turn_2", ["userMessage", "agentMessage"], {
      goal: { mode: "input", objective: "o" },
    });
    await hooks.beforeTurn(own, g);
    await afterEngineTurn(own, g);
    expect(repoOf(own).records.at(-1)?.opts.unchanged).toBe(false);
    await afterEngineTurn(own, g);
    const second = repoOf(own).records.at(-1);
    expect(second?.label).toBe("turn, engine turn 2");
    expect(second?.meta).toMatchObject({ engine_turn: "2", conv: "after:turn_2:2" });
    expect(second?.opts.unchanged).toBe(false);
    expect((await announced(own)).filter((a) => a.label.startsWith("turn"))).toEqual([
      { span: "turn_1", label: "turn", turn: "turn_1" },
      { span: "turn_2", label: "turn", turn: "turn_2" },
      { span: "turn_2", label: "turn, engine turn 2", turn: "turn_2" },
    ]);
  });

  it("none again after a completed turn; after a failed one, its last state, announced outside its span", async () => {
    await hooks.baseline(own);
    const done = turnWith(own, "turn_1", ["commandExecution"]);
    await hooks.beforeTurn(own, done);
    await afterEngineTurn(own, done);
    const count = repoOf(own).records.length;
    await hooks.afterTurn(own, { ...done, status: "completed" });
    expect(repoOf(own).records).toHaveLength(count);

    const failed = turnWith(own, "turn_2", ["commandExecution"]);
    await hooks.beforeTurn(own, failed);
    await afterEngineTurn(own, failed);
    await hooks.afterTurn(own, { ...failed, status: "failed" });
    const last = repoOf(own).records.at(-1);
    expect(last?.label).toBe("turn failed");
    expect(last?.meta.conv).toBe("after:turn_2");
    expect(last?.meta.engine_turn).toBeUndefined();
    expect(last?.opts).toMatchObject({ prefetchExcluded: false, unchanged: false });
    expect((await announced(own)).at(-1)).toEqual({ span: null, label: "turn failed", turn: "turn_2" });
  });

  it("none for a turn that ended before the engine started it; the store's housekeeping is scheduled anyway", async () => {
    await hooks.baseline(own);
    const t = turnWith(own, "turn_1", []);
    expect(clock.armed(config.checkpoints.idleSeconds * 1000)).toBe(false);
    await hooks.afterTurn(own, { ...t, status: "cancelled" });
    expect(repoOf(own).records).toHaveLength(1);
    expect(clock.armed(config.checkpoints.idleSeconds * 1000)).toBe(true);
  });

  it("a stopped turn that never finished an engine turn is recorded when it ends", async () => {
    await hooks.baseline(own);
    const t = turnWith(own, "turn_1", []);
    await hooks.beforeTurn(own, t);
    await hooks.afterTurn(own, { ...t, status: "cancelled" });
    expect(repoOf(own).records.at(-1)?.label).toBe("turn cancelled");
  });

  it("ids that cannot name a mark are left unmarked", async () => {
    const odd = session("sess.odd", 1000, { workspace: join(config.workspaceRoot, "sess.odd") });
    await store.insertSession(odd);
    const t = turnWith(odd, "turn_1", ["commandExecution"]);
    await hooks.beforeTurn(odd, t);
    await afterEngineTurn(odd, t);
    expect(repoOf(odd).records.at(-1)?.opts.marks).toEqual({});
  });
});

describe("a deleted session's checkpoints", () => {
  it("its own store is destroyed and forgotten", async () => {
    await hooks.baseline(own);
    const ws = stores.of(own);
    await hooks.forgetSession(own);
    expect(repoOf(own).destroyed).toBe(true);
    expect(stores.isCurrent(ws)).toBe(false);
  });

  it("in a shared store, its marks and its checkpoints go, the others' stay", async () => {
    const a = session("sa", 1000, { workspace: config.workspaceRoot });
    const b = session("sb", 1000, { workspace: config.workspaceRoot });
    await hooks.baseline(a);
    await hooks.forgetSession(b);
    const repo = repoOf(a);
    expect(repo.destroyed).toBe(false);
    expect(repo.droppedMarks).toEqual(["sessions/sb"]);
    const where = repo.prunes[0]?.where;
    const made = (sessionId: string) => ({
      ...repo.head!,
      meta: { ...repo.head!.meta, session_id: sessionId },
    });
    expect([where?.(made("sb")), where?.(made("sa"))]).toEqual([true, false]);
    expect(stores.of(a).sessions.has("sb")).toBe(false);
  });
});
