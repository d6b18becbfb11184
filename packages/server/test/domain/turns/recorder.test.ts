// What the recorder says of a turn, whatever order the engine's notices come in: a command killed for memory is said
// to be in its item (counted from the kills seen at the turn's start or the last command's end, not from when its
// start was told: a big allocation can be killed before that); MCP start-up news the thread kept is logged; the types
// of the items it logged are kept for the hooks (its activity).
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type MemoryKills, TurnRecorder } from "../../../src/domain/turns/recorder.js";
import { EventHub } from "../../../src/platform/stream/hub.js";
import { hostPathsOf } from "../../../src/platform/workspace/environment-paths.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import { session, turn } from "../../store/contract.js";

let store: SqliteStore;
let hub: EventHub;
let kills: number;

beforeEach(async () => {
  store = SqliteStore.open(":memory:");
  await store.insertSession(session("s1"));
  await store.insertTurn(turn("s1", "t1"));
  hub = new EventHub(store, { now: () => 1000 });
  kills = 0;
});
afterEach(async () => {
  hub.closeAll();
  await hub.drain();
  await store.close();
});

type McpUpdate = { name: string; status: string; error: string | null };

/** A recorder of turn t1, attached to a thread whose MCP start-up news is `mcp` (taken as it is read). */
function recorder(mcp: McpUpdate[] = []): TurnRecorder {
  const r = new TurnRecorder(
    hub,
    pino({ level: "silent" }),
    () => 1000,
    "s1",
    "t1",
    null,
    hostPathsOf(session("s1")),
    (): MemoryKills => ({ kills, limitBytes: 256 * 2 ** 20, holder: "container" }),
  );
  r.attach({ id: "thr", takeMcpStatusUpdates: () => mcp.splice(0) } as never);
  return r;
}

const command = (id: string, over: Record<string, unknown> = {}) => ({
  type: "commandExecution",
  id,
  command: "python3 big.py",
  cwd: "/workspace",
  status: "inProgress",
  commandActions: [],
  aggregatedOutput: null,
  exitCode: null,
  durationMs: null,
  ...over,
});

async function outputs(r: TurnRecorder): Promise<Array<string | null>> {
  await r.settled();
  const page = await store.listItems("s1", { order: "asc" });
  return page.data.map((i) => (i.data as { aggregatedOutput?: string | null }).aggregatedOutput ?? null);
}

const started = (item: unknown) => ({ method: "item/started", params: { item } }) as never;
const completed = (item: unknown) => ({ method: "item/completed", params: { item } }) as never;

describe("a command's memory kills", () => {
  it("a command killed before its start was told is still said to be", async () => {
    const r = recorder();
    kills = 1; // killed at once…
    r.record(started(command("c1"))); // …and told after
    r.record(completed(command("c1", { status: "failed", exitCode: 137, aggregatedOutput: "" })));
    expect(await outputs(r)).toEqual([
      "[command killed: out of memory (its container's limit is 256 MiB), exit code 137]",
    ]);
  });

  it("a kill is said once: the next command, started after it was told, is not blamed", async () => {
    const r = recorder();
    r.record(started(command("c1")));
    kills = 1;
    r.record(completed(command("c1", { status: "completed", exitCode: 0, aggregatedOutput: "ok" })));
    r.record(started(command("c2")));
    r.record(completed(command("c2", { status: "completed", exitCode: 0, aggregatedOutput: "fine" })));
    expect(await outputs(r)).toEqual([
      "ok\n[a process of this command was killed: out of memory (its container's limit is 256 MiB)]",
      "fine",
    ]);
  });
});

describe("MCP servers' start-up news", () => {
  it("news the thread kept after it was attached is logged with the turn's first item", async () => {
    const pending: McpUpdate[] = [];
    const r = recorder(pending);
    // (arrives between the attach and the turn's stream: only the thread has it)
    pending.push({ name: "demo", status: "ready", error: null });
    r.record(started(command("c1")));
    r.record(completed(command("c1", { status: "completed", exitCode: 0, aggregatedOutput: "ok" })));
    await r.settled();
    const events = await store.readEvents("s1", 0, 100);
    expect(events.map((e) => e.type)).toEqual(["mcp_server.status", "item.started", "item.completed"]);
    expect(events[0]?.data).toMatchObject({ server_label: "demo", status: "ready", error: null });
  });
});

describe("the turn's activity", () => {
  it("holds the types of the items the turn started or finished, a client's function result included", () => {
    const r = recorder();
    expect([...r.itemTypes]).toEqual([]);
    r.record(started({ type: "userMessage", id: "u1", content: [] }));
    r.record(completed({ type: "agentMessage", id: "a1", text: "ok" }));
    expect([...r.itemTypes].sort()).toEqual(["agentMessage", "userMessage"]);
    r.record(
      completed({
        type: "dynamicToolCall",
        id: "f1",
        tool: "lookup",
        arguments: {},
        status: "completed",
        contentItems: [{ type: "inputText", text: "42" }],
        success: true,
        durationMs: 1,
      }),
    );
    expect([...r.itemTypes].sort()).toEqual([
      "agentMessage",
      "clientToolResult",
      "dynamicToolCall",
      "userMessage",
    ]);
  });
});
