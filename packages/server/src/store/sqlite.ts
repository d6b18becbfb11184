/**
 * The embedded SQLite implementation of {@link Store} (better-sqlite3, synchronous).
 *
 * - WAL journal, synchronous=NORMAL, foreign keys on; the schema is migrated on open (migrations.ts).
 * - JSON-ish fields are stored as TEXT JSON.
 * - Hot-path statements are prepared once; list queries (whose SQL depends on the options) are prepared on first use
 *   and cached by SQL text.
 * - Event seq / item ordinal counters are cached per session (lazily loaded from max()). The cache assumes this
 *   process is the only writer of the database file. It is dropped for a session on delete and entirely when a
 *   transaction rolls back, so it never runs ahead of the data.
 * - Group commit (default): a commit costs tens of µs of I/O, far more than an insert, so writes are batched into one
 *   write transaction that is committed at the end of the current event-loop turn (setImmediate), after `maxBatch`
 *   writes, on flush()/close() and on process exit. This connection — i.e. every reader of this store — sees each
 *   write at once, so "append, then publish" still means "readable before anyone is told"; what a hard kill
 *   (SIGKILL, power loss) can lose is the last, not yet committed, event-loop turn of writes.
 *   `{ groupCommit: false }` commits every write on its own instead.
 */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { migrate } from "./migrations.js";
import type {
  AgentRecord,
  EventRecord,
  GoalRecord,
  IdempotencyRecord,
  ItemRecord,
  ListOptions,
  Page,
  SessionRecord,
  SessionStatus,
  Store,
  TurnRecord,
  TurnStatus,
  Usage,
} from "./types.js";

type Statement = Database.Statement<unknown[], unknown>;
type Order = "asc" | "desc";

interface AgentRow {
  id: string;
  created_at: number;
  updated_at: number;
  name: string | null;
  model: string;
  instructions: string | null;
  tools: string;
  metadata: string;
  extra: string;
}

interface SessionRow {
  id: string;
  created_at: number;
  updated_at: number;
  last_active_at: number;
  status: string;
  agent_id: string | null;
  name: string | null;
  model: string;
  instructions: string | null;
  tools: string;
  metadata: string;
  thread_id: string | null;
  workspace: string;
  usage: string;
  error: string | null;
  active_turn_id: string | null;
  extra: string;
}

interface TurnRow {
  id: string;
  session_id: string;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  status: string;
  input: string;
  error: string | null;
  usage: string | null;
  goal: string | null;
}

interface ItemRow {
  session_id: string;
  turn_id: string;
  ordinal: number;
  id: string;
  type: string;
  created_at: number;
  data: string;
}

interface EventRow {
  session_id: string;
  seq: number;
  type: string;
  turn_id: string | null;
  created_at: number;
  data: string;
}

interface GoalRow {
  session_id: string;
  data: string;
  updated_at: number;
}

interface IdempotencyRow {
  scope: string;
  key: string;
  body_hash: string;
  status: number;
  response: string;
  created_at: number;
}

interface CreatedCursor {
  created_at: number;
  rid: number;
}

const AGENT_COLS = "id, created_at, updated_at, name, model, instructions, tools, metadata, extra";
const SESSION_COLS =
  "id, created_at, updated_at, last_active_at, status, agent_id, name, model, instructions, tools, metadata, " +
  "thread_id, workspace, usage, error, active_turn_id, extra";
const TURN_COLS = "id, session_id, created_at, started_at, completed_at, status, input, error, usage, goal";
const ITEM_COLS = "session_id, turn_id, ordinal, id, type, created_at, data";
const EVENT_COLS = "session_id, seq, type, turn_id, created_at, data";

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1000;

/** JSON.stringify that never yields undefined (undefined is stored as JSON null). */
const json = (v: unknown): string => JSON.stringify(v) ?? "null";
const jsonOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : json(v));
const parse = <T>(s: string): T => JSON.parse(s) as T;
const parseOrNull = <T>(s: string | null): T | null => (s === null ? null : (JSON.parse(s) as T));

export function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_LIMIT;
  return Math.min(MAX_LIMIT, Math.max(1, Math.trunc(limit)));
}

