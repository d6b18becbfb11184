/**
 * Runs turns: claims the session, runs the logical turn on the engine (a goal's continuations included, through
 * its GoalRun), records what happens, and ends the turn with exactly one terminal state. Owns the turns running in
 * this process; steer, cancel, timeouts and shutdown act on them.
 */
import {
  defaultServerRequestResponse,
  type InputItem,
  InvalidRequestError,
  type ServerRequest,
  type Thread,
  TransportClosedError,
  type Turn,
  TurnFailedError,
  type TurnOptions,
  type TurnResult,
} from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import type { Clock, Timer } from "../../kernel/clock.js";
import { badRequest, conflict, notFound, unavailable } from "../../kernel/errors.js";
import { InFlight } from "../../kernel/in-flight.js";
import type { Cluster, Rollouts } from "../../platform/cluster/types.js";
import { missingModelReason } from "../../platform/engine/codex-home.js";
import type { Engines } from "../../platform/engine/types.js";
import type { EventHub } from "../../platform/stream/hub.js";
import { hostPathsOf } from "../../platform/workspace/environment-paths.js";
import {
  FencedError,
  type SessionRecord,
  type Store,
  type StoredItem,
  type TurnError,
  type TurnRecord,
  type TurnStatus,
} from "../../store/types.js";
import { isTurnEnd } from "../events.js";
import {
  HookFailure,
  type ServerTool,
  type ServerToolAnswer,
  type ServerToolCall,
  type TurnHooks,
} from "../feature.js";
import type { GoalRun } from "../goals/run.js";
import { newId } from "../ids.js";
import type { TurnInput } from "../input.js";
import { sandboxIdOf } from "../sessions/workspace.js";
import { engineEffort, settingsOf } from "../settings.js";
import { addUsage, toUsage } from "../usage.js";
import { type ActionAnswer, TurnActions, unknownPendingCall } from "./actions.js";
import { type MemoryKills, TurnRecorder } from "./recorder.js";
import { executionEnvironmentsOf, threadOptionsFor } from "./thread-options.js";

export interface RunnerDeps {
  store: Store;
  hub: EventHub;
  engines: Engines;
  config: Config;
  clock: Clock;
  logger: Logger;
  /** Which instance this is, and whether it may run turns (see cluster/). */
  cluster: Pick<Cluster, "instanceId" | "healthy">;
  /** Where engine threads' rollouts are kept for other instances. */
  rollouts: Rollouts;
  /**
   * The memory kills where a session's commands run — its sandbox (container backend) or its engine's process group
   * (local backend) — so that a command killed for memory is said to be.
   */
  memoryKills?: ((where: { sandboxId: string | null; engine: number | null }) => MemoryKills | null) | null;
}

interface Stop {
  status: TurnStatus;
  code: string;
  message: string;
}

interface ActiveTurn {
  session: SessionRecord;
  turn: TurnRecord;
  recorder: TurnRecorder;
  /** What the turn waits for from the client. */
  actions: TurnActions;
  goal: GoalRun | null;
  engineTurn: Turn | null;
  /** Resolves with the engine turn once it started (null if the turn ended before). */
  engineReady: Promise<Turn | null>;
  setEngineTurn: (t: Turn | null) => void;
  thread: Thread | null;
  /** Index of the engine process running the turn. */
  engine: number | null;
  /** Why the turn is being stopped (cancel, timeout, shutdown), if it is. */
  stop: Stop | null;
  timer: Timer | null;
  done: Promise<TurnRecord>;
}

export interface StartOptions {
  /** The turn id, when the caller needed it first (a goal record names its turn). */
  turnId?: string;
  /** Builds the goal side of the turn, once the session is claimed. */
  goal?: (turnId: string) => Promise<GoalRun>;
}

/** How long a stopped turn may take to end before its engine process is killed. */
export const STOP_GRACE_MS = 10_000;

