import {
  type InputItem,
  InvalidRequestError,
  type Thread,
  type ThreadItem,
  TransportClosedError,
  type Turn,
  type TurnEvent,
  TurnFailedError,
  type TurnResult,
} from "@codex-agent-api/codex";
import { missingModelReason } from "../engine/codex-home.js";
import type { SessionRecord, TurnRecord, TurnStatus, Usage } from "../store/types.js";
import { badRequest } from "./errors.js";
import { EventType } from "./events.js";
import type { GoalReason } from "./goals.js";
import { nowSeconds } from "./ids.js";
import type { TurnInput } from "./input.js";
import { addUsage, type GoalRequest, type SessionDeps, type SessionService } from "./sessions.js";

/** A goal the turn is running, and the server-side caps being enforced on it. */
interface GoalRun extends GoalRequest {
  objective: string;
  /** Why we paused the goal (a cap, the user), so the engine's "paused" can be explained. */
  pendingReason: GoalReason | null;
  durationTimer: NodeJS.Timeout | null;
}

interface ActiveTurn {
  sessionId: string;
  turn: TurnRecord;
  engineTurn: Turn | null;
  /** Why the turn is being stopped (cancel, timeout, shutdown), if it is. */
  stop: { status: TurnStatus; code: string; message: string } | null;
  timer: NodeJS.Timeout | null;
  done: Promise<TurnRecord>;
  /** Position of each engine item in the turn, in start order (the official `output_index`). */
  indexes: Map<string, number>;
  /** Resolves with the engine turn once it started (null if the turn ended before). */
  engineReady: Promise<Turn | null>;
  setEngineTurn: (t: Turn | null) => void;
  thread: Thread | null;
  /** Index of the engine process running the turn. */
  engine: number | null;
  goal: GoalRun | null;
}

/** How long a stopped turn may take to end before its engine process is killed. */
const STOP_GRACE_MS = 10_000;

/** Runs turns on the engine and turns what the engine reports into the session's event log. */
export class TurnRunner {
  private readonly active = new Map<string, ActiveTurn>();
  private readonly waiters = new Map<string, Array<(t: TurnRecord) => void>>();

  constructor(
    private readonly deps: SessionDeps,
    private readonly sessions: SessionService,
  ) {}

  isActive(sessionId: string): boolean {
    return this.active.has(sessionId);
  }

  activeTurn(sessionId: string): TurnRecord | undefined {
    return this.active.get(sessionId)?.turn;
  }

  activeCount(): number {
    return this.active.size;
  }

  launch(
    session: SessionRecord,
    turn: TurnRecord,
    input: TurnInput,
    goal: (GoalRequest & { objective: string }) | null = null,
  ): void {
    let resolve!: (t: TurnRecord) => void;
    const done = new Promise<TurnRecord>((r) => {
      resolve = r;
    });
    const active: ActiveTurn = {
      sessionId: session.id,
      turn,
      engineTurn: null,
      stop: null,
      timer: null,
      done,
      indexes: new Map(),
      engineReady: Promise.resolve(null),
      setEngineTurn: () => {},
      thread: null,
      engine: null,
      goal: goal ? { ...goal, pendingReason: null, durationTimer: null } : null,
    };
    active.engineReady = new Promise((r) => {
      active.setEngineTurn = r;
    });
    this.active.set(session.id, active);
    const record = goal ? this.sessions.goals.get(session.id) : null;
    // A goal may run for its whole duration cap, plus one last engine turn.
    const timeoutSeconds = this.deps.config.turnTimeoutSeconds + (record?.max_duration_seconds ?? 0);
    const timeoutMs = timeoutSeconds * 1000;
    active.timer = setTimeout(() => {
      void this.stop(active, {
        status: "failed",
        code: "request_timeout",
        message: `Turn timeout exceeded (${timeoutSeconds} s)`,
      });
    }, timeoutMs);
    active.timer.unref();
    void this.execute(session, active, input.items).then(resolve);
  }

  /** Resolves with the turn once it is terminal (immediately if it already is). */
  waitFor(sessionId: string, turnId: string): Promise<TurnRecord> {
    const active = this.active.get(sessionId);
    if (active && active.turn.id === turnId) return active.done;
    const stored = this.deps.store.getTurn(sessionId, turnId);
    if (stored && stored.status !== "in_progress" && stored.status !== "queued")
      return Promise.resolve(stored);
    return new Promise((resolve) => {
      const list = this.waiters.get(turnId) ?? [];
      list.push(resolve);
      this.waiters.set(turnId, list);
    });
  }

