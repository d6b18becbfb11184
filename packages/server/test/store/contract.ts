/**
 * The store contract: one asynchronous suite every Store implementation must pass (SQLite in sqlite.test.ts; a
 * PostgreSQL store runs the same suite). Fixtures are exported for implementation-specific tests.
 */
import type { ThreadItem } from "@codex-agent-api/codex";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type {
  AgentRecord,
  AutomationRecord,
  AutomationTarget,
  GoalRecord,
  GoalStatus,
  IdempotencyRecord,
  InvocationRecord,
  ItemRecord,
  KeyRecord,
  LogEvent,
  NewEvent,
  SessionRecord,
  Store,
  TurnRecord,
  Usage,
  WebhookEndpointRecord,
} from "../../src/store/types.js";
import { FencedError } from "../../src/store/types.js";

export const P1 = "proj_1";
export const P2 = "proj_2";

export const usage = (n = 0): Usage => ({
  input_tokens: n,
  cached_input_tokens: 0,
  output_tokens: n,
  reasoning_output_tokens: 0,
  total_tokens: 2 * n,
});

export const agent = (id: string, created_at = 1000, over: Partial<AgentRecord> = {}): AgentRecord => ({
  id,
  project_id: P1,
  created_at,
  updated_at: created_at,
  name: `agent ${id}`,
  model: "gpt-test",
  instructions: "be nice",
  tools: [{ type: "shell" }],
  metadata: { k: "v" },
  extra: { reasoning: { effort: "low" } },
  ...over,
});

export const session = (id: string, created_at = 1000, over: Partial<SessionRecord> = {}): SessionRecord => ({
  id,
  project_id: P1,
  created_at,
  updated_at: created_at,
  last_active_at: created_at,
  status: "idle",
  agent_id: null,
  name: null,
  model: "gpt-test",
  instructions: null,
  tools: [],
  metadata: {},
  thread_id: null,
  workspace: `/tmp/ws/${id}`,
  usage: usage(),
  error: null,
  active_turn_id: null,
  required_actions: [],
  owner_instance: null,
  lease_epoch: 0,
  extra: {},
  ...over,
});

export const turn = (
  session_id: string,
  id: string,
  created_at = 1000,
  over: Partial<TurnRecord> = {},
): TurnRecord => ({
  id,
  session_id,
  created_at,
  started_at: null,
  completed_at: null,
  status: "queued",
  input: [{ type: "text", text: `hello ${id}` }],
  error: null,
  usage: null,
  goal: null,
  subagent_id: null,
  ...over,
});

export const goal = (
  session_id: string,
  updated_at = 1,
  over: Partial<GoalRecord> = {},
  status: GoalStatus = "active",
): GoalRecord => ({
  session_id,
  objective: `objective of ${session_id}`,
  status,
  status_reason: "created",
  token_budget: 1000,
  max_turns: 5,
  max_duration_seconds: 600,
  tokens_used: 0,
  time_used_seconds: 0,
  turns_used: 0,
  turn_id: null,
  created_at: 1,
  updated_at,
  run_started_at: null,
  ...over,
});

export const idem = (
  scope: string,
  key: string,
  over: Partial<IdempotencyRecord> = {},
): IdempotencyRecord => ({
  scope,
  key,
  body_hash: "h",
  status: 200,
  response: { ok: true },
  created_at: 1,
  ...over,
});

export const apiKey = (id: string, created_at = 1, over: Partial<KeyRecord> = {}): KeyRecord => ({
  id,
  project_id: P1,
  hash: `hash-${id}`,
  salt: `salt-${id}`,
  admin: false,
  created_at,
  revoked_at: null,
  ...over,
});

/** An engine item (the store treats it as opaque JSON with an id and a type). */
export const threadItem = (id: string, text = `text of ${id}`, type = "agentMessage"): ThreadItem =>
  ({ type, id, text }) as unknown as ThreadItem;

export const delta = (n = 1): LogEvent => ({
  type: "item.delta",
  data: { item_id: "i", output_index: 0, kind: "agent_message", delta: String(n) },
});

export const newEvent = (
  event: LogEvent = delta(),
  turn_id: string | null = null,
  created_at = 1000.123,
): NewEvent => ({
  event,
  turn_id,
  created_at,
});

/** An `item.started` event that inserts the item. */
export const startItem = (turn_id: string, item: ThreadItem, created_at = 1000.5): NewEvent => ({
  event: { type: "item.started", data: { item, output_index: 0 } },
  turn_id,
  created_at,
  item: { kind: "start", turn_id, item, created_at },
});

/** An `item.completed` event that finishes the item (inserting it if it never started). */
export const finishItem = (
  turn_id: string,
  item: ThreadItem,
  state: "completed" | "incomplete" = "completed",
  created_at = 1000.75,
): NewEvent => ({
  event: { type: "item.completed", data: { item, output_index: 0 } },
  turn_id,
  created_at,
  item: { kind: "finish", turn_id, item, created_at, state },
});

export const ids = <T extends { id: string }>(rows: T[]) => rows.map((r) => r.id);

export const newSessionTarget = (): AutomationTarget => ({
  type: "new_session",
  agent_id: null,
  agent: { model: "gpt-test" },
  environment: { type: "none" },
  input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hello" }] }],
  metadata: { k: "v" },
  vault_ids: [],
});

export const existingTarget = (session_id: string): AutomationTarget => ({
  type: "existing_session",
  session_id,
  instructions: "check in",
});

export const automation = (
  id: string,
  created_at = 1000,
  over: Partial<AutomationRecord> = {},
): AutomationRecord => ({
  id,
  project_id: P1,
  created_at,
  updated_at: created_at,
  name: `automation ${id}`,
  metadata: {},
  type: "periodic",
  expression: "30 2 * * *",
  timezone: "Europe/Paris",
  run_at: null,
  status: "active",
  next_run_at: 5000,
  target: newSessionTarget(),
  created_by: { type: "developer" },
  ...over,
});

export const invocation = (
  id: string,
  automation_id: string,
  scheduled_at: number | null,
  over: Partial<InvocationRecord> = {},
): InvocationRecord => ({
  id,
  automation_id,
  project_id: P1,
  created_at: scheduled_at ?? 1000,
  scheduled_at,
  source: scheduled_at === null ? "manual" : "automation",
  snapshot: null,
  target: newSessionTarget(),
  status: "queued",
  skip_reason: null,
  session_id: null,
  error: null,
  claims: 0,
  next_attempt_at: scheduled_at ?? 1000,
  lease_owner: null,
  lease_until: null,
  completed_at: null,
  ...over,
});

export const endpoint = (
  id: string,
  created_at = 1000,
  over: Partial<WebhookEndpointRecord> = {},
): WebhookEndpointRecord => ({
  id,
  project_id: P1,
  created_at,
  updated_at: created_at,
  name: `endpoint ${id}`,
  url: "https://example.com/hook",
  event_types: [
    "agent.session.created",
    "agent.session.in_progress",
    "agent.session.action_required",
    "agent.session.idle",
    "agent.session.failed",
  ],
  secret: `sealed-${id}`,
  secret_hint: "whsec_…abcd",
  old_secret: null,
  old_secret_expires_at: null,
  ...over,
});

