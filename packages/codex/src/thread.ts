import { InvalidRequestError } from "./errors.js";
import type { McpServerStatusUpdatedNotification } from "./generated/v2/McpServerStatusUpdatedNotification.js";
import type { Thread as ProtocolThread } from "./generated/v2/Thread.js";
import type { ThreadGoal } from "./generated/v2/ThreadGoal.js";
import type { ThreadGoalStatus } from "./generated/v2/ThreadGoalStatus.js";
import type { ThreadTurnsListResponse } from "./generated/v2/ThreadTurnsListResponse.js";
import type { Turn as ProtocolTurn } from "./generated/v2/Turn.js";
import type { TurnStartResponse } from "./generated/v2/TurnStartResponse.js";
import type { TurnStatus } from "./generated/v2/TurnStatus.js";
import { goalObjective, normalizeInput, toProtocolInput } from "./input.js";
import { type BackgroundProcess, listBackgroundProcesses, terminateBackgroundProcess } from "./processes.js";
import { Turn } from "./turn.js";
import { TurnOperation } from "./turn-operation.js";
import type {
  GoalDriver,
  Input,
  ServerRequestHandler,
  TokenUsageBreakdown,
  TurnOptions,
  TurnResult,
} from "./types.js";

/** What a thread needs from the client that owns it. */
export interface ThreadHost {
  request<T>(method: string, params: unknown): Promise<T>;
  route(threadId: string, op: TurnOperation): void;
  unroute(threadId: string, op: TurnOperation): void;
}

export interface GoalSetOptions {
  objective?: string;
  status?: ThreadGoalStatus;
  tokenBudget?: number | null;
}

/** One engine turn of a thread, as `Thread.turns()` lists it. */
export interface EngineTurnSummary {
  id: string;
  status: TurnStatus;
  /** Ids of the items the engine's summary of the turn holds (the user message, the final answer…). */
  itemIds: string[];
}

/** How many command items of finished turns a thread remembers. */
const MAX_EARLIER_COMMANDS = 10_000;

export class Thread {
  private active: TurnOperation | null = null;
  /** Last cumulative token usage seen for this thread (baseline for per-turn usage). */
  usageTotal: TokenUsageBreakdown | null = null;
  /** MCP server start-up updates of this thread not taken yet (see takeMcpStatusUpdates). */
  private mcpUpdates: McpServerStatusUpdatedNotification[] = [];
  /** The engine's permission profile for this thread, as it reported when it started or resumed it. */
  permissionProfile: string | null = null;

  constructor(
    private readonly host: ThreadHost,
    readonly id: string,
    readonly ephemeral: boolean,
    readonly onServerRequest?: ServerRequestHandler,
  ) {}

  /** True while a turn started through this handle is running. */
  get busy(): boolean {
    return this.active !== null && !this.active.finished;
  }

  async read(opts: { includeTurns?: boolean } = {}): Promise<ProtocolThread> {
    const res = await this.host.request<{ thread: ProtocolThread }>("thread/read", {
      threadId: this.id,
      includeTurns: opts.includeTurns ?? false,
    });
    return res.thread;
  }

  /** Starts a turn (or, with `goal`, a goal operation) and returns its handle once the engine accepted it. */
  async turn(input: Input, opts: TurnOptions = {}): Promise<Turn> {
    if (this.busy) throw new InvalidRequestError(`thread ${this.id} already has an active turn`);
    const items = normalizeInput(input);
    const goal = opts.goal ? (opts.goal === true ? {} : opts.goal) : null;
    let objective: string | null = null;
    if (goal) {
      objective = goalObjective(items);
      if (this.ephemeral)
        throw new InvalidRequestError(`ephemeral thread does not support goals: ${this.id}`);
      if (goal.tokenBudget !== undefined && !(goal.tokenBudget > 0)) {
        throw new InvalidRequestError("goal budgets must be positive when provided");
      }
      // A replacement starts clean: set would keep the old goal's budget.
      if (await this.getGoal()) await this.clearGoal();
    }
    if (goal && objective !== null) {
      // The goal exists (paused) before the model can act, so a model that completes it in the first turn finds
      // it. It is activated only once that turn has ended still paused: activating it alongside the turn would
      // race with the model (the engine applies the activation ~200 ms later), and activating an idle thread's
      // goal is what starts the continuations.
      await this.host.request("thread/goal/set", {
        threadId: this.id,
        objective,
        status: "paused",
        ...(goal.tokenBudget !== undefined ? { tokenBudget: goal.tokenBudget } : {}),
      });
    }
    const op = new TurnOperation(this.hostFor(), goal !== null, this.usageTotal);
    this.active = op;
    this.host.route(this.id, op);
    try {
      if (goal) {
        op.armGoal("paused");
        const drive = goal.drive;
        op.afterEngineTurn(
          drive
            ? (turn) => this.driven(drive, turn, op)
            : async () => {
                // The first turn ended: the engine runs the continuations from now on (unless the model already
                // finished the goal).
                op.afterEngineTurn(null);
                const current = await this.getGoal();
                if (current?.status !== "paused") return "finish";
                return (await this.setGoal({ status: "active" })).status === "active" ? "continue" : "finish";
              },
        );
      }
      const res = await this.host.request<TurnStartResponse>("turn/start", {
        threadId: this.id,
        input: toProtocolInput(items),
        ...(opts.model !== undefined ? { model: opts.model } : {}),
        ...(opts.effort !== undefined ? { effort: opts.effort } : {}),
        ...(opts.summary !== undefined ? { summary: opts.summary } : {}),
        ...(opts.outputSchema !== undefined ? { outputSchema: opts.outputSchema } : {}),
        ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
        ...(opts.approvalPolicy !== undefined ? { approvalPolicy: opts.approvalPolicy } : {}),
        ...(opts.environments !== undefined ? { environments: opts.environments } : {}),
      });
      op.bind(res.turn.id);
    } catch (err) {
      this.host.unroute(this.id, op);
      this.active = null;
      if (goal) await this.pauseGoalQuietly();
      throw err;
    }
    return new Turn(op);
  }

