/**
 * The durable store: one interface, synchronous (the embedded SQLite implementation is synchronous, which keeps
 * "append to the log, then publish" ordering trivial). Every record is plain JSON-able data; timestamps are Unix
 * seconds (numbers, may be fractional where noted).
 */

export type SessionStatus = "idle" | "in_progress" | "requires_action" | "failed";
export type TurnStatus = "queued" | "in_progress" | "completed" | "failed" | "cancelled" | "interrupted";

export interface Usage {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_output_tokens: number;
  total_tokens: number;
}

export interface AgentRecord {
  id: string;
  created_at: number;
  updated_at: number;
  name: string | null;
  model: string;
  instructions: string | null;
  tools: unknown[];
  metadata: Record<string, string>;
  /** Dialect-specific extras (reasoning, text, …) kept verbatim. */
  extra: Record<string, unknown>;
}

export interface SessionRecord {
  id: string;
  created_at: number;
  updated_at: number;
  last_active_at: number;
  status: SessionStatus;
  agent_id: string | null;
  name: string | null;
  model: string;
  instructions: string | null;
  tools: unknown[];
  metadata: Record<string, string>;
  /** Engine thread bound to this session; null until the first turn. */
  thread_id: string | null;
  /** Absolute workspace directory of the session. */
  workspace: string;
  usage: Usage;
  error: string | null;
  /** Id of the running turn, if any. */
  active_turn_id: string | null;
  extra: Record<string, unknown>;
}

export interface TurnRecord {
  id: string;
  session_id: string;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  status: TurnStatus;
  /** The user input that started the turn (normalized text parts etc.). */
  input: unknown;
  error: { code: string; message: string } | null;
  usage: Usage | null;
  /** Goal settings if this turn runs a goal. */
  goal: Record<string, unknown> | null;
}

export interface ItemRecord {
  session_id: string;
  turn_id: string;
  /** Position in the session (0-based, increasing). */
  ordinal: number;
  /** Engine item id (unique within the session). */
  id: string;
  type: string;
  created_at: number;
  /** The engine item (protocol ThreadItem) as completed. */
  data: Record<string, unknown>;
}

export interface EventRecord {
  session_id: string;
  /** 1-based, strictly increasing per session, no gaps. */
  seq: number;
  type: string;
  turn_id: string | null;
  /** Unix seconds with millisecond precision. */
  created_at: number;
  data: Record<string, unknown>;
}

export interface GoalRecord {
  session_id: string;
  data: Record<string, unknown>;
  updated_at: number;
}

export interface IdempotencyRecord {
  scope: string;
  key: string;
  body_hash: string;
  status: number;
  response: unknown;
  created_at: number;
}

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

export interface Store {
  // agents
  insertAgent(a: AgentRecord): void;
  getAgent(id: string): AgentRecord | undefined;
  updateAgent(a: AgentRecord): void;
  deleteAgent(id: string): boolean;
  listAgents(opts: ListOptions): Page<AgentRecord>;

  // sessions
  insertSession(s: SessionRecord): void;
  getSession(id: string): SessionRecord | undefined;
  /** Replaces the stored record (by id). */
  updateSession(s: SessionRecord): void;
  /** Deletes the session and everything that belongs to it (turns, items, events, goal, idempotency). */
  deleteSession(id: string): boolean;
  listSessions(
    opts: ListOptions & { agent_id?: string; metadata?: Record<string, string> },
  ): Page<SessionRecord>;
  countSessions(): number;
  /** Sessions whose last_active_at < before and status is not in_progress. */
  listIdleSessionsBefore(before: number, limit: number): SessionRecord[];
  /** Sessions with status in_progress or an active_turn_id (used on start-up recovery). */
  listBusySessions(): SessionRecord[];

  // turns
  insertTurn(t: TurnRecord): void;
  getTurn(sessionId: string, turnId: string): TurnRecord | undefined;
  updateTurn(t: TurnRecord): void;
  listTurns(sessionId: string, opts: ListOptions): Page<TurnRecord>;

  // items
  /** Assigns the ordinal (next in the session) and returns the stored record. */
  appendItem(item: Omit<ItemRecord, "ordinal">): ItemRecord;
  /** `exclude_types`: leave out items of these engine types (e.g. the user's own messages). */
  listItems(
    sessionId: string,
    opts: ListOptions & { turn_id?: string; exclude_types?: readonly string[] },
  ): Page<ItemRecord>;
  countItems(sessionId: string): number;

  // event log
  /** Assigns seq = last + 1 and persists before returning. */
  appendEvent(e: Omit<EventRecord, "seq">): EventRecord;
  /** Events with seq > afterSeq, ascending, at most `limit`. */
  readEvents(sessionId: string, afterSeq: number, limit: number): EventRecord[];
  lastEventSeq(sessionId: string): number;
  /** The seq of the first event of a turn (its start), if any. */
  firstEventSeqOfTurn(sessionId: string, turnId: string): number | undefined;

  // goals
  getGoal(sessionId: string): GoalRecord | undefined;
  putGoal(g: GoalRecord): void;
  deleteGoal(sessionId: string): boolean;
  listGoals(): GoalRecord[];

  // idempotency
  getIdempotency(scope: string, key: string): IdempotencyRecord | undefined;
  putIdempotency(r: IdempotencyRecord): void;

  /** Runs fn in one transaction. */
  transaction<T>(fn: () => T): T;
  close(): void;
}