export class TurnRunner {
  private readonly active = new Map<string, ActiveTurn>();
  private readonly hooks: TurnHooks[] = [];
  /**
   * Sessions whose last turn ran here, with the lease epoch of that claim: when the next claim's epoch follows it,
   * no other instance has run the session in between, and the thread's rollout here is current.
   */
  private readonly ranHere = new Map<string, number>();
  private readonly waiters = new Map<string, Array<(t: TurnRecord) => void>>();
  private readonly idleListeners: Array<(sessionId: string) => void> = [];
  private readonly stopListeners: Array<(sessionId: string) => void> = [];
  /** The `afterTurn` hooks of ended turns, still running. */
  private readonly background = new InFlight();

  constructor(private readonly deps: RunnerDeps) {}

  /** Attaches a feature to the turns' lifecycle (see domain/feature.ts). */
  use(hooks: TurnHooks): void {
    this.hooks.push(hooks);
  }

  private readonly serverTools = new Map<string, ServerTool>();

  /** Answers a tool's calls here instead of asking the client (see domain/feature.ts). */
  serveTool(tool: ServerTool): void {
    this.serverTools.set(tool.name, tool);
  }

  /** The session's tool of that name this server answers, bound to the session (undefined: not one). */
  private serverToolOf(
    session: SessionRecord,
    name: string,
  ): ((call: ServerToolCall) => Promise<ServerToolAnswer>) | undefined {
    const tool = this.serverTools.get(name);
    if (!tool?.enabledFor(session)) return undefined;
    return (call) => tool.call(session, call);
  }

  /** Runs one kind of hook of every feature, in order; failures are logged. */
  private async runHooks(
    name: "afterEngineTurn" | "afterTurn",
    active: ActiveTurn,
    turn: TurnRecord,
  ): Promise<void> {
    for (const h of this.hooks) {
      try {
        await h[name]?.(active.session, turn);
      } catch (err) {
        this.deps.logger.error(
          { session: active.session.id, turn: turn.id, hook: name, err: String(err) },
          "turn hook failed",
        );
      }
    }
  }

  isActive(sessionId: string): boolean {
    return this.active.has(sessionId);
  }

  activeTurn(sessionId: string): TurnRecord | undefined {
    return this.active.get(sessionId)?.turn;
  }

  activeCount(): number {
    return this.active.size;
  }

  /** Called when a turn has ended and its session is idle again. */
  onIdle(listener: (sessionId: string) => void): void {
    this.idleListeners.push(listener);
  }

  /**
   * Called when a running turn starts being stopped, whatever stops it (cancel, turn timeout, deletion, shutdown):
   * what the turn waits for outside the engine (its environment) stops waiting.
   */
  onStop(listener: (sessionId: string) => void): void {
    this.stopListeners.push(listener);
  }

  /**
   * Starts a turn now; it runs in the background. 409 when the session already has one (checked atomically:
   * of two concurrent starts, one wins).
   */
  async start(session: SessionRecord, input: TurnInput, opts: StartOptions = {}): Promise<TurnRecord> {
    const { store, hub, clock, cluster } = this.deps;
    if (this.active.has(session.id) || session.active_turn_id) throw conflict("Session has an active turn");
    if (!cluster.healthy) {
      throw unavailable("This instance has lost its database and runs no turns right now: try again");
    }
    const now = clock.now();
    const turnId = opts.turnId ?? newId("turn_");
    const claimed = await store.claimSession(session.id, turnId, {
      status: "in_progress",
      error: null,
      last_active_at: now,
      updated_at: now,
      owner_instance: cluster.instanceId,
    });
    if (!claimed) throw conflict("Session has an active turn");
    // Every write of this turn carries the claim's fencing token: refused once another instance has taken over.
    hub.fence(session.id, claimed.lease_epoch);
    // A session deleted while its turn starts (after the claim) fails the writes that follow: it is "not found",
    // as it would have been a moment earlier.
    const deletedMeanwhile = async (err: unknown) =>
      (await store.getSession(session.id)) ? err : notFound(`Session ${session.id} not found`, "session_id");
    let goal: GoalRun | null = null;
    try {
      goal = opts.goal ? await opts.goal(turnId) : null;
    } catch (err) {
      hub.fence(session.id, null);
      await store.updateSession(session.id, {
        status: session.status,
        active_turn_id: null,
        error: session.error,
      });
      throw await deletedMeanwhile(err);
    }
    const turn: TurnRecord = {
      id: turnId,
      session_id: session.id,
      created_at: now,
      started_at: now,
      completed_at: null,
      status: "in_progress",
      input: input.items,
      error: null,
      usage: null,
      goal: goal ? { mode: goal.mode, objective: goal.objective } : null,
      subagent_id: null,
    };
    try {
      await hub.commit(session.id, async (tx, log) => {
        await tx.insertTurn(turn);
        log({ type: "turn.started", data: { turn } }, { turn_id: turnId });
        log({ type: "session.status", data: { session: claimed } }, { turn_id: turnId });
      });
    } catch (err) {
      const gone = await deletedMeanwhile(err);
      if (gone !== err) hub.fence(session.id, null);
      throw gone;
    }
    this.launch(claimed, turn, input.items, goal);
    return turn;
  }

