/**
 * The goal side of one running logical turn. The server drives the continuations itself (the SDK's goal driver):
 * after each engine turn it decides whether one more runs — the engine never starts one on its own — so every cap
 * (continuations, tokens, wall clock) and a user's pause take effect exactly, never one continuation late. The
 * turn runner calls these hooks; it knows nothing about goals beyond them.
 */
import type {
  InputItem,
  Thread,
  ThreadGoal,
  TokenUsageBreakdown,
  Turn,
  TurnOptions,
} from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { Clock, Timer } from "../../kernel/clock.js";
import type { GoalReason } from "../../store/types.js";
import type { GoalBook } from "./book.js";

export type GoalMode = "input" | "objective" | "resume";

export class GoalRun {
  private thread: Thread | null = null;
  /** Why no further continuation may run (a cap, the user); it also explains the pause afterwards. */
  private stopReason: GoalReason | null = null;
  private durationTimer: Timer | null = null;
  private maxTurns = Number.POSITIVE_INFINITY;
  private tokenBudget = Number.POSITIVE_INFINITY;
  /** Continuations counted so far (this run and earlier ones). */
  private turnsUsed = 0;
  /** Tokens charged to the goal: before this run, and the thread's total when this run began. */
  private tokensBefore = 0;
  private baseline: TokenUsageBreakdown | null = null;
  private tokensUsed = 0;
  private updates: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly deps: { book: GoalBook; clock: Clock; logger: Logger },
    readonly sessionId: string,
    readonly turnId: string,
    readonly mode: GoalMode,
    readonly objective: string,
  ) {}

  /**
   * Starts the logical turn's first engine turn on the thread, as a goal this run drives. `between` runs after each
   * engine turn after which another one will run, before it starts.
   */
  async start(
    thread: Thread,
    items: InputItem[],
    options: TurnOptions,
    between: () => Promise<void> = async () => {},
  ): Promise<Turn> {
    this.thread = thread;
    const record = (await this.deps.book.get(this.sessionId))!;
    this.maxTurns = record.max_turns;
    this.tokenBudget = record.token_budget;
    this.turnsUsed = record.turns_used;
    this.tokensBefore = record.tokens_used;
    this.tokensUsed = record.tokens_used;
    this.baseline = thread.usageTotal;
    const goal = {
      tokenBudget: record.token_budget,
      drive: async () => {
        if (!this.mayContinue()) return false;
        await between();
        return this.mayContinue();
      },
    };
    let turn: Turn;
    if (this.mode === "input") {
      turn = await thread.turn(items, { ...options, goal });
    } else {
      if (this.mode === "objective") {
        if (await thread.getGoal()) await thread.clearGoal();
        await thread.setGoal({
          objective: this.objective,
          status: "paused",
          tokenBudget: record.token_budget,
        });
      }
      // The engine's copy of the goal may be another instance's or none (goals do not move with a thread):
      // set it from the record before resuming.
      if (this.mode === "resume") {
        await thread.setGoal({
          objective: this.objective,
          status: "paused",
          tokenBudget: record.token_budget,
        });
      }
      turn = await thread.resumeGoal(goal);
    }
    const remaining = Math.max(0, record.max_duration_seconds - record.time_used_seconds);
    this.durationTimer = this.deps.clock.after(remaining * 1000, () => void this.pause("max_duration"));
    return turn;
  }

  /** The driver: one more continuation, unless a cap is reached or the goal was paused. */
  private mayContinue(): boolean {
    if (this.stopReason === null) {
      if (this.turnsUsed >= this.maxTurns) this.stopReason = "max_turns";
      else if (this.tokensUsed >= this.tokenBudget) this.stopReason = "token_budget";
    }
    return this.stopReason === null;
  }

  /** Another engine turn of the logical turn started: a continuation, unless it is the user's first turn. */
  async onEngineTurnStarted(index: number): Promise<void> {
    const continuation = this.mode !== "input" || index > 0;
    if (!continuation) return;
    this.turnsUsed += 1;
    const turnsUsed = this.turnsUsed;
    await this.serially(() => this.deps.book.update(this.sessionId, { turns_used: turnsUsed }, this.turnId));
  }

  /**
   * The thread's token usage after a model response: the goal is charged what every response of its run used
   * (input − cached + output, as the engine counts a goal's tokens), its first turn included.
   */
  async onTokenUsage(total: TokenUsageBreakdown, last: TokenUsageBreakdown): Promise<void> {
    this.baseline ??= subtract(total, last);
    const tokensUsed = this.tokensBefore + charged(total) - charged(this.baseline);
    if (tokensUsed <= this.tokensUsed) return;
    this.tokensUsed = tokensUsed;
    await this.serially(() =>
      this.deps.book.update(this.sessionId, { tokens_used: tokensUsed }, this.turnId),
    );
  }

  /** The engine updated the goal: whether the model finished it (complete, blocked, …). */
  async onEngineGoalUpdated(goal: ThreadGoal): Promise<void> {
    await this.serially(() =>
      this.deps.book.fromEngine(this.sessionId, goal, this.stopReason, this.turnId, { driven: true }),
    );
  }

  /** The turn is being stopped (cancel, timeout, shutdown): its goal is paused as interrupted. */
  onStop(): void {
    this.stopReason ??= "interrupted";
  }

  /** Pauses the goal for a reason (a cap or the user): the current engine turn finishes, none follows. */
  async pause(reason: GoalReason): Promise<void> {
    if (this.stopReason) return;
    this.stopReason = reason;
    this.deps.logger.info({ session: this.sessionId, turn: this.turnId, reason }, "pausing goal");
    await this.serially(() =>
      this.deps.book.update(this.sessionId, { status: "paused", status_reason: reason }, this.turnId),
    );
  }

  /** Clears the goal in the engine (the turn ends after the current engine turn). */
  async clear(): Promise<void> {
    this.durationTimer?.cancel();
    this.stopReason ??= "user_paused";
    await this.thread?.clearGoal().catch(() => false);
  }

  /** After the logical turn: the goal record's final state, explained. */
  async settle(outcome: { failed: boolean; stopped: boolean }): Promise<void> {
    this.durationTimer?.cancel();
    await this.updates;
    const book = this.deps.book;
    const engine = this.thread ? await this.thread.getGoal().catch(() => null) : null;
    if (engine) await book.fromEngine(this.sessionId, engine, this.stopReason, this.turnId, { driven: true });
    const record = await book.get(this.sessionId);
    if (!record) return;
    if (record.status === "active") {
      // The run is over and the model did not finish the goal: it is paused (or blocked by a failure), and says why.
      const reason: GoalReason = outcome.failed
        ? "turn_failed"
        : outcome.stopped
          ? "interrupted"
          : (this.stopReason ?? "interrupted");
      await book.update(
        this.sessionId,
        { status: outcome.failed ? "blocked" : "paused", status_reason: reason },
        this.turnId,
      );
    } else if (outcome.failed && record.status_reason !== "turn_failed") {
      await book.update(this.sessionId, { status_reason: "turn_failed" }, this.turnId);
    }
    // The engine holds the goal paused between continuations; make sure nothing is left active there.
    if (engine?.status === "active" && this.thread)
      await this.thread.setGoal({ status: "paused" }).catch(() => {});
  }

  /** Goal record updates, one after the other (each reads the record it changes). */
  private serially(update: () => Promise<unknown>): Promise<unknown> {
    const next = this.updates.then(update);
    this.updates = next.catch(() => undefined);
    return next;
  }
}

/** Tokens as a goal is charged for them. */
const charged = (u: TokenUsageBreakdown) => u.inputTokens - u.cachedInputTokens + u.outputTokens;

function subtract(a: TokenUsageBreakdown, b: TokenUsageBreakdown): TokenUsageBreakdown {
  return {
    totalTokens: a.totalTokens - b.totalTokens,
    inputTokens: a.inputTokens - b.inputTokens,
    cachedInputTokens: a.cachedInputTokens - b.cachedInputTokens,
    cacheWriteInputTokens: (a.cacheWriteInputTokens ?? 0) - (b.cacheWriteInputTokens ?? 0),
    outputTokens: a.outputTokens - b.outputTokens,
    reasoningOutputTokens: a.reasoningOutputTokens - b.reasoningOutputTokens,
  };
}
