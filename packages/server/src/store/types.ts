/**
 * The durable store: one asynchronous interface, implemented by the embedded SQLite store and the PostgreSQL
 * store, both checked by the same contract suite (records: records.ts).
 */
import type {
  AgentRecord,
  Appended,
  EventRecord,
  GoalRecord,
  GoalStatus,
  IdempotencyRecord,
  ItemRecord,
  ItemState,
  KeyRecord,
  NewEvent,
  SessionRecord,
  TurnRecord,
  TurnStatus,
} from "./records.js";

export { FencedError } from "./fenced.js";
export type * from "./records.js";

export interface Page<T> {
  data: T[];
  has_more: boolean;
}

export interface ListOptions {
  /** Exclusive cursor: an id of the list. */
  after?: string;
  /** 1..1000, default 20. */
  limit?: number;
  /** default "desc" (newest first) for agents/sessions/turns, "asc" for items. */
  order?: "asc" | "desc";
}

export interface SessionListOptions extends ListOptions {
  project_id: string;
  agent_id?: string;
  metadata?: Record<string, string>;
}

export interface ItemListOptions extends ListOptions {
  turn_id?: string;
  /** Only items of these turns (e.g. a subagent's). */
  turn_ids?: readonly string[];
  /** Leave out items of these engine types (e.g. the user's own messages). */
  exclude_types?: readonly string[];
  /** Only these states (default: all). */
  states?: readonly ItemState[];
  /**
   * The caller may not need every item's data (it caches renderings of finished items): the store may load
   * `data` on first access instead of with the page.
   */
  lazy_data?: boolean;
}

export type SessionPatch = Partial<Omit<SessionRecord, "id" | "project_id" | "created_at">>;
export type TurnPatch = Partial<Omit<TurnRecord, "id" | "session_id" | "created_at">>;
export type AgentPatch = Partial<Omit<AgentRecord, "id" | "project_id" | "created_at">>;

/** Every data operation. Inside `transaction()` the same operations run in that transaction. */
export interface Queries {
  // api keys
  insertKey(k: KeyRecord): Promise<void>;
  getKey(id: string): Promise<KeyRecord | undefined>;
  listKeys(): Promise<KeyRecord[]>;
  revokeKey(id: string, at: number): Promise<boolean>;
  /** Whether any key is not revoked. */
  hasActiveKeys(): Promise<boolean>;

  // agents
  insertAgent(a: AgentRecord): Promise<void>;
  getAgent(id: string): Promise<AgentRecord | undefined>;
  updateAgent(id: string, patch: AgentPatch): Promise<AgentRecord | undefined>;
  deleteAgent(id: string): Promise<boolean>;
  listAgents(opts: ListOptions & { project_id: string }): Promise<Page<AgentRecord>>;

  // sessions
  insertSession(s: SessionRecord): Promise<void>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  /** Changes the given fields; returns the updated record (undefined: no such session). */
  updateSession(id: string, patch: SessionPatch): Promise<SessionRecord | undefined>;
  /**
   * Makes `turnId` the session's active turn (with the other fields of `patch`) if it has none, and bumps its
   * `lease_epoch` (the new claim's fencing token); returns the updated record, or undefined when another turn is
   * active (or the session is gone).
   */
  claimSession(id: string, turnId: string, patch: SessionPatch): Promise<SessionRecord | undefined>;
  /** Deletes the session and everything that belongs to it (turns, items, events, goal, idempotency). */
  deleteSession(id: string): Promise<boolean>;
  listSessions(opts: SessionListOptions): Promise<Page<SessionRecord>>;
  countSessions(projectId?: string): Promise<number>;
  /** Sessions whose last_active_at < before and that have no running turn, oldest first. */
  listIdleSessionsBefore(before: number, limit: number): Promise<SessionRecord[]>;
  /** Sessions with status in_progress/requires_action or an active_turn_id (start-up recovery). */
  listBusySessions(): Promise<SessionRecord[]>;

  // turns
  insertTurn(t: TurnRecord): Promise<void>;
  getTurn(sessionId: string, turnId: string): Promise<TurnRecord | undefined>;
  updateTurn(sessionId: string, turnId: string, patch: TurnPatch): Promise<TurnRecord | undefined>;
  listTurns(sessionId: string, opts: ListOptions & { status?: TurnStatus }): Promise<Page<TurnRecord>>;

  // items (written with events: see appendEvents)
  listItems(sessionId: string, opts: ItemListOptions): Promise<Page<ItemRecord>>;
  /** Items of a turn still `started`: marks them `incomplete` with `status` set on their data; returns them. */
  closeOpenItems(sessionId: string, turnId: string, status: string): Promise<ItemRecord[]>;

  // event log
  /**
   * Assigns seq = last + 1, … in order and persists the events (and their item writes) before returning. With
   * `fence`, nothing is written (a {@link FencedError}) unless the session's lease_epoch is still `fence`.
   */
  appendEvents(sessionId: string, events: NewEvent[], fence?: number): Promise<Appended[]>;
  /** Events with seq > afterSeq, ascending, at most `limit`. */
  readEvents(sessionId: string, afterSeq: number, limit: number): Promise<EventRecord[]>;
  lastEventSeq(sessionId: string): Promise<number>;
  /** The seq of the first event of a turn (its start), if any. */
  firstEventSeqOfTurn(sessionId: string, turnId: string): Promise<number | undefined>;

  // goals
  getGoal(sessionId: string): Promise<GoalRecord | undefined>;
  putGoal(g: GoalRecord): Promise<void>;
  deleteGoal(sessionId: string): Promise<boolean>;
  listGoals(status?: GoalStatus): Promise<GoalRecord[]>;

  // idempotency
  getIdempotency(scope: string, key: string): Promise<IdempotencyRecord | undefined>;
  putIdempotency(r: IdempotencyRecord): Promise<void>;
  /** Forgets keys recorded before `before`; returns how many. */
  expireIdempotency(before: number): Promise<number>;
}

export interface Store extends Queries {
  /** Which implementation ("sqlite", "postgres"). */
  readonly kind: string;
  /** Runs fn in one transaction: all its writes or none. */
  transaction<T>(fn: (tx: Queries) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