  /** Resolves with the turn once it is terminal (immediately if it already is). */
  async waitFor(sessionId: string, turnId: string): Promise<TurnRecord> {
    const active = this.active.get(sessionId);
    if (active && active.turn.id === turnId) return active.done;
    if (!active) {
      const owner = (await this.deps.store.getSession(sessionId))?.owner_instance;
      if (owner && owner !== this.deps.cluster.instanceId) return this.waitForElsewhere(sessionId, turnId);
    }
    const waiting = new Promise<TurnRecord>((resolve) => {
      const list = this.waiters.get(turnId) ?? [];
      list.push(resolve);
      this.waiters.set(turnId, list);
    });
    const stored = await this.deps.store.getTurn(sessionId, turnId);
    if (stored && stored.status !== "in_progress" && stored.status !== "queued") {
      this.waiters.delete(turnId);
      return stored;
    }
    return waiting;
  }

  /** A turn another instance runs: its end arrives through the session's log. */
  private async waitForElsewhere(sessionId: string, turnId: string): Promise<TurnRecord> {
    const { store, hub } = this.deps;
    const from = (await store.firstEventSeqOfTurn(sessionId, turnId)) ?? 1;
    const sub = hub.subscribe(sessionId, { afterSeq: from - 1, until: (e) => isTurnEnd(e, turnId) });
    for await (const e of sub) if (isTurnEnd(e, turnId)) break;
    const turn = await store.getTurn(sessionId, turnId);
    if (!turn) throw new Error(`turn ${turnId} of session ${sessionId} is gone`);
    return turn;
  }

  /** User cancel: interrupts the engine turn; the turn ends `cancelled`. Returns the turn, or null if idle. */
  async cancel(sessionId: string): Promise<TurnRecord | null> {
    const active = this.active.get(sessionId);
    if (!active) return null;
    await this.stop(active, { status: "cancelled", code: "cancelled", message: "Cancelled by the user" });
    return active.done;
  }

  /** Adds input to the running turn (engine steer). Returns null when nothing runs (or it is ending). */
  async steer(sessionId: string, items: InputItem[]): Promise<TurnRecord | null> {
    const active = this.active.get(sessionId);
    if (!active || active.stop) return null;
    const engineTurn = await active.engineReady;
    if (!engineTurn || engineTurn.finished || active.stop) return null;
    try {
      await engineTurn.steer(items);
    } catch (err) {
      // The engine turn ended in between: nothing left to steer.
      if (err instanceof InvalidRequestError && /no active turn/.test(err.message)) return null;
      if (err instanceof InvalidRequestError) throw badRequest(err.message, "input");
      throw err;
    }
    active.recorder.log({ type: "turn.steered", data: { input: items } });
    return active.turn;
  }

