/**
 * Seeds a server's SQLite file directly (the server's own SqliteStore, so the schema and the record encoding are
 * exactly the server's), before the server is started on it.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { ThreadItem } from "@codex-agent-api/codex";
import {
  type NewEvent,
  type Queries,
  type SessionRecord,
  SqliteStore,
  type TurnRecord,
} from "codex-agent-api";

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
  return SqliteStore.open(dbFile(dataDir));
}

/** The workspace root the server uses by default (`<data-dir>/workspace`). */
export const workspaceOf = (dataDir: string) => join(dataDir, "workspace");

function sessionRecord(workspace: string, createdAt: number): SessionRecord {
  return {
    id: `sess_${hex()}`,
    project_id: "default",
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
    required_actions: [],
    owner_instance: null,
    lease_epoch: 0,
    extra: {},
  };
}

const userMessage = (id: string, text: string): ThreadItem => ({
  type: "userMessage",
  id,
  clientId: null,
  content: [{ type: "text", text, text_elements: [] }],
});

const agentMessage = (id: string, text: string): ThreadItem => ({
  type: "agentMessage",
  id,
  text,
  phase: "final_answer",
  moderation: null,
  memoryCitation: null,
  delivery: null,
  questions: null,
});

/**
 * `n` idle sessions. With `history`, each also holds one completed turn like a real one leaves behind: the turn,
 * two items (user + agent message) and its 7 log events.
 */
export async function seedSessions(
  store: SqliteStore,
  n: number,
  opts: { workspace: string; history?: boolean },
): Promise<string[]> {
  const ids: string[] = [];
  const base = Date.now() / 1000 - n;
  for (let start = 0; start < n; start += 1000) {
    await store.transaction(async (tx) => {
      for (let i = start; i < Math.min(n, start + 1000); i++) {
        const createdAt = base + i;
        const s = sessionRecord(opts.workspace, createdAt);
        // With history, the row is written once in its final state (idle, with the turn's usage).
        await tx.insertSession(opts.history ? afterTurn(s, createdAt + 0.1) : s);
        ids.push(s.id);
        await tx.appendEvents(s.id, [
          { event: { type: "session.created", data: { session: s } }, turn_id: null, created_at: createdAt },
        ]);
        if (opts.history) await seedTurn(tx, s, createdAt + 0.1);
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

async function seedTurn(tx: Queries, s: SessionRecord, t: number): Promise<void> {
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
    subagent_id: null,
  };
  await tx.insertTurn(turn);
  const busy: SessionRecord = { ...s, status: "in_progress", active_turn_id: turnId };
  const idle = afterTurn(s, t);
  const items = [
    userMessage(`item-u-${turnId}`, "Reply with exactly: ok"),
    agentMessage(`item-a-${turnId}`, "ok"),
  ];
  const events: NewEvent[] = [
    {
      event: {
        type: "turn.started",
        data: { turn: { ...turn, status: "in_progress", completed_at: null, usage: null } },
      },
      turn_id: turnId,
      created_at: t,
    },
    { event: { type: "session.status", data: { session: busy } }, turn_id: turnId, created_at: t },
    ...items.map(
      (item, k): NewEvent => ({
        event: { type: "item.completed", data: { item, output_index: k } },
        turn_id: turnId,
        created_at: t + 0.05 * (k + 1),
        item: { kind: "finish", turn_id: turnId, item, created_at: t + 0.05 * (k + 1), state: "completed" },
      }),
    ),
    { event: { type: "turn.completed", data: { turn } }, turn_id: turnId, created_at: t + 0.12 },
    { event: { type: "session.status", data: { session: idle } }, turn_id: turnId, created_at: t + 0.12 },
  ];
  await tx.appendEvents(s.id, events);
}

/** `n` items on a session: alternating user and agent messages of one turn each (realistic sizes). */
export async function seedItems(store: SqliteStore, sessionId: string, n: number): Promise<void> {
  const base = Date.now() / 1000 - n;
  const events: NewEvent[] = [];
  for (let i = 0; i < n; i++) {
    const turnId = `turn_seed_${Math.floor(i / 2)}`;
    const item =
      i % 2 === 0
        ? userMessage(`item-${i}`, `Question number ${i}?`)
        : agentMessage(`item-${i}`, `Answer number ${i}: ${"lorem ipsum dolor sit amet ".repeat(6).trim()}.`);
    events.push({
      event: { type: "item.completed", data: { item, output_index: 0 } },
      turn_id: turnId,
      created_at: base + i,
      item: { kind: "finish", turn_id: turnId, item, created_at: base + i, state: "completed" },
    });
  }
  await store.appendEvents(sessionId, events);
}

/**
 * A session whose log holds exactly `total` events (total ≥ 7): created, one turn started, its agent message
 * streamed as `total - 6` deltas, the item completed, the turn completed, the session idle again.
 * Returns the session id.
 */
export async function seedEventLog(store: SqliteStore, workspace: string, total: number): Promise<string> {
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
    subagent_id: null,
  };
  const started = agentMessage(itemId, "");
  await store.transaction(async (tx) => {
    await tx.insertSession({ ...s, usage: USAGE });
    await tx.insertTurn(turn);
    await tx.appendEvents(s.id, [
      { event: { type: "session.created", data: { session: s } }, turn_id: null, created_at: t0 },
      {
        event: {
          type: "turn.started",
          data: { turn: { ...turn, status: "in_progress", completed_at: null, usage: null } },
        },
        turn_id: turnId,
        created_at: t0,
      },
      {
        event: { type: "item.started", data: { item: started, output_index: 0 } },
        turn_id: turnId,
        created_at: t0,
        item: { kind: "start", turn_id: turnId, item: started, created_at: t0 },
      },
    ]);
  });
  const words = ["alpha ", "beta ", "gamma ", "delta ", "epsilon "];
  for (let start = 0; start < deltas; start += 10_000) {
    const batch: NewEvent[] = [];
    for (let i = start; i < Math.min(deltas, start + 10_000); i++) {
      batch.push({
        event: {
          type: "item.delta",
          data: { item_id: itemId, output_index: 0, kind: "agent_message", delta: words[i % words.length]! },
        },
        turn_id: turnId,
        created_at: t0 + (30 * i) / deltas,
      });
    }
    await store.appendEvents(s.id, batch);
  }
  const item = agentMessage(itemId, "alpha beta gamma …");
  await store.appendEvents(s.id, [
    {
      event: { type: "item.completed", data: { item, output_index: 0 } },
      turn_id: turnId,
      created_at: t0 + 30,
      item: { kind: "finish", turn_id: turnId, item, created_at: t0 + 30, state: "completed" },
    },
    { event: { type: "turn.completed", data: { turn } }, turn_id: turnId, created_at: t0 + 30 },
    {
      event: { type: "session.status", data: { session: { ...s, usage: USAGE } } },
      turn_id: turnId,
      created_at: t0 + 30,
    },
  ]);
  return s.id;
}