function toPage<T>(rows: T[], limit: number): Page<T> {
  const has_more = rows.length > limit;
  if (has_more) rows.length = limit;
  return { data: rows, has_more };
}

const agentFromRow = (r: AgentRow): AgentRecord => ({
  id: r.id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  name: r.name,
  model: r.model,
  instructions: r.instructions,
  tools: parse<unknown[]>(r.tools),
  metadata: parse<Record<string, string>>(r.metadata),
  extra: parse<Record<string, unknown>>(r.extra),
});

const sessionFromRow = (r: SessionRow): SessionRecord => ({
  id: r.id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  last_active_at: r.last_active_at,
  status: r.status as SessionStatus,
  agent_id: r.agent_id,
  name: r.name,
  model: r.model,
  instructions: r.instructions,
  tools: parse<unknown[]>(r.tools),
  metadata: parse<Record<string, string>>(r.metadata),
  thread_id: r.thread_id,
  workspace: r.workspace,
  usage: parse<Usage>(r.usage),
  error: r.error,
  active_turn_id: r.active_turn_id,
  extra: parse<Record<string, unknown>>(r.extra),
});

const turnFromRow = (r: TurnRow): TurnRecord => ({
  id: r.id,
  session_id: r.session_id,
  created_at: r.created_at,
  started_at: r.started_at,
  completed_at: r.completed_at,
  status: r.status as TurnStatus,
  input: parse<unknown>(r.input),
  error: parseOrNull<{ code: string; message: string }>(r.error),
  usage: parseOrNull<Usage>(r.usage),
  goal: parseOrNull<Record<string, unknown>>(r.goal),
});

const itemFromRow = (r: ItemRow): ItemRecord => ({
  session_id: r.session_id,
  turn_id: r.turn_id,
  ordinal: r.ordinal,
  id: r.id,
  type: r.type,
  created_at: r.created_at,
  data: parse<Record<string, unknown>>(r.data),
});

const eventFromRow = (r: EventRow): EventRecord => ({
  session_id: r.session_id,
  seq: r.seq,
  type: r.type,
  turn_id: r.turn_id,
  created_at: r.created_at,
  data: parse<Record<string, unknown>>(r.data),
});

const goalFromRow = (r: GoalRow): GoalRecord => ({
  session_id: r.session_id,
  data: parse<Record<string, unknown>>(r.data),
  updated_at: r.updated_at,
});

const idempotencyFromRow = (r: IdempotencyRow): IdempotencyRecord => ({
  scope: r.scope,
  key: r.key,
  body_hash: r.body_hash,
  status: r.status,
  response: parse<unknown>(r.response),
  created_at: r.created_at,
});

export interface SqliteStoreOptions {
  /** Batch writes into one transaction per event-loop turn (see the module comment). Default true. */
  groupCommit?: boolean;
  /** Commit a batch early once it holds this many writes. Default 1000. */
  maxBatch?: number;
  /** Receives errors of background (scheduled) commits. Default: console.error. */
  onError?: (err: unknown) => void;
}

/** Stores with a possibly pending batch, committed on process exit. */
const openStores = new Set<SqliteStore>();
let exitHookInstalled = false;
function flushAllOnExit(): void {
  for (const s of openStores) {
    try {
      s.flush();
    } catch {
      // exiting anyway
    }
  }
}

export class SqliteStore implements Store {
  /** Last assigned event seq per session (absent: not loaded yet). */
  private readonly lastSeqs = new Map<string, number>();
  /** Last assigned item ordinal per session (-1: none; absent: not loaded yet). */
  private readonly lastOrdinals = new Map<string, number>();
  /** Statements whose SQL depends on the call's options, keyed by SQL text. */
  private readonly dynamic = new Map<string, Statement>();

  private readonly groupCommit: boolean;
  private readonly maxBatch: number;
  private readonly onError: (err: unknown) => void;
  /** A group-commit transaction is open. */
  private batchOpen = false;
  private batchWrites = 0;
  /** Depth of transaction() calls in progress (no batch commit inside them). */
  private txDepth = 0;
  private flushTimer: NodeJS.Immediate | null = null;
  private readonly begin: Statement;
  private readonly commit: Statement;
  private readonly rollback: Statement;

