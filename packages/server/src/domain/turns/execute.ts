/**
 * Runs a claimed turn on the engine: leases the session's thread (bringing its rollout here first when another
 * instance may have continued it), runs the features' `beforeTurn`, starts the engine turn (or the goal's run of
 * engine turns) with the session's model and settings, and records what it streams. Whatever happens, the
 * recorder's writes are awaited, the goal settled, what the engine appended to the thread's rollout read (it is stored
 * with the turn's end: the session may be claimed again, on any instance, as soon as that is stored) and the thread
 * released before the result is handed back. A stop during any of it ends the engine turn and its commands. What
 * goes wrong in the turn is handed back as its failure (a `TurnError`), not thrown.
 */
import {
  type InputItem,
  type Thread,
  type ThreadOptions,
  TransportClosedError,
  TurnFailedError,
  type TurnOptions,
  type TurnResult,
} from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import { engineEffort, settingsOf } from "../../model/settings.js";
import type { Rollouts } from "../../platform/cluster/types.js";
import { missingModelReason } from "../../platform/engine/codex-home.js";
import type { Engines } from "../../platform/engine/types.js";
import type { RolloutChunk, SessionRecord, Store, TurnError } from "../../store/types.js";
import { HookFailure } from "../feature.js";
import type { TurnFeatures } from "./hooks.js";
import type { ActiveTurn } from "./running.js";
import type { TurnStopper } from "./stop.js";
import { executionEnvironmentsOf } from "./thread-options.js";

export interface ExecutionDeps {
  config: Config;
  engines: Engines;
  store: Store;
  rollouts: Rollouts;
  logger: Logger;
  features: TurnFeatures;
  stopper: Pick<TurnStopper, "stopCommands">;
  /** The options of the session's engine thread, with its requests routed to the session's running turn. */
  threadOptions: (session: SessionRecord) => ThreadOptions;
}

/** What the engine made of the turn: its result (if it got one) and why it failed (if it did). */
export interface Execution {
  result: TurnResult | null;
  failure: TurnError | null;
  /**
   * What the engine appended to the thread's rollout, for the turn's end to store (`chunk` null: nothing new).
   * null: the turn had no thread, or its rollout could not be read (the next turn here brings it up to date).
   */
  rollout: { chunk: RolloutChunk | null } | null;
}

export class TurnExecutor {
  /**
   * Sessions whose last turn ran here, with the lease epoch of that claim: when the next claim's epoch follows it,
   * no other instance has run the session in between, and the thread's rollout here is current.
   */
  private readonly ranHere = new Map<string, number>();

  constructor(private readonly deps: ExecutionDeps) {}

  async run(active: ActiveTurn, items: InputItem[]): Promise<Execution> {
    const { config, engines, store, rollouts, logger, features } = this.deps;
    const session = active.session;
    let result: TurnResult | null = null;
    let failure: TurnError | null = null;
    let release: (() => void) | null = null;
    let threadId: string | null = null;
    let rollout: Execution["rollout"] = null;
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
      const lease = await engines.lease(session.thread_id, this.deps.threadOptions(session), {
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
      await features.beforeTurn(active.session, active.turn);
      if (active.stop) throw new StoppedError();
      const turnOptions = engineTurnOptions(session);
      const engineTurn = active.goal
        ? await active.goal.start(lease.thread, items, turnOptions, () =>
            features.afterEngineTurn(active.session, active.turn, active.recorder),
          )
        : await lease.thread.turn(items, turnOptions);
      active.engineTurn = engineTurn;
      active.setEngineTurn(engineTurn);
      if (active.stop) await engineTurn.interrupt().catch(() => {});
      for await (const event of engineTurn.stream()) active.recorder.record(event);
      result = await engineTurn.run();
      await features.afterEngineTurn(active.session, active.turn, active.recorder);
    } catch (err) {
      failure = describeFailure(err);
      if (err instanceof TurnFailedError) result = err.result;
    } finally {
      active.setEngineTurn(null);
      // The engine keeps an interrupted turn's commands running: a stopped turn's commands stop with it.
      if (active.stop && active.engineTurn) await this.deps.stopper.stopCommands(active, active.engineTurn);
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
      // Everything the engine wrote for the turn (a stopped one's included) is in its rollout now.
      this.ranHere.delete(session.id);
      if (threadId) {
        try {
          rollout = { chunk: await rollouts.unsaved(threadId) };
        } catch (err) {
          logger.error({ session: session.id, err: String(err) }, "could not read the thread's rollout");
        }
      }
      release?.();
      active.timer?.cancel();
    }
    return { result, failure, rollout };
  }

  /**
   * The turn's end is stored (`recorded`: by this instance, with what `execution` read of the rollout): the thread's
   * rollout here is the session's current one until another instance claims it.
   */
  ended(session: SessionRecord, execution: Execution, recorded: boolean): void {
    if (!recorded || !execution.rollout) return;
    this.ranHere.set(session.id, session.lease_epoch);
    if (this.ranHere.size > 10_000) this.ranHere.delete(this.ranHere.keys().next().value!);
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
