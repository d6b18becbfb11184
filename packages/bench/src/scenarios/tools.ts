/**
 * Scenario 10: one client function call. The model calls the client's `get_weather`; the client answers; the model
 * replies with the output. Measured for the SDK in-process (the thread's handler answers) and over HTTP (official
 * dialect: the client sees the `function_call` item on its open stream and POSTs a `tool_result`):
 * - the round trip: from the client learning of the call to the model receiving its output;
 * - the whole turn.
 */
import type { ServerRequest } from "@codex-agent-api/codex";
import type { CapturedRequest } from "@codex-agent-api/testkit";
import { COMPLETED, type Context, type Scenario, TERMINAL } from "../context.js";
import { OFFICIAL } from "../http.js";
import { now } from "../proc.js";
import { median, type Row, ratio, sampleRow } from "../stats.js";

const TOOL = {
  type: "function" as const,
  name: "get_weather",
  description: "The weather in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } } },
};
const OUTPUT = "sunny";
const prompt = (i: number) =>
  `Call the function get_weather with arguments {"city":"c${i}"}. Then reply with its output`;

const row = (metric: string, samples: number[], vs?: { ref: number[]; name: string }): Row =>
  sampleRow(metric, "ms", samples, vs);

/** Resolves with the time the mock receives the request that carries the output of `callId`. */
function outputArrival(ctx: Context, callId: () => string | null): { at: Promise<number>; stop: () => void } {
  let stop = () => {};
  const at = new Promise<number>((resolve) => {
    stop = ctx.mock.onRequest((r: CapturedRequest) => {
      const id = callId();
      if (id && r.functionCallOutputs().some((o) => o.callId === id)) {
        stop();
        resolve(now());
      }
    });
  });
  return { at, stop: () => stop() };
}

export const toolRoundTrip: Scenario = {
  id: "10",
  title: "Function call round trip (client tool)",
  async run(ctx: Context) {
    const rig = await ctx.turnRig();
    const n = ctx.quick ? 15 : 50;
    const warm = 3;

    // SDK: the thread's handler answers at once.
    let sdkCall: { id: string; t: number } | null = null;
    const thread = await rig.codex.startThread({
      ...rig.threadOptions,
      dynamicTools: [
        { type: "function", name: TOOL.name, description: TOOL.description, inputSchema: TOOL.parameters },
      ],
      onServerRequest: (r: ServerRequest) => {
        sdkCall = { id: String(r.params.callId), t: now() };
        return { contentItems: [{ type: "inputText", text: OUTPUT }], success: true };
      },
    });
    const sdkTurn = async (i: number) => {
      sdkCall = null;
      const arrival = outputArrival(ctx, () => sdkCall?.id ?? null);
      const t0 = now();
      const r = await thread.run(prompt(i), { model: "mock-model" });
      const turnMs = now() - t0;
      arrival.stop();
      if (r.finalResponse !== OUTPUT || !sdkCall)
        throw new Error(`SDK tool turn ended ${r.status}: ${r.finalResponse}`);
      return { turnMs, roundTripMs: (await arrival.at) - (sdkCall as { t: number }).t };
    };

    // HTTP: an official session with the tool, its stream open.
    const { client } = rig.server;
    const session = await client.expect<{ id: string }>(
      200,
      "POST",
      "/v1/agents/sessions",
      { environment: { type: "none" }, agent: { model: "mock-model", tools: [TOOL] } },
      OFFICIAL,
    );
    const stream = client.sse("GET", `/v1/agents/sessions/${session.id}/events`, undefined, OFFICIAL);
    await stream.next(() => true);
    const httpTurn = async (i: number) => {
      let callId: string | null = null;
      const arrival = outputArrival(ctx, () => callId);
      const t0 = now();
      const called = stream.next(
        (f) => f.event === "agent.session.turn.item.added" && f.data.includes('"function_call"'),
      );
      await client.expect(
        202,
        "POST",
        `/v1/agents/sessions/${session.id}/events`,
        { events: [{ type: "agent.session.input.message", input: prompt(i) }] },
        OFFICIAL,
      );
      const frame = await called;
      const item = (JSON.parse(frame.data) as { item: { call_id: string; turn_id: string } }).item;
      callId = item.call_id;
      const end = stream.next((f) => TERMINAL.has(f.event ?? ""));
      await client.expect(
        202,
        "POST",
        `/v1/agents/sessions/${session.id}/events`,
        {
          events: [
            {
              type: "agent.session.input.tool_result",
              turn_id: item.turn_id,
              call_id: item.call_id,
              success: true,
              output: OUTPUT,
            },
          ],
        },
        OFFICIAL,
      );
      const last = await end;
      arrival.stop();
      if (last.event !== COMPLETED) throw new Error(`HTTP tool turn ended ${last.event}: ${last.data}`);
      return { turnMs: last.t - t0, roundTripMs: (await arrival.at) - frame.t };
    };

    for (let i = 0; i < warm; i++) {
      await sdkTurn(i);
      await httpTurn(i);
    }
    const sdk = { turn: [] as number[], trip: [] as number[] };
    const http = { turn: [] as number[], trip: [] as number[] };
    for (let i = 0; i < n; i++) {
      const order = i % 2 === 0 ? [sdk, http] : [http, sdk];
      for (const side of order) {
        const r = side === sdk ? await sdkTurn(warm + i) : await httpTurn(warm + i);
        side.turn.push(r.turnMs);
        side.trip.push(r.roundTripMs);
      }
    }
    stream.close();
    const rows: Row[] = [
      row("SDK: handler called → model has the output", sdk.trip),
      row("HTTP: item.added seen → tool_result POST → model has the output", http.trip, {
        ref: sdk.trip,
        name: "SDK round trip",
      }),
      row("SDK: whole turn (two model requests)", sdk.turn),
      row("HTTP official: whole turn", http.turn, { ref: sdk.turn, name: "SDK turn" }),
    ];
    return {
      id: this.id,
      title: this.title,
      rows,
      targets: [
        {
          name: "HTTP/SDK turn with one function call",
          value: ratio(median(http.turn), median(sdk.turn)),
          op: "<=",
          threshold: 1.1,
          unit: "×",
          detail: `round trip over HTTP adds ${(median(http.trip) - median(sdk.trip)).toFixed(2)} ms (median)`,
        },
      ],
      notes: [
        "Round trip: from the moment the client learns of the call (SDK: its handler runs; HTTP: the SSE chunk with the " +
          "function_call item arrives) to the mock model receiving the request that carries the output.",
        "HTTP client: node:http keep-alive, one session stream kept open; SDK and HTTP interleaved, order alternating.",
      ],
      data: { sdk, http },
    };
  },
};