  /** User cancel: interrupts the engine turn; the turn ends `cancelled`. Returns the turn, or null if idle. */
  async cancel(sessionId: string): Promise<TurnRecord | null> {
    const active = this.active.get(sessionId);
    if (!active) return null;
    await this.stop(active, { status: "cancelled", code: "cancelled", message: "Cancelled by the user" });
    return active.done;
  }

  /** Adds input to the running turn (engine steer). Returns null when nothing runs. */
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
    this.deps.hub.append({
      session_id: sessionId,
      type: EventType.TurnSteered,
      turn_id: active.turn.id,
      data: { input: items },
    });
    return active.turn;
  }

  async abort(sessionId: string, message: string): Promise<void> {
    const active = this.active.get(sessionId);
    if (!active) return;
    await this.stop(active, { status: "cancelled", code: "cancelled", message });
    await active.done;
  }

  async abortAll(message: string): Promise<void> {
    await Promise.all([...this.active.keys()].map((id) => this.abort(id, message)));
  }

  private async stop(active: ActiveTurn, stop: NonNullable<ActiveTurn["stop"]>): Promise<void> {
    if (active.stop) return;
    active.stop = stop;
    // The SDK pauses a goal before interrupting: explain the pause.
    if (active.goal && !active.goal.pendingReason) active.goal.pendingReason = "interrupted";
    // A hung engine must not keep the turn open forever: if it does not end in time, kill its process (the turn
    // then fails with the stop reason, and the pool respawns the engine).
    const watchdog = setTimeout(() => {
      if (this.active.get(active.sessionId) === active && active.engine !== null) {
        this.deps.logger.error(
          { session: active.sessionId, engine: active.engine },
          "engine unresponsive: killing it",
        );
        this.deps.pool.killEngine(active.engine);
      }
    }, STOP_GRACE_MS);
    watchdog.unref();
    void active.done.finally(() => clearTimeout(watchdog));
    if (active.engineTurn && !active.engineTurn.finished) {
      await Promise.race([active.engineTurn.interrupt().catch(() => {}), active.done]);
    }
  }

  private threadOptions(session: SessionRecord) {
    return {
      cwd: session.workspace,
      model: session.model,
      sandbox: this.deps.config.sandbox,
      approvalPolicy: "never" as const,
      ...(session.instructions ? { developerInstructions: session.instructions } : {}),
    };
  }

  private append(active: ActiveTurn, type: string, data: Record<string, unknown>): void {
    this.deps.hub.append({ session_id: active.sessionId, type, turn_id: active.turn.id, data });
  }

  private async execute(session: SessionRecord, active: ActiveTurn, items: InputItem[]): Promise<TurnRecord> {
    let result: TurnResult | null = null;
    let failure: { code: string; message: string } | null = null;
    let release: (() => void) | null = null;
    try {
      const reason = missingModelReason(this.deps.config);
      if (reason) throw new ConfigurationError(reason);
      const lease = await this.deps.pool.lease(session.thread_id, this.threadOptions(session));
      release = lease.release;
      active.engine = lease.engine;
      if (session.thread_id !== lease.thread.id) {
        const current = this.sessions.get(session.id);
        this.deps.store.updateSession({ ...current, thread_id: lease.thread.id });
      }
      if (active.stop) throw new StoppedError();
      active.thread = lease.thread;
      const engineTurn = await this.startEngineTurn(session, active, lease.thread, items);
      active.engineTurn = engineTurn;
      active.setEngineTurn(engineTurn);
      if (active.stop) await engineTurn.interrupt().catch(() => {});
      for await (const event of engineTurn.stream()) this.record(active, event);
      result = await engineTurn.run();
    } catch (err) {
      failure = describeFailure(err);
      if (err instanceof TurnFailedError) result = err.result;
    } finally {
      active.setEngineTurn(null);
      if (active.goal) await this.settleGoal(active, failure !== null || result?.status === "failed");
      release?.();
      if (active.timer) clearTimeout(active.timer);
    }
    return this.finish(active, result, failure);
  }

  private async startEngineTurn(
    session: SessionRecord,
    active: ActiveTurn,
    thread: Thread,
    items: InputItem[],
  ): Promise<Turn> {
    const goal = active.goal;
    if (!goal) return thread.turn(items, { model: session.model });
    const record = this.sessions.goals.get(session.id)!;
    const tokenBudget = record.token_budget;
    let turn: Turn;
    if (goal.mode === "input") {
      turn = await thread.turn(items, { model: session.model, goal: { tokenBudget } });
    } else {
      if (goal.mode === "objective") {
        if (await thread.getGoal()) await thread.clearGoal();
        await thread.setGoal({ objective: goal.objective, status: "paused", tokenBudget });
      }
      turn = await thread.resumeGoal({ tokenBudget });
    }
    const remaining = Math.max(0, record.max_duration_seconds - record.time_used_seconds);
    goal.durationTimer = setTimeout(() => void this.pauseGoal(active, "max_duration"), remaining * 1000);
    goal.durationTimer.unref();
    return turn;
  }

  /** Pauses the running goal for a reason (a cap or the user): the current engine turn ends, none follows. */
  async pauseGoal(active: ActiveTurn, reason: GoalReason): Promise<void> {
    const goal = active.goal;
    if (!goal || goal.pendingReason || !active.thread) return;
    goal.pendingReason = reason;
    this.deps.logger.info({ session: active.sessionId, turn: active.turn.id, reason }, "pausing goal");
    await active.thread.setGoal({ status: "paused" }).catch((err: unknown) => {
      this.deps.logger.warn({ session: active.sessionId, err: String(err) }, "goal pause failed");
    });
  }

  /** Runs `fn` with the session's engine thread while no turn runs (goal housekeeping). */
  async withThread<T>(session: SessionRecord, fn: (thread: Thread) => Promise<T>): Promise<T> {
    const lease = await this.deps.pool.lease(session.thread_id, this.threadOptions(session));
    try {
      if (session.thread_id !== lease.thread.id) {
        this.deps.store.updateSession({ ...this.sessions.get(session.id), thread_id: lease.thread.id });
      }
      return await fn(lease.thread);
    } finally {
      lease.release();
    }
  }

  /** Clears the goal of a running turn in the engine (the turn ends after the current engine turn). */
  async clearRunningGoal(sessionId: string): Promise<boolean> {
    const active = this.active.get(sessionId);
    if (!active?.goal) return false;
    await active.engineReady;
    if (active.goal.durationTimer) clearTimeout(active.goal.durationTimer);
    await active.thread?.clearGoal().catch(() => false);
    return true;
  }

  /** Pauses the goal of a session's running turn; false when no goal runs. */
  async pauseSessionGoal(sessionId: string, reason: GoalReason): Promise<boolean> {
    const active = this.active.get(sessionId);
    if (!active?.goal) return false;
    await active.engineReady;
    await this.pauseGoal(active, reason);
    return true;
  }

  /** After a goal turn: syncs the engine's final goal state and explains it. */
  private async settleGoal(active: ActiveTurn, failed: boolean): Promise<void> {
    const goal = active.goal!;
    if (goal.durationTimer) clearTimeout(goal.durationTimer);
    const goals = this.sessions.goals;
    const engine = active.thread ? await active.thread.getGoal().catch(() => null) : null;
    const reason: GoalReason | null = failed
      ? "turn_failed"
      : active.stop
        ? "interrupted"
        : goal.pendingReason;
    if (engine) goals.fromEngine(active.sessionId, engine, reason, active.turn.id);
    const record = goals.get(active.sessionId);
    if (record?.status === "active") {
      // The engine no longer runs it (failed, interrupted or stopped): never leave a goal "active" but idle.
      goals.update(
        active.sessionId,
        { status: failed ? "blocked" : "paused", status_reason: reason ?? "interrupted" },
        active.turn.id,
      );
      if (active.thread && !failed) await active.thread.setGoal({ status: "paused" }).catch(() => {});
    } else if (record && failed && record.status_reason !== "turn_failed") {
      goals.update(active.sessionId, { status_reason: "turn_failed" }, active.turn.id);
    }
  }

  /** Counts continuation turns; the turn that reaches `max_turns` is the last one (the goal is paused now). */
  private onEngineTurnStarted(active: ActiveTurn, index: number): void {
    const goal = active.goal;
    if (!goal) return;
    const goals = this.sessions.goals;
    let record = goals.get(active.sessionId);
    if (!record) return;
    const continuation = goal.mode !== "input" || index > 0;
    if (continuation)
      record = goals.update(active.sessionId, { turns_used: record.turns_used + 1 }, active.turn.id)!;
    if (record.turns_used >= record.max_turns) void this.pauseGoal(active, "max_turns");
  }

  private indexOf(active: ActiveTurn, itemId: string): number {
    let index = active.indexes.get(itemId);
    if (index === undefined) {
      index = active.indexes.size;
      active.indexes.set(itemId, index);
    }
    return index;
  }

  private record(active: ActiveTurn, event: TurnEvent): void {
    switch (event.method) {
      case "item/started":
        this.append(active, EventType.ItemStarted, {
          item: event.params.item,
          output_index: this.indexOf(active, event.params.item.id),
        });
        return;
      case "item/completed": {
        const item = event.params.item as ThreadItem;
        const stored = this.deps.store.appendItem({
          session_id: active.sessionId,
          turn_id: active.turn.id,
          id: item.id,
          type: item.type,
          created_at: nowSeconds(),
          data: item as unknown as Record<string, unknown>,
        });
        this.append(active, EventType.ItemCompleted, {
          item,
          ordinal: stored.ordinal,
          output_index: this.indexOf(active, item.id),
        });
        return;
      }
      case "item/agentMessage/delta":
      case "item/reasoning/summaryTextDelta":
      case "item/commandExecution/outputDelta":
        this.append(active, EventType.ItemDelta, {
          item_id: event.params.itemId,
          output_index: this.indexOf(active, event.params.itemId),
          kind: DELTA_KIND[event.method],
          delta: event.params.delta,
        });
        return;
      case "client/goal/engineTurnStarted":
        this.onEngineTurnStarted(active, event.params.index);
        return;
      case "client/goal/updated": {
        const g = this.sessions.goals.fromEngine(
          active.sessionId,
          event.params.goal,
          active.goal?.pendingReason ?? null,
          active.turn.id,
        );
        if (g?.status === "active" && g.tokens_used >= g.token_budget)
          void this.pauseGoal(active, "token_budget");
        return;
      }
      case "client/serverRequest/answered":
        this.append(active, EventType.ServerRequestAnswered, {
          request_method: event.params.requestMethod,
          request: event.params.request,
          response: event.params.response,
          defaulted: event.params.defaulted,
        });
        return;
      default:
        return;
    }
  }

  private finish(
    active: ActiveTurn,
    result: TurnResult | null,
    failure: { code: string; message: string } | null,
  ): TurnRecord {
    const { store, hub } = this.deps;
    const usage = result?.usage ? toUsage(result.usage.turn) : null;
    let status: TurnStatus;
    let error: TurnRecord["error"] = null;
    if (active.stop) {
      status = active.stop.status;
      error =
        status === "failed" || status === "cancelled"
          ? { code: active.stop.code, message: active.stop.message }
          : null;
    } else if (failure) {
      status = "failed";
      error = failure;
    } else if (result?.status === "interrupted") {
      status = "cancelled";
      error = { code: "interrupted", message: "The turn was interrupted" };
    } else {
      status = result?.status === "failed" ? "failed" : "completed";
      if (status === "failed")
        error = { code: "server_error", message: result?.error?.message ?? "turn failed" };
    }
    const turn: TurnRecord = { ...active.turn, status, error, usage, completed_at: nowSeconds() };
    const type =
      status === "completed"
        ? EventType.TurnCompleted
        : status === "failed"
          ? EventType.TurnFailed
          : EventType.TurnCancelled;
    store.transaction(() => {
      const session = store.getSession(active.sessionId);
      store.updateTurn(turn);
      if (!session) return;
      const next: SessionRecord = {
        ...session,
        // A failed turn does not fail the session: it stays usable; `error` keeps why the last turn failed.
        status: "idle",
        error: status === "failed" ? (error?.message ?? null) : null,
        active_turn_id: null,
        usage: addUsage(session.usage, usage),
        last_active_at: nowSeconds(),
        updated_at: nowSeconds(),
      };
      store.updateSession(next);
      hub.append({ session_id: active.sessionId, type, turn_id: turn.id, data: { turn } });
      hub.append({
        session_id: active.sessionId,
        type: EventType.SessionStatus,
        turn_id: turn.id,
        data: { session: next },
      });
    });
    this.active.delete(active.sessionId);
    for (const w of this.waiters.get(turn.id) ?? []) w(turn);
    this.waiters.delete(turn.id);
    if (error)
      this.deps.logger.warn({ session: active.sessionId, turn: turn.id, status, error }, "turn ended");
    return turn;
  }
}

/** Which stream a delta belongs to (the `kind` of `item.delta` log events). */
const DELTA_KIND = {
  "item/agentMessage/delta": "agent_message",
  "item/reasoning/summaryTextDelta": "reasoning",
  "item/commandExecution/outputDelta": "command_output",
} as const;

class ConfigurationError extends Error {}
class StoppedError extends Error {}

function describeFailure(err: unknown): { code: string; message: string } {
  if (err instanceof ConfigurationError) return { code: "authentication_error", message: err.message };
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

function toUsage(u: {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningOutputTokens: number;
  totalTokens: number;
}): Usage {
  return {
    input_tokens: u.inputTokens,
    cached_input_tokens: u.cachedInputTokens,
    output_tokens: u.outputTokens,
    reasoning_output_tokens: u.reasoningOutputTokens,
    total_tokens: u.totalTokens,
  };
}
