// Turn traces built from stored events alone (no service): the turn span, its items as children, what ends with the
// turn, errors, steering and actions, and a subagent's turn as a child span.
import { describe, expect, it } from "vitest";
import { itemSpanId, turnSpanId, turnSpans } from "../../../src/features/observability/trace-model.js";
import type { EventRecord, TurnRecord } from "../../../src/store/types.js";

describe("turn spans from events (unit)", () => {
  const turn = (over: Partial<TurnRecord> = {}): TurnRecord =>
    ({
      id: "turn_1",
      session_id: "sess_1",
      created_at: 100,
      started_at: 100,
      completed_at: 110,
      status: "failed",
      input: [],
      error: { code: "request_timeout", message: "Turn timeout exceeded" },
      usage: null,
      goal: null,
      subagent_id: null,
      ...over,
    }) as TurnRecord;
  let seq = 0;
  const event = (e: Record<string, unknown>, at: number): EventRecord =>
    ({ session_id: "sess_1", seq: ++seq, turn_id: "turn_1", created_at: at, ...e }) as unknown as EventRecord;
  const command = (status: string) => ({
    type: "commandExecution",
    id: "cmd_1",
    command: "sleep 100",
    cwd: "/w",
    status,
    exitCode: null,
    durationMs: null,
    pluginId: null,
    scriptPath: null,
    processId: null,
    source: "agent",
    commandActions: [],
    aggregatedOutput: null,
  });

  it("an item the turn ended before ends with it; errors, steering and actions are on the turn span", () => {
    const t = turn();
    const spans = turnSpans({
      sessionId: "sess_1",
      turn: t,
      events: [
        event({ type: "turn.started", data: { turn: t } }, 100.5),
        event({ type: "item.started", data: { item: command("inProgress"), output_index: 0 } }, 101),
        event({ type: "turn.steered", data: { input: [{ type: "text", text: "hurry" }] } }, 102),
        event(
          {
            type: "item.completed",
            data: {
              item: { type: "agentMessage", id: "msg_late", text: "x", phase: null, startedAtMs: 103_000 },
              output_index: 1,
            },
          },
          104,
        ),
        event({ type: "turn.failed", data: { turn: t } }, 110.25),
      ],
    });
    const [root, ...items] = spans;
    expect(root).toMatchObject({
      name: "turn",
      parentSpanId: null,
      start: 100.5,
      end: 110.25,
      status: { code: 2, message: "Turn timeout exceeded" },
    });
    expect(root!.attributes["error.type"]).toBe("request_timeout");
    expect(root!.events.map((e) => [e.name, e.time])).toEqual([["turn.steered", 102]]);
    expect(items.map((s) => [s.name, s.start, s.end, s.attributes["agent.item.state"]])).toEqual([
      ["command_execution", 101, 110.25, "incomplete"],
      ["agent_message", 103, 104, "completed"],
    ]);
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    // Built again: the same ids.
    expect(turnSpans({ sessionId: "sess_1", turn: t, events: [] })[0]!.spanId).toBe(root!.spanId);
  });

  it("a subagent's turn that ran during the root turn is a child span, its items its children", () => {
    const root = turn({ status: "completed", error: null });
    const sub = turn({ id: "turn_sub", status: "completed", error: null, subagent_id: "subagent_x" });
    const message = (id: string) => ({ type: "agentMessage", id, text: "hi", phase: null });
    const ofSub = (e: Record<string, unknown>, at: number) =>
      ({ ...event(e, at), turn_id: "turn_sub" }) as EventRecord;
    const spans = turnSpans({
      sessionId: "sess_1",
      turn: root,
      events: [
        event({ type: "turn.started", data: { turn: root } }, 100),
        ofSub({ type: "turn.started", data: { turn: { ...sub, status: "in_progress" } } }, 101),
        ofSub({ type: "item.started", data: { item: message("m_sub"), output_index: 0 } }, 102),
        ofSub({ type: "item.completed", data: { item: message("m_sub"), output_index: 0 } }, 103),
        ofSub({ type: "turn.completed", data: { turn: sub } }, 104),
        event({ type: "item.completed", data: { item: message("m_root"), output_index: 1 } }, 105),
        event({ type: "turn.completed", data: { turn: root } }, 106),
      ],
    });
    const [top, subTurn, subItem, rootItem] = spans;
    expect(spans.map((s) => s.name)).toEqual(["turn", "subagent_turn", "agent_message", "agent_message"]);
    expect(subTurn).toMatchObject({ parentSpanId: top!.spanId, start: 101, end: 104, status: { code: 1 } });
    expect(subTurn!.spanId).toBe(turnSpanId("sess_1", "turn_sub"));
    expect(subTurn!.attributes["agent.subagent.id"]).toBe("subagent_x");
    expect(subItem).toMatchObject({ parentSpanId: subTurn!.spanId, start: 102, end: 103 });
    expect(subItem!.spanId).toBe(itemSpanId("sess_1", "turn_sub", "m_sub"));
    expect(rootItem).toMatchObject({ parentSpanId: top!.spanId, start: 105, end: 105 });
  });
});
