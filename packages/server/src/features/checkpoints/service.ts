/**
 * Workspace checkpoints of sessions: the ShadowRepo engine attached to the lifecycle of sessions and turns, and the
 * operations the API offers on them (list, read, diff, restore, fork).
 *
 * When. A baseline when a session's workspace is first used (in the background: session creation does not wait;
 * a turn that starts meanwhile waits for it, so its own checkpoint is right). Before every turn, one when the tree
 * changed outside the agent; after every engine turn (every goal continuation, the next waiting for it); after a
 * turn that failed or was cancelled. An unchanged tree makes no checkpoint. Each new checkpoint is an
 * `agent.session.checkpoint.created` event in the session's log: inside the turn's span for the ones made during
 * a turn, without a turn (but naming it) for those made after its end.
 *
 * Where. One store per workspace directory under `<checkpoint dir>/<key>`: a session with its own directory has
 * its own store (key = session id), sessions sharing a directory share its store (key = hash of the path), and the
 * shared root leaves out the sessions' own directories (`/sess_*\/`). Turn boundaries are marks in the store
 * (`sessions/<session>/turns/<turn>/before|after`): the diff of a turn, a fork from a turn.
 *
 * Shared workspaces. Every checkpoint carries the session, project and turn that made it; a session sees those
 * of its project. Turns of several sessions running at once in one directory mix their changes: a checkpoint then
 * holds whatever the tree held. A restore would change files under the feet of the other sessions, so it is
 * refused in a shared workspace (a dry run is allowed); a fork (a new session with its own directory) is the way
 * to get a checkpoint's tree back there.
 *
 * Restore claims the session like a turn does (store.claimSession): no turn starts meanwhile (409), and a restore
 * meets a running turn with 409. The conversation can be reverted with it (`thread/revert`, or a fork of the
 * conversation a checkpoint kept); before that, the current conversation is copied into a backup thread named by
 * the safety checkpoint, so restoring that one with `conversation: revert` undoes both.
 *
 * Housekeeping. A store idle for `idleSeconds` is pruned (retention: count and age) and repacked when worth it.
 * Deleting (or expiring) a session destroys its own store; in a shared store its checkpoints and marks go.
 *
 * Parts. This class wires them together, gates the hooks (nothing runs once checkpoints are off, git is missing or
 * the service closed; a hook's failure is logged) and keeps the background work shutdown waits for: the stores of
 * workspace directories (stores.ts), the hooks (hooks.ts), reads (reads.ts), restore (restore.ts) and fork
 * (fork.ts) with the sessions' claims (claims.ts) and conversations (threads.ts), the checkpoint events
 * (announce.ts), housekeeping (housekeeping.ts) and the stores' disk usage (usage.ts).
 */

import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import type { SessionHooks, TurnHooks } from "../../domain/feature.js";
import type { Workspaces } from "../../domain/sandboxes/workspaces.js";
import type { SessionService } from "../../domain/sessions/service.js";
import { sandboxIdOf } from "../../domain/sessions/workspace.js";
import type { TurnRunner } from "../../domain/turns/runner.js";
import type { Clock } from "../../kernel/clock.js";
import { InFlight } from "../../kernel/in-flight.js";
import { sessionMeta } from "../../model/checkpoint-names.js";
import type { CheckpointInfo, DiffResult, ForkOutcome, RestoreOutcome } from "../../model/checkpoints.js";
import type { Scope } from "../../model/scope.js";
import type { Rollouts } from "../../platform/cluster/types.js";
import type { Engines } from "../../platform/engine/types.js";
import { watchTotals } from "../../platform/git-store/tree-watch.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { SessionRecord, Store, TurnRecord } from "../../store/types.js";
import { CheckpointAnnouncer } from "./announce.js";
import { SessionClaims } from "./claims.js";
import { currentConv } from "./conversation.js";
import { CheckpointFork } from "./fork.js";
import { CheckpointHooks } from "./hooks.js";
import { Housekeeping } from "./housekeeping.js";
import { CheckpointReader } from "./reads.js";
import { CheckpointRestore } from "./restore.js";
import { CheckpointStores } from "./stores.js";
import { ConversationThreads } from "./threads.js";
import { StoreUsage } from "./usage.js";

