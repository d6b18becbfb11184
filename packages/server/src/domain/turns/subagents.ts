/**
 * Subagents: the engine's multi-agent tools (when the agent enables them) spawn child threads. Each child is a
 * subagent of the session — recorded on the session (`extra.subagents`: opened, closed, reopened) — and each of
 * its turns is a turn of the session with `subagent_id` set, with its own items and events in the session's log,
 * interleaved with the root turn's (which the client follows by `subagent_id: null`).
 */
import type { SubagentNotificationEvent, ThreadItem } from "@codex-agent-api/codex";
import { newId } from "../../model/ids.js";
import { subagentIdOf } from "../../model/subagents.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { StoredItem, SubagentRecord, TurnRecord, TurnStatus, Usage } from "../../store/types.js";
import { addUsage, toUsage, ZERO_USAGE } from "../usage.js";

/** What a logged item does to logs (the recorder's ordered append). */
type Log = (event: Parameters<EventHub["append"]>[1], opts?: Parameters<EventHub["append"]>[2]) => void;

interface ChildTurn {
  turn: TurnRecord;
  usage: Usage | null;
}

const END_STATUS: Record<string, TurnStatus> = {
  completed: "completed",
  failed: "failed",
  interrupted: "cancelled",
};

export class SubagentRecorder {
  /** The running turn of each child thread. */
  private readonly turns = new Map<string, ChildTurn>();

  constructor(
    private readonly deps: {
      hub: EventHub;
      now: () => number;
      log: Log;
      indexOf: (itemId: string) => number;
      /** An engine item as it is stored (its host paths as the session's clients see them). */
      mapItem: (item: ThreadItem) => StoredItem;
    },
    readonly sessionId: string,
  ) {}

  /** A multi-agent tool call of the root turn completed: a subagent was opened, closed or reopened. */
  onToolCall(item: Extract<ThreadItem, { type: "collabAgentToolCall" }>): void {
    if (item.status !== "completed") return;
    const change =
      item.tool === "spawnAgent"
        ? "created"
        : item.tool === "closeAgent"
          ? "closed"
          : item.tool === "resumeAgent"
            ? "active"
            : null;
    if (!change) return;
    for (const thread of item.receiverThreadIds) {
      void this.update(thread, change, change === "created" ? (item.prompt ?? null) : undefined);
    }
  }

  /** A child thread's notification (routed to the root turn while it runs). */
  onNotification(e: SubagentNotificationEvent["params"]): void {
    const n = e.notification;
    const child = e.childThreadId;
    switch (n.method) {
      case "turn/started":
        void this.startTurn(child);
        return;
      case "turn/completed":
        void this.endTurn(
          child,
          END_STATUS[n.params.turn.status] ?? "failed",
          n.params.turn.error?.message ?? null,
        );
        return;
      case "thread/tokenUsage/updated": {
        const t = this.turns.get(child);
        if (t) t.usage = addUsage(t.usage ?? ZERO_USAGE, toUsage(n.params.tokenUsage.last));
        return;
      }
      case "item/started":
      case "item/completed": {
        const t = this.turns.get(child);
        if (!t) return;
        const item = this.deps.mapItem(n.params.item);
        const started = n.method === "item/started";
        this.deps.log(
          {
            type: started ? "item.started" : "item.completed",
            data: { item, output_index: this.deps.indexOf(item.id) },
          },
          {
            turn_id: t.turn.id,
            item: started
              ? { kind: "start", turn_id: t.turn.id, item, created_at: this.deps.now() }
              : { kind: "finish", turn_id: t.turn.id, item, created_at: this.deps.now(), state: "completed" },
          },
        );
        return;
      }
      case "item/agentMessage/delta":
      case "item/reasoning/summaryTextDelta":
      case "item/commandExecution/outputDelta": {
        const t = this.turns.get(child);
        if (!t) return;
        const kind =
          n.method === "item/agentMessage/delta"
            ? "agent_message"
            : n.method === "item/reasoning/summaryTextDelta"
              ? "reasoning"
              : "command_output";
        this.deps.log(
          {
            type: "item.delta",
            data: {
              item_id: n.params.itemId,
              output_index: this.deps.indexOf(n.params.itemId),
              kind,
              delta: n.params.delta,
            },
          },
          { turn_id: t.turn.id },
        );
        return;
      }
      default:
        return;
    }
  }

