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
 */
import { createHash, randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import type { SessionHooks, TurnHooks } from "../../domain/feature.js";
import type { Workspaces } from "../../domain/sandboxes/workspaces.js";
import type { SessionFields, SessionService } from "../../domain/sessions/service.js";
import { ownsWorkspace, sandboxIdOf } from "../../domain/sessions/workspace.js";
import { settingsOf } from "../../domain/settings.js";
import type { TurnRunner } from "../../domain/turns/runner.js";
import type { Clock, Timer } from "../../kernel/clock.js";
import { ApiError, conflict, notFound } from "../../kernel/errors.js";
import { InFlight } from "../../kernel/in-flight.js";
import type {
  CheckpointDiff,
  CheckpointInfo,
  CheckpointOptions,
  RestoreChange,
} from "../../model/checkpoints.js";
import type { Scope } from "../../model/scope.js";
import type { Rollouts } from "../../platform/cluster/types.js";
import type { Engines } from "../../platform/engine/types.js";
import { GitNotFoundError } from "../../platform/git-store/git.js";
import { diskUsageOf, ShadowRepo } from "../../platform/git-store/shadow-repo.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { SessionRecord, Store, TurnRecord } from "../../store/types.js";
import {
  type ConvPoint,
  conversationHistory,
  conversationPrefix,
  type EngineTurnRef,
  formatConv,
  parseConv,
} from "./conversation.js";
import { type CheckpointMeta, commitOf, summaryOf, toMeta } from "./view.js";

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

/** One workspace directory and its store. */
interface Workspace {
  key: string;
  dir: string;
  workspace: string;
  /** Several sessions may work here (the shared root, or any directory not a session's own). */
  shared: boolean;
  repo: Promise<ShadowRepo> | null;
  idle: Timer | null;
  /** Sessions seen using it (housekeeping waits while one of them runs a turn). */
  sessions: Set<string>;
}

/** What the hooks remember of a running turn. */
interface TurnState {
  before: string | null;
  engineTurns: number;
}

export interface DiffResult {
  from: string | null;
  to: string;
  diff: CheckpointDiff;
}

export interface RestoreOutcome {
  target: CheckpointInfo;
  dryRun: boolean;
  conversation: "keep" | "revert";
  changes: RestoreChange[];
  safety: CheckpointInfo | null;
  undo: string | null;
  restored: CheckpointInfo | null;
  /** With `conversation: revert`: engine turns the conversation keeps, and how many it drops. */
  conversationTurns: { kept: number; dropped: number } | null;
}

export interface ForkOutcome {
  session: SessionRecord;
  checkpoint: CheckpointInfo;
  from: { session_id: string; checkpoint_id: string; turn_id: string | null };
  /** Engine turns the new session's conversation starts with (0: a new conversation). */
  conversationTurns: number;
}

export interface CheckpointHealth {
  enabled: boolean;
  /** Why checkpoints do not work, when they do not (e.g. git missing). */
  error: string | null;
  stores: number;
  disk_bytes: number;
  /** Time the turn hooks spent (scans, commits, events), and how many turns they ran for. */
  turn_hooks: { turns: number; ms: number };
}

interface ConversationPlan {
  /** The thread holding the conversation (null: the session has none). */
  thread: string | null;
  turns: EngineTurnRef[];
  prefix: number;
}

const MARK = (sessionId: string, turnId: string, which: "before" | "after") =>
  `sessions/${sessionId}/turns/${turnId}/${which}`;
/** Mark names are [A-Za-z0-9_-]: ids that are not stay unmarked. */
const SAFE_ID = /^[A-Za-z0-9_-]+$/;
/** Disk usage is measured again at most this often once stores changed, and at least this often anyway. */
const USAGE_MIN_MS = 5_000;
const USAGE_MAX_MS = 60_000;
/** Engine items that never change a file. Any other (a command, a patch, a tool or subagent call…) may. */
const HARMLESS_ITEMS: ReadonlySet<string> = new Set([
  "userMessage",
  "agentMessage",
  "reasoning",
  "plan",
  "webSearch",
  "contextCompaction",
  "imageView",
  "enteredReviewMode",
  "exitedReviewMode",
]);

export class CheckpointService {
  private readonly workspaces = new Map<string, Workspace>();
  private readonly turns = new Map<string, TurnState>();
  private failure: string | null = null;
  private hookMs = 0;
  private hookTurns = 0;
  private usage = { stores: 0, bytes: 0, at: 0 };
  /** A store changed since the last measurement. */
  private usageStale = true;
  private measuring: Promise<void> | null = null;
  private closed = false;
  /** Hooks, housekeeping and measurements running in the background (close waits for them). */
  private readonly work = new InFlight();

  constructor(private readonly deps: CheckpointDeps) {
    if (this.enabled) this.health();
  }

  get enabled(): boolean {
    return this.deps.config.checkpoints.enabled;
  }

  // ---- lifecycle hooks ---------------------------------------------------------------------------------

  turnHooks(): TurnHooks {
    return {
      beforeTurn: (s, t) => this.timed(() => this.beforeTurn(s, t), true),
      afterEngineTurn: (s, t) => this.timed(() => this.afterEngineTurn(s, t)),
      afterTurn: (s, t) => this.timed(() => this.afterTurn(s, t)),
    };
  }

  sessionHooks(): SessionHooks {
    return {
      afterCreate: (s) => this.quietly("baseline", s, () => this.baseline(s)),
      afterDelete: (s) => this.quietly("cleanup", s, () => this.forgetSession(s)),
    };
  }

  /**
   * Server shutdown: no hook or housekeeping starts from now on; resolves once what runs has finished and every
   * store has stopped writing (idempotent).
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const ws of this.workspaces.values()) ws.idle?.cancel();
    await this.work.idle();
    await Promise.all(
      [...this.workspaces.values()].map(async (ws) => (await ws.repo?.catch(() => null))?.close()),
    );
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
    return this.enabled && this.failure === null && !this.closed;
  }

  private async baseline(s: SessionRecord): Promise<void> {
    if (s.extra.checkpoint_fork) return; // its workspace comes from the checkpoint it forks
    const ws = this.workspaceOf(s);
    const repo = await this.repoOf(ws);
    // A shared directory already in use has its baseline (the next turn records what changed since).
    if (ws.shared && (await repo.latest())) return;
    const r = await repo.record((first) => ({
      label: first ? "baseline" : "before first use",
      meta: this.meta(s, { kind: first ? "baseline" : "external", conv: "base" }),
    }));
    if (r.created) await this.announce(s, r.created, null);
  }

  private async beforeTurn(s: SessionRecord, t: TurnRecord): Promise<void> {
    const state: TurnState = { before: null, engineTurns: 0 };
    this.turns.set(t.id, state);
    const ws = this.workspaceOf(s);
    ws.idle?.cancel();
    const repo = await this.repoOf(ws);
    const conv = formatConv({ kind: "before", turn: t.id });
    const r = await repo.record((first) => ({
      label: first ? "baseline" : "changed outside the agent",
      meta: this.meta(s, { kind: first ? "baseline" : "external", turn_id: t.id, conv }),
    }));
    state.before = r.head?.id ?? null;
    if (r.created) await this.announce(s, r.created, t.id);
  }

  private async afterEngineTurn(s: SessionRecord, t: TurnRecord): Promise<void> {
    const state = this.turns.get(t.id) ?? { before: null, engineTurns: 0 };
    this.turns.set(t.id, state);
    state.engineTurns++;
    const k = state.engineTurns;
    const created = await this.afterTurnCheckpoint(s, t, state, k, true);
    if (created) await this.announce(s, created, t.id);
  }

  private async afterTurn(s: SessionRecord, t: TurnRecord): Promise<void> {
    const state = this.turns.get(t.id);
    this.turns.delete(t.id);
    const ws = this.workspaceOf(s);
    try {
      // No hook of ours ran for this turn (it ended before the engine started): nothing to record.
      if (!state) return;
      // A turn that ended normally was recorded after its last engine turn; one that failed or was stopped may
      // have changed files since.
      if (t.status === "completed" && state.engineTurns > 0) return;
      const created = await this.afterTurnCheckpoint(s, t, state, null, false);
      // The turn's end is stored: the event goes outside its span (a client replaying the turn must not wait
      // for it), naming it in the checkpoint.
      if (created) await this.announce(s, created, null);
    } finally {
      this.scheduleIdle(ws);
    }
  }

  private async afterTurnCheckpoint(
    s: SessionRecord,
    t: TurnRecord,
    state: TurnState,
    k: number | null,
    likelyChanged: boolean,
  ): Promise<CheckpointInfo | null> {
    const repo = await this.repoOf(this.workspaceOf(s));
    // A plain turn that used no tool (only messages and reasoning) cannot have changed a file: no scan (anything
    // else that changed the tree meanwhile is found before the next turn, as a change made outside the agent).
    const unchanged = k === 1 && t.goal === null && !(await this.usedTools(s, t));
    const marks: Record<string, string | null> = {};
    if (SAFE_ID.test(s.id) && SAFE_ID.test(t.id)) {
      if (state.before) marks[MARK(s.id, t.id, "before")] = state.before;
      marks[MARK(s.id, t.id, "after")] = null;
    }
    const r = await repo.record(
      () => ({
        label: k === null ? `turn ${t.status}` : k === 1 ? "turn" : `turn, engine turn ${k}`,
        meta: this.meta(s, {
          kind: "turn",
          turn_id: t.id,
          ...(k !== null ? { engine_turn: String(k) } : {}),
          conv: formatConv({ kind: "after", turn: t.id, engineTurn: k }),
        }),
      }),
      { marks, prefetchExcluded: likelyChanged, unchanged },
    );
    r.marked?.catch((err: unknown) =>
      this.deps.logger.error(
        { session: s.id, turn: t.id, err: String(err) },
        "could not mark a turn's checkpoints",
      ),
    );
    return r.created;
  }

  /** Whether the turn's items include anything but messages and reasoning (a command, a patch, any tool call). */
  private async usedTools(s: SessionRecord, t: TurnRecord): Promise<boolean> {
    // The turn's items are written in batches: the ones seen so far are stored first.
    await this.deps.hub.flush(s.id);
    const page = await this.deps.store.listItems(s.id, { turn_id: t.id, limit: 1000, lazy_data: true });
    return page.has_more || page.data.some((i) => !HARMLESS_ITEMS.has(i.type));
  }

  private async forgetSession(s: SessionRecord): Promise<void> {
    const ws = this.workspaceOf(s);
    ws.sessions.delete(s.id);
    const repo = await this.repoOf(ws);
    if (!ws.shared) {
      ws.idle?.cancel();
      this.workspaces.delete(ws.key);
      await repo.destroy();
      this.usageStale = true;
      return;
    }
    // A shared store keeps the others' checkpoints: this session's go (the latest one stays, whoever made it).
    if (SAFE_ID.test(s.id)) await repo.dropMarks(`sessions/${s.id}`);
    await repo.prune({ where: (c) => c.meta.session_id === s.id });
    this.usageStale = true;
  }

  // ---- reading -----------------------------------------------------------------------------------------

  /** The session's checkpoints (those of its project in a shared store), oldest first. */
  async list(s: SessionRecord, opts: { turnId?: string } = {}): Promise<CheckpointInfo[]> {
    const repo = await this.openFor(s);
    return (await repo.list()).filter(
      (c) => this.visible(s, c) && (opts.turnId === undefined || c.meta.turn_id === opts.turnId),
    );
  }

  async get(s: SessionRecord, id: string): Promise<CheckpointInfo> {
    return this.checkpointOf(s, await this.openFor(s), id);
  }

  /** From `from` (default: its parent) to checkpoint `id`. */
  async diff(
    s: SessionRecord,
    id: string,
    opts: { from?: string; patch?: boolean; maxPatchBytes?: number },
  ): Promise<DiffResult> {
    const repo = await this.openFor(s);
    const to = await this.checkpointOf(s, repo, id);
    const from = opts.from !== undefined ? await this.checkpointOf(s, repo, opts.from, "from") : null;
    const diff = await repo.diff(from?.id ?? null, to.id, this.patchOptions(opts));
    return { from: from?.id ?? to.parent, to: to.id, diff };
  }

  /** What a turn changed: from the checkpoint before it to the one after it. */
  async turnDiff(
    s: SessionRecord,
    turn: TurnRecord,
    opts: { patch?: boolean; maxPatchBytes?: number },
  ): Promise<DiffResult> {
    const repo = await this.openFor(s);
    const { before, after } = await this.turnBounds(s, turn, repo);
    const diff = await repo.diff(before?.id ?? null, after.id, this.patchOptions(opts));
    return { from: before?.id ?? after.parent, to: after.id, diff };
  }

  /** A file's bytes at a checkpoint (404 when it has no such file). */
  async file(s: SessionRecord, id: string, path: string): Promise<Buffer> {
    const repo = await this.openFor(s);
    const c = await this.checkpointOf(s, repo, id);
    const content = await repo.fileAt(c.id, path);
    if (!content) throw notFound(`Checkpoint ${id} has no file ${JSON.stringify(path)}`, "path");
    return content;
  }

  // ---- writing -----------------------------------------------------------------------------------------

  /** A checkpoint on request; when the tree did not change, the latest one (`created` false). */
  async create(s: SessionRecord, label?: string): Promise<{ checkpoint: CheckpointInfo; created: boolean }> {
    const repo = await this.openFor(s);
    await this.refuseBusy(s, "make a checkpoint");
    const conv = await this.currentConv(s);
    const r = await repo.record((first) => ({
      label: label?.trim() || (first ? "baseline" : "manual"),
      meta: this.meta(s, { kind: first ? "baseline" : "manual", conv }),
    }));
    if (r.created) await this.announce(s, r.created, null);
    this.scheduleIdle(this.workspaceOf(s));
    const checkpoint = r.created ?? r.head;
    if (!checkpoint) throw new Error("the store has no checkpoint after recording one");
    return { checkpoint, created: r.created !== null };
  }

  /**
   * Makes the workspace what it was at a checkpoint (a dry run only lists what would change), optionally reverting
   * the conversation to where it stood then. See the header for the rules.
   */
  async restore(
    s: SessionRecord,
    id: string,
    opts: { dryRun: boolean; conversation: "keep" | "revert" },
  ): Promise<RestoreOutcome> {
    const ws = this.workspaceOf(s);
    const repo = await this.openFor(s);
    const target = await this.checkpointOf(s, repo, id);
    const outcome = (
      r: Omit<RestoreOutcome, "target" | "dryRun" | "conversation" | "conversationTurns">,
      plan: ConversationPlan | null,
    ): RestoreOutcome => ({
      ...r,
      target,
      dryRun: opts.dryRun,
      conversation: opts.conversation,
      conversationTurns: plan ? { kept: plan.prefix, dropped: plan.turns.length - plan.prefix } : null,
    });
    if (opts.dryRun) {
      const plan = opts.conversation === "revert" ? await this.planConversation(s, target, repo) : null;
      return outcome(await repo.restore(target.id, { dryRun: true }), plan);
    }
    if (ws.shared) {
      throw conflict(
        "This session shares its workspace directory with other sessions: a restore would change their files too. " +
          "Fork the checkpoint into a session of its own instead (POST …/checkpoints/{id}/fork), or use sessions " +
          "with workspace_mode: session",
        "workspace_shared",
      );
    }
    await this.refuseBusy(s, "restore");
    const { store, clock, cluster } = this.deps;
    if (!cluster.healthy)
      throw conflict("This instance cannot claim sessions right now: try again", "unavailable");
    const claim = `restore_${randomBytes(12).toString("hex")}`;
    const claimed = await store.claimSession(s.id, claim, {
      owner_instance: cluster.instanceId,
      updated_at: clock.now(),
    });
    if (!claimed) throw conflict("Session has an active turn", "session_busy");
    ws.idle?.cancel();
    try {
      return await this.restoreClaimed(claimed, repo, target, opts.conversation, outcome);
    } finally {
      await store
        .updateSession(s.id, { active_turn_id: null, updated_at: clock.now() })
        .catch((err: unknown) =>
          this.deps.logger.error({ session: s.id, err: String(err) }, "could not release a restore's claim"),
        );
      this.scheduleIdle(ws);
    }
  }

  private async restoreClaimed(
    s: SessionRecord,
    repo: ShadowRepo,
    target: CheckpointInfo,
    conversation: "keep" | "revert",
    outcome: (
      r: Omit<RestoreOutcome, "target" | "dryRun" | "conversation" | "conversationTurns">,
      plan: ConversationPlan | null,
    ) => RestoreOutcome,
  ): Promise<RestoreOutcome> {
    const { runner } = this.deps;
    const current = await this.currentConv(s);
    let plan: ConversationPlan | null = null;
    let backup: string | null = null;
    if (conversation === "revert") {
      // Everything that can refuse comes before any change.
      plan = await this.planConversation(s, target, repo);
      if (s.thread_id) {
        backup = await runner.withThread(s, (thread) => thread.fork({ cwd: s.workspace }));
        await this.shareThread(backup);
      }
    }
    const result = await repo.restore(target.id, {
      forceSafety: backup !== null,
      safetyMeta: toMeta({
        ...this.metaFields(s),
        kind: "before_restore",
        conv: current,
        ...(backup ? { conv_thread: backup } : {}),
      }),
      restoredMeta: toMeta({ ...this.metaFields(s), kind: "restore", conv: current }),
      written: () => this.handOver(s),
    });
    if (plan) {
      try {
        await this.applyConversation(s, plan);
      } catch (err) {
        // The files go back to where they were: a restore happens whole or not at all.
        if (result.restored && result.undo) {
          await repo
            .restore(result.undo, {
              restoredMeta: toMeta({ ...this.metaFields(s), kind: "restore", conv: current }),
              written: () => this.handOver(s),
            })
            .catch((e: unknown) =>
              this.deps.logger.error({ session: s.id, err: String(e) }, "could not undo a failed restore"),
            );
        }
        throw err;
      }
    }
    if (result.safety) await this.announce(s, result.safety, null);
    if (result.restored) await this.announce(s, result.restored, null);
    return outcome(result, plan);
  }

  /**
   * A new session (its own workspace directory) starting from a checkpoint or from the end of a turn: the files of
   * that checkpoint, and the conversation up to that point (`conversation: none` starts a new one).
   */
  async fork(
    scope: Scope,
    s: SessionRecord,
    from: { checkpoint: string } | { turn: TurnRecord },
    opts: { conversation: "fork" | "none" },
  ): Promise<ForkOutcome> {
    const repo = await this.openFor(s);
    let target: CheckpointInfo;
    let point: ConvPoint;
    let turnId: string | null = null;
    if ("turn" in from) {
      const bounds = await this.turnBounds(s, from.turn, repo);
      target = bounds.after;
      turnId = from.turn.id;
      point = { kind: "after", turn: from.turn.id, engineTurn: null };
    } else {
      target = await this.checkpointOf(s, repo, from.checkpoint);
      point = parseConv(target.meta.conv);
      turnId = target.meta.turn_id ?? null;
    }
    await this.refuseBusy(s, "fork");
    // The conversation follows only from the session's own checkpoints (a shared directory's may be another's).
    const plan =
      opts.conversation === "fork" && (target.meta.session_id ?? s.id) === s.id
        ? await this.planConversation(
            s,
            { ...target, meta: { ...target.meta, conv: formatConv(point) } },
            repo,
          )
        : null;
    const { sessions, store } = this.deps;
    const origin = { session_id: s.id, checkpoint_id: target.id, turn_id: turnId };
    const fields: SessionFields = {
      name: s.name,
      model: s.model,
      instructions: s.instructions,
      tools: s.tools,
      metadata: s.metadata,
      settings: settingsOf(s.extra),
      extra: {
        ...(s.extra.environment !== undefined ? { environment: s.extra.environment } : {}),
        ...(s.extra.review !== undefined ? { review: s.extra.review } : {}),
        checkpoint_fork: origin,
      },
    };
    const created = await sessions.create(scope, fields, { workspace: "session" });
    try {
      const ws = this.workspaceOf(created);
      const forked = await repo.forkInto(
        target.id,
        ws.dir,
        created.workspace,
        this.repoOptions(ws),
        `forked from ${s.id}`,
        toMeta({
          ...this.metaFields(created),
          kind: "fork",
          conv: "base",
          forked_from: target.id,
          forked_from_session: s.id,
        }),
        () => this.handOver(created),
      );
      ws.repo = Promise.resolve(forked.repo);
      let thread: string | null = null;
      if (plan?.thread && plan.prefix > 0) {
        thread = await this.forkThread(s, plan.thread, plan.turns[plan.prefix - 1]!.id, created.workspace);
        // The fork's history is the conversation it was forked with: those turns and their items.
        await store.copyHistory(
          s.id,
          created.id,
          await conversationHistory(store, s.id, plan.turns, plan.prefix),
        );
      }
      const session =
        (await store.updateSession(created.id, { thread_id: thread, agent_id: s.agent_id })) ?? created;
      await this.announce(session, forked.checkpoint, null);
      this.scheduleIdle(ws);
      return {
        session,
        checkpoint: forked.checkpoint,
        from: origin,
        conversationTurns: thread ? plan!.prefix : 0,
      };
    } catch (err) {
      await sessions
        .delete(scope, created.id)
        .catch((e: unknown) =>
          this.deps.logger.error({ session: created.id, err: String(e) }, "could not remove a failed fork"),
        );
      throw err;
    }
  }

  // ---- health ------------------------------------------------------------------------------------------

  /** For /health: totals only (nothing about any session). Disk usage is measured in the background. */
  health(): CheckpointHealth {
    const age = Date.now() - this.usage.at;
    if (this.enabled && !this.measuring && (age > USAGE_MAX_MS || (this.usageStale && age > USAGE_MIN_MS))) {
      this.usageStale = false;
      this.measuring = this.work.track(
        this.measure().finally(() => {
          this.measuring = null;
        }),
      );
    }
    return {
      enabled: this.enabled,
      error: this.failure,
      stores: this.usage.stores,
      disk_bytes: this.usage.bytes,
      turn_hooks: { turns: this.hookTurns, ms: Math.round(this.hookMs * 10) / 10 },
    };
  }

  /** Measures the stores' disk usage now (health answers the last measurement). */
  async measure(): Promise<void> {
    const dir = this.deps.config.checkpoints.dir;
    const names = await readdir(dir).catch(() => [] as string[]);
    let bytes = 0;
    for (const name of names) bytes += await diskUsageOf(join(dir, name));
    this.usage = { stores: names.length, bytes, at: Date.now() };
  }

  // ---- internals ---------------------------------------------------------------------------------------

  /** The files a restore or a fork wrote (as this server's user) become the agent's (the container backend). */
  private handOver(s: SessionRecord): Promise<void> {
    return this.deps.workspaces.handOver({ sandboxId: sandboxIdOf(s) });
  }

  private workspaceOf(s: SessionRecord): Workspace {
    const { config } = this.deps;
    const workspace = resolve(s.workspace);
    const own = ownsWorkspace(s);
    const key = own ? s.id : `ws_${hash(workspace)}`;
    let ws = this.workspaces.get(key);
    if (!ws) {
      ws = {
        key,
        dir: join(config.checkpoints.dir, key),
        workspace,
        shared: !own,
        repo: null,
        idle: null,
        sessions: new Set(),
      };
      this.workspaces.set(key, ws);
    }
    ws.sessions.add(s.id);
    return ws;
  }

  private repoOptions(ws: Workspace): Partial<CheckpointOptions> {
    const { config, clock } = this.deps;
    // The shared root holds the sessions' own directories: they have their own stores.
    const root = resolve(config.workspaceRoot) === ws.workspace;
    return {
      maxFileBytes: config.checkpoints.maxFileBytes,
      exclude: [...config.checkpoints.exclude, ...(root ? ["/sess_*/"] : [])],
      now: () => clock.now(),
    };
  }

  private repoOf(ws: Workspace): Promise<ShadowRepo> {
    if (!ws.repo) {
      const opening = ShadowRepo.open(ws.dir, ws.workspace, this.repoOptions(ws));
      ws.repo = opening;
      opening.catch((err: unknown) => {
        if (ws.repo === opening) ws.repo = null;
        if (err instanceof GitNotFoundError) {
          this.failure = err.message;
          this.deps.logger.error({ err: err.message }, "checkpoints are off: git is missing");
        }
      });
    }
    return ws.repo;
  }

  /** The store of a session's workspace, for an API call (clear errors when checkpoints cannot work). */
  private async openFor(s: SessionRecord): Promise<ShadowRepo> {
    if (!this.enabled) {
      throw conflict("Checkpoints are turned off on this server (--checkpoints off)", "checkpoints_disabled");
    }
    if (this.failure)
      throw conflict(`Checkpoints are unavailable: ${this.failure}`, "checkpoints_unavailable");
    try {
      return await this.repoOf(this.workspaceOf(s));
    } catch (err) {
      throw conflict(
        `Checkpoints are unavailable for this session's workspace: ${err instanceof Error ? err.message : String(err)}`,
        "checkpoints_unavailable",
      );
    }
  }

  private visible(s: SessionRecord, c: CheckpointInfo): boolean {
    return !this.workspaceOf(s).shared || c.meta.project_id === s.project_id;
  }

  private async checkpointOf(
    s: SessionRecord,
    repo: ShadowRepo,
    id: string,
    param = "checkpoint_id",
  ): Promise<CheckpointInfo> {
    const c = await repo.get(commitOf(id, param));
    if (!c || !this.visible(s, c)) throw notFound(`No checkpoint ${id} in session ${s.id}`, param);
    return c;
  }

  /** The checkpoints before and after a turn (404 when none were recorded, 409 while it runs). */
  private async turnBounds(
    s: SessionRecord,
    turn: TurnRecord,
    repo: ShadowRepo,
  ): Promise<{ before: CheckpointInfo | null; after: CheckpointInfo }> {
    if (turn.status === "in_progress" || turn.status === "queued") {
      throw conflict(
        `Turn ${turn.id} is still running: its checkpoints are complete once it has ended`,
        "turn_running",
      );
    }
    const after = SAFE_ID.test(turn.id) ? await repo.markTarget(MARK(s.id, turn.id, "after")) : undefined;
    if (!after) {
      throw notFound(
        `No checkpoints were recorded for turn ${turn.id} (or they have been pruned)`,
        "turn_id",
      );
    }
    const before = (await repo.markTarget(MARK(s.id, turn.id, "before"))) ?? null;
    return { before, after };
  }

  private patchOptions(opts: { patch?: boolean; maxPatchBytes?: number }) {
    const cap = this.deps.config.checkpoints.maxPatchBytes;
    return { patch: opts.patch ?? false, maxPatchBytes: Math.min(opts.maxPatchBytes ?? cap, cap) };
  }

  private async refuseBusy(s: SessionRecord, what: string): Promise<void> {
    const fresh = (await this.deps.store.getSession(s.id)) ?? s;
    if (this.deps.runner.isActive(s.id) || fresh.active_turn_id) {
      throw conflict(
        `Cannot ${what} while a turn runs (or another restore): wait for it to end or cancel it`,
        "session_busy",
      );
    }
  }

  private metaFields(s: SessionRecord) {
    return { session_id: s.id, project_id: s.project_id };
  }

  private meta(
    s: SessionRecord,
    m: Omit<CheckpointMeta, "session_id" | "project_id">,
  ): Record<string, string> {
    return toMeta({ ...this.metaFields(s), ...m });
  }

  /** Where the conversation stands now: everything its thread holds of the turns so far. */
  private async currentConv(s: SessionRecord): Promise<string> {
    const last = (await this.deps.store.listTurns(s.id, { order: "desc", limit: 1 })).data[0];
    return formatConv(last ? { kind: "upto", turn: last.id } : { kind: "base" });
  }

  private async announce(s: SessionRecord, c: CheckpointInfo, turnId: string | null): Promise<void> {
    this.usageStale = true;
    // The first checkpoint of an empty workspace tells nothing.
    if (c.parent === null && c.stats.files === 0) return;
    try {
      const official = this.deps.config.checkpoints.officialEvents;
      await this.deps.hub.append(
        s.id,
        { type: "checkpoint.created", data: { checkpoint: summaryOf(c), official } },
        { turn_id: turnId },
      );
    } catch (err) {
      this.deps.logger.warn({ session: s.id, err: String(err) }, "could not log a checkpoint event");
    }
  }

  /** Which thread holds the conversation at `target`, its engine turns, and how many of them that point keeps. */
  private async planConversation(
    s: SessionRecord,
    target: CheckpointInfo,
    repo: ShadowRepo,
  ): Promise<ConversationPlan> {
    const owner = target.meta.session_id ?? s.id;
    if (owner !== s.id) {
      throw conflict(
        `Checkpoint ${target.id} was made by session ${owner}: its conversation is not this session's`,
        "conversation_unavailable",
      );
    }
    const point = parseConv(target.meta.conv);
    const thread = target.meta.conv_thread || s.thread_id;
    if (!thread) return { thread: null, turns: [], prefix: 0 };
    try {
      return await this.planOn(s, thread, point);
    } catch (err) {
      if (!(err instanceof ApiError && err.code === "conversation_unavailable")) throw err;
      // Reverted away since: a restore kept the conversation it replaced (newest first), maybe with that point.
      const kept = (await repo.list())
        .filter((c) => c.meta.session_id === s.id && c.meta.conv_thread && c.meta.conv_thread !== thread)
        .reverse();
      for (const c of kept) {
        try {
          return await this.planOn(s, c.meta.conv_thread as string, point);
        } catch (again) {
          if (!(again instanceof ApiError && again.code === "conversation_unavailable")) throw again;
        }
      }
      throw err;
    }
  }

  private async planOn(s: SessionRecord, thread: string, point: ConvPoint): Promise<ConversationPlan> {
    const turns =
      thread === s.thread_id
        ? await this.deps.runner.withThread(s, (t) => t.turns())
        : await this.listThreadTurns(thread);
    return { thread, turns, prefix: await conversationPrefix(this.deps.store, s.id, point, turns) };
  }

  /** Makes the session's conversation the planned one: reverted in place, or a copy of a kept one. */
  private async applyConversation(s: SessionRecord, plan: ConversationPlan): Promise<void> {
    const { runner, store, engines } = this.deps;
    const old = s.thread_id;
    if (plan.thread === old && plan.prefix === plan.turns.length) return;
    if (plan.thread === old && old && plan.prefix > 0) {
      const before = plan.turns[plan.prefix]!.id;
      await runner.withThread(s, (t) => t.revert(before));
      await this.shareThread(old);
      return;
    }
    // Nothing kept (a new conversation), or the conversation kept by an earlier restore: a new thread.
    const next =
      plan.thread && plan.prefix > 0
        ? await this.forkThread(s, plan.thread, plan.turns[plan.prefix - 1]!.id, s.workspace)
        : null;
    await store.updateSession(s.id, { thread_id: next });
    if (old) engines.forget(old);
  }

  /** A copy of `thread` through engine turn `lastTurnId`, for a session working in `cwd` (not loaded). */
  private async forkThread(
    s: SessionRecord,
    thread: string,
    lastTurnId: string,
    cwd: string,
  ): Promise<string> {
    const forked =
      thread === s.thread_id
        ? await this.deps.runner.withThread(s, (t) => t.fork({ lastTurnId, cwd }))
        : await this.forkUnloaded(thread, lastTurnId, cwd);
    await this.shareThread(forked);
    return forked;
  }

  /** A thread no engine has loaded (a kept conversation): read and copied through any engine. */
  private async forkUnloaded(thread: string, lastTurnId: string, cwd: string): Promise<string> {
    const { engines } = this.deps;
    const res = await engines.call<{ thread: { id: string } }>("thread/fork", {
      threadId: thread,
      lastTurnId,
      cwd,
      excludeTurns: true,
    });
    await engines.call("thread/unsubscribe", { threadId: res.thread.id }).catch(() => {});
    return res.thread.id;
  }

  private async listThreadTurns(thread: string): Promise<EngineTurnRef[]> {
    const out: EngineTurnRef[] = [];
    for (let cursor: string | null = null; ; ) {
      const page: { data: Array<{ id: string; items: Array<{ id: string }> }>; nextCursor: string | null } =
        await this.deps.engines.call("thread/turns/list", {
          threadId: thread,
          sortDirection: "asc",
          itemsView: "summary",
          limit: 100,
          ...(cursor ? { cursor } : {}),
        });
      for (const t of page.data) out.push({ id: t.id, itemIds: t.items.map((i) => i.id) });
      if (!page.nextCursor || page.data.length === 0) return out;
      cursor = page.nextCursor;
    }
  }

  /** Other instances continue a thread from the shared rollout store (a no-op with one instance). */
  private async shareThread(thread: string): Promise<void> {
    await this.deps.rollouts.save(thread).catch((err: unknown) => {
      this.deps.logger.warn({ thread, err: String(err) }, "could not store a thread's rollout");
    });
  }

  /** Prune (retention) and repack once the store has been idle for a while. */
  private scheduleIdle(ws: Workspace): void {
    if (this.closed) return;
    ws.idle?.cancel();
    ws.idle = this.deps.clock.after(this.deps.config.checkpoints.idleSeconds * 1000, () => {
      ws.idle = null;
      void this.work.track(this.housekeep(ws));
    });
  }

  private async housekeep(ws: Workspace): Promise<void> {
    if (this.closed || !ws.repo || this.workspaces.get(ws.key) !== ws) return;
    if ([...ws.sessions].some((id) => this.deps.runner.isActive(id))) {
      this.scheduleIdle(ws);
      return;
    }
    const { keep, maxAgeSeconds } = this.deps.config.checkpoints;
    try {
      const repo = await ws.repo;
      const pruned = await repo.prune({
        ...(keep > 0 ? { keep } : {}),
        ...(maxAgeSeconds > 0 ? { olderThanSeconds: maxAgeSeconds } : {}),
      });
      const repacked = pruned > 0 || (await repo.repack());
      if (pruned > 0 || repacked) {
        this.deps.logger.info({ store: ws.key, pruned, repacked }, "checkpoint store tidied");
        this.usageStale = true;
      }
    } catch (err) {
      this.deps.logger.warn({ store: ws.key, err: String(err) }, "checkpoint housekeeping failed");
    }
  }
}

const hash = (text: string): string => createHash("sha256").update(text).digest("hex").slice(0, 20);