  /**
   * A client's answer to a required action of the session's running turn (a function call's result, an approval
   * decision). 400 "Unknown pending tool call" when none such waits; `turnId`, when given, must be the turn's.
   */
  async answer(sessionId: string, actionId: string, answer: ActionAnswer, turnId?: string): Promise<void> {
    const active = this.active.get(sessionId);
    if (!active || (turnId !== undefined && turnId !== active.turn.id)) throw unknownPendingCall(actionId);
    await active.actions.answer(actionId, answer);
  }

  /** The options of the session's engine thread, with its requests routed to the session's running turn. */
  private threadOptions(session: SessionRecord) {
    return threadOptionsFor(session, this.deps.config, (request) => this.serverRequest(session.id, request));
  }

  /** A request of the engine for a session's thread: the running turn's to answer, else the safe default. */
  private serverRequest(sessionId: string, request: ServerRequest): Promise<unknown> | unknown {
    const active = this.active.get(sessionId);
    if (!active) return defaultServerRequestResponse(request.method);
    return active.actions.request(request);
  }

  /** The goal of the session's running turn, once its engine turn has started (null: no goal runs). */
  async runningGoal(sessionId: string): Promise<GoalRun | null> {
    const active = this.active.get(sessionId);
    if (!active?.goal) return null;
    await active.engineReady;
    return active.goal;
  }

  /**
   * Ends the session's turn (shutdown, deletion). A turn waiting for the client fails: the engine cannot keep what
   * it waits for, so the answer could never be delivered (the same outcome as a crash, see `recover`).
   */
  async abort(sessionId: string, message: string): Promise<void> {
    const active = this.active.get(sessionId);
    if (!active) return;
    await this.stop(
      active,
      active.actions.size > 0
        ? {
            status: "failed",
            code: REQUIRED_ACTION_LOST,
            message: lostActionsMessage(message, active.actions.ids()),
          }
        : { status: "cancelled", code: "cancelled", message },
    );
    await active.done;
  }

  async abortAll(message: string): Promise<void> {
    await Promise.all([...this.active.keys()].map((id) => this.abort(id, message)));
  }

  /** Resolves once the hooks of the turns that have ended have run (shutdown: after `abortAll`). */
  hooksDone(): Promise<void> {
    return this.background.idle();
  }

  /** Runs `fn` with the session's engine thread while no turn runs (goal housekeeping). */
  async withThread<T>(session: SessionRecord, fn: (thread: Thread) => Promise<T>): Promise<T> {
    const here = session.thread_id
      ? await this.deps.rollouts.prepare(session.thread_id)
      : { moved: false, stale: false };
    const lease = await this.deps.engines.lease(session.thread_id, this.threadOptions(session), {
      stale: here.stale,
    });
    try {
      if (session.thread_id !== lease.thread.id) {
        await this.deps.store.updateSession(session.id, { thread_id: lease.thread.id });
      }
      return await fn(lease.thread);
    } finally {
      lease.release();
    }
  }

  /**
   * Start-up: turns that were running when the process died are failed (`server_restart`), the items clients saw
   * start are kept as incomplete, and the sessions become usable again. Returns how many sessions it fixed.
   */
  async recover(
    code = "server_restart",
    message = "The server stopped while this turn was running.",
  ): Promise<number> {
    const busy = await this.deps.store.listBusySessions();
    for (const s of busy) await this.endOrphan(s, code, message);
    return busy.length;
  }