  private readonly s: {
    insertAgent: Statement;
    getAgent: Statement;
    updateAgent: Statement;
    deleteAgent: Statement;
    agentCursor: Statement;
    insertSession: Statement;
    getSession: Statement;
    updateSession: Statement;
    deleteSession: Statement;
    deleteScopeIdempotency: Statement;
    sessionCursor: Statement;
    countSessions: Statement;
    idleSessions: Statement;
    busySessions: Statement;
    insertTurn: Statement;
    getTurn: Statement;
    updateTurn: Statement;
    turnCursor: Statement;
    maxOrdinal: Statement;
    insertItem: Statement;
    itemCursor: Statement;
    countItems: Statement;
    maxSeq: Statement;
    insertEvent: Statement;
    readEvents: Statement;
    firstSeqOfTurn: Statement;
    getGoal: Statement;
    putGoal: Statement;
    deleteGoal: Statement;
    listGoals: Statement;
    getIdempotency: Statement;
    putIdempotency: Statement;
  };

  private constructor(
    private readonly db: Database.Database,
    /** The database file (":memory:" for an in-memory store). */
    readonly file: string,
    opts: SqliteStoreOptions,
  ) {
    this.groupCommit = opts.groupCommit ?? true;
    this.maxBatch = Math.max(1, Math.trunc(opts.maxBatch ?? 1000));
    this.onError = opts.onError ?? ((err) => console.error("sqlite store: background commit failed", err));
    const p = (sql: string): Statement => db.prepare(sql);
    this.begin = p("BEGIN IMMEDIATE");
    this.commit = p("COMMIT");
    this.rollback = p("ROLLBACK");
    this.s = {
      insertAgent: p(`INSERT INTO agents (${AGENT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      getAgent: p(`SELECT ${AGENT_COLS} FROM agents WHERE id = ?`),
      updateAgent: p(
        "UPDATE agents SET created_at = ?, updated_at = ?, name = ?, model = ?, instructions = ?, tools = ?, " +
          "metadata = ?, extra = ? WHERE id = ?",
      ),
      deleteAgent: p("DELETE FROM agents WHERE id = ?"),
      agentCursor: p("SELECT created_at, rid FROM agents WHERE id = ?"),

      insertSession: p(
        `INSERT INTO sessions (${SESSION_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      getSession: p(`SELECT ${SESSION_COLS} FROM sessions WHERE id = ?`),
      updateSession: p(
        "UPDATE sessions SET created_at = ?, updated_at = ?, last_active_at = ?, status = ?, agent_id = ?, " +
          "name = ?, model = ?, instructions = ?, tools = ?, metadata = ?, thread_id = ?, workspace = ?, " +
          "usage = ?, error = ?, active_turn_id = ?, extra = ? WHERE id = ?",
      ),
      deleteSession: p("DELETE FROM sessions WHERE id = ?"),
      deleteScopeIdempotency: p("DELETE FROM idempotency WHERE scope = ?"),
      sessionCursor: p("SELECT created_at, rid FROM sessions WHERE id = ?"),
      countSessions: p("SELECT count(*) FROM sessions").pluck(),
      idleSessions: p(
        `SELECT ${SESSION_COLS} FROM sessions WHERE last_active_at < ? AND status <> 'in_progress' ` +
          "ORDER BY last_active_at ASC, rid ASC LIMIT ?",
      ),
      busySessions: p(
        `SELECT ${SESSION_COLS} FROM sessions WHERE status = 'in_progress' OR active_turn_id IS NOT NULL ` +
          "ORDER BY rid ASC",
      ),

      insertTurn: p(`INSERT INTO turns (${TURN_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      getTurn: p(`SELECT ${TURN_COLS} FROM turns WHERE session_id = ? AND id = ?`),
      updateTurn: p(
        "UPDATE turns SET created_at = ?, started_at = ?, completed_at = ?, status = ?, input = ?, error = ?, " +
          "usage = ?, goal = ? WHERE session_id = ? AND id = ?",
      ),
      turnCursor: p("SELECT created_at, rid FROM turns WHERE session_id = ? AND id = ?"),

      maxOrdinal: p("SELECT max(ordinal) FROM items WHERE session_id = ?").pluck(),
      insertItem: p(`INSERT INTO items (${ITEM_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)`),
      // Item ids are documented unique within a session but not enforced; a duplicate cursor resolves to the last.
      itemCursor: p("SELECT max(ordinal) FROM items WHERE session_id = ? AND id = ?").pluck(),
      countItems: p("SELECT count(*) FROM items WHERE session_id = ?").pluck(),

      maxSeq: p("SELECT max(seq) FROM events WHERE session_id = ?").pluck(),
      insertEvent: p(`INSERT INTO events (${EVENT_COLS}) VALUES (?, ?, ?, ?, ?, ?)`),
      readEvents: p(
        `SELECT ${EVENT_COLS} FROM events WHERE session_id = ? AND seq > ? ORDER BY seq ASC LIMIT ?`,
      ),
      firstSeqOfTurn: p("SELECT min(seq) FROM events WHERE session_id = ? AND turn_id = ?").pluck(),

      getGoal: p("SELECT session_id, data, updated_at FROM goals WHERE session_id = ?"),
      putGoal: p(
        "INSERT INTO goals (session_id, data, updated_at) VALUES (?, ?, ?) " +
          "ON CONFLICT (session_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
      ),
      deleteGoal: p("DELETE FROM goals WHERE session_id = ?"),
      listGoals: p("SELECT session_id, data, updated_at FROM goals ORDER BY updated_at ASC, session_id ASC"),

      getIdempotency: p(
        "SELECT scope, key, body_hash, status, response, created_at FROM idempotency WHERE scope = ? AND key = ?",
      ),
      putIdempotency: p(
        "INSERT OR REPLACE INTO idempotency (scope, key, body_hash, status, response, created_at) " +
          "VALUES (?, ?, ?, ?, ?, ?)",
      ),
    };
  }

  /** Opens (creating if needed) a database file, or ":memory:", and migrates it to the current schema. */
  static open(file: string, opts: SqliteStoreOptions = {}): SqliteStore {
    const memory = file === ":memory:" || file === "";
    if (!memory && !file.startsWith("file:")) mkdirSync(dirname(resolve(file)), { recursive: true });
    const db = new Database(file, { timeout: 5000 });
    try {
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      db.pragma("foreign_keys = ON");
      db.pragma("busy_timeout = 5000");
      migrate(db);
      const store = new SqliteStore(db, file, opts);
      openStores.add(store);
      if (!exitHookInstalled) {
        exitHookInstalled = true;
        process.on("exit", flushAllOnExit);
      }
      return store;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  // ---------------------------------------------------------------- agents

  insertAgent(a: AgentRecord): void {
    this.run(
      this.s.insertAgent,
      a.id,
      a.created_at,
      a.updated_at,
      a.name,
      a.model,
      a.instructions,
      json(a.tools),
      json(a.metadata),
      json(a.extra),
    );
  }

  getAgent(id: string): AgentRecord | undefined {
    const row = this.s.getAgent.get(id) as AgentRow | undefined;
    return row && agentFromRow(row);
  }

  updateAgent(a: AgentRecord): void {
    this.run(
      this.s.updateAgent,
      a.created_at,
      a.updated_at,
      a.name,
      a.model,
      a.instructions,
      json(a.tools),
      json(a.metadata),
      json(a.extra),
      a.id,
    );
  }

  deleteAgent(id: string): boolean {
    return this.run(this.s.deleteAgent, id).changes > 0;
  }

  listAgents(opts: ListOptions): Page<AgentRecord> {
    return this.listByCreated<AgentRow, AgentRecord>(
      "agents",
      AGENT_COLS,
      [],
      [],
      opts.after === undefined ? null : () => this.s.agentCursor.get(opts.after) as CreatedCursor | undefined,
      opts,
      agentFromRow,
    );
  }

  // ---------------------------------------------------------------- sessions

  insertSession(s: SessionRecord): void {
    this.run(this.s.insertSession, ...sessionParams(s));
  }

  getSession(id: string): SessionRecord | undefined {
    const row = this.s.getSession.get(id) as SessionRow | undefined;
    return row && sessionFromRow(row);
  }

  updateSession(s: SessionRecord): void {
    const [id, ...rest] = sessionParams(s);
    this.run(this.s.updateSession, ...rest, id);
  }

  deleteSession(id: string): boolean {
    const deleted = this.transaction(() => {
      this.run(this.s.deleteScopeIdempotency, id);
      // turns, items, events and the goal go with it (ON DELETE CASCADE)
      return this.run(this.s.deleteSession, id).changes > 0;
    });
    this.lastSeqs.delete(id);
    this.lastOrdinals.delete(id);
    return deleted;
  }

  listSessions(
    opts: ListOptions & { agent_id?: string; metadata?: Record<string, string> },
  ): Page<SessionRecord> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (opts.agent_id !== undefined) {
      where.push("agent_id = ?");
      params.push(opts.agent_id);
    }
    if (opts.metadata) {
      for (const [k, v] of Object.entries(opts.metadata)) {
        where.push(
          "EXISTS (SELECT 1 FROM json_each(sessions.metadata) AS m WHERE m.key = ? AND m.value = ?)",
        );
        params.push(k, v);
      }
    }
    return this.listByCreated<SessionRow, SessionRecord>(
      "sessions",
      SESSION_COLS,
      where,
      params,
      opts.after === undefined
        ? null
        : () => this.s.sessionCursor.get(opts.after) as CreatedCursor | undefined,
      opts,
      sessionFromRow,
    );
  }

  countSessions(): number {
    return this.s.countSessions.get() as number;
  }

  listIdleSessionsBefore(before: number, limit: number): SessionRecord[] {
    const rows = this.s.idleSessions.all(before, Math.max(0, Math.trunc(limit))) as SessionRow[];
    return rows.map(sessionFromRow);
  }

  listBusySessions(): SessionRecord[] {
    return (this.s.busySessions.all() as SessionRow[]).map(sessionFromRow);
  }

  // ---------------------------------------------------------------- turns

  insertTurn(t: TurnRecord): void {
    this.run(
      this.s.insertTurn,
      t.id,
      t.session_id,
      t.created_at,
      t.started_at,
      t.completed_at,
      t.status,
      json(t.input),
      jsonOrNull(t.error),
      jsonOrNull(t.usage),
      jsonOrNull(t.goal),
    );
  }

  getTurn(sessionId: string, turnId: string): TurnRecord | undefined {
    const row = this.s.getTurn.get(sessionId, turnId) as TurnRow | undefined;
    return row && turnFromRow(row);
  }

  updateTurn(t: TurnRecord): void {
    this.run(
      this.s.updateTurn,
      t.created_at,
      t.started_at,
      t.completed_at,
      t.status,
      json(t.input),
      jsonOrNull(t.error),
      jsonOrNull(t.usage),
      jsonOrNull(t.goal),
      t.session_id,
      t.id,
    );
  }

  listTurns(sessionId: string, opts: ListOptions): Page<TurnRecord> {
    return this.listByCreated<TurnRow, TurnRecord>(
      "turns",
      TURN_COLS,
      ["session_id = ?"],
      [sessionId],
      opts.after === undefined
        ? null
        : () => this.s.turnCursor.get(sessionId, opts.after) as CreatedCursor | undefined,
      opts,
      turnFromRow,
    );
  }

  // ---------------------------------------------------------------- items

  appendItem(item: Omit<ItemRecord, "ordinal">): ItemRecord {
    const sid = item.session_id;
    let last = this.lastOrdinals.get(sid);
    if (last === undefined) last = (this.s.maxOrdinal.get(sid) as number | null) ?? -1;
    const ordinal = last + 1;
    this.run(
      this.s.insertItem,
      sid,
      item.turn_id,
      ordinal,
      item.id,
      item.type,
      item.created_at,
      json(item.data),
    );
    this.lastOrdinals.set(sid, ordinal);
    return {
      session_id: sid,
      turn_id: item.turn_id,
      ordinal,
      id: item.id,
      type: item.type,
      created_at: item.created_at,
      data: item.data,
    };
  }

  listItems(
    sessionId: string,
    opts: ListOptions & { turn_id?: string; exclude_types?: readonly string[] },
  ): Page<ItemRecord> {
    const limit = clampLimit(opts.limit);
    const order: Order = opts.order ?? "asc";
    const where = ["session_id = ?"];
    const params: unknown[] = [sessionId];
    if (opts.turn_id !== undefined) {
      where.push("turn_id = ?");
      params.push(opts.turn_id);
    }
    if (opts.exclude_types?.length) {
      where.push(`type NOT IN (${opts.exclude_types.map(() => "?").join(", ")})`);
      params.push(...opts.exclude_types);
    }
    if (opts.after !== undefined) {
      const ordinal = this.s.itemCursor.get(sessionId, opts.after) as number | null;
      if (ordinal === null) return { data: [], has_more: false };
      where.push(order === "asc" ? "ordinal > ?" : "ordinal < ?");
      params.push(ordinal);
    }
    const sql =
      `SELECT ${ITEM_COLS} FROM items WHERE ${where.join(" AND ")} ` +
      `ORDER BY ordinal ${order === "asc" ? "ASC" : "DESC"} LIMIT ?`;
    params.push(limit + 1);
    const rows = this.stmt(sql).all(...params) as ItemRow[];
    return toPage(rows.map(itemFromRow), limit);
  }

  countItems(sessionId: string): number {
    return this.s.countItems.get(sessionId) as number;
  }

  // ---------------------------------------------------------------- event log

  appendEvent(e: Omit<EventRecord, "seq">): EventRecord {
    const sid = e.session_id;
    let last = this.lastSeqs.get(sid);
    if (last === undefined) last = (this.s.maxSeq.get(sid) as number | null) ?? 0;
    const seq = last + 1;
    const turnId = e.turn_id ?? null;
    this.run(this.s.insertEvent, sid, seq, e.type, turnId, e.created_at, JSON.stringify(e.data));
    this.lastSeqs.set(sid, seq);
    return { session_id: sid, seq, type: e.type, turn_id: turnId, created_at: e.created_at, data: e.data };
  }

  readEvents(sessionId: string, afterSeq: number, limit: number): EventRecord[] {
    if (limit <= 0) return [];
    const rows = this.s.readEvents.all(sessionId, afterSeq, Math.trunc(limit)) as EventRow[];
    const out = new Array<EventRecord>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = eventFromRow(rows[i]!);
    return out;
  }

  lastEventSeq(sessionId: string): number {
    const cached = this.lastSeqs.get(sessionId);
    if (cached !== undefined) return cached;
    return (this.s.maxSeq.get(sessionId) as number | null) ?? 0;
  }

  firstEventSeqOfTurn(sessionId: string, turnId: string): number | undefined {
    return (this.s.firstSeqOfTurn.get(sessionId, turnId) as number | null) ?? undefined;
  }

  // ---------------------------------------------------------------- goals

  getGoal(sessionId: string): GoalRecord | undefined {
    const row = this.s.getGoal.get(sessionId) as GoalRow | undefined;
    return row && goalFromRow(row);
  }

  putGoal(g: GoalRecord): void {
    this.run(this.s.putGoal, g.session_id, json(g.data), g.updated_at);
  }

  deleteGoal(sessionId: string): boolean {
    return this.run(this.s.deleteGoal, sessionId).changes > 0;
  }

  listGoals(): GoalRecord[] {
    return (this.s.listGoals.all() as GoalRow[]).map(goalFromRow);
  }

  // ---------------------------------------------------------------- idempotency

  getIdempotency(scope: string, key: string): IdempotencyRecord | undefined {
    const row = this.s.getIdempotency.get(scope, key) as IdempotencyRow | undefined;
    return row && idempotencyFromRow(row);
  }

  putIdempotency(r: IdempotencyRecord): void {
    this.run(this.s.putIdempotency, r.scope, r.key, r.body_hash, r.status, json(r.response), r.created_at);
  }

  // ---------------------------------------------------------------- misc

  /**
   * Runs fn in one transaction (nested calls become savepoints; with group commit it is a savepoint of the batch).
   * fn must be synchronous. On error fn's writes are rolled back, the seq/ordinal caches are dropped (reloaded
   * lazily) and the error is rethrown.
   */
  transaction<T>(fn: () => T): T {
    if (this.groupCommit && !this.batchOpen) this.beginBatch();
    this.txDepth++;
    try {
      return this.db.transaction(fn)();
    } catch (err) {
      this.lastSeqs.clear();
      this.lastOrdinals.clear();
      if (this.batchOpen && !this.db.inTransaction) this.batchOpen = false;
      throw err;
    } finally {
      this.txDepth--;
    }
  }

  /** Commits the pending group-commit batch now (no-op when none, or inside transaction()). */
  flush(): void {
    if (this.txDepth > 0) return;
    if (this.flushTimer) {
      clearImmediate(this.flushTimer);
      this.flushTimer = null;
    }
    if (!this.batchOpen) return;
    this.batchOpen = false;
    this.batchWrites = 0;
    if (!this.db.inTransaction) return; // SQLite already rolled it back (and the failing write reported it)
    try {
      this.commit.run();
    } catch (err) {
      try {
        if (this.db.inTransaction) this.rollback.run();
      } catch {
        // nothing more to do
      }
      this.lastSeqs.clear();
      this.lastOrdinals.clear();
      throw err;
    }
  }

  close(): void {
    if (!this.db.open) return;
    openStores.delete(this);
    try {
      this.flush();
    } finally {
      if (this.flushTimer) clearImmediate(this.flushTimer);
      this.flushTimer = null;
      this.dynamic.clear();
      this.lastSeqs.clear();
      this.lastOrdinals.clear();
      this.db.close();
    }
  }

  // ---------------------------------------------------------------- helpers

  /** Runs a write statement, inside the group-commit batch when enabled. */
  private run(st: Statement, ...params: unknown[]): Database.RunResult {
    if (this.groupCommit && !this.batchOpen) this.beginBatch();
    let r: Database.RunResult;
    try {
      r = st.run(...params);
    } catch (err) {
      // Most errors (constraints) only undo the statement; some (I/O, full disk) abort the whole transaction.
      if (this.batchOpen && !this.db.inTransaction) {
        this.batchOpen = false;
        this.lastSeqs.clear();
        this.lastOrdinals.clear();
      }
      throw err;
    }
    if (this.batchOpen && this.txDepth === 0 && ++this.batchWrites >= this.maxBatch) this.flush();
    return r;
  }

  private beginBatch(): void {
    if (this.db.inTransaction) return;
    this.begin.run();
    this.batchOpen = true;
    this.batchWrites = 0;
    this.flushTimer ??= setImmediate(() => {
      this.flushTimer = null;
      try {
        this.flush();
      } catch (err) {
        this.onError(err);
      }
    });
  }

  private stmt(sql: string): Statement {
    let st = this.dynamic.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.dynamic.set(sql, st);
    }
    return st;
  }

  /** Keyset pagination ordered by (created_at, rid); `cursor` resolves the `after` id (null: no cursor). */
  private listByCreated<Row, T>(
    table: string,
    cols: string,
    where: string[],
    params: unknown[],
    cursor: (() => CreatedCursor | undefined) | null,
    opts: ListOptions,
    map: (row: Row) => T,
  ): Page<T> {
    const limit = clampLimit(opts.limit);
    const order: Order = opts.order ?? "desc";
    const conds = [...where];
    const args = [...params];
    if (cursor) {
      const c = cursor();
      if (!c) return { data: [], has_more: false };
      conds.push(order === "desc" ? "(created_at, rid) < (?, ?)" : "(created_at, rid) > (?, ?)");
      args.push(c.created_at, c.rid);
    }
    const dir = order === "desc" ? "DESC" : "ASC";
    const sql =
      `SELECT ${cols} FROM ${table}${conds.length ? ` WHERE ${conds.join(" AND ")}` : ""} ` +
      `ORDER BY created_at ${dir}, rid ${dir} LIMIT ?`;
    args.push(limit + 1);
    const rows = this.stmt(sql).all(...args) as Row[];
    return toPage(rows.map(map), limit);
  }
}

function sessionParams(s: SessionRecord): unknown[] {
  return [
    s.id,
    s.created_at,
    s.updated_at,
    s.last_active_at,
    s.status,
    s.agent_id,
    s.name,
    s.model,
    s.instructions,
    json(s.tools),
    json(s.metadata),
    s.thread_id,
    s.workspace,
    json(s.usage),
    s.error,
    s.active_turn_id,
    json(s.extra),
  ];
}
