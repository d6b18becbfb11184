// What the checkpoint feature decides around its stores, without git (features/checkpoints/housekeeping.ts,
// stores.ts, claims.ts): a store idle for a while is pruned by the retention settings and repacked — later while one
// of its sessions runs a turn, never once the service closed; which store a session's workspace has and what it
// leaves out; and the claim a restore takes on its session like a turn does.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Config, loadConfig } from "../../../src/config/load.js";
import { SessionClaims } from "../../../src/features/checkpoints/claims.js";
import { Housekeeping } from "../../../src/features/checkpoints/housekeeping.js";
import { StoreUsage } from "../../../src/features/checkpoints/usage.js";
import { ApiError } from "../../../src/kernel/errors.js";
import { InFlight } from "../../../src/kernel/in-flight.js";
import { lockOf } from "../../../src/model/session-lock.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { SessionRecord } from "../../../src/store/types.js";
import { session } from "../../store/contract.js";
import { RecordingStores } from "../../support/checkpoint-stores.js";
import { TestClock } from "../../support/clock.js";

const logger = pino({ level: "silent" });
let dir: string;
let clock: TestClock;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cas-ckpt-"));
  clock = new TestClock();
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const configWith = (args: string[] = []): Config =>
  loadConfig(["--port", "0", "--data-dir", dir, ...args], {}, dir);

const ownSession = (config: Config, id: string): SessionRecord =>
  session(id, 1000, { workspace: join(config.workspaceRoot, id), extra: { workspace_mode: "session" } });

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe("housekeeping", () => {
  function setUp(args: string[] = []) {
    const config = configWith(args);
    const stores = new RecordingStores({ config, clock, logger });
    const work = new InFlight();
    const running = new Set<string>();
    const state = { closed: false };
    const housekeeping = new Housekeeping({
      settings: config.checkpoints,
      clock,
      logger,
      runner: { isActive: (id) => running.has(id) },
      stores,
      usage: new StoreUsage(config.checkpoints, work),
      work,
      closed: () => state.closed,
    });
    const s = ownSession(config, "sess_1");
    const ws = stores.of(s);
    void stores.repoOf(ws);
    return { config, stores, work, running, state, housekeeping, ws, repo: stores.repo(ws.key) };
  }

  it("prunes by the retention settings and repacks once the store has been idle for idleSeconds", async () => {
    const { housekeeping, ws, repo, work } = setUp(["--checkpoint-idle", "60", "--checkpoint-keep", "7"]);
    housekeeping.scheduleIdle(ws);
    clock.advance(59);
    await work.idle();
    expect(repo.prunes).toEqual([]);
    clock.advance(2);
    await work.idle();
    expect(repo.prunes).toEqual([{ keep: 7, olderThanSeconds: 30 * 86_400 }]);
    expect(repo.repacks).toBe(1);
    expect(ws.idle).toBeNull();
  });

  it("without retention (0 = no limit), nothing is asked to go; a store that dropped some is not repacked again", async () => {
    const { housekeeping, ws, repo, work } = setUp(["--checkpoint-keep", "0", "--checkpoint-max-age", "0"]);
    repo.toPrune = 3;
    housekeeping.scheduleIdle(ws);
    clock.advance(31);
    await work.idle();
    expect(repo.prunes).toEqual([{}]);
    expect(repo.repacks).toBe(0);
  });

  it("each new use of the store starts the idle period again", async () => {
    const { housekeeping, ws, repo, work } = setUp();
    housekeeping.scheduleIdle(ws);
    clock.advance(20);
    housekeeping.scheduleIdle(ws);
    clock.advance(20);
    await work.idle();
    expect(repo.prunes).toEqual([]);
    clock.advance(11);
    await work.idle();
    expect(repo.prunes).toHaveLength(1);
  });

  it("waits another period while one of the store's sessions runs a turn", async () => {
    const { housekeeping, ws, repo, work, running } = setUp();
    running.add("sess_1");
    housekeeping.scheduleIdle(ws);
    clock.advance(31);
    await work.idle();
    expect(repo.prunes).toEqual([]);
    expect(clock.armed(30_000)).toBe(true);
    running.clear();
    clock.advance(31);
    await work.idle();
    expect(repo.prunes).toHaveLength(1);
  });

  it("nothing once the service closed, nor for a store forgotten meanwhile", async () => {
    const closing = setUp();
    closing.housekeeping.scheduleIdle(closing.ws);
    closing.state.closed = true;
    clock.advance(31);
    await closing.work.idle();
    expect(closing.repo.prunes).toEqual([]);
    closing.housekeeping.scheduleIdle(closing.ws);
    expect(closing.ws.idle).toBeNull();

    const forgetting = setUp();
    forgetting.housekeeping.scheduleIdle(forgetting.ws);
    forgetting.stores.forget(forgetting.ws);
    clock.advance(31);
    await forgetting.work.idle();
    expect(forgetting.repo.prunes).toEqual([]);
  });
});

