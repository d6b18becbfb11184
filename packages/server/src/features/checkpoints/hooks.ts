/**
 * The checkpoints the lifecycle of sessions and turns makes (see service.ts's header for when): a baseline when a
 * session's workspace is first used; before a turn, one when the tree changed outside the agent; after every
 * engine turn, and after a turn that failed or was stopped, each with the marks of the turn's bounds. A deleted
 * session's own store is destroyed; in a shared store its checkpoints and marks go. Errors are the caller's: the
 * service logs them (a checkpoint never fails a turn).
 */
import type { Logger } from "pino";
import type { TurnActivity } from "../../domain/feature.js";
import { SAFE_ID, sessionMeta, turnMark } from "../../model/checkpoint-names.js";
import type { CheckpointInfo } from "../../model/checkpoints.js";
import type { SessionRecord, TurnRecord } from "../../store/types.js";
import type { CheckpointAnnouncer } from "./announce.js";
import { formatConv } from "./conversation.js";
import type { Housekeeping } from "./housekeeping.js";
import type { CheckpointStores } from "./stores.js";
import type { StoreUsage } from "./usage.js";

/** Engine items that never change a file. Any other (a command, a patch, a tool or subagent call…) may. */
const HARMLESS_ITEMS: ReadonlySet<string> = new Set([
  "userMessage",
  "agentMessage",
  "reasoning",
  "plan",
  "webSearch",
  "contextCompaction",
  "imageView",
  "enteredReviewMode",
  "exitedReviewMode",
]);

/** What the hooks remember of a running turn. */
interface TurnState {
  before: string | null;
  engineTurns: number;
}

export class CheckpointHooks {
  private readonly turns = new Map<string, TurnState>();

  constructor(
    private readonly deps: {
      logger: Logger;
      stores: CheckpointStores;
      announcer: CheckpointAnnouncer;
      housekeeping: Housekeeping;
      /** Told that a store changed. */
      usage: StoreUsage;
    },
  ) {}

  /** After a session was created: the first checkpoint of its workspace. */
  async baseline(s: SessionRecord): Promise<void> {
    if (s.extra.checkpoint_fork) return; // its workspace comes from the checkpoint it forks
    const ws = this.deps.stores.of(s);
    const repo = await this.deps.stores.repoOf(ws);
    // A shared directory already in use has its baseline (the next turn records what changed since).
    if (ws.shared && (await repo.latest())) return;
    const r = await repo.record((first) => ({
      label: first ? "baseline" : "before first use",
      meta: sessionMeta(s, { kind: first ? "baseline" : "external", conv: "base" }),
    }));
    if (r.created) await this.deps.announcer.announce(s, r.created, null);
  }

  async beforeTurn(s: SessionRecord, t: TurnRecord): Promise<void> {
    const state: TurnState = { before: null, engineTurns: 0 };
    this.turns.set(t.id, state);
    const ws = this.deps.stores.of(s);
    ws.idle?.cancel();
    const repo = await this.deps.stores.repoOf(ws);
    const conv = formatConv({ kind: "before", turn: t.id });
    const r = await repo.record((first) => ({
      label: first ? "baseline" : "changed outside the agent",
      meta: sessionMeta(s, { kind: first ? "baseline" : "external", turn_id: t.id, conv }),
    }));
    state.before = r.head?.id ?? null;
    if (r.created) await this.deps.announcer.announce(s, r.created, t.id);
  }

  async afterEngineTurn(s: SessionRecord, t: TurnRecord, activity: TurnActivity): Promise<void> {
    const state = this.turns.get(t.id) ?? { before: null, engineTurns: 0 };
    this.turns.set(t.id, state);
    state.engineTurns++;
    const k = state.engineTurns;
    // A plain turn that used no tool (only messages and reasoning) cannot have changed a file: no scan (anything
    // else that changed the tree meanwhile is found before the next turn, as a change made outside the agent).
    const unchanged = k === 1 && t.goal === null && !usedTools(activity);
    const created = await this.afterTurnCheckpoint(s, t, state, k, { likelyChanged: true, unchanged });
    if (created) await this.deps.announcer.announce(s, created, t.id);
  }

  async afterTurn(s: SessionRecord, t: TurnRecord): Promise<void> {
    const state = this.turns.get(t.id);
    this.turns.delete(t.id);
    const ws = this.deps.stores.of(s);
    try {
      // No hook of ours ran for this turn (it ended before the engine started): nothing to record.
      if (!state) return;
      // A turn that ended normally was recorded after its last engine turn; one that failed or was stopped may
      // have changed files since.
      if (t.status === "completed" && state.engineTurns > 0) return;
      const created = await this.afterTurnCheckpoint(s, t, state, null, {
        likelyChanged: false,
        unchanged: false,
      });
      // The turn's end is stored: the event goes outside its span (a client replaying the turn must not wait
      // for it), naming it in the checkpoint.
      if (created) await this.deps.announcer.announce(s, created, null);
    } finally {
      this.deps.housekeeping.scheduleIdle(ws);
    }
  }

  /** After a session was deleted (or expired): its own store goes, or its part of a shared one. */
  async forgetSession(s: SessionRecord): Promise<void> {
    const { stores, usage } = this.deps;
    const ws = stores.of(s);
    ws.sessions.delete(s.id);
    const repo = await stores.repoOf(ws);
    if (!ws.shared) {
      ws.idle?.cancel();
      stores.forget(ws);
      await repo.destroy();
      usage.changed();
      return;
    }
    // A shared store keeps the others' checkpoints: this session's go (the latest one stays, whoever made it).
    if (SAFE_ID.test(s.id)) await repo.dropMarks(`sessions/${s.id}`);
    await repo.prune({ where: (c) => c.meta.session_id === s.id });
    usage.changed();
  }

  private async afterTurnCheckpoint(
    s: SessionRecord,
    t: TurnRecord,
    state: TurnState,
    k: number | null,
    { likelyChanged, unchanged }: { likelyChanged: boolean; unchanged: boolean },
  ): Promise<CheckpointInfo | null> {
    const repo = await this.deps.stores.repoOf(this.deps.stores.of(s));
    const marks: Record<string, string | null> = {};
    if (SAFE_ID.test(s.id) && SAFE_ID.test(t.id)) {
      if (state.before) marks[turnMark(s.id, t.id, "before")] = state.before;
      marks[turnMark(s.id, t.id, "after")] = null;
    }
    const r = await repo.record(
      () => ({
        label: k === null ? `turn ${t.status}` : k === 1 ? "turn" : `turn, engine turn ${k}`,
        meta: sessionMeta(s, {
          kind: "turn",
          turn_id: t.id,
          ...(k !== null ? { engine_turn: String(k) } : {}),
          conv: formatConv({ kind: "after", turn: t.id, engineTurn: k }),
        }),
      }),
      { marks, prefetchExcluded: likelyChanged, unchanged },
    );
    r.marked?.catch((err: unknown) =>
      this.deps.logger.error(
        { session: s.id, turn: t.id, err: String(err) },
        "could not mark a turn's checkpoints",
      ),
    );
    return r.created;
  }
}

/** Whether the turn's items include anything but messages and reasoning (a command, a patch, any tool call). */
function usedTools(activity: TurnActivity): boolean {
  for (const type of activity.itemTypes) if (!HARMLESS_ITEMS.has(type)) return true;
  return false;
}