export interface CheckpointDeps {
  config: Config;
  store: Store;
  hub: EventHub;
  runner: TurnRunner;
  sessions: SessionService;
  engines: Engines;
  clock: Clock;
  logger: Logger;
  cluster: { readonly instanceId: string; readonly healthy: boolean };
  rollouts: Rollouts;
  workspaces: Pick<Workspaces, "handOver">;
}

export interface CheckpointHealth {
  enabled: boolean;
  /** Why checkpoints do not work, when they do not (e.g. git missing). */
  error: string | null;
  stores: number;
  disk_bytes: number;
  /** Time the turn hooks spent (scans, commits, events), and how many turns they ran for. */
  turn_hooks: { turns: number; ms: number };
  /** Workspaces watched between scans (large trees), and their directories. */
  watched: { trees: number; dirs: number };
}

export class CheckpointService {
  private readonly stores: CheckpointStores;
  private readonly usage: StoreUsage;
  private readonly announcer: CheckpointAnnouncer;
  private readonly housekeeping: Housekeeping;
  private readonly claims: SessionClaims;
  private readonly reader: CheckpointReader;
  private readonly hooks: CheckpointHooks;
  private readonly restorer: CheckpointRestore;
  private readonly forker: CheckpointFork;
  private hookMs = 0;
  private hookTurns = 0;
  private closed = false;
  /** Hooks, housekeeping and measurements running in the background (close waits for them). */
  private readonly work = new InFlight();

  constructor(private readonly deps: CheckpointDeps) {
    const { config, store, hub, runner, sessions, engines, clock, logger, cluster, rollouts } = deps;
    const settings = config.checkpoints;
    const stores = new CheckpointStores({ config, clock, logger });
    const usage = new StoreUsage(settings, this.work);
    const announcer = new CheckpointAnnouncer({ settings, hub, logger, usage });
    const housekeeping = new Housekeeping({
      settings,
      clock,
      logger,
      runner,
      stores,
      usage,
      work: this.work,
      closed: () => this.closed,
    });
    const claims = new SessionClaims({ store, runner, clock, logger, cluster });
    const threads = new ConversationThreads({ store, runner, engines, rollouts, logger });
    const reader = new CheckpointReader({ settings, stores });
    const handOver = (s: SessionRecord) => this.handOver(s);
    const parts = { store, logger, stores, reader, claims, threads, announcer, housekeeping, handOver };
    this.stores = stores;
    this.usage = usage;
    this.announcer = announcer;
    this.housekeeping = housekeeping;
    this.claims = claims;
    this.reader = reader;
    this.hooks = new CheckpointHooks({ logger, stores, announcer, housekeeping, usage });
    this.restorer = new CheckpointRestore({ ...parts, runner });
    this.forker = new CheckpointFork({ ...parts, sessions });
    if (this.enabled) this.health();
  }

  get enabled(): boolean {
    return this.deps.config.checkpoints.enabled;
  }

  // ---- lifecycle hooks ---------------------------------------------------------------------------------

  turnHooks(): TurnHooks {
    return {
      beforeTurn: (s, t) => this.timed(() => this.hooks.beforeTurn(s, t), true),
      afterEngineTurn: (s, t, activity) => this.timed(() => this.hooks.afterEngineTurn(s, t, activity)),
      afterTurn: (s, t) => this.timed(() => this.hooks.afterTurn(s, t)),
    };
  }

  sessionHooks(): SessionHooks {
    return {
      afterCreate: (s) => this.quietly("baseline", s, () => this.hooks.baseline(s)),
      afterDelete: (s) => this.quietly("cleanup", s, () => this.hooks.forgetSession(s)),
    };
  }

  /**
   * Server shutdown: no hook or housekeeping starts from now on; resolves once what runs has finished and every
   * store has stopped writing (idempotent).
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const ws of this.stores.all()) ws.idle?.cancel();
    await this.work.idle();
    await Promise.all([...this.stores.all()].map(async (ws) => (await ws.repo?.catch(() => null))?.close()));
  }

  private timed(fn: () => Promise<void>, counts = false): Promise<void> {
    if (!this.usable()) return Promise.resolve();
    return this.work.track(this.timedNow(fn, counts));
  }

  private async timedNow(fn: () => Promise<void>, counts: boolean): Promise<void> {
    const started = performance.now();
    try {
      await fn();
    } catch (err) {
      // A checkpoint never fails a turn.
      this.deps.logger.error({ err: String(err) }, "checkpoint failed");
    } finally {
      this.hookMs += performance.now() - started;
      if (counts) this.hookTurns++;
    }
  }

  private quietly(what: string, s: SessionRecord, fn: () => Promise<void>): Promise<void> {
    if (!this.usable()) return Promise.resolve();
    return this.work.track(
      fn().catch((err: unknown) => {
        this.deps.logger.error({ session: s.id, err: String(err) }, `checkpoint ${what} failed`);
      }),
    );
  }

  private usable(): boolean {
    return this.enabled && this.stores.failure === null && !this.closed;
  }

  // ---- reading -----------------------------------------------------------------------------------------

  /** The session's checkpoints (those of its project in a shared store), oldest first. */
  list(s: SessionRecord, opts: { turnId?: string } = {}): Promise<CheckpointInfo[]> {
    return this.reader.list(s, opts);
  }