describe("a workspace's store", () => {
  it("a session's own directory has a store of its own; sessions sharing one share its store", () => {
    const config = configWith();
    const stores = new RecordingStores({ config, clock, logger });
    const own = stores.of(ownSession(config, "sess_1"));
    expect(own).toMatchObject({ key: "sess_1", dir: join(config.checkpoints.dir, "sess_1"), shared: false });
    const a = stores.of(session("sa", 1000, { workspace: `${config.workspaceRoot}/` }));
    const b = stores.of(session("sb", 1000, { workspace: config.workspaceRoot }));
    expect(a).toBe(b);
    expect(a.key).toMatch(/^ws_[0-9a-f]{20}$/);
    expect(a.shared).toBe(true);
    expect([...a.sessions]).toEqual(["sa", "sb"]);
    // A directory the session does not own (not made for it in session mode) is shared, whatever its name.
    const elsewhere = stores.of(session("sess_2", 1000, { workspace: join(dir, "sess_2") }));
    expect(elsewhere.shared).toBe(true);
    // The shared root leaves out the sessions' own directories (they have their own stores).
    expect(stores.options(a).exclude).toEqual([...config.checkpoints.exclude, "/sess_*/"]);
    expect(stores.options(own).exclude).toEqual(config.checkpoints.exclude);
  });

  it("an API call on checkpoints turned off says so", async () => {
    const config = configWith(["--checkpoints", "off"]);
    const stores = new RecordingStores({ config, clock, logger });
    const e = await refusal(stores.openFor(ownSession(config, "sess_1")));
    expect(e.code).toBe("checkpoints_disabled");
  });
});

describe("a restore's claim on its session", () => {
  let store: SqliteStore;
  let active: Set<string>;
  let healthy: boolean;
  let claims: SessionClaims;
  let s: SessionRecord;
  beforeEach(async () => {
    store = SqliteStore.open(":memory:");
    active = new Set();
    healthy = true;
    claims = new SessionClaims({
      store,
      runner: { isActive: (id) => active.has(id) },
      clock,
      logger,
      cluster: {
        instanceId: "inst_here",
        get healthy() {
          return healthy;
        },
      },
    });
    s = session("s1");
    await store.insertSession(s);
  });
  afterEach(async () => {
    await store.close();
  });

  it("is taken like a turn's: the session locked by a restore, then released", async () => {
    await claims.refuseBusy(s, "restore");
    const claimed = await claims.claimForRestore(s);
    expect(lockOf(claimed.active_turn_id)?.kind).toBe("restore");
    expect(claimed.owner_instance).toBe("inst_here");
    // Whoever comes next (another restore, a checkpoint, a turn's claim) finds it busy.
    expect((await refusal(claims.refuseBusy(s, "make a checkpoint"))).message).toContain(
      "Cannot make a checkpoint while a turn runs",
    );
    expect((await refusal(claims.claimForRestore(s))).code).toBe("session_busy");
    expect(await store.claimSession("s1", "turn_x", {})).toBeUndefined();
    await claims.release(claimed);
    expect((await store.getSession("s1"))?.active_turn_id).toBeNull();
    expect(await store.claimSession("s1", "turn_x", {})).toBeDefined();
  });

  it("a release after the claim was taken over and given to a turn leaves the turn's claim alone", async () => {
    const claimed = await claims.claimForRestore(s);
    // another instance thought this one dead: it freed the session, and a turn claimed it
    await store.updateSession("s1", { active_turn_id: null });
    expect(await store.claimSession("s1", "turn_y", {})).toBeDefined();
    await claims.release(claimed);
    expect((await store.getSession("s1"))?.active_turn_id).toBe("turn_y");
  });

  it("refused while a turn runs here, or by the stored claim anywhere, or while this instance cannot claim", async () => {
    active.add("s1");
    expect((await refusal(claims.refuseBusy(s, "restore"))).code).toBe("session_busy");
    active.clear();
    await store.updateSession("s1", { active_turn_id: "turn_elsewhere" });
    expect((await refusal(claims.refuseBusy(s, "restore"))).code).toBe("session_busy");
    expect((await refusal(claims.claimForRestore(s))).code).toBe("session_busy");
    await store.updateSession("s1", { active_turn_id: null });
    healthy = false;
    expect((await refusal(claims.claimForRestore(s))).code).toBe("unavailable");
    expect((await store.getSession("s1"))?.active_turn_id).toBeNull();
  });
});
