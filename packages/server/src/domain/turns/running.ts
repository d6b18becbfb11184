/**
 * The turns running in this process: at most one per session, added once its session is claimed and removed once
 * its end is stored (or could not be). Also waiting for a turn's end wherever it runs: here through the turn itself
 * (or a waiter its end resolves), on another instance through the session's log.
 */
import type { Thread, Turn } from "@codex-agent-api/codex";
import type { Timer } from "../../kernel/clock.js";
import { isTurnEnd } from "../../model/events.js";
import type { Cluster } from "../../platform/cluster/types.js";
import type { EventHub } from "../../platform/stream/hub.js";
import type { SessionRecord, Store, TurnRecord, TurnStatus } from "../../store/types.js";
import type { GoalRun } from "../goals/run.js";
import type { TurnActions } from "./actions.js";
import type { TurnRecorder } from "./recorder.js";

/** Why a running turn is being stopped: how it ends then. */
export interface Stop {
  status: TurnStatus;
  code: string;
  message: string;
}

export interface ActiveTurn {
  session: SessionRecord;
  turn: TurnRecord;
  recorder: TurnRecorder;
  /** What the turn waits for from the client. */
  actions: TurnActions;
  goal: GoalRun | null;
  engineTurn: Turn | null;
  /** Resolves with the engine turn once it started (null if the turn ended before). */
  engineReady: Promise<Turn | null>;
  setEngineTurn: (t: Turn | null) => void;
  thread: Thread | null;
  /** Index of the engine process running the turn. */
  engine: number | null;
  /** Why the turn is being stopped (cancel, timeout, shutdown), if it is. */
  stop: Stop | null;
  timer: Timer | null;
  done: Promise<TurnRecord>;
}

export class RunningTurns {
  private readonly active = new Map<string, ActiveTurn>();
  private readonly waiters = new Map<string, Array<(t: TurnRecord) => void>>();
  private readonly idleListeners: Array<(sessionId: string) => void> = [];

  constructor(private readonly deps: { store: Store; hub: EventHub; cluster: Pick<Cluster, "instanceId"> }) {}

  get(sessionId: string): ActiveTurn | undefined {
    return this.active.get(sessionId);
  }

  has(sessionId: string): boolean {
    return this.active.has(sessionId);
  }

  get size(): number {
    return this.active.size;
  }

  sessionIds(): string[] {
    return [...this.active.keys()];
  }

  add(active: ActiveTurn): void {
    this.active.set(active.session.id, active);
  }

  /** Whether this is still its session's running turn. */
  isRunning(active: ActiveTurn): boolean {
    return this.active.get(active.session.id) === active;
  }

  /** The turn is no longer running here (its end could not be recorded): nobody is told. */
  drop(sessionId: string): void {
    this.active.delete(sessionId);
  }

  /** The turn's end is stored: it no longer runs here, and whoever waits for it gets `outcome`. */
  ended(sessionId: string, turnId: string, outcome: TurnRecord): void {
    this.active.delete(sessionId);
    for (const w of this.waiters.get(turnId) ?? []) w(outcome);
    this.waiters.delete(turnId);
  }

  /** Called when a turn has ended and its session is idle again. */
  onIdle(listener: (sessionId: string) => void): void {
    this.idleListeners.push(listener);
  }

  /** Tells the idle listeners that the session's turn has ended. */
  idle(sessionId: string): void {
    for (const l of this.idleListeners) l(sessionId);
  }

  /** Resolves with the turn once it is terminal (immediately if it already is). */
  async waitFor(sessionId: string, turnId: string): Promise<TurnRecord> {
    const active = this.active.get(sessionId);
    if (active && active.turn.id === turnId) return active.done;
    if (!active) {
      const owner = (await this.deps.store.getSession(sessionId))?.owner_instance;
      if (owner && owner !== this.deps.cluster.instanceId) return this.waitForElsewhere(sessionId, turnId);
    }
    const waiting = new Promise<TurnRecord>((resolve) => {
      const list = this.waiters.get(turnId) ?? [];
      list.push(resolve);
      this.waiters.set(turnId, list);
    });
    const stored = await this.deps.store.getTurn(sessionId, turnId);
    if (stored && stored.status !== "in_progress" && stored.status !== "queued") {
      this.waiters.delete(turnId);
      return stored;
    }
    return waiting;
  }

  /** A turn another instance runs: its end arrives through the session's log. */
  private async waitForElsewhere(sessionId: string, turnId: string): Promise<TurnRecord> {
    const { store, hub } = this.deps;
    const from = (await store.firstEventSeqOfTurn(sessionId, turnId)) ?? 1;
    const sub = hub.subscribe(sessionId, { afterSeq: from - 1, until: (e) => isTurnEnd(e, turnId) });
    for await (const e of sub) if (isTurnEnd(e, turnId)) break;
    const turn = await store.getTurn(sessionId, turnId);
    if (!turn) throw new Error(`turn ${turnId} of session ${sessionId} is gone`);
    return turn;
  }
}