  get(s: SessionRecord, id: string): Promise<CheckpointInfo> {
    return this.reader.get(s, id);
  }

  /** From `from` (default: its parent) to checkpoint `id`. */
  diff(
    s: SessionRecord,
    id: string,
    opts: { from?: string; patch?: boolean; maxPatchBytes?: number },
  ): Promise<DiffResult> {
    return this.reader.diff(s, id, opts);
  }

  /** What a turn changed: from the checkpoint before it to the one after it. */
  turnDiff(
    s: SessionRecord,
    turn: TurnRecord,
    opts: { patch?: boolean; maxPatchBytes?: number },
  ): Promise<DiffResult> {
    return this.reader.turnDiff(s, turn, opts);
  }

  /** A file's bytes at a checkpoint (404 when it has no such file). */
  file(s: SessionRecord, id: string, path: string): Promise<Buffer> {
    return this.reader.file(s, id, path);
  }

  // ---- writing -----------------------------------------------------------------------------------------

  /** A checkpoint on request; when the tree did not change, the latest one (`created` false). */
  async create(s: SessionRecord, label?: string): Promise<{ checkpoint: CheckpointInfo; created: boolean }> {
    const repo = await this.stores.openFor(s);
    await this.claims.refuseBusy(s, "make a checkpoint");
    const conv = await currentConv(this.deps.store, s.id);
    const r = await repo.record((first) => ({
      label: label?.trim() || (first ? "baseline" : "manual"),
      meta: sessionMeta(s, { kind: first ? "baseline" : "manual", conv }),
    }));
    if (r.created) await this.announcer.announce(s, r.created, null);
    this.housekeeping.scheduleIdle(this.stores.of(s));
    const checkpoint = r.created ?? r.head;
    if (!checkpoint) throw new Error("the store has no checkpoint after recording one");
    return { checkpoint, created: r.created !== null };
  }

  /**
   * Makes the workspace what it was at a checkpoint (a dry run only lists what would change), optionally reverting
   * the conversation to where it stood then. See the header for the rules.
   */
  restore(
    s: SessionRecord,
    id: string,
    opts: { dryRun: boolean; conversation: "keep" | "revert" },
  ): Promise<RestoreOutcome> {
    return this.restorer.restore(s, id, opts);
  }

  /**
   * A new session (its own workspace directory) starting from a checkpoint or from the end of a turn: the files of
   * that checkpoint, and the conversation up to that point (`conversation: none` starts a new one).
   */
  fork(
    scope: Scope,
    s: SessionRecord,
    from: { checkpoint: string } | { turn: TurnRecord },
    opts: { conversation: "fork" | "none" },
  ): Promise<ForkOutcome> {
    return this.forker.fork(scope, s, from, opts);
  }

  // ---- health ------------------------------------------------------------------------------------------

  /** For /health: totals only (nothing about any session). Disk usage is measured in the background. */
  health(): CheckpointHealth {
    if (this.enabled) this.usage.refreshIfDue();
    return {
      enabled: this.enabled,
      error: this.stores.failure,
      stores: this.usage.stores,
      disk_bytes: this.usage.bytes,
      turn_hooks: { turns: this.hookTurns, ms: Math.round(this.hookMs * 10) / 10 },
      watched: watchTotals(),
    };
  }

  /** Measures the stores' disk usage now (health answers the last measurement). */
  measure(): Promise<void> {
    return this.usage.measure();
  }

  /** The files a restore or a fork wrote (as this server's user) become the agent's (the container backend). */
  private handOver(s: SessionRecord): Promise<void> {
    return this.deps.workspaces.handOver({ sandboxId: sandboxIdOf(s) });
  }
}
