/**
 * Runs turns: claims the session, runs the logical turn on the engine (a goal's continuations included, through
 * its GoalRun), records what happens, and ends the turn with exactly one terminal state. Owns the turns running in
 * this process; steer, cancel, timeouts and shutdown act on them.
 *
 * Each step is a module of its own: the claim (claim.ts), the registry of running turns and waiting for their end
 * (running.ts), stopping them (stop.ts), running them on the engine (execute.ts), the end-of-turn transaction
 * (end.ts), the features' hooks and tools (hooks.ts), and ending the turns of a dead process (orphans.ts). This
 * class puts them together for one turn, from `start` to the idle session.
 */
import {
  defaultServerRequestResponse,
  type InputItem,
  InvalidRequestError,
  type ServerRequest,
  type Thread,
  type Turn,
} from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import type { Clock } from "../../kernel/clock.js";
import { badRequest, conflict } from "../../kernel/errors.js";
import { InFlight } from "../../kernel/in-flight.js";
import type { ActionAnswer } from "../../model/answers.js";
import type { TurnInput } from "../../model/input.js";
import type { Cluster, Rollouts } from "../../platform/cluster/types.js";
import type { Engines } from "../../platform/engine/types.js";
import type { EventHub } from "../../platform/stream/hub.js";
import { hostPathsOf } from "../../platform/workspace/environment-paths.js";
import type { SessionRecord, Store, TurnRecord } from "../../store/types.js";
import type { ServerTool, TurnHooks } from "../feature.js";
import type { GoalRun } from "../goals/run.js";
import { sandboxIdOf } from "../sessions/workspace.js";
import { TurnActions, unknownPendingCall } from "./actions.js";
import { claimTurn, type StartOptions } from "./claim.js";
import { recordEnd } from "./end.js";
import { type Execution, TurnExecutor } from "./execute.js";
import { TurnFeatures } from "./hooks.js";
import { endOrphan, lostActionsMessage, REQUIRED_ACTION_LOST, recoverOrphans } from "./orphans.js";
import { type MemoryKills, TurnRecorder } from "./recorder.js";
import { type ActiveTurn, RunningTurns } from "./running.js";
import { TurnStopper } from "./stop.js";
import { threadOptionsFor } from "./thread-options.js";

export type { StartOptions } from "./claim.js";
export { REQUIRED_ACTION_LOST } from "./orphans.js";
export { STOP_GRACE_MS } from "./stop.js";

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

export class TurnRunner {
  private readonly running: RunningTurns;
  private readonly features: TurnFeatures;
  private readonly stopper: TurnStopper;
  private readonly executor: TurnExecutor;
  /** The `afterTurn` hooks of ended turns, still running. */
  private readonly background = new InFlight();

  constructor(private readonly deps: RunnerDeps) {
    this.running = new RunningTurns(deps);
    this.features = new TurnFeatures(deps.logger);
    this.stopper = new TurnStopper({ ...deps, running: this.running });
    this.executor = new TurnExecutor({
      ...deps,
      features: this.features,
      stopper: this.stopper,
      threadOptions: (session) => this.threadOptions(session),
    });
  }

  /** Attaches a feature to the turns' lifecycle (see domain/feature.ts). */
  use(hooks: TurnHooks): void {
    this.features.use(hooks);
  }

  /** Answers a tool's calls here instead of asking the client (see domain/feature.ts). */
  serveTool(tool: ServerTool): void {
    this.features.serveTool(tool);
  }

  isActive(sessionId: string): boolean {
    return this.running.has(sessionId);
  }

  activeTurn(sessionId: string): TurnRecord | undefined {
    return this.running.get(sessionId)?.turn;
  }

  activeCount(): number {
    return this.running.size;
  }

  /** Called when a turn has ended and its session is idle again. */
  onIdle(listener: (sessionId: string) => void): void {
    this.running.onIdle(listener);
  }

  /**
   * Called when a running turn starts being stopped, whatever stops it (cancel, turn timeout, deletion, shutdown):
   * what the turn waits for outside the engine (its environment) stops waiting.
   */
  onStop(listener: (sessionId: string) => void): void {
    this.stopper.onStop(listener);
  }

  /**
   * Starts a turn now; it runs in the background. 409 when the session already has one (checked atomically:
   * of two concurrent starts, one wins).
   */
  async start(session: SessionRecord, input: TurnInput, opts: StartOptions = {}): Promise<TurnRecord> {
    if (this.running.has(session.id) || session.active_turn_id) throw conflict("Session has an active turn");
    const claim = await claimTurn(this.deps, session, input, opts);
    this.launch(claim.session, claim.turn, input.items, claim.goal);
    return claim.turn;
  }

  /** Resolves with the turn once it is terminal (immediately if it already is). */
  waitFor(sessionId: string, turnId: string): Promise<TurnRecord> {
    return this.running.waitFor(sessionId, turnId);
  }

  /** User cancel: interrupts the engine turn; the turn ends `cancelled`. Returns the turn, or null if idle. */
  async cancel(sessionId: string): Promise<TurnRecord | null> {
    const active = this.running.get(sessionId);
    if (!active) return null;
    await this.stopper.stop(active, {
      status: "cancelled",
      code: "cancelled",
      message: "Cancelled by the user",
    });
    return active.done;
  }

