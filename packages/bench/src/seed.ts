/**
 * Seeds a server's SQLite file directly (the server's own SqliteStore, so the schema and the record encoding are
 * exactly the server's), before the server is started on it.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { EventType, type SessionRecord, SqliteStore, type TurnRecord } from "@codex-agent-api/server";

const USAGE = {
  input_tokens: 10,
  cached_input_tokens: 0,
  output_tokens: 5,
  reasoning_output_tokens: 0,
  total_tokens: 15,
};

const hex = () => randomBytes(12).toString("hex");

/** The server's database file inside its data dir. */
export const dbFile = (dataDir: string) => join(dataDir, "agents.db");

export function openStore(dataDir: string): SqliteStore {
  return SqliteStore.open(dbFile(dataDir), { groupCommit: true, maxBatch: 5000 });
}

/** The workspace root the server uses by default (`<data-dir>/workspace`). */
export const workspaceOf = (dataDir: string) => join(dataDir, "workspace");

function sessionRecord(workspace: string, createdAt: number): SessionRecord {
  return {
    id: `sess_${hex()}`,
    created_at: createdAt,
    updated_at: createdAt,
    last_active_at: createdAt,
    status: "idle",
    agent_id: null,
    name: null,
    model: "mock-model",
    instructions: null,
    tools: [],
    metadata: { seeded: "true" },
    thread_id: null,
    workspace,
    usage: { ...USAGE, input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    error: null,
    active_turn_id: null,
    extra: {},
  };
}

/**
 * `n` idle sessions. With `history`, each also holds one completed turn like a real one leaves behind: the turn,
 * two items (user + agent message) and its 7 log events.
 */
export function seedSessions(
  store: SqliteStore,
  n: number,
  opts: { workspace: string; history?: boolean },
): string[] {
  const ids: string[] = [];
  const base = Date.now() / 1000 - n;
  for (let start = 0; start < n; start += 1000) {
    store.transaction(() => {
      for (let i = start; i < Math.min(n, start + 1000); i++) {
        const createdAt = base + i;
        const s = sessionRecord(opts.workspace, createdAt);
        // With history, the row is written once in its final state (idle, with the turn's usage).
        store.insertSession(opts.history ? afterTurn(s, createdAt + 0.1) : s);
        ids.push(s.id);
        store.appendEvent({
          session_id: s.id,
          type: EventType.SessionCreated,
          turn_id: null,
          created_at: createdAt,
          data: { session: s },
        });
        if (opts.history) seedTurn(store, s, createdAt + 0.1);
      }
    });
  }
  return ids;
}

const afterTurn = (s: SessionRecord, t: number): SessionRecord => ({
  ...s,
  usage: USAGE,
  last_active_at: t + 0.12,
  updated_at: t + 0.12,
});

function seedTurn(store: SqliteStore, s: SessionRecord, t: number): void {
  const turnId = `turn_${hex()}`;
  const turn: TurnRecord = {
    id: turnId,
    session_id: s.id,
    created_at: t,
    started_at: t,
    completed_at: t + 0.12,
    status: "completed",
    input: [{ type: "text", text: "Reply with exactly: ok" }],
    error: null,
    usage: USAGE,
    goal: null,
  };
  store.insertTurn(turn);
  const busy: SessionRecord = { ...s, status: "in_progress", active_turn_id: turnId };
  const idle = afterTurn(s, t);
  const ev = (type: string, data: Record<string, unknown>, dt: number) =>
    store.appendEvent({ session_id: s.id, type, turn_id: turnId, created_at: t + dt, data });
  ev(EventType.TurnStarted, { turn: { ...turn, status: "in_progress", completed_at: null, usage: null } }, 0);
  ev(EventType.SessionStatus, { session: busy }, 0);
  const user = {
    type: "userMessage",
    id: `item-u-${turnId}`,
    content: [{ type: "text", text: "Reply with exactly: ok" }],
  };
  const agent = { type: "agentMessage", id: `item-a-${turnId}`, text: "ok", phase: "final_answer" };
  for (const [k, item] of [user, agent].entries()) {
    const stored = store.appendItem({
      session_id: s.id,
      turn_id: turnId,
      id: item.id,
      type: item.type,
      created_at: t + 0.05 * (k + 1),
      data: item,
    });
    ev(EventType.ItemCompleted, { item, ordinal: stored.ordinal, output_index: k }, 0.05 * (k + 1));
  }
  ev(EventType.TurnCompleted, { turn }, 0.12);
  ev(EventType.SessionStatus, { session: idle }, 0.12);
}

/** `n` items on a session: alternating user and agent messages of one turn each (realistic sizes). */
export function seedItems(store: SqliteStore, sessionId: string, n: number): void {
  const base = Date.now() / 1000 - n;
  store.transaction(() => {
    for (let i = 0; i < n; i++) {
      const turnId = `turn_seed_${Math.floor(i / 2)}`;
      const item =
        i % 2 === 0
          ? {
              type: "userMessage",
              id: `item-${i}`,
              content: [{ type: "text", text: `Question number ${i}?` }],
            }
          : {
              type: "agentMessage",
              id: `item-${i}`,
              text: `Answer number ${i}: ${"lorem ipsum dolor sit amet ".repeat(6).trim()}.`,
              phase: "final_answer",
            };
      store.appendItem({
        session_id: sessionId,
        turn_id: turnId,
        id: item.id,
        type: item.type,
        created_at: base + i,
        data: item,
      });
    }
  });
}

/**
 * A session whose log holds exactly `total` events (total ≥ 7): created, one turn started, its agent message
 * streamed as `total - 6` deltas, the item completed, the turn completed, the session idle again.
 * Returns the session id.
 */
export function seedEventLog(store: SqliteStore, workspace: string, total: number): string {
  const t0 = Date.now() / 1000 - 60;
  const s = sessionRecord(workspace, t0);
  const turnId = `turn_${hex()}`;
  const itemId = "msg-replay";
  const deltas = total - 6;
  const turn: TurnRecord = {
    id: turnId,
    session_id: s.id,
    created_at: t0,
    started_at: t0,
    completed_at: t0 + 30,
    status: "completed",
    input: [{ type: "text", text: "Write a long answer" }],
    error: null,
    usage: USAGE,
    goal: null,
  };
  const ev = (type: string, data: Record<string, unknown>, t: number, turn_id: string | null = turnId) =>
    store.appendEvent({ session_id: s.id, type, turn_id, created_at: t, data });
  store.transaction(() => {
    store.insertSession({ ...s, usage: USAGE });
    store.insertTurn(turn);
    ev(EventType.SessionCreated, { session: s }, t0, null);
    ev(
      EventType.TurnStarted,
      { turn: { ...turn, status: "in_progress", completed_at: null, usage: null } },
      t0,
    );
    ev(EventType.ItemStarted, { item: { type: "agentMessage", id: itemId, text: "" }, output_index: 0 }, t0);
  });
  const words = ["alpha ", "beta ", "gamma ", "delta ", "epsilon "];
  for (let start = 0; start < deltas; start += 10_000) {
    store.transaction(() => {
      for (let i = start; i < Math.min(deltas, start + 10_000); i++) {
        ev(
          EventType.ItemDelta,
          { item_id: itemId, output_index: 0, kind: "agent_message", delta: words[i % words.length]! },
          t0 + (30 * i) / deltas,
        );
      }
    });
  }
  store.transaction(() => {
    const item = { type: "agentMessage", id: itemId, text: "alpha beta gamma …", phase: "final_answer" };
    const stored = store.appendItem({
      session_id: s.id,
      turn_id: turnId,
      id: itemId,
      type: item.type,
      created_at: t0 + 30,
      data: item,
    });
    ev(EventType.ItemCompleted, { item, ordinal: stored.ordinal, output_index: 0 }, t0 + 30);
    ev(EventType.TurnCompleted, { turn }, t0 + 30);
    ev(EventType.SessionStatus, { session: { ...s, usage: USAGE } }, t0 + 30);
  });
  return s.id;
}
