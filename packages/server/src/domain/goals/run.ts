/**
 * The goal side of one running logical turn: how its engine turn starts, the caps the server enforces while it
 * runs (continuations, tokens, wall clock), and the goal's final state once it ends. The turn runner calls these
 * hooks; it knows nothing about goals beyond them.
 */
import type { InputItem, Thread, ThreadGoal, Turn } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { GoalReason } from "../../store/types.js";
import type { Clock, Timer } from "../../util/clock.js";
import type { GoalBook } from "./book.js";

export type GoalMode = "input" | "objective" | "resume";

export class GoalRun {
  private thread: Thread | null = null;
  /** Why we paused the goal (a cap, the user), so that the engine's "paused" can be explained. */
  private pendingReason: GoalReason | null = null;
  private durationTimer: Timer | null = null;

  constructor(
    private readonly deps: { book: GoalBook; clock: Clock; logger: Logger },
    readonly sessionId: string,
    readonly turnId: string,
    readonly mode: GoalMode,
    readonly objective: string,
  ) {}

  /** Starts the logical turn's first engine turn on the thread, as a goal. */
  async start(thread: Thread, items: InputItem[], model: string): Promise<Turn> {
    this.thread = thread;
    const record = (await this.deps.book.get(this.sessionId))!;
    const tokenBudget = record.token_budget;
    let turn: Turn;
    if (this.mode === "input" && record.max_turns === 0) {
      // No continuation is allowed: the input runs as a plain turn and the goal is recorded, paused. (Activating it
      // would race: the engine starts a continuation as soon as an active goal meets an idle thread.)
      turn = await thread.turn(items, { model });
      if (await thread.getGoal()) await thread.clearGoal();
      await thread.setGoal({ objective: this.objective, status: "paused", tokenBudget });
      await this.deps.book.update(
        this.sessionId,
        { status: "paused", status_reason: "max_turns" },
        this.turnId,
      );
      return turn;
    }
    if (this.mode === "input") {
      turn = await thread.turn(items, { model, goal: { tokenBudget } });
    } else {
      if (this.mode === "objective") {
        if (await thread.getGoal()) await thread.clearGoal();
        await thread.setGoal({ objective: this.objective, status: "paused", tokenBudget });
      }
      turn = await thread.resumeGoal({ tokenBudget });
    }
    const remaining = Math.max(0, record.max_duration_seconds - record.time_used_seconds);
    this.durationTimer = this.deps.clock.after(remaining * 1000, () => void this.pause("max_duration"));
    return turn;
  }

  /** Another engine turn of the logical turn started; the one that reaches `max_turns` is the last. */
  async onEngineTurnStarted(index: number): Promise<void> {
    const book = this.deps.book;
    let record = await book.get(this.sessionId);
    if (!record) return;
    const continuation = this.mode !== "input" || index > 0;
    if (continuation)
      record = await book.update(this.sessionId, { turns_used: record.turns_used + 1 }, this.turnId);
    if (record && record.status === "active" && record.turns_used >= record.max_turns)
      await this.pause("max_turns");
  }

  /** The engine updated the goal (status, tokens used). */
  async onEngineGoalUpdated(goal: ThreadGoal): Promise<void> {
    const g = await this.deps.book.fromEngine(this.sessionId, goal, this.pendingReason, this.turnId);
    if (g?.status === "active" && g.tokens_used >= g.token_budget) await this.pause("token_budget");
  }

  /** The turn is being stopped (cancel, timeout, shutdown): the engine pause that follows is an interruption. */
  onStop(): void {
    this.pendingReason ??= "interrupted";
  }

  /** Pauses the goal for a reason (a cap or the user): the current engine turn ends, none follows. */
  async pause(reason: GoalReason): Promise<void> {
    if (this.pendingReason || !this.thread) return;
    this.pendingReason = reason;
    this.deps.logger.info({ session: this.sessionId, turn: this.turnId, reason }, "pausing goal");
    await this.thread.setGoal({ status: "paused" }).catch((err: unknown) => {
      this.deps.logger.warn({ session: this.sessionId, err: String(err) }, "goal pause failed");
    });
  }

  /** Clears the goal in the engine (the turn ends after the current engine turn). */
  async clear(): Promise<void> {
    this.durationTimer?.cancel();
    await this.thread?.clearGoal().catch(() => false);
  }

  /** After the logical turn: syncs the engine's final goal state and explains it. */
  async settle(outcome: { failed: boolean; stopped: boolean }): Promise<void> {
    this.durationTimer?.cancel();
    const book = this.deps.book;
    const engine = this.thread ? await this.thread.getGoal().catch(() => null) : null;
    const reason: GoalReason | null = outcome.failed
      ? "turn_failed"
      : outcome.stopped
        ? "interrupted"
        : this.pendingReason;
    if (engine) await book.fromEngine(this.sessionId, engine, reason, this.turnId);
    const record = await book.get(this.sessionId);
    if (record?.status === "active") {
      // The engine no longer runs it (failed, interrupted or stopped): never leave a goal "active" but idle.
      await book.update(
        this.sessionId,
        { status: outcome.failed ? "blocked" : "paused", status_reason: reason ?? "interrupted" },
        this.turnId,
      );
      if (this.thread && !outcome.failed) await this.thread.setGoal({ status: "paused" }).catch(() => {});
    } else if (record && outcome.failed && record.status_reason !== "turn_failed") {
      await book.update(this.sessionId, { status_reason: "turn_failed" }, this.turnId);
    }
  }
}
