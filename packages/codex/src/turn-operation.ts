import { CodexError, InvalidRequestError, TurnFailedError } from "./errors.js";
import type { ServerNotification } from "./generated/ServerNotification.js";
import type { ThreadGoal } from "./generated/v2/ThreadGoal.js";
import type { ThreadGoalStatus } from "./generated/v2/ThreadGoalStatus.js";
import type { ThreadTokenUsage } from "./generated/v2/ThreadTokenUsage.js";
import { AsyncQueue } from "./queue.js";
import { finalResponse, toTurnUsage } from "./turn-result.js";
import type { ProtocolTurn, ThreadItem, TokenUsageBreakdown, TurnEvent, TurnResult } from "./types.js";

/** What a turn needs from its thread and client. */
export interface TurnHost {
  readonly threadId: string;
  request<T>(method: string, params: unknown): Promise<T>;
  /** Stops routing this thread's notifications to the operation. */
  release(op: TurnOperation): void;
  /** Whether an earlier turn of the thread started this command item. */
  earlierCommand(itemId: string): boolean;
}

interface Notification {
  method: string;
  params: Record<string, unknown>;
}

/** The engine's answer when a request named an engine turn that is no longer the running one. */
export const FOUND_TURN = /but found `?([^`]+)`?$/;
export const NO_ACTIVE_STEER = /no active turn to steer/;
const NO_ACTIVE_INTERRUPT = /no active turn to interrupt/;

export function notificationTurnId(params: Record<string, unknown>): string | undefined {
  if (typeof params.turnId === "string") return params.turnId;
  const turn = params.turn as { id?: unknown } | undefined;
  return turn && typeof turn.id === "string" ? turn.id : undefined;
}

function withTurnId(n: Notification, id: string): Notification {
  const params = { ...n.params };
  if (typeof params.turnId === "string") params.turnId = id;
  const turn = params.turn as Record<string, unknown> | undefined;
  if (turn && typeof turn.id === "string") params.turn = { ...turn, id };
  return { method: n.method, params };
}

/** Size of the output deltas this SDK fills in (the engine's own are at most 8 KiB). */
const OUTPUT_PIECE = 8192;
/** Command items a turn remembers for `Turn.stopProcesses` (a goal turn may run very many). */
const MAX_TRACKED_COMMANDS = 10_000;

/**
 * The state of one logical turn. A plain turn is one engine turn; a goal turn spans the engine turn that
 * `turn/start` returned plus every continuation the engine starts by itself, until the goal leaves `active`
 * (or a turn fails / is interrupted). Notifications of continuations are re-addressed to the logical id.
 */
export class TurnOperation {
  logicalId: string | null = null;
  readonly queue: AsyncQueue<TurnEvent>;
  private readonly buffer: Notification[] = [];
  private readonly items: ThreadItem[] = [];
  private usage: ThreadTokenUsage | null = null;
  private current: string | null = null;
  private lastPhysical: string | null = null;
  private firstStarted: ProtocolTurn | null = null;
  private lastCompletion: ProtocolTurn | null = null;
  private engineTurns = 0;
  private goalArmed = false;
  private goalStatus: ThreadGoalStatus | null = null;
  private goalCleared = false;
  private userInterrupted = false;
  private finishedFlag = false;
  private detached = false;
  private readonly physicalWaiters: Array<(id: string | null) => void> = [];
  readonly result: Promise<TurnResult>;
  private resolveResult!: (r: TurnResult) => void;
  private rejectResult!: (e: Error) => void;

  constructor(
    readonly host: TurnHost,
    readonly goal: boolean,
    private readonly usageBaseline: TokenUsageBreakdown | null,
  ) {
    this.queue = new AsyncQueue<TurnEvent>(() => this.detach());
    this.result = new Promise<TurnResult>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
    this.result.catch(() => {
      /* observed by run(); avoid unhandled rejections when only stream() is used */
    });
  }

  get finished(): boolean {
    return this.finishedFlag;
  }

  /** Engine turns this logical turn has started so far. */
  get engineTurnCount(): number {
    return this.engineTurns;
  }

  /** The engine turn currently running (goal turns move from one to the next). */
  get currentEngineTurn(): string | null {
    return this.current;
  }

  /** Goal mode: from now on `thread/goal/*` notifications belong to this operation. */
  armGoal(status: ThreadGoalStatus): void {
    this.goalArmed = true;
    this.goalStatus = status;
  }

  /**
   * Called when an engine turn of this goal turn has completed (not failed or interrupted), instead of deciding by
   * the goal's status: "continue" means it has made the engine start another continuation (which this operation
   * then follows), "finish" ends the logical turn. Without one, the logical turn ends when the goal leaves
   * `active` (the engine continues by itself while it is).
   */
  afterEngineTurn(next: ((turn: ProtocolTurn) => Promise<"continue" | "finish">) | null): void {
    this.next = next;
  }

  private next: ((turn: ProtocolTurn) => Promise<"continue" | "finish">) | null = null;

  /** The engine answered `turn/start`: its id is the logical id. Buffered notifications are replayed. */
  bind(turnId: string): void {
    this.logicalId = turnId;
    for (const n of this.buffer.splice(0)) this.process(n);
  }

  /** Resumed goals: the first engine turn that starts becomes the logical turn. */
  bindOnFirstStart(): Promise<string> {
    this.bindOnStart = true;
    return new Promise((resolve, reject) => {
      this.onBound = resolve;
      this.result.catch(reject);
    });
  }

  private bindOnStart = false;
  private onBound: ((id: string) => void) | null = null;

  onNotification(n: Notification): void {
    if (this.finishedFlag) return;
    if (this.goal && !this.goalArmed && n.method.startsWith("thread/goal/")) return;
    if (this.logicalId === null && this.bindOnStart && n.method === "turn/started") {
      const id = (n.params.turn as { id: string }).id;
      this.buffer.push(n);
      this.bind(id);
      this.onBound?.(id);
      return;
    }
    if (this.logicalId === null) this.buffer.push(n);
    else this.process(n);
  }

  /** What a child thread of this turn's thread did (a subagent): enters the stream wrapped, while the turn runs. */
  onSubagent(childThreadId: string, n: Notification): void {
    if (this.finishedFlag || this.logicalId === null) return;
    this.queue.push({
      method: "client/subagent/notification",
      params: {
        threadId: this.host.threadId,
        turnId: this.logicalId,
        childThreadId,
        notification: n as unknown as ServerNotification,
      },
    });
  }

  /** Server-request answers enter the stream like notifications. */
  onAnswered(event: TurnEvent): void {
    this.onNotification(event as Notification);
  }

  fail(err: Error): void {
    if (this.finishedFlag) return;
    this.finishedFlag = true;
    this.wakePhysicalWaiters();
    this.queue.end(err);
    this.rejectResult(err);
  }

  /** Stop following this turn (stream closed early): routing is released at once. */
  detach(): void {
    if (this.detached) return;
    this.detached = true;
    this.host.release(this);
    if (!this.finishedFlag) this.fail(new CodexError("the turn stream was closed before the turn finished"));
  }

  /** Resolves with the running engine turn id, waiting for the next one between continuations. */
  waitForEngineTurn(): Promise<string | null> {
    if (this.finishedFlag) return Promise.resolve(null);
    if (this.current) return Promise.resolve(this.current);
    return new Promise((resolve) => this.physicalWaiters.push(resolve));
  }

  markUserInterrupt(): void {
    this.userInterrupted = true;
  }

  private wakePhysicalWaiters(): void {
    for (const w of this.physicalWaiters.splice(0)) w(this.finishedFlag ? null : this.current);
  }

  private process(n: Notification): void {
    if (this.finishedFlag) return;
    // Thread-level news that concerns the running turn (its MCP servers starting up) enters its stream too.
    if (n.method === "mcpServer/startupStatus/updated") {
      this.queue.push(n as TurnEvent);
      return;
    }
    const turnId = notificationTurnId(n.params);
    if (!this.goal) {
      if (turnId !== this.logicalId) return;
    } else if (turnId === undefined && !n.method.startsWith("thread/goal/")) {
      return;
    }
    switch (n.method) {
      case "turn/started": {
        const turn = n.params.turn as ProtocolTurn;
        this.current = turn.id;
        this.lastPhysical = turn.id;
        this.engineTurns++;
        this.wakePhysicalWaiters();
        if (this.userInterrupted) void this.interruptEngineTurn(turn.id).catch(() => {});
        if (this.goal) {
          this.queue.push({
            method: "client/goal/engineTurnStarted",
            params: {
              threadId: this.host.threadId,
              turnId: this.logicalId!,
              engineTurnId: turn.id,
              index: this.engineTurns - 1,
            },
          });
        }
        if (this.firstStarted) return;
        this.firstStarted = turn;
        break;
      }
      case "turn/completed": {
        const turn = n.params.turn as ProtocolTurn;
        this.lastCompletion = turn;
        if (this.current === turn.id) this.current = null;
        if (!this.goal || turn.status === "failed" || turn.status === "interrupted") this.finish();
        else if (this.next) {
          // Interrupted by the user after this engine turn had already finished: nothing follows.
          if (this.userInterrupted) this.finish();
          else this.decide(this.next, turn);
        } else this.maybeFinishGoal();
        return;
      }
      case "thread/goal/updated": {
        const goal = n.params.goal as ThreadGoal;
        this.goalStatus = goal.status;
        this.queue.push({
          method: "client/goal/updated",
          params: { threadId: this.host.threadId, turnId: this.logicalId!, goal },
        });
        this.maybeFinishGoal();
        return;
      }
      case "thread/goal/cleared":
        this.goalCleared = true;
        this.maybeFinishGoal();
        return;
      case "item/started": {
        const item = n.params.item as ThreadItem;
        if (item.type === "commandExecution") {
          this.commands.set(item.id, item.processId);
          if (this.commands.size > MAX_TRACKED_COMMANDS)
            this.commands.delete(this.commands.keys().next().value!);
        }
        break;
      }
      case "item/commandExecution/outputDelta": {
        const id = String(n.params.itemId);
        this.streamedOutput.set(id, (this.streamedOutput.get(id) ?? "") + String(n.params.delta));
        break;
      }
      case "item/completed": {
        const item = n.params.item as ThreadItem;
        this.items.push(item);
        if (item.type === "commandExecution") this.completeOutput(item, n);
        break;
      }
      case "thread/tokenUsage/updated":
        this.usage = n.params.tokenUsage as ThreadTokenUsage;
        break;
    }
    this.queue.push((this.goal ? withTurnId(n, this.logicalId!) : n) as TurnEvent);
  }

  /**
   * The engine streams a command's output only from about 150 ms after it starts (what the command printed before
   * never arrives as a delta; a quick command streams nothing): when the completed item's output continues what was
   * streamed, the rest is streamed now, in pieces, before the completion. The deltas of a command then add up to
   * its output, unless its first bytes were lost before later ones streamed (the final item has it all).
   */
  private completeOutput(item: Extract<ThreadItem, { type: "commandExecution" }>, n: Notification): void {
    const streamed = this.streamedOutput.get(item.id) ?? "";
    this.streamedOutput.delete(item.id);
    const output = item.aggregatedOutput;
    if (typeof output !== "string" || output.length <= streamed.length || !output.startsWith(streamed))
      return;
    const rest = output.slice(streamed.length);
    const turnId = notificationTurnId(n.params) ?? this.logicalId;
    for (let at = 0; at < rest.length; at += OUTPUT_PIECE) {
      const delta: Notification = {
        method: "item/commandExecution/outputDelta",
        params: {
          threadId: this.host.threadId,
          turnId,
          itemId: item.id,
          delta: rest.slice(at, at + OUTPUT_PIECE),
        },
      };
      this.queue.push((this.goal ? withTurnId(delta, this.logicalId!) : delta) as TurnEvent);
    }
  }

  private readonly streamedOutput = new Map<string, string>();

  /** The command items this turn started (id → the engine's process id, when it gave one). */
  readonly commands = new Map<string, string | null>();

  private decide(next: (turn: ProtocolTurn) => Promise<"continue" | "finish">, turn: ProtocolTurn): void {
    this.deciding = true;
    next(turn).then(
      (decision) => {
        this.deciding = false;
        if (this.finishedFlag) return;
        if (decision === "finish") {
          // Unless a continuation already started (its completion will ask again).
          if (this.current === null) this.finish();
          return;
        }
        // Handed over to the engine (no more decisions): the goal is active now, whatever notification is late.
        if (!this.next && this.goalStatus === "paused") this.goalStatus = "active";
        this.maybeFinishGoal();
      },
      (err: unknown) => {
        this.deciding = false;
        this.fail(err instanceof Error ? err : new CodexError(String(err)));
      },
    );
  }

  private deciding = false;

  private maybeFinishGoal(): void {
    if (this.deciding || this.next) return;
    if (this.current !== null || this.lastCompletion === null) return;
    if (this.goalCleared || (this.goalStatus !== null && this.goalStatus !== "active")) this.finish();
  }

  private finish(): void {
    const last = this.lastCompletion!;
    const id = this.logicalId!;
    let completion: ProtocolTurn = last;
    if (this.goal) {
      const startedAt = this.firstStarted?.startedAt ?? last.startedAt;
      const completedAt = last.completedAt;
      completion = {
        ...last,
        id,
        items: [],
        status: this.userInterrupted && last.status !== "failed" ? "interrupted" : last.status,
        startedAt,
        durationMs:
          startedAt !== null && completedAt !== null
            ? Math.max(0, completedAt - startedAt) * 1000
            : last.durationMs,
      };
    }
    this.finishedFlag = true;
    this.wakePhysicalWaiters();
    this.queue.push({
      method: "turn/completed",
      params: { threadId: this.host.threadId, turn: completion },
    } as TurnEvent);
    this.queue.end();
    this.host.release(this);
    const result: TurnResult = {
      id,
      status: completion.status,
      items: this.items,
      finalResponse: finalResponse(this.items),
      usage: this.usage ? toTurnUsage(this.usage, this.usageBaseline) : null,
      startedAt: completion.startedAt,
      completedAt: completion.completedAt,
      durationMs: completion.durationMs,
      error: completion.error,
      engineTurns: Math.max(1, this.engineTurns),
    };
    if (completion.status === "failed") {
      const err = new TurnFailedError(
        completion.error?.message ?? "turn failed",
        id,
        completion.error?.codexErrorInfo,
        result,
      );
      this.rejectResult(err);
    } else {
      this.resolveResult(result);
    }
  }

  async interruptEngineTurn(turnId: string, retried = false): Promise<void> {
    try {
      await this.host.request("turn/interrupt", { threadId: this.host.threadId, turnId });
    } catch (err) {
      if (err instanceof InvalidRequestError && NO_ACTIVE_INTERRUPT.test(err.message)) return;
      const found = err instanceof InvalidRequestError ? FOUND_TURN.exec(err.message) : null;
      if (found?.[1] && !retried) return this.interruptEngineTurn(found[1], true);
      throw err;
    }
  }

  lastEngineTurn(): string | null {
    return this.lastPhysical;
  }
}