  /**
   * Ends a turn nobody runs any more (its process died; see `recover` and the cluster's takeover): failed with
   * `code` — `required_action_lost` when it waited for the client —, the items clients saw start kept as
   * incomplete, the session usable again. Returns the failed turn (null: there was none to end).
   */
  async endOrphan(s: SessionRecord, code: string, message: string): Promise<TurnRecord | null> {
    const { hub, clock } = this.deps;
    let ended: TurnRecord | null = null;
    await hub.commit(s.id, async (tx, log) => {
      const turn = s.active_turn_id ? await tx.getTurn(s.id, s.active_turn_id) : undefined;
      if (turn && (turn.status === "in_progress" || turn.status === "queued")) {
        for (const item of await tx.closeOpenItems(s.id, turn.id, "failed")) {
          log({ type: "item.completed", data: { item: item.data, output_index: -1 } }, { turn_id: turn.id });
        }
        const waited = s.required_actions.length > 0;
        for (const a of s.required_actions) {
          log(
            { type: "action.resolved", data: { action_id: a.id, action_type: a.type, answer: null } },
            { turn_id: turn.id },
          );
        }
        const failed = await tx.updateTurn(s.id, turn.id, {
          status: "failed",
          completed_at: clock.now(),
          // The engine cannot keep a call it is waiting on across a restart of its process.
          error: waited
            ? {
                code: REQUIRED_ACTION_LOST,
                message: lostActionsMessage(
                  message,
                  s.required_actions.map((a) => a.id),
                ),
              }
            : { code, message },
        });
        if (failed) log({ type: "turn.failed", data: { turn: failed } }, { turn_id: turn.id });
        ended = failed ?? null;
      }
      const next = await tx.updateSession(s.id, {
        status: "idle",
        active_turn_id: null,
        required_actions: [],
        updated_at: clock.now(),
      });
      if (next) log({ type: "session.status", data: { session: next } });
    });
    return ended;
  }

  /**
   * The thread was moved here from another instance's rollout: the engine keeps goals in its own database, which
   * does not move with the thread, so the session's goal is set on it again (paused; a goal turn resumes it).
   */
  private async restoreGoal(sessionId: string, thread: Thread): Promise<void> {
    const goal = await this.deps.store.getGoal(sessionId);
    if (!goal || goal.status === "complete") return;
    await thread.setGoal({ objective: goal.objective, status: "paused", tokenBudget: goal.token_budget });
  }

  private launch(session: SessionRecord, turn: TurnRecord, items: InputItem[], goal: GoalRun | null): void {
    const { hub, logger, clock, config } = this.deps;
    let resolve!: (t: TurnRecord) => void;
    const done = new Promise<TurnRecord>((r) => {
      resolve = r;
    });
    let setEngineTurn!: (t: Turn | null) => void;
    const engineReady = new Promise<Turn | null>((r) => {
      setEngineTurn = r;
    });
    const paths = hostPathsOf(session);
    const sandboxId = sandboxIdOf(session);
    const kills = this.deps.memoryKills;
    const recorder = new TurnRecorder(
      hub,
      logger,
      () => clock.now(),
      session.id,
      turn.id,
      goal,
      paths,
      // (The engine is known once the thread is leased: before that no command has ended.)
      kills ? () => kills({ sandboxId, engine: active.engine }) : null,
    );
    const actions = new TurnActions(
      {
        hub,
        paths,
        now: () => clock.now(),
        itemLogged: (id) => recorder.itemLogged(id),
        itemStarted: (id) => recorder.itemStarted(id),
        serverTool: (name) => this.serverToolOf(session, name),
      },
      session.id,
      turn.id,
    );
    const active: ActiveTurn = {
      session,
      turn,
      recorder,
      actions,
      goal,
      engineTurn: null,
      engineReady,
      setEngineTurn,
      thread: null,
      engine: null,
      stop: null,
      timer: null,
      done,
    };
    this.active.set(session.id, active);
    void this.goalDuration(session.id, goal).then((goalSeconds) => {
      // A goal may run for its whole duration cap, plus one last engine turn.
      const seconds = config.turnTimeoutSeconds + goalSeconds;
      if (this.active.get(session.id) !== active) return;
      active.timer = clock.after(seconds * 1000, () => {
        void this.stop(active, {
          status: "failed",
          code: "request_timeout",
          message: `Turn timeout exceeded (${seconds} s)`,
        });
      });
    });
    void this.execute(active, items).then(resolve, (err: unknown) => {
      logger.error({ session: session.id, turn: turn.id, err: String(err) }, "turn could not be recorded");
      this.active.delete(session.id);
      resolve({ ...turn, status: "failed", error: { code: "internal_error", message: String(err) } });
    });
  }