  /**
   * The root turn is ending: a subagent turn still open will not be followed any further (its thread may go on in
   * the engine, unseen): it ends failed, saying so.
   */
  async settle(): Promise<void> {
    for (const child of [...this.turns.keys()]) {
      await this.endTurn(
        child,
        "failed",
        "The session's turn ended before this subagent turn; its later work is not recorded.",
      );
    }
  }

  /** Records the child's new turn (and the subagent active): both queued at once, before its items. */
  private startTurn(child: string): Promise<void> {
    const { hub, now } = this.deps;
    const t = now();
    const turn: TurnRecord = {
      id: newId("turn_"),
      session_id: this.sessionId,
      created_at: t,
      started_at: t,
      completed_at: null,
      status: "in_progress",
      input: [],
      error: null,
      usage: null,
      goal: null,
      subagent_id: subagentIdOf(child),
    };
    this.turns.set(child, { turn, usage: null });
    const opened = this.update(child, "active");
    const inserted = hub.commit(this.sessionId, async (tx, log) => {
      await tx.insertTurn(turn);
      log({ type: "turn.started", data: { turn } }, { turn_id: turn.id });
    });
    return Promise.all([opened, inserted]).then(() => undefined);
  }

  private async endTurn(child: string, status: TurnStatus, message: string | null): Promise<void> {
    const open = this.turns.get(child);
    if (!open) return;
    this.turns.delete(child);
    const ended: TurnRecord = {
      ...open.turn,
      status,
      completed_at: this.deps.now(),
      usage: open.usage,
      error:
        status === "failed" ? { code: "server_error", message: message ?? "The subagent turn failed" } : null,
    };
    const type =
      status === "completed" ? "turn.completed" : status === "failed" ? "turn.failed" : "turn.cancelled";
    await this.deps.hub.commit(this.sessionId, async (tx, log) => {
      for (const item of await tx.closeOpenItems(this.sessionId, ended.id, "failed")) {
        log({ type: "item.completed", data: { item: item.data, output_index: -1 } }, { turn_id: ended.id });
      }
      await tx.updateTurn(this.sessionId, ended.id, {
        status: ended.status,
        completed_at: ended.completed_at,
        usage: ended.usage,
        error: ended.error,
      });
      log({ type, data: { turn: ended } }, { turn_id: ended.id });
    });
  }

  /** Records a subagent's opening, closing or reopening on the session (once per change). */
  private async update(child: string, change: "created" | "active" | "closed", instructions?: string | null) {
    const { hub, now } = this.deps;
    const id = subagentIdOf(child);
    await hub.commit(this.sessionId, async (tx, log) => {
      const s = await tx.getSession(this.sessionId);
      if (!s) return;
      const all = { ...((s.extra.subagents as Record<string, SubagentRecord> | undefined) ?? {}) };
      const before = all[id];
      const status = change === "closed" ? "closed" : "active";
      if (before && change === "created") {
        // Its first turn was seen before the spawn completed: only the instructions are new.
        if (before.instructions === null && instructions) {
          all[id] = { ...before, instructions };
          await tx.updateSession(this.sessionId, { extra: { ...s.extra, subagents: all } });
        }
        return;
      }
      if (before && before.status === status) return;
      const t = now();
      const next: SubagentRecord = {
        id,
        thread_id: child,
        instructions: instructions !== undefined ? instructions : (before?.instructions ?? null),
        status,
        opened_at: before?.opened_at ?? t,
        closed_at: status === "closed" ? t : null,
      };
      all[id] = next;
      await tx.updateSession(this.sessionId, { extra: { ...s.extra, subagents: all } });
      log({ type: "subagent.updated", data: { subagent: next, change: before ? change : "created" } });
    });
  }
}
