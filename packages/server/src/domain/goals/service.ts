/**
 * Goals: an objective the agent keeps working on across continuation turns, with server-enforced caps. The one
 * place that sets, replaces, pauses, resumes and clears them, and builds the GoalRun of a goal turn.
 */
import { goalObjective } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { Clock } from "../../kernel/clock.js";
import { badRequest, conflict, notFound } from "../../kernel/errors.js";
import type { GoalCaps } from "../../model/goal-caps.js";
import type { TurnInput } from "../../model/input.js";
import type { Engines } from "../../platform/engine/types.js";
import type { GoalRecord, SessionRecord } from "../../store/types.js";
import type { TurnControl } from "../turns/control.js";
import type { TurnRunner } from "../turns/runner.js";
import type { GoalBook } from "./book.js";
import { type GoalMode, GoalRun } from "./run.js";

/** A change to a session's goal (the goal resource's POST). */
export interface GoalChange {
  objective?: string;
  status?: "active" | "paused";
  caps: GoalCaps;
}

export class GoalService {
  constructor(
    private readonly deps: {
      book: GoalBook;
      runner: TurnRunner;
      control: TurnControl;
      engines: Engines;
      clock: Clock;
      logger: Logger;
    },
  ) {}

  async get(session: SessionRecord): Promise<GoalRecord> {
    const g = await this.deps.book.get(session.id);
    if (!g) throw notFound("Session has no goal", "goal");
    return g;
  }

  /** Starts a turn whose input is also the goal's objective. */
  startWithInput(session: SessionRecord, input: TurnInput, caps: GoalCaps) {
    return this.deps.runner.start(session, input, {
      goal: (turnId) => this.prepare(session, "input", caps, turnId, input),
    });
  }

  /** Sets or replaces the objective, pauses, resumes or changes caps; setting or resuming an active goal starts a turn. */
  async change(session: SessionRecord, change: GoalChange): Promise<GoalRecord> {
    const { book, runner } = this.deps;
    const running = runner.activeTurn(session.id) ?? (session.active_turn_id ? true : undefined);
    if (change.objective !== undefined) {
      if (running) throw conflict("Session has an active turn: interrupt it before replacing the goal");
      const objective = change.objective;
      if ((change.status ?? "active") === "active") {
        await runner.start(
          session,
          { items: [] },
          {
            goal: (turnId) => this.prepare(session, "objective", change.caps, turnId, undefined, objective),
          },
        );
      } else {
        book.resolveCaps(change.caps);
        const trimmed = objective.trim();
        const g = await book.create(session.id, trimmed, change.caps, "paused", null);
        await runner.withThread(session, async (thread) => {
          if (await thread.getGoal()) await thread.clearGoal();
          await thread.setGoal({ objective: trimmed, status: "paused", tokenBudget: g.token_budget });
        });
      }
      return this.get(session);
    }
    const goal = await this.get(session);
    if (change.status === "active") {
      if (running) throw conflict("The goal is already running");
      await runner.start(
        session,
        { items: [] },
        {
          goal: (turnId) => this.prepare(session, "resume", change.caps, turnId),
        },
      );
      return this.get(session);
    }
    if (Object.keys(change.caps).length > 0)
      await book.update(session.id, book.resolveCaps(change.caps, goal));
    if (change.status === "paused" && goal.status === "active") {
      // The running goal turn stops continuing (here or on the instance running it); else only the record changes.
      if (!(await this.deps.control.pauseGoal(session.id))) {
        await book.update(session.id, { status: "paused", status_reason: "user_paused" });
      }
    }
    return this.get(session);
  }

  async clear(session: SessionRecord): Promise<void> {
    await this.get(session);
    const cleared = await this.deps.control.clearGoal(session.id);
    if (!cleared && session.thread_id)
      await this.deps.runner.withThread(session, (thread) => thread.clearGoal());
    await this.deps.book.delete(session.id);
  }

  /**
   * Start-up: goals that were running come back paused. The engine keeps its own goal state and would restart an
   * active goal the moment its thread is resumed, so it is paused there too (before anything is served).
   */
  async pauseAfterRestart(threadOf: (sessionId: string) => Promise<string | null>): Promise<number> {
    const { book, engines, logger } = this.deps;
    const sessions = await book.pauseAllActive("server_restart");
    for (const sessionId of sessions) {
      const threadId = await threadOf(sessionId);
      if (!threadId) continue;
      await engines.call("thread/goal/set", { threadId, status: "paused" }).catch((err: unknown) => {
        logger.warn({ session: sessionId, err: String(err) }, "could not pause the engine goal");
      });
      logger.warn({ session: sessionId }, "goal paused after restart");
    }
    return sessions.length;
  }

  /** Validates and records the goal a turn is about to run (the goal record exists before the turn starts). */
  private async prepare(
    session: SessionRecord,
    mode: GoalMode,
    caps: GoalCaps,
    turnId: string,
    input?: TurnInput,
    objectiveText?: string,
  ): Promise<GoalRun> {
    const { book, clock, logger } = this.deps;
    const run = (objective: string) =>
      new GoalRun({ book, clock, logger }, session.id, turnId, mode, objective);
    if (mode === "resume") {
      const existing = await book.get(session.id);
      if (!existing) throw notFound("Session has no goal to resume", "goal");
      if (existing.status === "complete") throw conflict("The goal is already complete");
      const resolved = book.resolveCaps(caps, existing);
      const reached =
        existing.turns_used >= resolved.max_turns
          ? "max_turns"
          : existing.tokens_used >= resolved.token_budget
            ? "token_budget"
            : existing.time_used_seconds >= resolved.max_duration_seconds
              ? "max_duration_seconds"
              : null;
      if (reached) throw conflict(`The goal has used its ${reached}: raise it to resume`, "goal_cap_reached");
      await book.update(session.id, {
        ...resolved,
        status: "active",
        status_reason: "resumed",
        turn_id: turnId,
      });
      return run(existing.objective);
    }
    let objective = objectiveText ?? "";
    if (mode === "input" && input) {
      try {
        objective = goalObjective(input.items);
      } catch (err) {
        throw badRequest((err as Error).message, "input");
      }
    }
    if (!objective.trim()) throw badRequest("goal objective must not be empty", "objective");
    await book.create(session.id, objective.trim(), caps, "active", turnId);
    return run(objective.trim());
  }
}