  private async goalDuration(sessionId: string, goal: GoalRun | null): Promise<number> {
    if (!goal) return 0;
    return (await this.deps.store.getGoal(sessionId))?.max_duration_seconds ?? 0;
  }

  private async stop(active: ActiveTurn, stop: Stop): Promise<void> {
    if (active.stop) return;
    active.stop = stop;
    active.goal?.onStop();
    for (const l of this.stopListeners) {
      try {
        l(active.session.id);
      } catch (err) {
        this.deps.logger.error({ session: active.session.id, err: String(err) }, "stop listener failed");
      }
    }
    // A hung engine must not keep the turn open forever: if it does not end in time, kill its process (the turn
    // then fails with the stop reason, and the pool respawns the engine).
    const watchdog = this.deps.clock.after(STOP_GRACE_MS, () => {
      if (this.active.get(active.session.id) === active && active.engine !== null) {
        this.deps.logger.error(
          { session: active.session.id, engine: active.engine },
          "engine unresponsive: killing it",
        );
        this.deps.engines.killEngine(active.engine);
      }
    });
    void active.done.finally(() => watchdog.cancel());
    if (active.engineTurn && !active.engineTurn.finished) {
      await Promise.race([active.engineTurn.interrupt().catch(() => {}), active.done]);
    }
  }

  private async execute(active: ActiveTurn, items: InputItem[]): Promise<TurnRecord> {
    const { config, engines, store, rollouts, logger } = this.deps;
    const session = active.session;
    let result: TurnResult | null = null;
    let failure: TurnError | null = null;
    let release: (() => void) | null = null;
    let threadId: string | null = null;
    try {
      const reason = missingModelReason(config);
      if (reason) throw new ConfigurationError(reason);
      // The thread may have been continued on another instance: bring its rollout here first (unless this
      // instance ran the session's previous claim, so nobody else can have).
      const current = this.ranHere.get(session.id) === session.lease_epoch - 1;
      const here =
        session.thread_id && !current
          ? await rollouts.prepare(session.thread_id)
          : { moved: false, stale: false };
      const lease = await engines.lease(session.thread_id, this.threadOptions(session), {
        stale: here.stale,
      });
      release = lease.release;
      threadId = lease.thread.id;
      if (here.moved) await this.restoreGoal(session.id, lease.thread);
      active.engine = lease.engine;
      if (session.thread_id !== lease.thread.id) {
        await store.updateSession(session.id, { thread_id: lease.thread.id });
      }
      if (active.stop) throw new StoppedError();
      active.thread = lease.thread;
      active.recorder.attach(lease.thread);
      for (const h of this.hooks) await h.beforeTurn?.(active.session, active.turn);
      if (active.stop) throw new StoppedError();
      const turnOptions = engineTurnOptions(session);
      const engineTurn = active.goal
        ? await active.goal.start(lease.thread, items, turnOptions, () =>
            this.runHooks("afterEngineTurn", active, active.turn),
          )
        : await lease.thread.turn(items, turnOptions);
      active.engineTurn = engineTurn;
      active.setEngineTurn(engineTurn);
      if (active.stop) await engineTurn.interrupt().catch(() => {});
      for await (const event of engineTurn.stream()) active.recorder.record(event);
      result = await engineTurn.run();
      await this.runHooks("afterEngineTurn", active, active.turn);
    } catch (err) {
      failure = describeFailure(err);
      if (err instanceof TurnFailedError) result = err.result;
    } finally {
      active.setEngineTurn(null);
      // The engine keeps an interrupted turn's commands running: a stopped turn's commands stop with it.
      if (active.stop && active.engineTurn) await this.stopCommands(active, active.engineTurn);
      try {
        await active.recorder.settled();
      } catch (err) {
        // What the engine did could not be stored: the turn must not look complete.
        failure ??= { code: "internal_error", message: `The turn could not be recorded: ${String(err)}` };
      }
      if (active.goal) {
        await active.goal.settle({
          failed: failure !== null || result?.status === "failed",
          stopped: active.stop !== null,
        });
      }
      // Before the session is idle again (another instance may claim the next turn): share the rollout.
      if (threadId) {
        const saved = await rollouts.save(threadId).then(
          () => true,
          (err: unknown) => {
            logger.error({ session: session.id, err: String(err) }, "could not store the thread's rollout");
            return false;
          },
        );
        this.ranHere.delete(session.id);
        if (saved) this.ranHere.set(session.id, session.lease_epoch);
        if (this.ranHere.size > 10_000) this.ranHere.delete(this.ranHere.keys().next().value!);
      }
      release?.();
      active.timer?.cancel();
    }
    return this.finish(active, result, failure);
  }