export function storeContract(
  name: string,
  makeStore: () => Promise<Store>,
  cleanup?: (store: Store) => Promise<void> | void,
): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await makeStore();
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.(store);
    });

    const seqsOf = async (sid: string) => (await store.readEvents(sid, 0, 1000)).map((e) => e.seq);
    const items = async (sid: string, opts = {}) =>
      (await store.listItems(sid, { limit: 1000, ...opts })).data;
    const item = async (sid: string, ordinal: number) =>
      (await items(sid)).find((i) => i.ordinal === ordinal) as ItemRecord;

    describe("api keys", () => {
      it("inserts, gets, lists, revokes; hasKeys stays true once a key was made, revoked or not", async () => {
        expect(await store.hasKeys()).toBe(false);
        expect(await store.listKeys()).toEqual([]);
        const k1 = apiKey("k1", 10, { admin: true });
        const k2 = apiKey("k2", 20, { project_id: P2 });
        await store.insertKey(k2);
        await store.insertKey(k1);
        expect(await store.getKey("k1")).toEqual(k1);
        expect(await store.getKey("k2")).toEqual(k2);
        expect(await store.getKey("nope")).toBeUndefined();
        expect(await store.listKeys()).toEqual([k1, k2]);
        expect(await store.hasKeys()).toBe(true);

        expect(await store.revokeKey("k1", 50)).toBe(true);
        expect(await store.revokeKey("k1", 60)).toBe(false); // already revoked: keeps the first time
        expect(await store.revokeKey("nope", 60)).toBe(false);
        expect(await store.getKey("k1")).toEqual({ ...k1, revoked_at: 50 });
        expect(await store.hasKeys()).toBe(true);
        expect(await store.revokeKey("k2", 70)).toBe(true);
        expect(await store.hasKeys()).toBe(true); // revoking the last key does not open the server
        expect((await store.listKeys()).map((k) => k.revoked_at)).toEqual([50, 70]);
      });

      it("a key inserted revoked is not active but counts as keys in use; a duplicate id is rejected", async () => {
        await store.insertKey(apiKey("k1", 1, { revoked_at: 5 }));
        expect(await store.hasKeys()).toBe(true);
        expect(await store.inactiveKeys(["k1"])).toEqual(["k1"]);
        await expect(store.insertKey(apiKey("k1"))).rejects.toThrow();
        expect(await store.getKey("k1")).toEqual(apiKey("k1", 1, { revoked_at: 5 }));
      });

      it("inactiveKeys lists the given ids that are revoked or unknown, in the transaction too", async () => {
        await store.insertKey(apiKey("k1"));
        await store.insertKey(apiKey("k2"));
        expect(await store.inactiveKeys([])).toEqual([]);
        expect(await store.inactiveKeys(["k1", "k2"])).toEqual([]);
        expect((await store.inactiveKeys(["k1", "gone", "k2"])).sort()).toEqual(["gone"]);
        await store.revokeKey("k2", 9);
        expect((await store.inactiveKeys(["k1", "k2", "gone"])).sort()).toEqual(["gone", "k2"]);
        expect(await store.transaction((tx) => tx.inactiveKeys(["k1", "k2"]))).toEqual(["k2"]);
        // An id with quotes or brackets is just an id.
        expect(await store.inactiveKeys(["a'b\"c]"])).toEqual(["a'b\"c]"]);
      });
    });

    describe("agents", () => {
      it("inserts, gets, patches and deletes", async () => {
        const a = agent("ag_1");
        await store.insertAgent(a);
        expect(await store.getAgent("ag_1")).toEqual(a);
        expect(await store.getAgent("nope")).toBeUndefined();

        const patched = await store.updateAgent("ag_1", {
          name: null,
          updated_at: 2000,
          metadata: { x: "y" },
          tools: [],
          instructions: null,
          model: undefined, // undefined: ignored
        });
        const expected = {
          ...a,
          name: null,
          updated_at: 2000,
          metadata: { x: "y" },
          tools: [],
          instructions: null,
        };
        expect(patched).toEqual(expected);
        expect(await store.getAgent("ag_1")).toEqual(expected);
        expect(await store.updateAgent("ag_1", {})).toEqual(expected);
        expect(await store.updateAgent("nope", { name: "x" })).toBeUndefined();
        expect(await store.getAgent("nope")).toBeUndefined();

        expect(await store.deleteAgent("ag_1")).toBe(true);
        expect(await store.deleteAgent("ag_1")).toBe(false);
        expect(await store.getAgent("ag_1")).toBeUndefined();
      });

      it("rejects a duplicate id", async () => {
        await store.insertAgent(agent("ag_1"));
        await expect(store.insertAgent(agent("ag_1", 5, { project_id: P2 }))).rejects.toThrow();
        expect(await store.getAgent("ag_1")).toEqual(agent("ag_1"));
      });

      it("paginates newest first by default, stable on equal created_at", async () => {
        // a1..a5 all at the same second, a6 later
        for (let i = 1; i <= 5; i++) await store.insertAgent(agent(`a${i}`, 100));
        await store.insertAgent(agent("a6", 200));

        const p1 = await store.listAgents({ project_id: P1, limit: 2 });
        expect(ids(p1.data)).toEqual(["a6", "a5"]);
        expect(p1.has_more).toBe(true);
        const p2 = await store.listAgents({ project_id: P1, limit: 2, after: "a5" });
        expect(ids(p2.data)).toEqual(["a4", "a3"]);
        expect(p2.has_more).toBe(true);
        const p3 = await store.listAgents({ project_id: P1, limit: 2, after: "a3" });
        expect(ids(p3.data)).toEqual(["a2", "a1"]);
        expect(p3.has_more).toBe(false);

        const asc = await store.listAgents({ project_id: P1, order: "asc", limit: 4 });
        expect(ids(asc.data)).toEqual(["a1", "a2", "a3", "a4"]);
        expect(asc.has_more).toBe(true);
        const asc2 = await store.listAgents({ project_id: P1, order: "asc", after: "a4" });
        expect(ids(asc2.data)).toEqual(["a5", "a6"]);
        expect(asc2.has_more).toBe(false);
      });

      it("defaults limit to 20 and clamps it to 1..1000", async () => {
        for (let i = 0; i < 25; i++) await store.insertAgent(agent(`a${String(i).padStart(2, "0")}`, i));
        const list = (limit?: number) =>
          store.listAgents({ project_id: P1, ...(limit === undefined ? {} : { limit }) });
        expect((await list()).data).toHaveLength(20);
        expect((await list()).has_more).toBe(true);
        expect((await list(0)).data).toHaveLength(1);
        expect((await list(-5)).data).toHaveLength(1);
        expect((await list(Number.NaN)).data).toHaveLength(20);
        const all = await list(100_000);
        expect(all.data).toHaveLength(25);
        expect(all.has_more).toBe(false);
        expect((await list(25)).has_more).toBe(false);
        expect((await list(24)).has_more).toBe(true);
      });

      it("returns an empty page for an unknown cursor", async () => {
        await store.insertAgent(agent("a1"));
        expect(await store.listAgents({ project_id: P1, after: "nope" })).toEqual({
          data: [],
          has_more: false,
        });
      });

      it("lists nothing when empty", async () => {
        expect(await store.listAgents({ project_id: P1 })).toEqual({ data: [], has_more: false });
      });

      it("lists only the given project's agents; another project's id is an unknown cursor", async () => {
        await store.insertAgent(agent("a1", 1));
        await store.insertAgent(agent("b1", 2, { project_id: P2 }));
        await store.insertAgent(agent("a2", 3));
        await store.insertAgent(agent("b2", 4, { project_id: P2 }));
        expect(ids((await store.listAgents({ project_id: P1 })).data)).toEqual(["a2", "a1"]);
        expect(ids((await store.listAgents({ project_id: P2, order: "asc" })).data)).toEqual(["b1", "b2"]);
        expect(await store.listAgents({ project_id: "nobody" })).toEqual({ data: [], has_more: false });
        expect(await store.listAgents({ project_id: P1, after: "b2" })).toEqual({
          data: [],
          has_more: false,
        });
        const p = await store.listAgents({ project_id: P1, limit: 1 });
        expect(ids(p.data)).toEqual(["a2"]);
        expect(p.has_more).toBe(true);
        const p2 = await store.listAgents({ project_id: P1, limit: 1, after: "a2" });
        expect(ids(p2.data)).toEqual(["a1"]);
        expect(p2.has_more).toBe(false);
      });
    });

    describe("sessions", () => {
      it("inserts, gets, patches and counts (per project and overall)", async () => {
        const s = session("s1", 10, { agent_id: "ag_1", metadata: { a: "1" }, name: "n", thread_id: null });
        await store.insertSession(s);
        expect(await store.getSession("s1")).toEqual(s);
        expect(await store.getSession("nope")).toBeUndefined();
        expect(await store.countSessions()).toBe(1);

        const patch = {
          status: "in_progress",
          thread_id: "thr_1",
          usage: usage(7),
          error: "boom",
          active_turn_id: "t1",
          last_active_at: 99.5,
          extra: { text: { format: "json" } },
          tools: [{ type: "function", name: "f" }],
        } as const;
        const required_actions: SessionRecord["required_actions"] = [
          {
            type: "function_call",
            id: "call_1",
            turn_id: "t1",
            name: "f",
            arguments: '{"a":1}',
            created_at: 99,
          },
        ];
        const updated: SessionRecord = { ...s, ...patch, tools: [...patch.tools], required_actions };
        expect(
          await store.updateSession("s1", { ...patch, tools: [...patch.tools], required_actions }),
        ).toEqual(updated);
        expect(await store.getSession("s1")).toEqual(updated);
        // undefined fields are ignored; null is a value
        expect(
          await store.updateSession("s1", { name: undefined, error: null, active_turn_id: null }),
        ).toEqual({
          ...updated,
          error: null,
          active_turn_id: null,
        });
        expect((await store.updateSession("s1", {}))?.name).toBe("n");
        expect(await store.updateSession("nope", { status: "idle" })).toBeUndefined();
        expect(await store.getSession("nope")).toBeUndefined();

        await store.insertSession(session("s2", 10, { project_id: P2 }));
        expect(await store.countSessions()).toBe(2);
        expect(await store.countSessions(P1)).toBe(1);
        expect(await store.countSessions(P2)).toBe(1);
        expect(await store.countSessions("nobody")).toBe(0);
        expect(await store.deleteSession("s2")).toBe(true);
        expect(await store.deleteSession("s2")).toBe(false);
        expect(await store.countSessions()).toBe(1);
      });

      it("rejects a duplicate id", async () => {
        await store.insertSession(session("s1"));
        await expect(store.insertSession(session("s1", 5, { project_id: P2 }))).rejects.toThrow();
        expect(await store.countSessions()).toBe(1);
      });

      it("paginates with after/limit/order", async () => {
        for (let i = 1; i <= 7; i++) await store.insertSession(session(`s${i}`, i < 4 ? 50 : 50 + i));
        const seen: string[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await store.listSessions({ project_id: P1, limit: 3, ...(after ? { after } : {}) });
          seen.push(...ids(page.data));
          if (!page.has_more) break;
          after = page.data.at(-1)!.id;
        }
        expect(seen).toEqual(["s7", "s6", "s5", "s4", "s3", "s2", "s1"]);

        const asc = await store.listSessions({ project_id: P1, order: "asc", limit: 3, after: "s3" });
        expect(ids(asc.data)).toEqual(["s4", "s5", "s6"]);
        expect(asc.has_more).toBe(true);
        expect(await store.listSessions({ project_id: P1, after: "missing" })).toEqual({
          data: [],
          has_more: false,
        });
      });

      it("filters by agent_id and metadata (all keys must match), within the project", async () => {
        await store.insertSession(session("s1", 1, { agent_id: "a", metadata: { env: "prod", team: "x" } }));
        await store.insertSession(session("s2", 2, { agent_id: "a", metadata: { env: "dev", team: "x" } }));
        await store.insertSession(session("s3", 3, { agent_id: "b", metadata: { env: "prod" } }));
        await store.insertSession(session("s4", 4, { metadata: { 'we.ird "key"': "v'al" } }));
        // another project with the same agent and metadata: never listed for P1
        await store.insertSession(
          session("o1", 5, { project_id: P2, agent_id: "a", metadata: { env: "prod", team: "x" } }),
        );
        await store.insertSession(session("o2", 6, { project_id: P2, metadata: { 'we.ird "key"': "v'al" } }));

        const list = async (
          opts: Omit<Parameters<Store["listSessions"]>[0], "project_id">,
          project_id = P1,
        ) => ids((await store.listSessions({ project_id, ...opts })).data);
        expect(await list({ agent_id: "a" })).toEqual(["s2", "s1"]);
        expect(await list({ agent_id: "zzz" })).toEqual([]);
        expect(await list({ metadata: { env: "prod" } })).toEqual(["s3", "s1"]);
        expect(await list({ metadata: { env: "prod", team: "x" } })).toEqual(["s1"]);
        expect(await list({ metadata: { team: "x" }, agent_id: "a", order: "asc" })).toEqual(["s1", "s2"]);
        expect(await list({ metadata: { env: "nope" } })).toEqual([]);
        expect(await list({ metadata: { 'we.ird "key"': "v'al" } })).toEqual(["s4"]);
        expect(await list({ metadata: {} })).toEqual(["s4", "s3", "s2", "s1"]);
        expect(await list({})).toEqual(["s4", "s3", "s2", "s1"]);

        expect(await list({ agent_id: "a" }, P2)).toEqual(["o1"]);
        expect(await list({ metadata: { 'we.ird "key"': "v'al" } }, P2)).toEqual(["o2"]);
        expect(await list({}, "nobody")).toEqual([]);
        // a cursor of another project is unknown here
        expect(await store.listSessions({ project_id: P1, after: "o1" })).toEqual({
          data: [],
          has_more: false,
        });

        const p = await store.listSessions({ project_id: P1, agent_id: "a", limit: 1 });
        expect(ids(p.data)).toEqual(["s2"]);
        expect(p.has_more).toBe(true);
        const p2 = await store.listSessions({ project_id: P1, agent_id: "a", limit: 1, after: "s2" });
        expect(ids(p2.data)).toEqual(["s1"]);
        expect(p2.has_more).toBe(false);
      });

      it("lists idle sessions (status idle, no active turn) before a time, oldest first, limited", async () => {
        await store.insertSession(session("old_idle", 1, { last_active_at: 10 }));
        await store.insertSession(
          session("old_idle_other_project", 1, { last_active_at: 12, project_id: P2 }),
        );
        await store.insertSession(session("old_busy", 1, { last_active_at: 5, status: "in_progress" }));
        await store.insertSession(
          session("old_action", 1, { last_active_at: 15, status: "requires_action" }),
        );
        await store.insertSession(session("old_claimed", 1, { last_active_at: 16, active_turn_id: "t1" }));
        await store.insertSession(session("old_idle2", 1, { last_active_at: 30 }));
        await store.insertSession(session("recent", 1, { last_active_at: 100 }));

        expect(ids(await store.listIdleSessionsBefore(50, 10))).toEqual([
          "old_idle",
          "old_idle_other_project",
          "old_idle2",
        ]);
        expect(ids(await store.listIdleSessionsBefore(50, 2))).toEqual([
          "old_idle",
          "old_idle_other_project",
        ]);
        expect(ids(await store.listIdleSessionsBefore(10, 10))).toEqual([]);
        expect(ids(await store.listIdleSessionsBefore(1000, 0))).toEqual([]);
        // released: idle again
        await store.updateSession("old_claimed", { active_turn_id: null });
        expect(ids(await store.listIdleSessionsBefore(20, 10))).toEqual([
          "old_idle",
          "old_idle_other_project",
          "old_claimed",
        ]);
      });

      it("lists busy sessions (in_progress, requires_action or with an active turn)", async () => {
        await store.insertSession(session("idle"));
        await store.insertSession(session("running", 1000, { status: "in_progress" }));
        await store.insertSession(session("waiting", 1000, { status: "requires_action", project_id: P2 }));
        await store.insertSession(session("stale", 1000, { status: "idle", active_turn_id: "t9" }));
        expect(ids(await store.listBusySessions()).sort()).toEqual(["running", "stale", "waiting"]);
      });

      it("claimSession: exactly one of two concurrent claims wins; a claim after release works", async () => {
        await store.insertSession(session("s1"));
        const [a, b] = await Promise.all([
          store.claimSession("s1", "t_a", { status: "in_progress", updated_at: 2000 }),
          store.claimSession("s1", "t_b", { status: "requires_action", updated_at: 3000 }),
        ]);
        expect([a, b].filter((r) => r !== undefined)).toHaveLength(1);
        const winner = (a ?? b)!;
        const loser = a ? "t_b" : "t_a";
        expect(winner.active_turn_id).toBe(a ? "t_a" : "t_b");
        // A claim bumps the lease epoch: the fencing token of that claim.
        expect(winner).toEqual(
          a
            ? {
                ...session("s1"),
                active_turn_id: "t_a",
                status: "in_progress",
                updated_at: 2000,
                lease_epoch: 1,
              }
            : {
                ...session("s1"),
                active_turn_id: "t_b",
                status: "requires_action",
                updated_at: 3000,
                lease_epoch: 1,
              },
        );
        expect(await store.getSession("s1")).toEqual(winner); // the loser changed nothing
        expect(await store.claimSession("s1", loser, { status: "failed" })).toBeUndefined();
        expect(await store.getSession("s1")).toEqual(winner);

        expect(await store.updateSession("s1", { active_turn_id: null, status: "idle" })).toMatchObject({
          active_turn_id: null,
        });
        const again = await store.claimSession("s1", "t_c", { status: "in_progress" });
        expect(again).toMatchObject({
          id: "s1",
          active_turn_id: "t_c",
          status: "in_progress",
          lease_epoch: 2,
        });
        expect(await store.getSession("s1")).toEqual(again);

        expect(await store.claimSession("nope", "t", {})).toBeUndefined();
        expect(await store.getSession("nope")).toBeUndefined();
      });

      it("releaseSession gives back only the claim it names, and only while it is held", async () => {
        await store.insertSession(session("s1"));
        await store.claimSession("s1", "t_a", { status: "in_progress" });
        // another claim's id changes nothing
        expect(await store.releaseSession("s1", "t_other", { status: "idle" })).toBeUndefined();
        expect((await store.getSession("s1"))?.active_turn_id).toBe("t_a");
        const released = await store.releaseSession("s1", "t_a", { status: "idle", updated_at: 5000 });
        expect(released).toMatchObject({
          active_turn_id: null,
          status: "idle",
          updated_at: 5000,
          lease_epoch: 1,
        });
        expect(await store.getSession("s1")).toEqual(released);
        // released already (or claimed again by a turn): nothing to give back
        await store.claimSession("s1", "t_b", { status: "in_progress" });
        expect(await store.releaseSession("s1", "t_a", { status: "idle" })).toBeUndefined();
        expect((await store.getSession("s1"))?.active_turn_id).toBe("t_b");
        expect(await store.releaseSession("nope", "t", {})).toBeUndefined();
      });

      it("claimSession inside transactions: two concurrent transactions, one claim", async () => {
        await store.insertSession(session("s1"));
        const claim = (turnId: string) =>
          store.transaction(async (tx) => {
            const s = await tx.claimSession("s1", turnId, { status: "in_progress" });
            if (s) await tx.insertTurn(turn("s1", turnId, 1, { status: "in_progress" }));
            return s !== undefined;
          });
        const won = await Promise.all([claim("t_a"), claim("t_b")]);
        expect(won.filter(Boolean)).toHaveLength(1);
        const active = (await store.getSession("s1"))!.active_turn_id;
        expect(active).toBe(won[0] ? "t_a" : "t_b");
        expect(ids((await store.listTurns("s1", {})).data)).toEqual([active]);
      });
    });

    describe("turns", () => {
      beforeEach(async () => {
        await store.insertSession(session("s1"));
        await store.insertSession(session("s2"));
      });

      it("inserts, gets and patches", async () => {
        const t = turn("s1", "t1", 5, { goal: { mode: "objective", objective: "x" } });
        await store.insertTurn(t);
        expect(await store.getTurn("s1", "t1")).toEqual(t);
        expect(await store.getTurn("s2", "t1")).toBeUndefined();
        expect(await store.getTurn("s1", "nope")).toBeUndefined();

        const done: TurnRecord = {
          ...t,
          status: "failed",
          started_at: 6,
          completed_at: 7.25,
          error: { code: "engine_error", message: "boom" },
          usage: usage(3),
          goal: null,
        };
        expect(
          await store.updateTurn("s1", "t1", {
            status: "failed",
            started_at: 6,
            completed_at: 7.25,
            error: { code: "engine_error", message: "boom" },
            usage: usage(3),
            goal: null,
            input: undefined, // ignored
          }),
        ).toEqual(done);
        expect(await store.getTurn("s1", "t1")).toEqual(done);
        expect(await store.updateTurn("s1", "t1", {})).toEqual(done);
        expect(await store.updateTurn("s1", "t1", { status: "completed" })).toEqual({
          ...done,
          status: "completed",
        });
        // missing turn, or the turn id of another session
        expect(await store.updateTurn("s1", "nope", { status: "completed" })).toBeUndefined();
        expect(await store.updateTurn("s2", "t1", { status: "cancelled" })).toBeUndefined();
        expect((await store.getTurn("s1", "t1"))?.status).toBe("completed");
      });

      it("requires an existing session", async () => {
        await expect(store.insertTurn(turn("nope", "t1"))).rejects.toThrow();
        expect(await store.getTurn("nope", "t1")).toBeUndefined();
      });

      it("lists per session with pagination and a status filter", async () => {
        for (let i = 1; i <= 5; i++) {
          await store.insertTurn(turn("s1", `t${i}`, 100, { status: i % 2 ? "completed" : "failed" }));
        }
        await store.insertTurn(turn("s2", "other", 100, { status: "completed" }));

        const p1 = await store.listTurns("s1", { limit: 2 });
        expect(ids(p1.data)).toEqual(["t5", "t4"]);
        expect(p1.has_more).toBe(true);
        const p2 = await store.listTurns("s1", { limit: 2, after: "t4" });
        expect(ids(p2.data)).toEqual(["t3", "t2"]);
        const p3 = await store.listTurns("s1", { limit: 2, after: "t2" });
        expect(ids(p3.data)).toEqual(["t1"]);
        expect(p3.has_more).toBe(false);

        expect(ids((await store.listTurns("s1", { order: "asc" })).data)).toEqual([
          "t1",
          "t2",
          "t3",
          "t4",
          "t5",
        ]);
        expect(ids((await store.listTurns("s2", {})).data)).toEqual(["other"]);
        // a cursor from another session is unknown here
        expect(await store.listTurns("s2", { after: "t1" })).toEqual({ data: [], has_more: false });

        expect(ids((await store.listTurns("s1", { status: "completed" })).data)).toEqual(["t5", "t3", "t1"]);
        const f = await store.listTurns("s1", { status: "failed", limit: 1 });
        expect(ids(f.data)).toEqual(["t4"]);
        expect(f.has_more).toBe(true);
        expect(ids((await store.listTurns("s1", { status: "failed", after: "t4" })).data)).toEqual(["t2"]);
        expect((await store.listTurns("s1", { status: "queued" })).data).toEqual([]);
      });

      it("startTurn claims the session, inserts the turn and appends its first events in one step", async () => {
        await store.insertWebhookEndpoint(endpoint("whe_all", 1));
        await store.appendEvents("s1", [newEvent()]);
        const before = (await store.getSession("s1"))!;
        const t = turn("s1", "t1", 5, { status: "in_progress", input: [{ type: "text", text: "hi" }] });
        const patch = {
          status: "in_progress" as const,
          error: null,
          updated_at: 1500,
          owner_instance: "inst_a",
        };
        const started = await store.startTurn(before, t, patch, 1500.5);
        const claimed = await store.getSession("s1");
        expect(started?.session).toEqual(claimed);
        expect(claimed).toMatchObject({
          ...patch,
          active_turn_id: "t1",
          lease_epoch: before.lease_epoch + 1,
        });
        expect(await store.getTurn("s1", "t1")).toEqual(t);
        // The events as stored are the ones handed back (to publish): the turn, then the session as claimed.
        expect(started?.appended.map((a) => a.ordinal)).toEqual([null, null]);
        expect(await store.readEvents("s1", 1, 10)).toEqual(started?.appended.map((a) => a.event));
        expect(
          started?.appended.map((a) => [a.event.seq, a.event.type, a.event.turn_id, a.event.created_at]),
        ).toEqual([
          [2, "turn.started", "t1", 1500.5],
          [3, "session.status", "t1", 1500.5],
        ]);
        expect(started?.appended[1]?.event).toMatchObject({ data: { session: claimed } });
        // Its webhook event, as an append of the same status writes it.
        const deliveries = (await store.listWebhookDeliveries("whe_all", { order: "asc" })).data;
        expect(deliveries.map((d) => [d.event_type, d.data])).toEqual([
          [
            "agent.session.in_progress",
            { id: "s1", environment_type: "self_hosted", environment_id: "env_local" },
          ],
        ]);
        // Claimed already, or no such session: nothing is written.
        const t2 = turn("s1", "t2", 6);
        expect(await store.startTurn(claimed!, t2, patch, 1501)).toBeUndefined();
        expect(
          await store.startTurn({ ...before, id: "nope" }, turn("nope", "t3"), patch, 1501),
        ).toBeUndefined();
        expect(await store.getTurn("s1", "t2")).toBeUndefined();
        expect(await store.lastEventSeq("s1")).toBe(3);
        expect(await store.getSession("s1")).toEqual(claimed);
        // Inside a transaction too (its steps, or its statement, on the transaction's connection).
        await store.releaseSession("s1", "t1", { status: "idle" });
        const inTx = await store.transaction((tx) => tx.startTurn(claimed!, t2, patch, 1502));
        expect(inTx?.session).toMatchObject({ active_turn_id: "t2", lease_epoch: before.lease_epoch + 2 });
        expect(await store.getTurn("s1", "t2")).toEqual(t2);
      });
    });

    describe("items (written with events)", () => {
      beforeEach(async () => {
        await store.insertSession(session("s1"));
        await store.insertSession(session("s2"));
      });

      it("a start inserts the item 'started' with the next ordinal (0, 1, 2… per session)", async () => {
        const [a, b] = await store.appendEvents("s1", [
          startItem("t1", threadItem("i_a")),
          startItem("t1", threadItem("i_b")),
        ]);
        const [x] = await store.appendEvents("s2", [startItem("tx", threadItem("i_x"))]);
        const [plain, c] = await store.appendEvents("s1", [newEvent(), startItem("t2", threadItem("i_c"))]);
        expect([a!.ordinal, b!.ordinal, c!.ordinal]).toEqual([0, 1, 2]);
        expect(x!.ordinal).toBe(0);
        expect(plain!.ordinal).toBeNull();
        expect(a!.event).toMatchObject({ type: "item.started", seq: 1, turn_id: "t1", session_id: "s1" });

        const stored = await items("s1");
        expect(stored).toEqual([
          {
            session_id: "s1",
            turn_id: "t1",
            ordinal: 0,
            id: "i_a",
            type: "agentMessage",
            state: "started",
            created_at: 1000.5,
            data: threadItem("i_a"),
          },
          expect.objectContaining({ ordinal: 1, id: "i_b", state: "started" }),
          expect.objectContaining({ ordinal: 2, id: "i_c", turn_id: "t2", state: "started" }),
        ]);
        expect(await items("s2")).toEqual([
          expect.objectContaining({ ordinal: 0, id: "i_x", turn_id: "tx" }),
        ]);
        expect(await items("nope")).toEqual([]);
      });

      it("a finish updates the turn's latest item with that id to its final data and state", async () => {
        await store.appendEvents("s1", [
          startItem("t1", threadItem("i1", "first")), // 0
          startItem("t1", threadItem("i1", "again")), // 1: the same id again in the same turn
          startItem("t2", threadItem("i1", "t2")), // 2: the same id in another turn
          startItem("t1", threadItem("i2")), // 3
        ]);
        const [fin] = await store.appendEvents("s1", [
          finishItem("t1", threadItem("i1", "final", "commandExecution"), "completed", 2000),
        ]);
        expect(fin!.ordinal).toBeNull(); // nothing inserted
        expect(fin!.event).toMatchObject({ type: "item.completed", seq: 5 });
        expect(await item("s1", 1)).toEqual({
          session_id: "s1",
          turn_id: "t1",
          ordinal: 1,
          id: "i1",
          type: "commandExecution",
          state: "completed",
          created_at: 1000.5, // the start time stays
          data: threadItem("i1", "final", "commandExecution"),
        });
        expect(await item("s1", 0)).toMatchObject({ state: "started", data: threadItem("i1", "first") });
        expect(await item("s1", 2)).toMatchObject({ state: "started", turn_id: "t2" });
        expect(await item("s1", 3)).toMatchObject({ state: "started", id: "i2" });

        await store.appendEvents("s1", [finishItem("t1", threadItem("i2", "cut"), "incomplete")]);
        expect(await item("s1", 3)).toMatchObject({ state: "incomplete", data: threadItem("i2", "cut") });
        expect(await items("s1")).toHaveLength(4);
      });

      it("a finish without a start inserts the item with its final state", async () => {
        await store.appendEvents("s1", [startItem("t1", threadItem("i0"))]);
        const [done, cut] = await store.appendEvents("s1", [
          finishItem("t1", threadItem("i1")),
          finishItem("t1", threadItem("i2"), "incomplete"),
        ]);
        expect(done!.ordinal).toBe(1);
        expect(cut!.ordinal).toBe(2);
        expect(await item("s1", 1)).toEqual({
          session_id: "s1",
          turn_id: "t1",
          ordinal: 1,
          id: "i1",
          type: "agentMessage",
          state: "completed",
          created_at: 1000.75,
          data: threadItem("i1"),
        });
        expect(await item("s1", 2)).toMatchObject({ id: "i2", state: "incomplete" });
        // an item of the same id in another turn is not the one finished
        const [other] = await store.appendEvents("s1", [finishItem("t2", threadItem("i0"))]);
        expect(other!.ordinal).toBe(3);
        expect(await item("s1", 0)).toMatchObject({ state: "started", turn_id: "t1" });
      });

      it("lists ascending by ordinal by default, filters by turn, paginates", async () => {
        for (let i = 0; i < 6; i++) {
          await store.appendEvents("s1", [finishItem(i < 3 ? "t1" : "t2", threadItem(`i${i}`))]);
        }
        const all = await store.listItems("s1", {});
        expect(ids(all.data)).toEqual(["i0", "i1", "i2", "i3", "i4", "i5"]);
        expect(all.data.map((i) => i.ordinal)).toEqual([0, 1, 2, 3, 4, 5]);

        const p1 = await store.listItems("s1", { limit: 4 });
        expect(ids(p1.data)).toEqual(["i0", "i1", "i2", "i3"]);
        expect(p1.has_more).toBe(true);
        const p2 = await store.listItems("s1", { limit: 4, after: "i3" });
        expect(ids(p2.data)).toEqual(["i4", "i5"]);
        expect(p2.has_more).toBe(false);

        expect(ids((await store.listItems("s1", { order: "desc", limit: 2 })).data)).toEqual(["i5", "i4"]);
        expect(ids((await store.listItems("s1", { order: "desc", after: "i4" })).data)).toEqual([
          "i3",
          "i2",
          "i1",
          "i0",
        ]);

        expect(ids((await store.listItems("s1", { turn_id: "t2" })).data)).toEqual(["i3", "i4", "i5"]);
        const t1 = await store.listItems("s1", { turn_id: "t1", limit: 1, after: "i0" });
        expect(ids(t1.data)).toEqual(["i1"]);
        expect(t1.has_more).toBe(true);
        expect(await store.listItems("s1", { after: "nope" })).toEqual({ data: [], has_more: false });
        expect(await store.listItems("s2", {})).toEqual({ data: [], has_more: false });
      });

      it("filters by states and exclude_types", async () => {
        await store.appendEvents("s1", [
          finishItem("t1", threadItem("u1", "hi", "userMessage")), // 0 completed
          startItem("t1", threadItem("a1")), // 1 started
          startItem("t1", threadItem("c1", "ls", "commandExecution")), // 2 started
          finishItem("t1", threadItem("a1")), // 1 -> completed
          finishItem("t1", threadItem("r1", "r", "reasoning"), "incomplete"), // 3 incomplete
          startItem("t2", threadItem("a2")), // 4 started
        ]);
        const list = async (opts: Parameters<Store["listItems"]>[1]) =>
          ids((await store.listItems("s1", opts)).data);
        expect(await list({ states: ["started"] })).toEqual(["c1", "a2"]);
        expect(await list({ states: ["completed"] })).toEqual(["u1", "a1"]);
        expect(await list({ states: ["completed", "incomplete"] })).toEqual(["u1", "a1", "r1"]);
        expect(await list({ states: [] })).toEqual(["u1", "a1", "c1", "r1", "a2"]); // empty: no filter
        expect(await list({ exclude_types: ["userMessage"] })).toEqual(["a1", "c1", "r1", "a2"]);
        expect(await list({ exclude_types: ["userMessage", "reasoning", "agentMessage"] })).toEqual(["c1"]);
        expect(await list({ exclude_types: [] })).toEqual(["u1", "a1", "c1", "r1", "a2"]);
        expect(await list({ exclude_types: ["userMessage"], states: ["completed"], order: "desc" })).toEqual([
          "a1",
        ]);
        expect(await list({ turn_id: "t1", states: ["started"] })).toEqual(["c1"]);
        const page = await store.listItems("s1", { exclude_types: ["userMessage"], limit: 2 });
        expect(ids(page.data)).toEqual(["a1", "c1"]);
        expect(page.has_more).toBe(true);
        expect(await list({ exclude_types: ["userMessage"], after: "c1" })).toEqual(["r1", "a2"]);
      });

      it("closeOpenItems marks one turn's open items incomplete with the given status", async () => {
        await store.appendEvents("s1", [
          startItem("t1", threadItem("i1")), // 0
          startItem("t1", threadItem("i2")), // 1
          startItem("t2", threadItem("j1")), // 2
          startItem("t1", threadItem("i3")), // 3
          finishItem("t1", threadItem("i2")), // 1 -> completed
        ]);
        await store.appendEvents("s2", [startItem("t1", threadItem("k1"))]);

        const closed = await store.closeOpenItems("s1", "t1", "failed");
        expect(closed.map((i) => [i.ordinal, i.id, i.state])).toEqual([
          [0, "i1", "incomplete"],
          [3, "i3", "incomplete"],
        ]);
        expect(closed[0]!.data).toEqual({ ...threadItem("i1"), status: "failed" });
        expect(await item("s1", 0)).toEqual(closed[0]);
        expect(await item("s1", 3)).toEqual(closed[1]);
        expect(await item("s1", 1)).toMatchObject({ state: "completed", data: threadItem("i2") });
        // other turns and other sessions are left alone
        expect(await item("s1", 2)).toMatchObject({ state: "started", data: threadItem("j1") });
        expect(await item("s2", 0)).toMatchObject({ state: "started", data: threadItem("k1") });
        // nothing left open in t1
        expect(await store.closeOpenItems("s1", "t1", "failed")).toEqual([]);
        expect(await store.closeOpenItems("s1", "nope", "failed")).toEqual([]);
        expect(await store.closeOpenItems("nope", "t1", "failed")).toEqual([]);
      });

      it("endTurn closes the turn's items, patches the turn and the session and appends its events, in one step", async () => {
        await store.insertWebhookEndpoint(endpoint("whe_all", 1));
        await store.insertTurn(turn("s1", "t1", 1));
        await store.insertTurn(turn("s1", "t2", 2));
        await store.appendEvents("s1", [
          startItem("t1", threadItem("i1")), // 0
          startItem("t2", threadItem("j1")), // 1
          startItem("t1", threadItem("i2")), // 2
        ]);
        const usage = {
          input_tokens: 3,
          cached_input_tokens: 0,
          output_tokens: 4,
          reasoning_output_tokens: 0,
          total_tokens: 7,
        };
        // Logged first: an action nobody answers, and a command a stop ended (its own final data).
        const stopped = threadItem("i1", "stopped");
        const before: NewEvent[] = [
          newEvent(
            {
              type: "action.resolved",
              data: { action_id: "a1", action_type: "approval_request", answer: null },
            },
            "t1",
            1500,
          ),
          {
            ...newEvent({ type: "item.completed", data: { item: stopped, output_index: 0 } }, "t1", 1500),
            item: { kind: "finish", turn_id: "t1", item: stopped, created_at: 1500, state: "incomplete" },
          },
        ];
        const ended: TurnRecord = {
          ...turn("s1", "t1", 1),
          status: "failed",
          error: { code: "x", message: "why" },
        };
        const patch = {
          status: "idle" as const,
          error: "why",
          active_turn_id: null,
          usage,
          updated_at: 1501,
        };
        const webhook = { ...(await store.getSession("s1"))!, ...patch };
        const end = await store.endTurn(
          "s1",
          "t1",
          {
            itemStatus: "failed",
            turn: { status: "failed", error: ended.error, completed_at: 1500 },
            session: patch,
          },
          // i1 has an output_index, i2 none: it gets the next one
          {
            at: 1500,
            before,
            outputIndex: new Map([
              ["i1", 0],
              ["x", 1],
            ]),
            turn: { type: "turn.failed", data: { turn: ended } },
            webhook,
          },
        );
        expect(end.closed.map((i) => [i.ordinal, i.id, i.state])).toEqual([
          [0, "i1", "incomplete"],
          [2, "i2", "incomplete"],
        ]);
        expect(end.closed[1]!.data).toEqual({ ...threadItem("i2"), status: "failed" });
        // The stopped command's own data is the item's last word; other turns' items are left alone.
        expect(await item("s1", 0)).toMatchObject({ state: "incomplete", data: stopped });
        expect(await item("s1", 1)).toMatchObject({ state: "started" });
        // The session as stored, with every field as getSession gives it.
        expect(end.session).toEqual(await store.getSession("s1"));
        expect(end.session).toMatchObject({ status: "idle", error: "why", usage, updated_at: 1501 });
        expect(await store.getTurn("s1", "t1")).toMatchObject({ status: "failed", completed_at: 1500 });
        expect(await store.getTurn("s1", "t2")).toEqual(turn("s1", "t2", 2));
        // The events as stored are the ones handed back (to publish), in this order.
        expect(await store.readEvents("s1", 3, 10)).toEqual(end.appended.map((a) => a.event));
        expect(
          end.appended.map((a) => {
            const d = a.event.data as { output_index?: number; item?: { id: string } };
            return [
              a.event.seq,
              a.event.type,
              d.item?.id ?? null,
              d.output_index ?? null,
              a.event.created_at,
            ];
          }),
        ).toEqual([
          [4, "action.resolved", null, null, 1500],
          [5, "item.completed", "i1", 0, 1500],
          [6, "item.completed", "i1", 0, 1500],
          [7, "item.completed", "i2", 2, 1500],
          [8, "turn.failed", null, null, 1500],
          [9, "session.status", null, null, 1500],
        ]);
        expect(end.appended[3]?.event).toMatchObject({ data: { item: end.closed[1]!.data } });
        expect(end.appended[5]?.event).toMatchObject({ data: { session: end.session } });
        const deliveries = (await store.listWebhookDeliveries("whe_all", { order: "asc" })).data;
        expect(deliveries.map((d) => d.event_type)).toEqual(["agent.session.idle"]);

        // Nothing left open; a wrong fence writes nothing; a session that is not there.
        const log = {
          at: 1600,
          before: [],
          outputIndex: new Map<string, number>(),
          turn: { type: "turn.failed" as const, data: { turn: ended } },
          webhook,
        };
        await expect(
          store.endTurn(
            "s1",
            "t1",
            { itemStatus: "failed", turn: { status: "completed" }, session: { error: null } },
            log,
            999,
          ),
        ).rejects.toBeInstanceOf(FencedError);
        expect(await store.getTurn("s1", "t1")).toMatchObject({ status: "failed" });
        expect((await store.getSession("s1"))?.error).toBe("why");
        const again = await store.endTurn("s1", "t1", { itemStatus: "failed", turn: {}, session: {} }, log);
        expect(again.closed).toEqual([]);
        expect(again.appended.map((a) => a.event.type)).toEqual(["turn.failed", "session.status"]);
        const none = await store.endTurn(
          "nope",
          "t1",
          { itemStatus: "failed", turn: { status: "failed" }, session: { status: "idle" } },
          log,
        );
        expect(none).toEqual({ closed: [], session: undefined, appended: [] });
      });

      it("root_only leaves out the items of the session's subagents' turns", async () => {
        await store.insertTurn(turn("s1", "t1", 1));
        await store.insertTurn(turn("s1", "sub1", 2, { subagent_id: "subagent_a" }));
        await store.appendEvents("s1", [
          finishItem("t1", threadItem("i1")),
          finishItem("sub1", threadItem("c1")),
          finishItem("t1", threadItem("i2")),
          // an item of a turn with no record is the session's own
          finishItem("t9", threadItem("i3")),
        ]);
        // The same turn id as a subagent's in another session does not count.
        await store.insertTurn(turn("s2", "t1", 1, { subagent_id: "subagent_b" }));
        expect(ids((await store.listItems("s1", { root_only: true })).data)).toEqual(["i1", "i2", "i3"]);
        expect(ids((await store.listItems("s1", { root_only: true, order: "desc", limit: 2 })).data)).toEqual(
          ["i3", "i2"],
        );
        expect(ids((await store.listItems("s1", { root_only: true, after: "i1" })).data)).toEqual([
          "i2",
          "i3",
        ]);
        expect(ids((await store.listItems("s1", {})).data)).toEqual(["i1", "c1", "i2", "i3"]);
        expect(ids((await store.listItems("s1", { turn_ids: ["sub1"] })).data)).toEqual(["c1"]);
      });

      it("copyHistory copies the given turns' items (up to an ordinal), in order, with their turns", async () => {
        const t1 = turn("s1", "t1", 1, { status: "completed", started_at: 1, completed_at: 2 });
        const t2 = turn("s1", "t2", 3, { status: "completed", goal: { mode: "input", objective: "g" } });
        await store.insertTurn(t1);
        await store.insertTurn(t2);
        await store.insertTurn(turn("s1", "sub1", 2, { subagent_id: "subagent_a" }));
        await store.insertTurn(turn("s1", "t3", 4));
        await store.appendEvents("s1", [
          finishItem("t1", threadItem("u1", "hi", "userMessage")), // 0
          finishItem("t1", threadItem("a1")), // 1
          finishItem("sub1", threadItem("c1")), // 2: a subagent's
          startItem("t2", threadItem("a2")), // 3: still open
          finishItem("t2", threadItem("x2")), // 4: after the ordinal asked for
          finishItem("t3", threadItem("a3")), // 5: a turn not asked for
        ]);
        // The target has an item of its own already: the copies follow it.
        await store.insertTurn(turn("s2", "own", 0));
        await store.appendEvents("s2", [finishItem("own", threadItem("o1"))]);

        const copy = { turn_ids: ["t1", "sub1", "t2", "missing"], through_ordinal: 3 };
        expect(await store.copyHistory("s1", "s2", copy)).toBe(3);
        const copied = await items("s2");
        expect(copied.map((i) => [i.ordinal, i.turn_id, i.id, i.state])).toEqual([
          [0, "own", "o1", "completed"],
          [1, "t1", "u1", "completed"],
          [2, "t1", "a1", "completed"],
          [3, "t2", "a2", "started"],
        ]);
        expect(copied[1]).toEqual({ ...(await item("s1", 0)), session_id: "s2", ordinal: 1 });
        // Their turns, as they were; not the subagent's.
        expect(await store.getTurn("s2", "t1")).toEqual({ ...t1, session_id: "s2" });
        expect(await store.getTurn("s2", "t2")).toEqual({ ...t2, session_id: "s2" });
        expect(await store.getTurn("s2", "sub1")).toBeUndefined();
        expect(await store.getTurn("s2", "t3")).toBeUndefined();
        expect(ids((await store.listTurns("s2", { order: "asc" })).data)).toEqual(["own", "t1", "t2"]);
        // The source is unchanged; the target's next item follows the copies.
        expect(ids(await items("s1"))).toEqual(["u1", "a1", "c1", "a2", "x2", "a3"]);
        const [next] = await store.appendEvents("s2", [finishItem("t9", threadItem("n1"))]);
        expect(next!.ordinal).toBe(4);
        // Without an ordinal: all of the turns' items (a turn the target has already is kept as it is).
        await store.insertSession(session("s3"));
        expect(await store.copyHistory("s1", "s3", { turn_ids: ["t2", "t3"], through_ordinal: null })).toBe(
          3,
        );
        expect((await items("s3")).map((i) => [i.ordinal, i.id])).toEqual([
          [0, "a2"],
          [1, "x2"],
          [2, "a3"],
        ]);
        expect(await store.copyHistory("s1", "s3", { turn_ids: [], through_ordinal: null })).toBe(0);
        expect(await store.copyHistory("s1", "s3", { turn_ids: ["nope"], through_ordinal: null })).toBe(0);
      });
    });

    describe("event log", () => {
      beforeEach(async () => {
        await store.insertSession(session("s1"));
        await store.insertSession(session("s2"));
      });

      it("fenced appends: written while the claim's lease epoch holds, refused (nothing written) once it moved on", async () => {
        const claimed = (await store.claimSession("s1", "t1", { owner_instance: "inst_a" }))!;
        expect(claimed.lease_epoch).toBe(1);
        const [ok] = await store.appendEvents("s1", [newEvent()], claimed.lease_epoch);
        expect(ok!.event.seq).toBe(1);
        // Another claim (a takeover) bumps the epoch: the old owner's writes are refused, inside a transaction too.
        await store.updateSession("s1", { active_turn_id: null });
        expect((await store.claimSession("s1", "t2", { owner_instance: "inst_b" }))!.lease_epoch).toBe(2);
        await expect(store.appendEvents("s1", [newEvent()], 1)).rejects.toBeInstanceOf(FencedError);
        await expect(
          store.transaction(async (tx) => {
            await tx.updateSession("s1", { name: "written by a zombie" });
            await tx.appendEvents("s1", [newEvent()], 1);
          }),
        ).rejects.toBeInstanceOf(FencedError);
        expect(await store.lastEventSeq("s1")).toBe(1);
        expect((await store.getSession("s1"))!.name).toBeNull();
        // The current owner's fenced writes, and unfenced ones, go through.
        expect((await store.appendEvents("s1", [newEvent()], 2))[0]!.event.seq).toBe(2);
        expect((await store.appendEvents("s1", [newEvent()]))[0]!.event.seq).toBe(3);
        expect((await store.readEvents("s1", 0, 10)).map((e) => e.seq)).toEqual([1, 2, 3]);
      });

      it("assigns seq 1, 2, 3… per session, independent across sessions", async () => {
        expect(await store.lastEventSeq("s1")).toBe(0);
        const started: LogEvent = { type: "turn.started", data: { turn: turn("s1", "t1") } };
        const [e1] = await store.appendEvents("s1", [newEvent(started, "t1")]);
        expect(e1).toEqual({
          event: { ...started, session_id: "s1", seq: 1, turn_id: "t1", created_at: 1000.123 },
          ordinal: null,
        });
        const seq1 = async (sid: string) => (await store.appendEvents(sid, [newEvent()]))[0]!.event.seq;
        expect(await seq1("s1")).toBe(2);
        expect(await seq1("s2")).toBe(1);
        expect(await seq1("s1")).toBe(3);
        expect(await seq1("s2")).toBe(2);
        const batch = await store.appendEvents("s1", [
          newEvent(delta(1)),
          newEvent(delta(2)),
          newEvent(delta(3)),
        ]);
        expect(batch.map((a) => a.event.seq)).toEqual([4, 5, 6]);
        expect(await store.appendEvents("s1", [])).toEqual([]);
        expect(await store.lastEventSeq("s1")).toBe(6);
        expect(await store.lastEventSeq("s2")).toBe(2);
        expect(await store.lastEventSeq("nope")).toBe(0);
        // stored exactly as returned
        expect(await store.readEvents("s1", 0, 1)).toEqual([e1!.event]);
        expect(await store.readEvents("s1", 3, 10)).toEqual(batch.map((a) => a.event));
      });

      it("stores a null turn_id as null", async () => {
        const [a] = await store.appendEvents("s1", [newEvent(delta(), null)]);
        expect(a!.event.turn_id).toBeNull();
        expect((await store.readEvents("s1", 0, 10))[0]!.turn_id).toBeNull();
      });

      it("reads events after a seq, ascending, limited", async () => {
        for (let i = 0; i < 10; i++) await store.appendEvents("s1", [newEvent(delta(i))]);
        await store.appendEvents("s2", [newEvent(delta(99))]);
        const page = await store.readEvents("s1", 3, 4);
        expect(page.map((e) => e.seq)).toEqual([4, 5, 6, 7]);
        expect(page.map((e) => (e.type === "item.delta" ? e.data.delta : null))).toEqual([
          "3",
          "4",
          "5",
          "6",
        ]);
        expect((await store.readEvents("s1", 8, 100)).map((e) => e.seq)).toEqual([9, 10]);
        expect(await store.readEvents("s1", 10, 100)).toEqual([]);
        expect(await store.readEvents("s1", 0, 0)).toEqual([]);
        expect(await store.readEvents("s2", 0, 100)).toEqual([
          { ...delta(99), session_id: "s2", seq: 1, turn_id: null, created_at: 1000.123 },
        ]);
        expect(await store.readEvents("nope", 0, 100)).toEqual([]);
      });

      it("finds the first event seq of a turn", async () => {
        const status: LogEvent = { type: "session.status", data: { session: session("s1") } };
        await store.appendEvents("s1", [
          newEvent(status),
          newEvent(delta(), "t1"),
          newEvent(delta(), "t1"),
          newEvent(delta(), "t2"),
          newEvent(delta(), "t1"),
        ]);
        expect(await store.firstEventSeqOfTurn("s1", "t1")).toBe(2);
        expect(await store.firstEventSeqOfTurn("s1", "t2")).toBe(4);
        expect(await store.firstEventSeqOfTurn("s1", "t3")).toBeUndefined();
        expect(await store.firstEventSeqOfTurn("s2", "t1")).toBeUndefined();
      });

      it("requires an existing session and does not burn a seq (or an ordinal) on failure", async () => {
        await expect(store.appendEvents("nope", [newEvent()])).rejects.toThrow();
        await expect(store.appendEvents("nope", [startItem("t", threadItem("i"))])).rejects.toThrow();
        expect(await store.lastEventSeq("nope")).toBe(0);
        await store.insertSession(session("nope"));
        const [a] = await store.appendEvents("nope", [startItem("t", threadItem("i"))]);
        expect(a!.event.seq).toBe(1);
        expect(a!.ordinal).toBe(0);
      });

      it("keeps seq and ordinals consistent when a transaction rolls back", async () => {
        await store.appendEvents("s1", [newEvent(), startItem("t1", threadItem("i0"))]);
        await expect(
          store.transaction(async (tx) => {
            const a = await tx.appendEvents("s1", [newEvent(), startItem("t1", threadItem("i1"))]);
            expect(a.map((x) => [x.event.seq, x.ordinal])).toEqual([
              [3, null],
              [4, 1],
            ]);
            await tx.appendEvents("s1", [finishItem("t1", threadItem("i0"))]);
            throw new Error("rollback");
          }),
        ).rejects.toThrow("rollback");
        expect(await store.lastEventSeq("s1")).toBe(2);
        expect(await seqsOf("s1")).toEqual([1, 2]);
        expect(await items("s1")).toEqual([expect.objectContaining({ id: "i0", state: "started" })]);
        const [e, i] = await store.appendEvents("s1", [newEvent(), startItem("t1", threadItem("i1"))]);
        expect(e!.event.seq).toBe(3);
        expect(i!.event.seq).toBe(4);
        expect(i!.ordinal).toBe(1);
      });

      it("events and items appended in a committed transaction are stored", async () => {
        const n = await store.transaction(async (tx) => {
          await tx.appendEvents("s1", [newEvent()]);
          await tx.appendEvents("s1", [startItem("t1", threadItem("i0"))]);
          return tx.lastEventSeq("s1");
        });
        expect(n).toBe(2);
        expect(await seqsOf("s1")).toEqual([1, 2]);
        expect(ids(await items("s1"))).toEqual(["i0"]);
      });
    });

    describe("goals", () => {
      it("puts (upsert), gets, lists (optionally by status) and deletes", async () => {
        for (const sid of ["s1", "s2", "s3"]) await store.insertSession(session(sid));
        expect(await store.getGoal("s1")).toBeUndefined();
        expect(await store.listGoals()).toEqual([]);
        await store.putGoal(goal("s1", 1));
        await store.putGoal(goal("s2", 2, {}, "paused"));
        await store.putGoal(goal("s3", 4, { status_reason: "blocked" }, "blocked"));
        const s1 = goal("s1", 3, { tokens_used: 5, turns_used: 1, turn_id: "t1", run_started_at: 2.5 });
        await store.putGoal(s1);
        expect(await store.getGoal("s1")).toEqual(s1);
        expect((await store.listGoals()).map((g) => g.session_id)).toEqual(["s2", "s1", "s3"]);
        expect(await store.listGoals("active")).toEqual([s1]);
        expect((await store.listGoals("paused")).map((g) => g.session_id)).toEqual(["s2"]);
        expect(await store.listGoals("complete")).toEqual([]);
        expect(await store.deleteGoal("s1")).toBe(true);
        expect(await store.deleteGoal("s1")).toBe(false);
        expect(await store.getGoal("s1")).toBeUndefined();
        expect(await store.listGoals()).toHaveLength(2);
        expect(await store.listGoals("active")).toEqual([]);
      });

      it("requires an existing session", async () => {
        await expect(store.putGoal(goal("nope"))).rejects.toThrow();
        expect(await store.getGoal("nope")).toBeUndefined();
      });
    });

    describe("idempotency", () => {
      it("round-trips and replaces", async () => {
        expect(await store.getIdempotency("scope", "k")).toBeUndefined();
        const r = idem("scope", "k", {
          body_hash: "h1",
          status: 201,
          response: { id: "x", n: [1] },
          created_at: 5,
        });
        await store.putIdempotency(r);
        expect(await store.getIdempotency("scope", "k")).toEqual(r);
        expect(await store.getIdempotency("other", "k")).toBeUndefined();
        const r2 = { ...r, body_hash: "h2", status: 409, response: null };
        await store.putIdempotency(r2);
        expect(await store.getIdempotency("scope", "k")).toEqual(r2);
        await store.putIdempotency({ ...r, key: "k2", response: "text" });
        expect((await store.getIdempotency("scope", "k2"))?.response).toBe("text");
      });

      it("expires keys recorded before a time", async () => {
        await store.putIdempotency(idem("a", "k1", { created_at: 10 }));
        await store.putIdempotency(idem("a", "k2", { created_at: 20 }));
        await store.putIdempotency(idem("b", "k1", { created_at: 30 }));
        expect(await store.expireIdempotency(10)).toBe(0); // strictly before
        expect(await store.expireIdempotency(25)).toBe(2);
        expect(await store.getIdempotency("a", "k1")).toBeUndefined();
        expect(await store.getIdempotency("a", "k2")).toBeUndefined();
        expect(await store.getIdempotency("b", "k1")).toEqual(idem("b", "k1", { created_at: 30 }));
        expect(await store.expireIdempotency(25)).toBe(0);
        expect(await store.expireIdempotency(1e12)).toBe(1);
      });
    });

    describe("delete cascade", () => {
      it("deleting a session removes its turns, items, events, goal and idempotency rows only", async () => {
        for (const sid of ["s1", "s2"]) {
          await store.insertSession(session(sid));
          await store.insertTurn(turn(sid, "t1"));
          await store.appendEvents(sid, [startItem("t1", threadItem("i1")), newEvent()]);
          await store.putGoal(goal(sid));
          await store.putIdempotency(idem(sid, "k"));
        }
        await store.putIdempotency(idem("global", "k"));

        expect(await store.deleteSession("s1")).toBe(true);
        expect(await store.getSession("s1")).toBeUndefined();
        expect(await store.getTurn("s1", "t1")).toBeUndefined();
        expect((await store.listTurns("s1", {})).data).toEqual([]);
        expect(await items("s1")).toEqual([]);
        expect(await store.readEvents("s1", 0, 100)).toEqual([]);
        expect(await store.lastEventSeq("s1")).toBe(0);
        expect(await store.firstEventSeqOfTurn("s1", "t1")).toBeUndefined();
        expect(await store.getGoal("s1")).toBeUndefined();
        expect(await store.getIdempotency("s1", "k")).toBeUndefined();

        // the other session and unrelated rows are untouched
        expect(await store.getSession("s2")).toBeDefined();
        expect(await store.getTurn("s2", "t1")).toBeDefined();
        expect(await items("s2")).toHaveLength(1);
        expect(await store.lastEventSeq("s2")).toBe(2);
        expect(await store.getGoal("s2")).toBeDefined();
        expect(await store.getIdempotency("s2", "k")).toBeDefined();
        expect(await store.getIdempotency("global", "k")).toBeDefined();
      });

      it("a re-created session starts over at seq 1 and ordinal 0", async () => {
        await store.insertSession(session("s1"));
        await store.appendEvents("s1", [newEvent(), newEvent(), startItem("t", threadItem("i"))]);
        await store.deleteSession("s1");
        await store.insertSession(session("s1"));
        expect(await store.lastEventSeq("s1")).toBe(0);
        const [a, b] = await store.appendEvents("s1", [newEvent(), startItem("t", threadItem("i"))]);
        expect(a!.event.seq).toBe(1);
        expect(b!.ordinal).toBe(0);
      });

      it("deleting inside a transaction that rolls back keeps the session's log", async () => {
        await store.insertSession(session("s1"));
        await store.appendEvents("s1", [newEvent(), startItem("t", threadItem("i"))]);
        await expect(
          store.transaction(async (tx) => {
            expect(await tx.deleteSession("s1")).toBe(true);
            throw new Error("rollback");
          }),
        ).rejects.toThrow("rollback");
        expect(await store.lastEventSeq("s1")).toBe(2);
        const [a] = await store.appendEvents("s1", [startItem("t", threadItem("i2"))]);
        expect([a!.event.seq, a!.ordinal]).toEqual([3, 1]);
      });
    });

    describe("transaction", () => {
      it("commits on success (across awaits) and returns the value", async () => {
        const v = await store.transaction(async (tx) => {
          await tx.insertAgent(agent("a1"));
          await new Promise<void>((r) => setImmediate(r));
          await tx.insertAgent(agent("a2"));
          expect(await tx.getAgent("a1")).toBeDefined(); // reads see the transaction's own writes
          return 42;
        });
        expect(v).toBe(42);
        expect((await store.listAgents({ project_id: P1 })).data).toHaveLength(2);
      });

      it("rolls everything back on error", async () => {
        await expect(
          store.transaction(async (tx) => {
            await tx.insertAgent(agent("a1"));
            await tx.insertSession(session("s1"));
            await tx.insertAgent(agent("a1"));
          }),
        ).rejects.toThrow();
        expect(await store.getAgent("a1")).toBeUndefined();
        expect(await store.getSession("s1")).toBeUndefined();
      });

      it("rolls back patches, claims, goals, keys and idempotency rows", async () => {
        await store.insertSession(session("s1"));
        await expect(
          store.transaction(async (tx) => {
            expect(await tx.claimSession("s1", "t1", { status: "in_progress" })).toBeDefined();
            await tx.updateSession("s1", { name: "renamed" });
            await tx.putGoal(goal("s1"));
            await tx.insertKey(apiKey("k1"));
            await tx.putIdempotency(idem("s1", "k"));
            throw new Error("no");
          }),
        ).rejects.toThrow("no");
        expect(await store.getSession("s1")).toEqual(session("s1"));
        expect(await store.getGoal("s1")).toBeUndefined();
        expect(await store.hasKeys()).toBe(false);
        expect(await store.getIdempotency("s1", "k")).toBeUndefined();
        expect(await store.claimSession("s1", "t2", {})).toMatchObject({ active_turn_id: "t2" });
      });

      // How an outside write is ordered against an open transaction is the implementation's (SQLite queues it
      // behind the transaction: sqlite.test.ts); what every store guarantees is that it is not part of it.
      for (const outcome of ["commits", "rolls back"] as const) {
        it(`a write issued outside while a transaction spans awaits is not part of it (the transaction ${outcome})`, async () => {
          let release!: () => void;
          const gate = new Promise<void>((r) => {
            release = r;
          });
          let entered!: () => void;
          const inside = new Promise<void>((r) => {
            entered = r;
          });
          const tx = store.transaction(async (q) => {
            await q.insertAgent(agent("in_tx", 100));
            entered();
            await gate;
            await q.insertAgent(agent("in_tx_2", 100));
            if (outcome === "rolls back") throw new Error("rollback");
            return "ok";
          });
          await inside;
          const outside = store.insertAgent(agent("outside", 100));
          release();
          if (outcome === "rolls back") await expect(tx).rejects.toThrow("rollback");
          else expect(await tx).toBe("ok");
          await outside;

          expect(await store.getAgent("outside")).toEqual(agent("outside", 100));
          const listed = ids((await store.listAgents({ project_id: P1, order: "asc" })).data);
          expect(listed.sort()).toEqual(
            outcome === "commits" ? ["in_tx", "in_tx_2", "outside"] : ["outside"],
          );
        });
      }

      it("concurrent transactions appending to one session: each transaction's events are consecutive, no gaps", async () => {
        await store.insertSession(session("s1"));
        const run = (n: number) =>
          store.transaction(async (tx) => {
            const [a] = await tx.appendEvents("s1", [newEvent(delta(n))]);
            expect(await tx.lastEventSeq("s1")).toBe(a!.event.seq); // sees its own append
            await new Promise<void>((r) => setImmediate(r));
            const [b, c] = await tx.appendEvents("s1", [
              newEvent(delta(n)),
              startItem(`t${n}`, threadItem(`i${n}`)),
            ]);
            expect([b!.event.seq, c!.event.seq]).toEqual([a!.event.seq + 1, a!.event.seq + 2]);
            return { first: a!.event.seq, ordinal: c!.ordinal };
          });
        const got = await Promise.all([run(1), run(2), run(3), run(4)]);
        expect(got.map((g) => g.first).sort((x, y) => x - y)).toEqual([1, 4, 7, 10]);
        expect(got.map((g) => g.ordinal).sort()).toEqual([0, 1, 2, 3]);
        expect(await seqsOf("s1")).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        const stored = await items("s1");
        expect(stored.map((i) => i.ordinal)).toEqual([0, 1, 2, 3]);
        // the ordinals follow the log: an item with a later event has a later ordinal
        const firstOf = new Map(got.map((g, k) => [`i${k + 1}`, g.first]));
        const byLog = [...stored].sort((x, y) => firstOf.get(x.id)! - firstOf.get(y.id)!);
        expect(byLog.map((i) => i.ordinal)).toEqual([0, 1, 2, 3]);
      });
    });

    describe("automations", () => {
      it("inserts, gets, patches, lists by project and by target session, deletes with its invocations", async () => {
        const a1 = automation("auto_1", 10);
        const a2 = automation("auto_2", 20, { target: existingTarget("sess_x") });
        const a3 = automation("auto_3", 30, { project_id: P2 });
        for (const a of [a1, a2, a3]) await store.insertAutomation(a);
        expect(await store.getAutomation("auto_1")).toEqual(a1);
        expect(await store.getAutomation("nope")).toBeUndefined();
        expect(ids((await store.listAutomations({ project_id: P1 })).data)).toEqual(["auto_2", "auto_1"]);
        expect(ids((await store.listAutomations({ project_id: P1, order: "asc", limit: 1 })).data)).toEqual([
          "auto_1",
        ]);
        expect(ids((await store.listAutomations({ project_id: P1, session_id: "sess_x" })).data)).toEqual([
          "auto_2",
        ]);
        // a new target moves the session filter with it
        const moved = await store.updateAutomation("auto_1", {
          target: existingTarget("sess_x"),
          status: "paused",
          next_run_at: null,
        });
        expect(moved).toEqual({
          ...a1,
          target: existingTarget("sess_x"),
          status: "paused",
          next_run_at: null,
        });
        expect(ids((await store.listAutomations({ project_id: P1, session_id: "sess_x" })).data)).toEqual([
          "auto_2",
          "auto_1",
        ]);
        await store.updateAutomation("auto_2", { target: newSessionTarget() });
        expect(ids((await store.listAutomations({ project_id: P1, session_id: "sess_x" })).data)).toEqual([
          "auto_1",
        ]);
        expect(await store.insertInvocation(invocation("ainv_1", "auto_1", 100))).toBe(true);
        expect(await store.deleteAutomation("auto_1")).toBe(true);
        expect(await store.deleteAutomation("auto_1")).toBe(false);
        expect(await store.getInvocation("ainv_1")).toBeUndefined();
        expect(await store.getAutomation("auto_3")).toEqual(a3);
      });

      it("holds schedule times as whole Unix seconds up to the end of year 9999, and refuses anything else", async () => {
        const last = 253_402_300_799;
        const once = automation("auto_t", 10, { type: "once", run_at: last, next_run_at: last });
        await store.insertAutomation(once);
        expect(await store.getAutomation("auto_t")).toEqual(once);
        for (const bad of [1.5, 1e20, 2 ** 53, last + 1, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
          await expect(
            store.insertAutomation(
              automation("auto_bad", 11, { type: "once", run_at: bad, next_run_at: 100 }),
            ),
            String(bad),
          ).rejects.toThrow(/run_at must be whole Unix seconds/);
          await expect(
            store.insertAutomation(automation("auto_bad", 11, { next_run_at: bad })),
          ).rejects.toThrow(/next_run_at must be whole Unix seconds/);
          await expect(store.updateAutomation("auto_t", { run_at: bad })).rejects.toThrow(/run_at/);
          await expect(store.updateAutomation("auto_t", { next_run_at: bad })).rejects.toThrow(/next_run_at/);
          await expect(store.insertInvocation(invocation("ainv_bad", "auto_t", bad))).rejects.toThrow(
            /scheduled_at must be whole Unix seconds/,
          );
        }
        expect(await store.getAutomation("auto_bad")).toBeUndefined();
        expect(await store.getAutomation("auto_t")).toEqual(once);
        expect(await store.getInvocation("ainv_bad")).toBeUndefined();
        expect(await store.insertInvocation(invocation("ainv_t", "auto_t", last))).toBe(true);
        expect((await store.getInvocation("ainv_t"))?.scheduled_at).toBe(last);
      });

      it("lockDueAutomations: active ones due by now, earliest first, at most limit", async () => {
        await store.insertAutomation(automation("auto_late", 1, { next_run_at: 500 }));
        await store.insertAutomation(automation("auto_early", 2, { next_run_at: 100 }));
        await store.insertAutomation(automation("auto_future", 3, { next_run_at: 5000 }));
        await store.insertAutomation(automation("auto_paused", 4, { next_run_at: 50, status: "paused" }));
        await store.insertAutomation(automation("auto_done", 5, { next_run_at: null, status: "completed" }));
        const due = await store.transaction((tx) => tx.lockDueAutomations(1000, 10));
        expect(ids(due)).toEqual(["auto_early", "auto_late"]);
        expect(ids(await store.transaction((tx) => tx.lockDueAutomations(1000, 1)))).toEqual(["auto_early"]);
        expect(await store.transaction((tx) => tx.lockDueAutomations(99, 10))).toEqual([]);
      });

      it("one invocation per (automation, scheduled_at); manual runs are unconstrained", async () => {
        await store.insertAutomation(automation("auto_1"));
        const first = invocation("ainv_1", "auto_1", 100);
        expect(await store.insertInvocation(first)).toBe(true);
        expect(await store.insertInvocation(invocation("ainv_2", "auto_1", 100))).toBe(false);
        expect(await store.getInvocation("ainv_2")).toBeUndefined();
        expect(await store.insertInvocation(invocation("ainv_3", "auto_1", 200))).toBe(true);
        expect(await store.insertInvocation(invocation("ainv_4", "auto_1", null))).toBe(true);
        expect(await store.insertInvocation(invocation("ainv_5", "auto_1", null))).toBe(true);
        expect(await store.getInvocation("ainv_1")).toEqual(first);
        const page = await store.listInvocations("auto_1", { order: "asc" });
        expect(ids(page.data)).toEqual(["ainv_1", "ainv_3", "ainv_4", "ainv_5"]);
        expect(await store.hasQueuedInvocation("auto_1")).toBe(true);
        expect(await store.hasQueuedInvocation("auto_other")).toBe(false);
      });

      it("concurrent ticks fire each due occurrence once", async () => {
        for (let i = 0; i < 5; i++)
          await store.insertAutomation(automation(`auto_${i}`, i, { next_run_at: 100 }));
        const tick = (n: number) =>
          store.transaction(async (tx) => {
            const due = await tx.lockDueAutomations(1000, 100);
            for (const a of due) {
              await new Promise<void>((r) => setImmediate(r));
              await tx.insertInvocation(invocation(`ainv_${n}_${a.id}`, a.id, 100));
              await tx.updateAutomation(a.id, { next_run_at: 2000 });
            }
            return due.length;
          });
        const fired = await Promise.all([tick(1), tick(2), tick(3)]);
        expect(fired.reduce((x, y) => x + y, 0)).toBe(5);
        for (let i = 0; i < 5; i++) {
          expect((await store.listInvocations(`auto_${i}`, {})).data).toHaveLength(1);
        }
      });

      it("claims due, unleased invocations; leases expire; a paused automation holds its scheduled ones", async () => {
        await store.insertAutomation(automation("auto_1"));
        await store.insertAutomation(automation("auto_p", 2, { status: "paused" }));
        await store.insertInvocation(invocation("ainv_a", "auto_1", 100, { next_attempt_at: 100 }));
        await store.insertInvocation(invocation("ainv_b", "auto_1", 200, { next_attempt_at: 200 }));
        await store.insertInvocation(invocation("ainv_later", "auto_1", 300, { next_attempt_at: 5000 }));
        await store.insertInvocation(invocation("ainv_held", "auto_p", 100, { next_attempt_at: 100 }));
        await store.insertInvocation(invocation("ainv_manual", "auto_p", null, { next_attempt_at: 150 }));
        await store.insertInvocation(
          invocation("ainv_done", "auto_1", 50, { status: "completed", next_attempt_at: 50 }),
        );
        const got = await store.claimInvocations(1000, "inst_a", 1060, 10);
        expect(ids(got)).toEqual(["ainv_a", "ainv_manual", "ainv_b"]);
        expect(got.every((i) => i.lease_owner === "inst_a" && i.lease_until === 1060 && i.claims === 1)).toBe(
          true,
        );
        // leased: nobody else gets them until the lease expires
        expect(await store.claimInvocations(1010, "inst_b", 1070, 10)).toEqual([]);
        const again = await store.claimInvocations(1061, "inst_b", 1121, 1);
        expect(ids(again)).toEqual(["ainv_a"]);
        expect(again[0]!.claims).toBe(2);
        // only the lease holder records an outcome; a status other than queued releases the lease
        expect(await store.updateClaimedInvocation("ainv_a", "inst_a", { status: "failed" })).toBeUndefined();
        expect(
          await store.updateClaimedInvocation("ainv_a", "inst_b", { session_id: "sess_1" }),
        ).toMatchObject({
          session_id: "sess_1",
          lease_owner: "inst_b",
          status: "queued",
        });
        const done = await store.updateClaimedInvocation("ainv_a", "inst_b", {
          status: "completed",
          completed_at: 1062,
          error: null,
        });
        expect(done).toMatchObject({
          status: "completed",
          lease_owner: null,
          lease_until: null,
          completed_at: 1062,
        });
        // back to the queue for later: released, claimable once due
        await store.updateClaimedInvocation("ainv_b", "inst_a", { next_attempt_at: 2000 });
        expect(await store.getInvocation("ainv_b")).toMatchObject({ lease_owner: null, status: "queued" });
        // (inst_a's lease of the manual run has expired by now: it is claimable again)
        expect(ids(await store.claimInvocations(1100, "inst_c", 1160, 10))).toEqual(["ainv_manual"]);
        await store.updateClaimedInvocation("ainv_manual", "inst_c", {
          status: "completed",
          completed_at: 1100,
        });
        expect(ids(await store.claimInvocations(5000, "inst_c", 5060, 10))).toEqual(["ainv_b", "ainv_later"]);
        // resumed: the held invocation is claimable
        await store.updateAutomation("auto_p", { status: "active" });
        expect(ids(await store.claimInvocations(5000, "inst_c", 5060, 10))).toEqual(["ainv_held"]);
      });

      it("concurrent claims never hand out an invocation twice", async () => {
        await store.insertAutomation(automation("auto_1"));
        for (let i = 0; i < 20; i++) {
          await store.insertInvocation(invocation(`ainv_${i}`, "auto_1", i, { next_attempt_at: i }));
        }
        const got = await Promise.all(
          ["a", "b", "c", "d"].map((o) => store.claimInvocations(1000, `inst_${o}`, 1060, 7)),
        );
        const all = got.flat().map((i) => i.id);
        expect(all).toHaveLength(20);
        expect(new Set(all).size).toBe(20);
      });

      it("finds the session a new-session invocation created, by its tag", async () => {
        await store.insertSession(session("s_tagged", 1, { extra: { automation_invocation_id: "ainv_9" } }));
        await store.insertSession(session("s_other", 2, { extra: { automation_invocation_id: "ainv_8" } }));
        expect(await store.findInvocationSession(P1, "ainv_9")).toBe("s_tagged");
        expect(await store.findInvocationSession(P2, "ainv_9")).toBeUndefined();
        expect(await store.findInvocationSession(P1, "ainv_7")).toBeUndefined();
      });
    });

    describe("webhook endpoints and the outbox", () => {
      const statusEvent = (s: SessionRecord, created_at = 1000.5): NewEvent => ({
        event: { type: "session.status", data: { session: s } },
        turn_id: null,
        created_at,
      });

      it("inserts, gets, patches, lists newest first per project, deletes", async () => {
        const e1 = endpoint("whe_1", 10);
        const e2 = endpoint("whe_2", 20);
        const e3 = endpoint("whe_3", 30, { project_id: P2 });
        for (const e of [e1, e2, e3]) await store.insertWebhookEndpoint(e);
        expect(await store.getWebhookEndpoint("whe_1")).toEqual(e1);
        expect(ids((await store.listWebhookEndpoints({ project_id: P1 })).data)).toEqual(["whe_2", "whe_1"]);
        expect(ids((await store.listWebhookEndpoints({ project_id: P1, after: "whe_2" })).data)).toEqual([
          "whe_1",
        ]);
        const patched = await store.updateWebhookEndpoint("whe_1", {
          event_types: ["agent.session.idle"],
          old_secret: "sealed-old",
          old_secret_expires_at: 99,
        });
        expect(patched).toEqual({
          ...e1,
          event_types: ["agent.session.idle"],
          old_secret: "sealed-old",
          old_secret_expires_at: 99,
        });
        expect(await store.deleteWebhookEndpoint("whe_1")).toBe(true);
        expect(await store.deleteWebhookEndpoint("whe_1")).toBe(false);
        expect(await store.getWebhookEndpoint("whe_1")).toBeUndefined();
      });

      it("an appended session event writes one delivery per subscribed endpoint of the session's project", async () => {
        await store.insertWebhookEndpoint(endpoint("whe_all", 1));
        await store.insertWebhookEndpoint(endpoint("whe_idle", 2, { event_types: ["agent.session.idle"] }));
        await store.insertWebhookEndpoint(endpoint("whe_p2", 3, { project_id: P2 }));
        const s = session("s1");
        await store.insertSession(s);
        await store.appendEvents("s1", [
          { event: { type: "session.created", data: { session: s } }, turn_id: null, created_at: 1000.25 },
          newEvent(delta()),
          statusEvent({ ...s, status: "in_progress" }),
        ]);
        await store.appendEvents("s1", [
          statusEvent(
            {
              ...s,
              status: "requires_action",
              required_actions: [
                {
                  type: "function_call",
                  id: "call_1",
                  turn_id: "t1",
                  name: "f",
                  arguments: "{}",
                  created_at: 1,
                },
              ],
            },
            1001,
          ),
          statusEvent({ ...s, status: "idle" }, 1002),
        ]);
        const all = (await store.listWebhookDeliveries("whe_all", { order: "asc" })).data;
        expect(all.map((d) => d.event_type)).toEqual([
          "agent.session.created",
          "agent.session.in_progress",
          "agent.session.action_required",
          "agent.session.idle",
        ]);
        expect(all[0]).toMatchObject({
          endpoint_id: "whe_all",
          project_id: P1,
          session_id: "s1",
          status: "pending",
          attempts: 0,
          event_created_at: 1000.25,
          next_attempt_at: 1000.25,
          data: { id: "s1", environment_type: "self_hosted", environment_id: "env_local" },
          attempt_log: [],
        });
        expect(all[2]!.data).toEqual({ id: "s1", required_action: { type: "function_call" } });
        expect(new Set(all.map((d) => d.event_id)).size).toBe(4);
        const idle = (await store.listWebhookDeliveries("whe_idle", {})).data;
        expect(idle.map((d) => d.event_type)).toEqual(["agent.session.idle"]);
        // the same event for every endpoint
        expect(idle[0]!.event_id).toBe(all[3]!.event_id);
        expect((await store.listWebhookDeliveries("whe_p2", {})).data).toEqual([]);
        expect(await store.getWebhookDelivery(all[1]!.id)).toEqual(all[1]);
        expect(
          ids((await store.listWebhookDeliveries("whe_all", { status: "pending", limit: 2 })).data),
        ).toEqual([all[3]!.id, all[2]!.id]);
      });

      it("no event, no delivery: a rolled-back append leaves no outbox row, nor a fenced one", async () => {
        await store.insertWebhookEndpoint(endpoint("whe_1", 1));
        const s = session("s1", 1, { lease_epoch: 3 });
        await store.insertSession(s);
        await expect(
          store.transaction(async (tx) => {
            await tx.appendEvents("s1", [statusEvent(s)]);
            throw new Error("rolled back");
          }),
        ).rejects.toThrow("rolled back");
        await expect(store.appendEvents("s1", [statusEvent(s)], 2)).rejects.toBeInstanceOf(FencedError);
        expect((await store.listWebhookDeliveries("whe_1", {})).data).toEqual([]);
        expect(await store.readEvents("s1", 0, 10)).toEqual([]);
        await store.appendEvents("s1", [statusEvent(s)], 3);
        expect((await store.listWebhookDeliveries("whe_1", {})).data).toHaveLength(1);
      });

      it("claims due deliveries once, records attempts for the lease holder, deletes them with the endpoint", async () => {
        await store.insertWebhookEndpoint(endpoint("whe_1", 1));
        const s = session("s1");
        await store.insertSession(s);
        await store.appendEvents("s1", [statusEvent(s, 100), statusEvent(s, 200)]);
        const [d1, d2] = (await store.listWebhookDeliveries("whe_1", { order: "asc" })).data;
        const claims = await Promise.all([
          store.claimWebhookDeliveries(300, "inst_a", 360, 10),
          store.claimWebhookDeliveries(300, "inst_b", 360, 10),
        ]);
        const claimed = claims.flat();
        expect(claimed.map((d) => d.id).sort()).toEqual([d1!.id, d2!.id].sort());
        expect(claimed.every((d) => d.attempts === 1 && d.lease_until === 360)).toBe(true);
        const ownerOf = (id: string) => claimed.find((d) => d.id === id)!.lease_owner!;
        await store.updateClaimedWebhookDelivery(d2!.id, ownerOf(d2!.id), {
          status: "delivered",
          delivered_at: 301,
        });
        const attempt = { at: 301, status_code: 500, error: "answered 500", duration_ms: 12 };
        expect(
          await store.updateClaimedWebhookDelivery(d1!.id, "inst_nobody", { status: "delivered" }),
        ).toBeUndefined();
        const retried = await store.updateClaimedWebhookDelivery(d1!.id, ownerOf(d1!.id), {
          next_attempt_at: 400,
          last_attempt_at: 301,
          last_status_code: 500,
          last_error: "answered 500",
          attempt_log: [attempt],
        });
        expect(retried).toMatchObject({
          status: "pending",
          lease_owner: null,
          next_attempt_at: 400,
          last_status_code: 500,
          attempt_log: [attempt],
        });
        expect(await store.claimWebhookDeliveries(399, "inst_c", 459, 10)).toEqual([]);
        const again = await store.claimWebhookDeliveries(400, "inst_c", 460, 10);
        expect(again.map((d) => [d.id, d.attempts])).toEqual([[d1!.id, 2]]);
        await store.updateClaimedWebhookDelivery(d1!.id, "inst_c", {
          status: "delivered",
          delivered_at: 401,
        });
        expect(await store.getWebhookDelivery(d1!.id)).toMatchObject({
          status: "delivered",
          delivered_at: 401,
        });
        expect(await store.claimWebhookDeliveries(10_000, "inst_c", 10_060, 10)).toEqual([]);
        expect(await store.deleteWebhookEndpoint("whe_1")).toBe(true);
        expect(await store.getWebhookDelivery(d1!.id)).toBeUndefined();
      });
    });
  });
}
