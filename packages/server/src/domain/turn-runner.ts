import {
  type InputItem,
  type ThreadItem,
  TransportClosedError,
  type Turn,
  type TurnEvent,
  TurnFailedError,
  type TurnResult,
} from "@codex-agent-api/codex";
import { missingModelReason } from "../engine/codex-home.js";
import type { SessionRecord, TurnRecord, TurnStatus, Usage } from "../store/types.js";
import { EventType } from "./events.js";
import { nowSeconds } from "./ids.js";
import type { TurnInput } from "./input.js";
import { addUsage, type SessionDeps, type SessionService } from "./sessions.js";

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
}

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

  launch(session: SessionRecord, turn: TurnRecord, input: TurnInput): void {
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
    };
    active.engineReady = new Promise((r) => {
      active.setEngineTurn = r;
    });
    this.active.set(session.id, active);
    const timeoutMs = this.deps.config.turnTimeoutSeconds * 1000;
    active.timer = setTimeout(() => {
      void this.stop(active, {
        status: "failed",
        code: "request_timeout",
        message: `Turn timeout exceeded (${this.deps.config.turnTimeoutSeconds} s)`,
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
    await engineTurn.steer(items);
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
    if (active.engineTurn && !active.engineTurn.finished) {
      await active.engineTurn.interrupt().catch(() => {});
    }
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
      const lease = await this.deps.pool.lease(session.thread_id, {
        cwd: session.workspace,
        model: session.model,
        sandbox: this.deps.config.sandbox,
        approvalPolicy: "never",
        ...(session.instructions ? { developerInstructions: session.instructions } : {}),
      });
      release = lease.release;
      if (session.thread_id !== lease.thread.id) {
        const current = this.sessions.get(session.id);
        this.deps.store.updateSession({ ...current, thread_id: lease.thread.id });
      }
      if (active.stop) throw new StoppedError();
      const engineTurn = await lease.thread.turn(items, { model: session.model });
      active.engineTurn = engineTurn;
      active.setEngineTurn(engineTurn);
      if (active.stop) await engineTurn.interrupt().catch(() => {});
      for await (const event of engineTurn.stream()) this.record(active, event);
      result = await engineTurn.run();
    } catch (err) {
      failure = describeFailure(err);
      if (err instanceof TurnFailedError)
        result = (err as TurnFailedError & { result?: TurnResult }).result ?? null;
    } finally {
      active.setEngineTurn(null);
      release?.();
      if (active.timer) clearTimeout(active.timer);
    }
    return this.finish(active, result, failure);
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
        this.append(active, EventType.ItemDelta, {
          item_id: event.params.itemId,
          output_index: this.indexOf(active, event.params.itemId),
          kind: "agent_message",
          delta: event.params.delta,
        });
        return;
      case "item/reasoning/summaryTextDelta":
        this.append(active, EventType.ItemDelta, {
          item_id: event.params.itemId,
          output_index: this.indexOf(active, event.params.itemId),
          kind: "reasoning",
          delta: event.params.delta,
        });
        return;
      case "item/commandExecution/outputDelta":
        this.append(active, EventType.ItemDelta, {
          item_id: event.params.itemId,
          output_index: this.indexOf(active, event.params.itemId),
          kind: "command_output",
          delta: event.params.delta,
        });
        return;
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
        status: status === "failed" ? "failed" : "idle",
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