  /** Adds input to the running turn (engine steer). Returns null when nothing runs (or it is ending). */
  async steer(sessionId: string, items: InputItem[]): Promise<TurnRecord | null> {
    const active = this.running.get(sessionId);
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
    const active = this.running.get(sessionId);
    if (!active || (turnId !== undefined && turnId !== active.turn.id)) throw unknownPendingCall(actionId);
    await active.actions.answer(actionId, answer);
  }

  /** The options of the session's engine thread, with its requests routed to the session's running turn. */
  private threadOptions(session: SessionRecord) {
    return threadOptionsFor(session, this.deps.config, (request) => this.serverRequest(session.id, request));
  }

  /** A request of the engine for a session's thread: the running turn's to answer, else the safe default. */
  private serverRequest(sessionId: string, request: ServerRequest): Promise<unknown> | unknown {
    const active = this.running.get(sessionId);
    if (!active) return defaultServerRequestResponse(request.method);
    return active.actions.request(request);
  }

  /** The goal of the session's running turn, once its engine turn has started (null: no goal runs). */
  async runningGoal(sessionId: string): Promise<GoalRun | null> {
    const active = this.running.get(sessionId);
    if (!active?.goal) return null;
    await active.engineReady;
    return active.goal;
  }

  /**
   * Ends the session's turn (shutdown, deletion). A turn waiting for the client fails: the engine cannot keep what
   * it waits for, so the answer could never be delivered (the same outcome as a crash, see `recover`).
   */
  async abort(sessionId: string, message: string): Promise<void> {
    const active = this.running.get(sessionId);
    if (!active) return;
    await this.stopper.stop(
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
    await Promise.all(this.running.sessionIds().map((id) => this.abort(id, message)));
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
  recover(
    code = "server_restart",
    message = "The server stopped while this turn was running.",
  ): Promise<number> {
    return recoverOrphans(this.deps, code, message);
  }

  /**
   * Ends a turn nobody runs any more (its process died; see `recover` and the cluster's takeover): failed with
   * `code` — `required_action_lost` when it waited for the client —, the items clients saw start kept as
   * incomplete, the session usable again. Returns the failed turn (null: there was none to end).
   */
  endOrphan(s: SessionRecord, code: string, message: string): Promise<TurnRecord | null> {
    return endOrphan(this.deps, s, code, message);
  }

  /** Registers the claimed turn as running here, arms its timeout and runs it in the background. */
  private launch(session: SessionRecord, turn: TurnRecord, items: InputItem[], goal: GoalRun | null): void {
    const { hub, logger, clock } = this.deps;
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
        serverTool: (name) => this.features.serverToolOf(session, name),
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
    this.running.add(active);
    this.stopper.armTimeout(active);
    void this.executor
      .run(active, items)
      .then((execution) => this.finish(active, execution))
      .then(resolve, async (err: unknown) => {
        logger.error({ session: session.id, turn: turn.id, err: String(err) }, "turn could not be recorded");
        resolve(await this.endUnrecorded(active, String(err)));
      });
  }

  /**
   * The turn's end could not be recorded (a store or hook failure): it is ended as a turn nobody runs would be —
   * failed `internal_error`, its session idle — so that whoever waits for it is answered and the session takes
   * input again. Should that fail too, the session stays claimed until the next start's recovery (or, with
   * several instances, until another takes the turn over).
   */
  private async endUnrecorded(active: ActiveTurn, why: string): Promise<TurnRecord> {
    const { session, turn } = active;
    let outcome: TurnRecord = { ...turn, status: "failed", error: { code: "internal_error", message: why } };
    try {
      const current = await this.deps.store.getSession(session.id);
      if (current?.active_turn_id === turn.id) {
        const message = `The turn's end could not be recorded: ${why}`;
        outcome = (await endOrphan(this.deps, current, "internal_error", message)) ?? outcome;
      }
    } catch (err) {
      this.deps.logger.error({ session: session.id, turn: turn.id, err: String(err) }, "turn left claimed");
      this.running.drop(session.id);
      return outcome;
    }
    this.running.ended(session.id, turn.id, outcome);
    this.running.idle(session.id);
    return outcome;
  }

  /** The turn's end is stored: whoever waits for it is told, the session is idle, the `afterTurn` hooks run. */
  private async finish(active: ActiveTurn, execution: Execution): Promise<TurnRecord> {
    const sessionId = active.session.id;
    const chunk = execution.rollout?.chunk ?? null;
    const { ended, outcome, recorded } = await recordEnd(
      this.deps,
      active,
      execution.result,
      execution.failure,
      chunk,
    );
    this.executor.ended(active.session, execution, recorded);
    this.running.ended(sessionId, ended.id, outcome);
    if (ended.error) {
      const { status, error } = ended;
      this.deps.logger.warn({ session: sessionId, turn: ended.id, status, error }, "turn ended");
    }
    this.running.idle(sessionId);
    void this.background.track(this.features.afterTurn(active.session, outcome));
    return outcome;
  }
}
