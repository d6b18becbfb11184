/**
 * What the engine reports during one logical turn, written to the session's event log: items (stored when they
 * start, so what a client saw survives a crash, and updated when they complete), deltas, answered engine requests;
 * goal progress goes to the turn's GoalRun. Appends are queued in order and not awaited one by one; `settled()`
 * waits for all of them.
 */
import type { Thread, ThreadItem, TurnEvent } from "@codex-agent-api/codex";
import type { Logger } from "pino";
import type { AppendOptions, EventHub } from "../../platform/stream/hub.js";
import type { HostPaths } from "../../platform/workspace/environment-paths.js";
import type { DeltaKind, LogEvent, StoredItem } from "../../store/types.js";
import type { GoalRun } from "../goals/run.js";
import { ACTION_METHODS } from "./actions.js";
import { mapItemPaths } from "./item-paths.js";
import { SubagentRecorder } from "./subagents.js";

/** Which stream a delta belongs to. */
const DELTA_KIND: Partial<Record<TurnEvent["method"], DeltaKind>> = {
  "item/agentMessage/delta": "agent_message",
  "item/reasoning/summaryTextDelta": "reasoning",
  "item/commandExecution/outputDelta": "command_output",
  "item/fileChange/outputDelta": "file_change",
};

/** How much of a running command's streamed output is kept, for its item if the turn is stopped before it ends. */
const KEPT_OUTPUT = 64 * 1024;

/** How long a request about an item waits for the item's start to be logged. */
const ITEM_WAIT_MS = 1000;

/** The OOM kills where a session's commands run so far, and its memory limit. */
export interface MemoryKills {
  kills: number;
  limitBytes: number;
  /** What has the limit: a sandbox's container, or (local backend) the process group of the session's engine. */
  holder: "container" | "engine group";
}

export class TurnRecorder {
  /** Position of each engine item in the turn, in start order (the official `output_index`). */
  private readonly indexes = new Map<string, number>();
  private last: Promise<unknown> = Promise.resolve();
  private goalWork: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private thread: Thread | null = null;
  private readonly subagents: SubagentRecorder;
  /** The OOM kills where the commands run, as last read at the turn's start or a command's end. */
  private oomSeen: number | null = null;
  /** Commands started and not finished, with the tail of the output they streamed (see `openCommands`). */
  private readonly running = new Map<
    string,
    { item: StoredItem; output: string; cut: boolean; oomKills: number | null }
  >();
  /** The types of the items this turn has logged (see `TurnActivity`). */
  private readonly types = new Set<string>();
  /** Items whose start has been handed to the log, and who waits for one. */
  private readonly started = new Set<string>();
  private readonly startWaiters = new Map<string, Array<() => void>>();

  constructor(
    private readonly hub: EventHub,
    private readonly logger: Logger,
    private readonly now: () => number,
    readonly sessionId: string,
    readonly turnId: string,
    private readonly goal: GoalRun | null,
    /** Where the session's workspace is as its clients see it: the paths in items are stored that way. */
    private readonly paths: HostPaths,
    /** The OOM kills in the session's container so far and its memory limit (the container backend), or null. */
    private readonly memoryKills: (() => MemoryKills | null) | null = null,
  ) {
    this.subagents = new SubagentRecorder(
      {
        hub,
        now,
        mapItem: (item) => mapItemPaths(item, paths),
        log: (event, opts = {}) => this.logAs(event, opts),
        indexOf: (id) => this.indexOf(id),
      },
      sessionId,
    );
  }

  /** Appends an event of this turn (in order with the others). */
  log(event: LogEvent, opts: Omit<AppendOptions, "turn_id"> = {}): void {
    this.logAs(event, { ...opts, turn_id: this.turnId });
  }

  /** Appends an event in order with this turn's (for a subagent's turn: with its own turn id). */
  private logAs(event: LogEvent, opts: AppendOptions): void {
    const p = this.hub.append(this.sessionId, event, opts);
    p.catch((err: unknown) => {
      this.failure ??= err;
      this.logger.error(
        { session: this.sessionId, turn: this.turnId, err: String(err) },
        "event append failed",
      );
    });
    this.last = p;
  }