  /**
   * Resumes the thread's paused goal: sets it `active` and follows the engine turn the engine starts for it (and
   * its continuations) as one logical turn. Rejects if no goal exists or no turn starts within `startTimeoutMs`.
   */
  async resumeGoal(
    opts: { tokenBudget?: number; startTimeoutMs?: number; drive?: GoalDriver } = {},
  ): Promise<Turn> {
    if (this.busy) throw new InvalidRequestError(`thread ${this.id} already has an active turn`);
    const op = new TurnOperation(this.hostFor(), true, this.usageTotal);
    this.active = op;
    this.host.route(this.id, op);
    const bound = op.bindOnFirstStart();
    try {
      const set = await this.host.request<{ goal: ThreadGoal }>("thread/goal/set", {
        threadId: this.id,
        status: "active",
        ...(opts.tokenBudget !== undefined ? { tokenBudget: opts.tokenBudget } : {}),
      });
      if (set.goal.status !== "active") {
        throw new InvalidRequestError(`goal cannot be resumed from status ${set.goal.status}`);
      }
      const drive = opts.drive;
      if (drive) {
        // One continuation at a time: the pause goes right behind the activation, so the engine runs the turn the
        // activation started and no other; the driver decides about each next one.
        await this.setGoal({ status: "paused" });
        op.afterEngineTurn((turn) => this.driven(drive, turn, op));
      }
      op.armGoal(set.goal.status);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new InvalidRequestError("timed out waiting for the goal turn to start")),
          opts.startTimeoutMs ?? 15_000,
        );
      });
      try {
        await Promise.race([bound, timeout]);
      } finally {
        clearTimeout(timer);
      }
    } catch (err) {
      this.host.unroute(this.id, op);
      this.active = null;
      await this.pauseGoalQuietly();
      throw err;
    }
    return new Turn(op);
  }

  /** Asks the driver after an engine turn; runs exactly one more continuation when it says so. */
  private async driven(
    drive: GoalDriver,
    turn: ProtocolTurn,
    op: TurnOperation,
  ): Promise<"continue" | "finish"> {
    const goal = await this.getGoal();
    if (
      !goal ||
      goal.status !== "paused" ||
      !(await drive({ turn, goal, engineTurns: op.engineTurnCount }))
    ) {
      return "finish";
    }
    // Activation starts a continuation on the idle thread; the pause sent right behind it (pipelined) lets that
    // one run and the engine start no other by itself.
    const active = this.setGoal({ status: "active" });
    const paused = this.setGoal({ status: "paused" });
    await Promise.all([active, paused]);
    return "continue";
  }

  /** `turn(input, opts)` then `run()`. */
  async run(input: Input, opts: TurnOptions = {}): Promise<TurnResult> {
    return (await this.turn(input, opts)).run();
  }

  async getGoal(): Promise<ThreadGoal | null> {
    const res = await this.host.request<{ goal: ThreadGoal | null }>("thread/goal/get", {
      threadId: this.id,
    });
    return res.goal;
  }

  /** Sets, replaces, pauses or resumes the thread goal. Setting `active` on an idle thread starts work. */
  async setGoal(opts: GoalSetOptions): Promise<ThreadGoal> {
    const res = await this.host.request<{ goal: ThreadGoal }>("thread/goal/set", {
      threadId: this.id,
      ...opts,
    });
    return res.goal;
  }

  async clearGoal(): Promise<boolean> {
    const res = await this.host.request<{ cleared: boolean }>("thread/goal/clear", { threadId: this.id });
    return res.cleared;
  }

  /**
   * The thread's engine turns, oldest first, with the ids of the items each one holds (the engine's summary
   * view: at least the user message and the final answer). Used to map a point of the conversation to the
   * engine turn ids that `revert` and `fork` take.
   */
  async turns(): Promise<EngineTurnSummary[]> {
    const out: EngineTurnSummary[] = [];
    for (let cursor: string | null = null; ; ) {
      const page: ThreadTurnsListResponse = await this.host.request<ThreadTurnsListResponse>(
        "thread/turns/list",
        {
          threadId: this.id,
          sortDirection: "asc",
          itemsView: "summary",
          limit: 100,
          ...(cursor ? { cursor } : {}),
        },
      );
      for (const t of page.data) out.push({ id: t.id, status: t.status, itemIds: t.items.map((i) => i.id) });
      if (!page.nextCursor || page.data.length === 0) return out;
      cursor = page.nextCursor;
    }
  }

  /** Command items of the thread's finished turns (the most recent ones), see `Turn.stopProcesses`. */
  private readonly earlierCommands = new Set<string>();

  private rememberCommand(itemId: string): void {
    this.earlierCommands.add(itemId);
    if (this.earlierCommands.size > MAX_EARLIER_COMMANDS) {
      this.earlierCommands.delete(this.earlierCommands.values().next().value!);
    }
  }

  /** The processes the thread's commands started that are still running (see processes.ts). */
  backgroundProcesses(): Promise<BackgroundProcess[]> {
    return listBackgroundProcesses((m, p) => this.host.request(m, p), this.id);
  }

  /** Ends one of them with its whole process tree; false if it had already exited. */
  terminateProcess(processId: string): Promise<boolean> {
    return terminateBackgroundProcess((m, p) => this.host.request(m, p), this.id, processId);
  }

  /**
   * Rewrites the thread's stored conversation to the turns before `beforeTurnId` (that turn and every later one
   * are dropped; the model's next request holds only the kept turns). Files are not touched. The thread must be
   * idle.
   */
  async revert(beforeTurnId: string): Promise<void> {
    await this.host.request("thread/revert", { threadId: this.id, beforeTurnId });
  }

  /**
   * Copies the thread into a new persisted thread holding its turns up to `lastTurnId` (inclusive; all of them
   * when absent), running in `cwd`. The copy is not kept loaded in this process: whoever continues it resumes it by
   * id (e.g. `Codex.resumeThread`). Goals are not copied (the engine does not). Returns the new thread's id.
   */
  async fork(opts: { lastTurnId?: string | null; cwd?: string } = {}): Promise<string> {
    const res = await this.host.request<{ thread: { id: string } }>("thread/fork", {
      threadId: this.id,
      excludeTurns: true,
      ...(opts.lastTurnId ? { lastTurnId: opts.lastTurnId } : {}),
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    });
    const forked = res.thread.id;
    await this.host.request("thread/unsubscribe", { threadId: forked }).catch(() => {});
    return forked;
  }

  /**
   * The MCP servers' start-up updates (starting, ready, failed) seen since the last call. The engine starts a
   * thread's MCP servers when it loads the thread, before any turn runs, so these are kept here for the caller
   * to pick up (they also appear in the stream of a turn that is running when they arrive).
   */
  takeMcpStatusUpdates(): McpServerStatusUpdatedNotification[] {
    const taken = this.mcpUpdates;
    this.mcpUpdates = [];
    return taken;
  }

  /** Called by the client for every notification of this thread. */
  observe(method: string, params: Record<string, unknown>): void {
    if (method === "mcpServer/startupStatus/updated") {
      this.mcpUpdates.push(params as unknown as McpServerStatusUpdatedNotification);
      if (this.mcpUpdates.length > 100) this.mcpUpdates.shift();
      return;
    }
    if (method === "thread/tokenUsage/updated") {
      const usage = params.tokenUsage as { total?: TokenUsageBreakdown } | undefined;
      if (usage?.total) this.usageTotal = usage.total;
    }
  }

  private async pauseGoalQuietly(): Promise<void> {
    try {
      if (await this.getGoal()) await this.setGoal({ status: "paused" });
    } catch {
      /* the original error matters more */
    }
  }

  private hostFor() {
    return {
      threadId: this.id,
      request: <T>(method: string, params: unknown) => this.host.request<T>(method, params),
      release: (op: TurnOperation) => {
        this.host.unroute(this.id, op);
        if (this.active === op) this.active = null;
        for (const id of op.commands.keys()) this.rememberCommand(id);
      },
      earlierCommand: (itemId: string) => this.earlierCommands.has(itemId),
    };
  }
}
