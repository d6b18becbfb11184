/**
 * Stopping a running turn, whatever stops it (cancel, the turn timeout, deletion, shutdown): the first stop is the
 * one recorded (its status and reason are how the turn ends), the stop listeners are told, and the engine turn is
 * interrupted; an engine that does not end the turn within STOP_GRACE_MS has its process killed. The commands a
 * stopped turn was running are ended with it (the engine would leave them running).
 */
import type { Turn } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { Config } from "../../config/load.js";
import type { Clock } from "../../kernel/clock.js";
import type { Engines } from "../../platform/engine/types.js";
import type { Store } from "../../store/types.js";
import type { GoalRun } from "../goals/run.js";
import type { ActiveTurn, RunningTurns, Stop } from "./running.js";

/** How long a stopped turn may take to end before its engine process is killed. */
export const STOP_GRACE_MS = 10_000;

export interface StopDeps {
  running: RunningTurns;
  engines: Pick<Engines, "killEngine">;
  store: Store;
  config: Config;
  clock: Clock;
  logger: Logger;
}

export class TurnStopper {
  private readonly listeners: Array<(sessionId: string) => void> = [];

  constructor(private readonly deps: StopDeps) {}

  /** Called when a running turn starts being stopped (see `TurnRunner.onStop`). */
  onStop(listener: (sessionId: string) => void): void {
    this.listeners.push(listener);
  }

  async stop(active: ActiveTurn, stop: Stop): Promise<void> {
    if (active.stop) return;
    active.stop = stop;
    active.goal?.onStop();
    for (const l of this.listeners) {
      try {
        l(active.session.id);
      } catch (err) {
        this.deps.logger.error({ session: active.session.id, err: String(err) }, "stop listener failed");
      }
    }
    // A hung engine must not keep the turn open forever: if it does not end in time, kill its process (the turn
    // then fails with the stop reason, and the pool respawns the engine).
    const watchdog = this.deps.clock.after(STOP_GRACE_MS, () => {
      if (this.deps.running.isRunning(active) && active.engine !== null) {
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

  /** Arms the turn's timeout (`active.timer`): the turn fails with `request_timeout` when it runs longer. */
  armTimeout(active: ActiveTurn): void {
    const { config, clock } = this.deps;
    void this.goalDuration(active.session.id, active.goal).then((goalSeconds) => {
      // A goal may run for its whole duration cap, plus one last engine turn.
      const seconds = config.turnTimeoutSeconds + goalSeconds;
      if (!this.deps.running.isRunning(active)) return;
      active.timer = clock.after(seconds * 1000, () => {
        void this.stop(active, {
          status: "failed",
          code: "request_timeout",
          message: `Turn timeout exceeded (${seconds} s)`,
        });
      });
    });
  }

  private async goalDuration(sessionId: string, goal: GoalRun | null): Promise<number> {
    if (!goal) return 0;
    return (await this.deps.store.getGoal(sessionId))?.max_duration_seconds ?? 0;
  }

  /**
   * Ends the processes of a stopped turn's commands, each with its process tree (bounded like the rest of the stop:
   * an engine that does not answer is killed when the stop's grace period ends).
   */
  async stopCommands(active: ActiveTurn, engineTurn: Turn): Promise<void> {
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
}