  /** Resolves when everything recorded so far is stored and the goal hooks have run; rejects on a write error. */
  async settled(): Promise<void> {
    this.logMcpStatus();
    await this.subagents.settle().catch((err: unknown) => {
      this.failure ??= err;
    });
    await this.goalWork;
    await this.last.catch(() => undefined);
    if (this.failure) throw this.failure;
  }

  /** The `output_index` of each item of the turn so far. */
  get outputIndexes(): ReadonlyMap<string, number> {
    return this.indexes;
  }

  /** The types of the items the turn has started or finished so far (a {@link TurnActivity}). */
  get itemTypes(): ReadonlySet<string> {
    return this.types;
  }

  indexOf(itemId: string): number {
    let index = this.indexes.get(itemId);
    if (index === undefined) {
      index = this.indexes.size;
      this.indexes.set(itemId, index);
    }
    return index;
  }

  /**
   * Resolves once the start of the item has been handed to the log (anything logged afterwards follows it). An
   * engine request about an item arrives right after the item's start, which may still be on its way here; after
   * a second without it, go on anyway (an item that never started must not hold up the request).
   */
  itemLogged(itemId: string): Promise<void> {
    if (this.started.has(itemId)) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ITEM_WAIT_MS);
      timer.unref();
      const list = this.startWaiters.get(itemId) ?? [];
      list.push(() => {
        clearTimeout(timer);
        resolve();
      });
      this.startWaiters.set(itemId, list);
    });
  }

  /**
   * Where the turn's thread keeps its MCP servers' start-up updates (they may arrive before the turn): logged now
   * and whenever the turn's stream reports one.
   */
  attach(thread: Thread): void {
    this.thread = thread;
    // The OOM kills before this turn's first command (a command's own start may be told after it was killed).
    this.oomSeen = this.memoryKills?.()?.kills ?? null;
    this.logMcpStatus();
  }

  private logMcpStatus(): void {
    for (const u of this.thread?.takeMcpStatusUpdates() ?? []) {
      this.log({
        type: "mcp_server.status",
        data: { server_label: u.name, status: u.status, error: u.error },
      });
    }
  }

  /** Whether the start of the item has been handed to the log. */
  itemStarted(itemId: string): boolean {
    return this.started.has(itemId);
  }

  record(event: TurnEvent): void {
    switch (event.method) {
      case "mcpServer/startupStatus/updated":
        this.logMcpStatus();
        return;
      case "client/subagent/notification":
        this.subagents.onNotification(event.params);
        return;
      case "item/started": {
        // MCP start-up news that arrived after the thread was attached but before this turn's stream began is
        // kept by the thread only: it is logged before the turn's first item (and at the latest when it settles).
        this.logMcpStatus();
        const item = mapItemPaths(event.params.item as ThreadItem, this.paths) as ThreadItem;
        this.log(
          { type: "item.started", data: { item, output_index: this.indexOf(item.id) } },
          { item: { kind: "start", turn_id: this.turnId, item, created_at: this.now() } },
        );
        this.started.add(item.id);
        this.types.add(item.type);
        if (item.type === "commandExecution") {
          // Counted from the last count seen before it (the turn's start or the last command's end), not from its
          // start's notice: a command killed at once (a big allocation) may be dead when its start is told.
          const now = this.memoryKills?.()?.kills ?? null;
          const oomKills = now !== null && this.oomSeen !== null ? Math.min(now, this.oomSeen) : now;
          this.running.set(item.id, { item, output: "", cut: false, oomKills });
        }
        for (const w of this.startWaiters.get(item.id) ?? []) w();
        this.startWaiters.delete(item.id);
        return;
      }
      case "item/completed": {
        const item = this.explained(mapItemPaths(event.params.item as ThreadItem, this.paths) as ThreadItem);
        this.finishItem(item);
        if (item.type === "collabAgentToolCall") this.subagents.onToolCall(item);
        // A client's answer to a function call: its own item in the history, after the call.
        if (item.type === "dynamicToolCall" && item.contentItems && item.success !== null) {
          this.finishItem({
            type: "clientToolResult",
            id: `${item.id}_output`,
            callId: item.id,
            success: item.success,
            contentItems: item.contentItems.flatMap((c) => (c.type === "inputAudio" ? [] : [c])),
          });
        }
        return;
      }
      case "item/agentMessage/delta":
      case "item/reasoning/summaryTextDelta":
      case "item/commandExecution/outputDelta":
      case "item/fileChange/outputDelta":
        if (event.method === "item/commandExecution/outputDelta") {
          this.keepOutput(event.params.itemId, event.params.delta);
        }
        this.log({
          type: "item.delta",
          data: {
            item_id: event.params.itemId,
            output_index: this.indexOf(event.params.itemId),
            kind: DELTA_KIND[event.method]!,
            delta: event.params.delta,
          },
        });
        return;
      // Goal hooks are called at once (a cap acts before anything else); their bookkeeping is awaited in order.
      case "client/goal/engineTurnStarted":
        if (this.goal) this.chainGoalWork(this.goal.onEngineTurnStarted(event.params.index));
        return;
      case "client/goal/updated":
        if (this.goal) this.chainGoalWork(this.goal.onEngineGoalUpdated(event.params.goal));
        return;
      case "thread/tokenUsage/updated":
        if (this.goal) {
          const { total, last } = event.params.tokenUsage;
          this.chainGoalWork(this.goal.onTokenUsage(total, last));
        }
        return;
      case "client/serverRequest/answered":
        // Required actions are logged by TurnActions (action.required / action.resolved).
        if (ACTION_METHODS.has(event.params.requestMethod)) return;
        this.log({
          type: "server_request.answered",
          data: {
            request_method: event.params.requestMethod,
            request: event.params.request,
            response: event.params.response,
            defaulted: event.params.defaulted,
          },
        });
        return;
      default:
        return;
    }
  }

  /**
   * The commands of the turn that started and never finished (the turn is ending: they were stopped with it), each
   * with the output it streamed (its last {@link KEPT_OUTPUT} characters).
   */
  openCommands(): Array<{ item: StoredItem; output: string }> {
    return [...this.running.values()].map((c) => ({
      item: c.item,
      output: c.cut ? `…${c.output}` : c.output,
    }));
  }

  private keepOutput(itemId: string, delta: string): void {
    const c = this.running.get(itemId);
    if (!c) return;
    c.output += delta;
    if (c.output.length > KEPT_OUTPUT) {
      c.output = c.output.slice(-KEPT_OUTPUT);
      c.cut = true;
    }
  }

  /**
   * A command during which its container's (or engine group's) OOM kills went up had a process killed for memory
   * (itself, when it ended by SIGKILL: exit 137): its item's output says so, with the limit it ran into.
   */
  private explained(item: ThreadItem): ThreadItem {
    if (item.type !== "commandExecution") return item;
    const before = this.running.get(item.id)?.oomKills;
    const now = before === null || before === undefined ? null : this.memoryKills?.();
    if (now) this.oomSeen = now.kills;
    if (before === null || before === undefined || !now || now.kills <= before) return item;
    const output = item.aggregatedOutput ?? "";
    const limit = `its ${now.holder}'s limit is ${Math.round(now.limitBytes / 2 ** 20)} MiB`;
    const why =
      item.exitCode === 137
        ? `[command killed: out of memory (${limit}), exit code 137]`
        : `[a process of this command was killed: out of memory (${limit})]`;
    return { ...item, aggregatedOutput: `${output}${output && !output.endsWith("\n") ? "\n" : ""}${why}` };
  }

  private finishItem(item: StoredItem): void {
    this.running.delete(item.id);
    this.types.add(item.type);
    this.log(
      { type: "item.completed", data: { item, output_index: this.indexOf(item.id) } },
      { item: { kind: "finish", turn_id: this.turnId, item, created_at: this.now(), state: "completed" } },
    );
  }

  private chainGoalWork(work: Promise<void>): void {
    work.catch(this.goalError);
    this.goalWork = this.goalWork.then(() => work).catch(this.goalError);
  }

  private readonly goalError = (err: unknown) => {
    this.logger.warn(
      { session: this.sessionId, turn: this.turnId, err: String(err) },
      "goal bookkeeping failed",
    );
  };
}
