import { CodexError, InvalidRequestError } from "./errors.js";
import { normalizeInput, toProtocolInput } from "./input.js";
import { listBackgroundProcesses, terminateBackgroundProcess } from "./processes.js";
import { FOUND_TURN, NO_ACTIVE_STEER, type TurnOperation } from "./turn-operation.js";
import type { Input, TurnEvent, TurnResult } from "./types.js";

/** Public handle of one logical turn. */
export class Turn {
  private streamTaken = false;

  constructor(private readonly op: TurnOperation) {}

  /** The logical turn id (stable across goal continuations). */
  get id(): string {
    return this.op.logicalId!;
  }

  get threadId(): string {
    return this.op.host.threadId;
  }

  get finished(): boolean {
    return this.op.finished;
  }

  /**
   * Notifications of this turn, ending with one `turn/completed`. Iterate once; `break` / `return()` closes the
   * stream early and releases routing at once (the engine keeps working; use `interrupt()` to stop it).
   * Ends with TransportClosedError if the engine dies.
   */
  stream(): AsyncIterableIterator<TurnEvent> {
    if (this.streamTaken) throw new CodexError("this turn's stream was already taken");
    this.streamTaken = true;
    return this.op.queue;
  }

  /** Waits for the end of the turn. Rejects with TurnFailedError (engine message) if it failed. */
  run(): Promise<TurnResult> {
    if (!this.streamTaken) {
      this.streamTaken = true;
      this.op.queue.discard = true;
      this.op.queue.clear();
    }
    return this.op.result;
  }

  /** Adds input to the running engine turn; resolves to the logical turn id. */
  async steer(input: Input): Promise<{ turnId: string }> {
    const items = toProtocolInput(normalizeInput(input));
    const threadId = this.op.host.threadId;
    let target = await this.op.waitForEngineTurn();
    for (let attempt = 0; ; attempt++) {
      if (!target) throw new InvalidRequestError("no active turn to steer");
      try {
        await this.op.host.request("turn/steer", { threadId, expectedTurnId: target, input: items });
        return { turnId: this.id };
      } catch (err) {
        if (!(err instanceof InvalidRequestError) || attempt > 0 || !this.op.goal) throw err;
        const found = FOUND_TURN.exec(err.message);
        if (found?.[1]) target = found[1];
        else if (NO_ACTIVE_STEER.test(err.message)) target = await this.nextEngineTurn(target);
        else throw err;
      }
    }
  }

  /** Stops the turn. For a goal, pauses the goal first so no continuation starts. */
  async interrupt(): Promise<Record<string, never>> {
    if (this.op.finished) throw new InvalidRequestError("no active turn to interrupt");
    this.op.markUserInterrupt();
    const threadId = this.op.host.threadId;
    if (this.op.goal) {
      await this.op.host.request("thread/goal/set", { threadId, status: "paused" });
      // A continuation may have started that we have not seen yet: the engine answers "found `X`" and we retry.
      const target = this.op.currentEngineTurn ?? this.op.lastEngineTurn();
      if (target) await this.op.interruptEngineTurn(target);
    } else {
      await this.op.interruptEngineTurn(this.op.currentEngineTurn ?? this.id);
    }
    return {};
  }

  /**
   * Ends the processes this turn's commands started that are still running, each with its whole process tree, and
   * returns the ids of their command items. The engine keeps a command's process (a "background terminal") when
   * the turn running it is interrupted: call this after `interrupt()`, once the turn has finished (before, the
   * model would be told the command ended and go on). Processes that earlier turns of the thread started are left
   * alone; one this client never saw start (the turn was stopped just as the engine started it) is this turn's.
   */
  async stopProcesses(): Promise<string[]> {
    const mine = this.op.commands;
    const processIds = new Set([...mine.values()].filter((p): p is string => p !== null));
    const host = this.op.host;
    const request = <T>(method: string, params: unknown) => host.request<T>(method, params);
    const stopped: string[] = [];
    for (const p of await listBackgroundProcesses(request, host.threadId)) {
      const ours = mine.has(p.itemId) || processIds.has(p.processId) || !host.earlierCommand(p.itemId);
      if (!ours) continue;
      if (await terminateBackgroundProcess(request, host.threadId, p.processId)) stopped.push(p.itemId);
    }
    return stopped;
  }

  private async nextEngineTurn(previous: string): Promise<string | null> {
    const id = await this.op.waitForEngineTurn();
    if (id !== previous) return id;
    return null;
  }
}