  /**
   * Ends the processes of a stopped turn's commands, each with its process tree (bounded like the rest of the stop:
   * an engine that does not answer is killed when the stop's grace period ends).
   */
  private async stopCommands(active: ActiveTurn, engineTurn: Turn): Promise<void> {
    const { logger } = this.deps;
    const where = { session: active.session.id, turn: active.turn.id };
    try {
      const stopped = await engineTurn.stopProcesses();
      if (stopped.length > 0) {
        logger.info({ ...where, items: stopped, why: active.stop?.code }, "stopped the turn's commands");
      }
    } catch (err) {
      logger.warn({ ...where, err: String(err) }, "could not stop the turn's commands");
    }
  }

  private async finish(
    active: ActiveTurn,
    result: TurnResult | null,
    failure: TurnError | null,
  ): Promise<TurnRecord> {
    const { hub, clock, logger } = this.deps;
    const sessionId = active.session.id;
    const usage = result?.usage ? toUsage(result.usage.turn) : null;
    const { status, error } = outcome(active.stop, failure, result);
    const turn: TurnRecord = { ...active.turn, status, error, usage, completed_at: clock.now() };
    const type =
      status === "completed" ? "turn.completed" : status === "failed" ? "turn.failed" : "turn.cancelled";
    // Whatever the turn still waited for will not be answered now.
    const unanswered = active.actions.close();
    const ended = hub.commit(sessionId, async (tx, log) => {
      for (const a of unanswered) {
        log(
          { type: "action.resolved", data: { action_id: a.id, action_type: a.type, answer: null } },
          { turn_id: turn.id },
        );
      }
      // The commands a stop ended say so, with the output they had streamed.
      if (active.stop) {
        for (const c of active.recorder.openCommands()) {
          const item = stoppedCommand(c.item, c.output, active.stop);
          const index = active.recorder.indexOf(item.id);
          log(
            { type: "item.completed", data: { item, output_index: index } },
            {
              turn_id: turn.id,
              item: { kind: "finish", turn_id: turn.id, item, created_at: clock.now(), state: "incomplete" },
            },
          );
        }
      }
      // Items the turn started but never finished (interrupted, failed) stay visible, marked incomplete.
      for (const item of await tx.closeOpenItems(sessionId, turn.id, "failed")) {
        log(
          {
            type: "item.completed",
            data: { item: item.data, output_index: active.recorder.indexOf(item.id) },
          },
          { turn_id: turn.id },
        );
      }
      await tx.updateTurn(sessionId, turn.id, {
        status,
        error,
        usage,
        completed_at: turn.completed_at,
      });
      const session = await tx.getSession(sessionId);
      if (!session) return;
      const now = clock.now();
      const next = await tx.updateSession(sessionId, {
        // A failed turn does not fail the session: it stays usable; `error` keeps why the last turn failed.
        status: "idle",
        error: status === "failed" ? (error?.message ?? null) : null,
        active_turn_id: null,
        required_actions: [],
        usage: addUsage(session.usage, usage),
        last_active_at: now,
        updated_at: now,
      });
      log({ type, data: { turn } }, { turn_id: turn.id });
      if (next) log({ type: "session.status", data: { session: next } }, { turn_id: turn.id });
    });
    let outcomeTurn = turn;
    try {
      await ended;
    } catch (err) {
      if (!(err instanceof FencedError)) throw err;
      // Another instance took the turn over (this one was thought dead): it has ended the turn already.
      logger.warn({ session: sessionId, turn: turn.id }, "turn was taken over by another instance");
      outcomeTurn = (await this.deps.store.getTurn(sessionId, turn.id)) ?? turn;
    } finally {
      hub.fence(sessionId, null);
    }
    this.active.delete(sessionId);
    for (const w of this.waiters.get(turn.id) ?? []) w(outcomeTurn);
    this.waiters.delete(turn.id);
    if (error) logger.warn({ session: sessionId, turn: turn.id, status, error }, "turn ended");
    for (const l of this.idleListeners) l(sessionId);
    void this.background.track(this.runHooks("afterTurn", active, outcomeTurn));
    return outcomeTurn;
  }
}

/** The session's model and settings as options of an engine turn. */
function engineTurnOptions(session: SessionRecord): TurnOptions {
  const settings = settingsOf(session.extra);
  const effort = engineEffort(settings.reasoning.effort);
  const format = settings.text.format;
  const environments = executionEnvironmentsOf(session);
  return {
    model: session.model,
    approvalPolicy: settings.approval_policy,
    ...(environments ? { environments } : {}),
    ...(effort !== undefined ? { effort } : {}),
    ...(settings.reasoning.summary !== null ? { summary: settings.reasoning.summary } : {}),
    ...(format.type === "json_schema" ? { outputSchema: format.schema } : {}),
  };
}

function outcome(
  stop: Stop | null,
  failure: TurnError | null,
  result: TurnResult | null,
): { status: TurnStatus; error: TurnError | null } {
  if (stop) {
    const error =
      stop.status === "failed" || stop.status === "cancelled"
        ? { code: stop.code, message: stop.message }
        : null;
    return { status: stop.status, error };
  }
  if (failure) return { status: "failed", error: failure };
  if (result?.status === "interrupted") {
    return { status: "cancelled", error: { code: "interrupted", message: "The turn was interrupted" } };
  }
  if (result?.status === "failed") {
    return {
      status: "failed",
      error: { code: "server_error", message: result.error?.message ?? "turn failed" },
    };
  }
  return { status: "completed", error: null };
}

/** A command item the turn's stop ended: failed, its output what it streamed plus a line saying why it stopped. */
function stoppedCommand(item: StoredItem, streamed: string, stop: Stop): StoredItem {
  if (item.type !== "commandExecution") return item;
  const output = streamed && !streamed.endsWith("\n") ? `${streamed}\n` : streamed;
  return { ...item, status: "failed", aggregatedOutput: `${output}[command stopped: ${stop.message}]` };
}

/** A turn ended while it waited for the client (tool result, approval): what it waited for cannot be answered. */
export const REQUIRED_ACTION_LOST = "required_action_lost";

const lostActionsMessage = (why: string, actionIds: string[]) =>
  `${why.endsWith(".") ? why : `${why}.`} The turn was waiting for the client (${actionIds.join(", ")}), and the engine cannot keep a pending ` +
  "tool call or approval across a restart: send the input again.";

class ConfigurationError extends Error {}
class StoppedError extends Error {}

function describeFailure(err: unknown): TurnError {
  if (err instanceof ConfigurationError) return { code: "authentication_error", message: err.message };
  if (err instanceof HookFailure) return { code: err.code, message: err.message };
  if (err instanceof StoppedError) return { code: "cancelled", message: "stopped before it started" };
  if (err instanceof TransportClosedError) {
    return {
      code: "internal_error",
      message: `The Codex engine exited during the turn (${err.message}); it has been restarted, send the input again.`,
    };
  }
  if (err instanceof TurnFailedError) return { code: "server_error", message: err.message };
  return { code: "internal_error", message: err instanceof Error ? err.message : String(err) };
}
