// Operating the service: Prometheus metrics, turn traces (the official SDK's traces.list, and OTLP export to a
// collector when configured) and the OpenAPI documents. Real engine, scripted model; a local HTTP receiver stands in
// for the OTLP collector. (Turn spans and the log format alone: trace-model.test.ts, logging.test.ts; the docs page
// in Chromium: test/http/ops/docs.external.test.ts.)
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileErrors, validate } from "@readme/openapi-parser";
import type OpenAI from "openai";
import { BadRequestError, NotFoundError } from "openai";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/load.js";
import { Observability } from "../../../src/features/observability/index.js";
import { hrTime, serviceResource } from "../../../src/features/observability/otlp.js";
import { itemSpanId, turnSpanId, turnTraceId } from "../../../src/features/observability/trace-model.js";
import { parseOtlpHeaders, tracingConfig } from "../../../src/features/observability/tracing.js";
import { listTraces } from "../../../src/features/observability/turn-traces.js";
import { buildApp } from "../../../src/main/app.js";
import { createCore } from "../../../src/main/compose.js";
import { type Service, startService } from "../../../src/main/service.js";
import { SqliteStore } from "../../../src/store/sqlite/index.js";
import type { EventRecord } from "../../../src/store/types.js";
import { readSse, type ServerFixture, startServer, stubEngines, waitFor } from "../../support/fixture.js";
import { sdk } from "../../support/openai-helpers.js";

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/** A Prometheus exposition parsed into `name{k="v",…}` (labels sorted) → value. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = [...(m[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => `${k}="${v}"`).sort();
    out.set(`${m[1]}{${labels.join(",")}}`, Number(m[3]));
  }
  return out;
}

function metric(m: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  const key = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(",");
  return m.get(`codex_agent_api_${name}{${key}}`) ?? 0;
}

async function scrape(f: { url: string }, headers: Record<string, string> = {}) {
  const res = await fetch(`${f.url}/metrics`, { headers });
  expect(res.status).toBe(200);
  return parseMetrics(await res.text());
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values: OtlpValue[] };
}

interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  status: { code?: number; message?: string };
  events?: Array<{ name: string; timeUnixNano: string; attributes: OtlpAttribute[] }>;
  links?: Array<{ traceId: string; spanId: string; attributes: OtlpAttribute[] }>;
}

interface OtlpRequest {
  resourceSpans: Array<{
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: Array<{ scope: { name: string }; spans: OtlpSpan[] }>;
  }>;
}

const spansOf = (otlp: OtlpRequest): OtlpSpan[] =>
  otlp.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));

function attr(attributes: OtlpAttribute[], key: string): unknown {
  const v = attributes.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.arrayValue) return v.arrayValue.values.map((x) => x.stringValue);
  return v.stringValue ?? v.boolValue ?? v.doubleValue;
}

/** Nanoseconds of a stored `created_at` as the traces encode it. */
const nanos = (unixSeconds: number) => {
  const [s, ns] = hrTime(unixSeconds);
  return (BigInt(s) * 1_000_000_000n + BigInt(ns)).toString();
};

/** `waitFor` for a check that answers its value or null. */
async function waitForValue<T>(
  check: () => T | null | Promise<T | null>,
  ms: number,
  what: string,
): Promise<T> {
  return (await waitFor(check, ms, what)) as T;
}

async function allTraces(client: OpenAI, sessionId: string, query: { limit?: number } = {}) {
  const out = [];
  for await (const t of client.beta.agents.sessions.traces.list(sessionId, query)) out.push(t);
  return out;
}

const COMMAND_TURN = (cmd: string, reply: string) =>
  `Run this exact shell command and wait for it to finish: ${cmd}. Then reply with exactly: ${reply}`;

/** A local OTLP/HTTP receiver: keeps every request it gets. */
async function otlpReceiver() {
  const received: Array<{ path: string; contentType: string; body: Buffer }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const contentType = String(req.headers["content-type"] ?? "");
      received.push({ path: req.url ?? "", contentType, body: Buffer.concat(chunks) });
      res.writeHead(200, { "content-type": contentType || "application/json" });
      res.end(contentType.includes("json") ? "{}" : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    /** Every span of the JSON requests received so far. */
    spans: () =>
      received
        .filter((r) => r.contentType.includes("json"))
        .flatMap((r) => spansOf(JSON.parse(r.body.toString("utf8")) as OtlpRequest)),
    resources: () =>
      received
        .filter((r) => r.contentType.includes("json"))
        .flatMap((r) =>
          (JSON.parse(r.body.toString("utf8")) as OtlpRequest).resourceSpans.map((x) => x.resource),
        ),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The real service (as the fixture starts it) with OpenTelemetry settings of its own. */
async function startTraced(
  telemetryEnv: Record<string, string>,
): Promise<{ service: Service; close(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), "cas-otel-"));
  const config = loadConfig(["--mock-model", "--port", "0", "--data-dir", dataDir], {}, dataDir);
  const service = await startService(config, { logger: pino({ level: "silent" }), telemetryEnv });
  return {
    service,
    async close() {
      await service.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------

describe("on a running service", () => {
  let f: ServerFixture;
  let client: OpenAI;
  let agentId: string;

  beforeAll(async () => {
    f = await startServer();
    client = sdk(f);
    agentId = (await client.beta.agents.create({ model: "mock-model", name: "observed" })).id;
  });
  afterAll(async () => {
    await f?.close();
  });

  it("/metrics: turns by the dialect that started them, latency, tokens, events, engines, requests", async () => {
    const before = await scrape(f);
    const official = await client.beta.agents.sessions.create({
      agent_id: agentId,
      environment: { type: "none" },
      input: COMMAND_TURN("echo metered", "official done"),
      stream: true,
    });
    expect((await official.finalResult()).output_text).toBe("official done");
    const events = await readSse(
      await f.request("POST", "/v1/agents/sessions", {
        input: "Reply with exactly: template done",
        stream: true,
      }),
    );
    expect(events.at(-1)?.event).toBe("agent.session.turn.completed");
    await waitFor(async () => metric(await scrape(f), "active_turns") === 0, 10_000, "no running turn");

    const res = await fetch(`${f.url}/metrics`);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const after = parseMetrics(await res.text());
    const moved = (name: string, labels: Record<string, string> = {}) =>
      metric(after, name, labels) - metric(before, name, labels);
    expect(moved("turns_started_total", { dialect: "openai", agent: "root" })).toBe(1);
    expect(moved("turns_started_total", { dialect: "template", agent: "root" })).toBe(1);
    expect(moved("turns_finished_total", { dialect: "openai", agent: "root", status: "completed" })).toBe(1);
    expect(moved("turns_finished_total", { dialect: "template", agent: "root", status: "completed" })).toBe(
      1,
    );
    expect(
      moved("turn_duration_seconds_count", { dialect: "openai", agent: "root", status: "completed" }),
    ).toBe(1);
    expect(
      moved("turn_duration_seconds_sum", { dialect: "openai", agent: "root", status: "completed" }),
    ).toBeGreaterThan(0);
    expect(
      metric(after, "turn_duration_seconds_bucket", {
        dialect: "openai",
        agent: "root",
        status: "completed",
        le: "+Inf",
      }),
    ).toBe(
      metric(after, "turn_duration_seconds_count", { dialect: "openai", agent: "root", status: "completed" }),
    );
    expect(moved("model_tokens_total", { dialect: "openai", kind: "input" })).toBeGreaterThan(0);
    expect(moved("model_tokens_total", { dialect: "openai", kind: "output" })).toBeGreaterThan(0);
    expect(moved("model_tokens_total", { dialect: "template", kind: "output" })).toBeGreaterThan(0);
    // user message + command + agent message, and the agent message of the template turn (+ its user message).
    expect(moved("events_appended_total", { type: "item.completed" })).toBeGreaterThanOrEqual(5);
    expect(moved("events_appended_total", { type: "turn.started" })).toBe(2);
    expect(moved("events_appended_total", { type: "session.created" })).toBe(2);
    expect(metric(after, "active_turns")).toBe(0);
    expect(metric(after, "engine_processes")).toBe(1);
    expect(metric(after, "engine_threads_loaded", { engine: "0" })).toBeGreaterThanOrEqual(2);
    expect(metric(after, "engine_busy_turns", { engine: "0" })).toBe(0);
    expect(metric(after, "engine_resident_memory_bytes", { engine: "0" })).toBeGreaterThan(1024 * 1024);
    expect(
      moved("http_requests_total", {
        dialect: "openai",
        method: "POST",
        route: "/v1/agents/sessions",
        status: "200",
      }),
    ).toBe(1);
    expect(
      moved("http_requests_total", {
        dialect: "template",
        method: "POST",
        route: "/v1/agents/sessions",
        status: "200",
      }),
    ).toBe(1);
    expect(after.get("process_resident_memory_bytes{}")).toBeGreaterThan(0);
  });

  it("/metrics: live streams and active goals move while a goal runs, and fall back when it is cancelled", async () => {
    const before = await scrape(f);
    const { id } = (await f.json<{ id: string }>("POST", "/v1/agents/sessions", {})).body;
    const res = await f.request("POST", `/v1/agents/sessions/${id}/events`, {
      input: "Objective: keep the goal active while polishing",
      goal: { max_turns: 100 },
    });
    const reading = readSse(res);
    const running = await waitForValue(
      async () => {
        const m = await scrape(f);
        return metric(m, "active_goals") === 1 && metric(m, "active_turns") === 1 ? m : null;
      },
      20_000,
      "the goal to run",
    );
    expect(metric(running, "sse_subscribers")).toBeGreaterThanOrEqual(1);
    expect(metric(running, "engine_busy_turns", { engine: "0" })).toBe(1);
    expect(
      (await f.request("POST", `/v1/agents/sessions/${id}/events`, { type: "agent.session.input.cancel" }))
        .status,
    ).toBe(200);
    await reading;
    const after = await waitForValue(
      async () => {
        const m = await scrape(f);
        return metric(m, "active_goals") === 0 && metric(m, "active_turns") === 0 ? m : null;
      },
      20_000,
      "the goal to stop",
    );
    expect(
      metric(after, "turns_finished_total", { dialect: "template", agent: "root", status: "cancelled" }) -
        metric(before, "turns_finished_total", { dialect: "template", agent: "root", status: "cancelled" }),
    ).toBe(1);
    expect(metric(after, "events_appended_total", { type: "goal.updated" })).toBeGreaterThan(
      metric(before, "events_appended_total", { type: "goal.updated" }),
    );
    await waitFor(async () => metric(await scrape(f), "sse_subscribers") === 0, 10_000, "streams to end");
  });

  it("traces.list (official SDK): each ended turn as OTLP JSON, a turn span with its items as children", async () => {
    const first = await client.beta.agents.sessions.create({
      agent_id: agentId,
      environment: { type: "none" },
      input: COMMAND_TURN("echo traced", "first"),
      stream: true,
    });
    const firstResult = await first.finalResult();
    const sid = firstResult.turn.session_id;
    const second = await client.beta.agents.sessions.stream(sid, { input: "Reply with exactly: second" });
    const secondResult = await second.finalResult();
    expect(secondResult.output_text).toBe("second");

    // Newest first, one per page: the SDK follows the cursor.
    const traces = await allTraces(client, sid, { limit: 1 });
    expect(traces.map((t) => t.id)).toEqual([secondResult.turn.id, firstResult.turn.id]);
    for (const t of traces) {
      expect(t).toMatchObject({ object: "agent.session.trace", session_id: sid });
      expect(typeof t.created_at).toBe("number");
    }
    const otlp = traces[1]!.otlp as unknown as OtlpRequest;
    expect(attr(otlp.resourceSpans[0]!.resource.attributes, "service.name")).toBe("codex-agent-api");
    const spans = spansOf(otlp);
    const turnId = firstResult.turn.id;
    const root = spans.find((s) => s.name === "turn")!;
    expect(root.parentSpanId ?? "").toBe("");
    expect(root.traceId).toBe(turnTraceId(sid, turnId));
    expect(root.spanId).toBe(turnSpanId(sid, turnId));
    expect(root.status.code).toBe(1);
    expect(attr(root.attributes, "agent.turn.id")).toBe(turnId);
    expect(attr(root.attributes, "agent.session.id")).toBe(sid);
    expect(attr(root.attributes, "agent.turn.status")).toBe("completed");
    expect(attr(root.attributes, "gen_ai.request.model")).toBe("mock-model");
    expect(attr(root.attributes, "gen_ai.usage.input_tokens")).toBeGreaterThan(0);

    const children = spans.filter((s) => s !== root);
    expect(children.map((s) => s.name)).toEqual(["user_message", "command_execution", "agent_message"]);
    for (const c of children) {
      expect(c.traceId).toBe(root.traceId);
      expect(c.parentSpanId).toBe(root.spanId);
      expect(BigInt(c.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(root.startTimeUnixNano));
      expect(BigInt(c.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(root.endTimeUnixNano));
      expect(BigInt(c.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(c.startTimeUnixNano));
      expect(c.spanId).toBe(itemSpanId(sid, turnId, String(attr(c.attributes, "agent.item.id"))));
    }
    const command = children[1]!;
    expect(attr(command.attributes, "process.command_line")).toContain("echo traced");
    expect(attr(command.attributes, "process.exit.code")).toBe(0);
    expect(attr(command.attributes, "gen_ai.tool.name")).toBe("shell");

    // The times are the stored events' times.
    const stored: EventRecord[] = await f.service.core.store.readEvents(sid, 0, 1000);
    const of = (type: string, itemId?: string) =>
      stored.find(
        (e) =>
          e.turn_id === turnId &&
          e.type === type &&
          (itemId === undefined || ("item" in e.data && e.data.item.id === itemId)),
      )!;
    expect(root.startTimeUnixNano).toBe(nanos(of("turn.started").created_at));
    expect(root.endTimeUnixNano).toBe(nanos(of("turn.completed").created_at));
    const commandId = String(attr(command.attributes, "agent.item.id"));
    expect(command.startTimeUnixNano).toBe(nanos(of("item.started", commandId).created_at));
    expect(command.endTimeUnixNano).toBe(nanos(of("item.completed", commandId).created_at));

    // Read again: the same trace (stable ids, nothing regenerated).
    expect(await allTraces(client, sid)).toEqual(traces);
    // A page stops before its size cap (at least one trace), and says there is more.
    const capped = await listTraces(f.service.core.store, serviceResource({}), sid, {}, 1);
    expect(capped).toMatchObject({ data: [traces[0]], has_more: true, last_id: traces[0]!.id });
    // Template clients get the same pages.
    const plain = await f.json<{ data: unknown[]; has_more: boolean }>(
      "GET",
      `/v1/agents/sessions/${sid}/traces`,
    );
    expect(plain.status).toBe(200);
    expect(plain.body.data).toEqual(traces);

    // A running turn is not published yet; bad input and unknown sessions are clear 4xx.
    await expect(allTraces(client, "sess_does_not_exist")).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.beta.agents.sessions.traces.list(sid, { limit: 0 })).rejects.toBeInstanceOf(
      BadRequestError,
    );
    const bad = await f.json<{ error: { message: string } }>(
      "GET",
      `/v1/agents/sessions/${sid}/traces?order=sideways`,
      undefined,
      { "OpenAI-Beta": "agents=v1" },
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/order/);
  });

  it("/openapi.json: a valid OpenAPI 3.1 document per dialect, every route in it with its schemas", async () => {
    const official = await f.json<Record<string, unknown>>("GET", "/openapi.json");
    const template = await f.json<Record<string, unknown>>("GET", "/openapi.json?dialect=template");
    expect(official.status).toBe(200);
    expect(template.status).toBe(200);
    expect((await f.json("GET", "/openapi.json?dialect=official")).body).toEqual(official.body);
    const wrong = await f.json<{ error: string }>("GET", "/openapi.json?dialect=soap");
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatch(/dialect/);

    for (const doc of [official.body, template.body]) {
      expect(doc.openapi).toBe("3.1.0");
      const result = await validate(structuredClone(doc) as never);
      expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
    }
    type Op = {
      operationId: string;
      parameters?: Array<{ name: string; in: string; required?: boolean; schema: Record<string, unknown> }>;
      requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
      responses: Record<string, unknown>;
    };
    type Paths = Record<string, Record<string, Op>>;
    const docs = { openai: official.body.paths as Paths, template: template.body.paths as Paths };

    // Every route the app serves (but the docs, the console and the 501s) is in the document of each dialect that
    // reaches it, with its path parameters; operation ids are unique per document.
    const app = f.service.app;
    const hidden = /^\/(console|docs|openapi)/;
    // The official endpoints this server answers 501 (for either dialect, unless a dialect has them).
    const unimplemented = /environments|automations|vaults|subagents/;
    let checked = 0;
    for (const { method, url } of app.routeTable) {
      if (hidden.test(url)) continue;
      const path = url.replace(/:(\w+)/g, "{$1}");
      const shared = !unimplemented.test(url) && app.hasRoute({ method: method as "GET", url });
      for (const dialect of ["openai", "template"] as const) {
        const served = shared || app.hasRoute({ method: method as "GET", url, constraints: { dialect } });
        const op = docs[dialect][path]?.[method.toLowerCase()];
        if (!served) {
          expect(op, `${dialect} ${method} ${path} is not served`).toBeUndefined();
          continue;
        }
        expect(op, `${dialect} ${method} ${path}`).toBeDefined();
        checked++;
        for (const [, name] of url.matchAll(/:(\w+)/g)) {
          expect(op!.parameters).toContainEqual(
            expect.objectContaining({ name, in: "path", required: true }),
          );
        }
        const beta = op!.parameters?.find((p) => p.name === "OpenAI-Beta");
        if (dialect === "openai" && !shared) expect(beta).toMatchObject({ in: "header", required: true });
        else expect(beta).toBeUndefined();
        expect(Object.keys(op!.responses)).toContain("4XX");
      }
    }
    expect(checked).toBeGreaterThan(45);
    for (const paths of Object.values(docs)) {
      const ids = Object.values(paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
      expect(new Set(ids).size).toBe(ids.length);
    }

    // The request schemas come from the routes' zod schemas.
    const body = (dialect: "openai" | "template", method: string, path: string) =>
      docs[dialect][path]![method]!.requestBody!.content["application/json"]!.schema as {
        properties: Record<string, Record<string, unknown>>;
        required?: string[];
      };
    const events = body("openai", "post", "/v1/agents/sessions/{session_id}/events");
    expect(events.required).toEqual(["events"]);
    expect(events.properties.events).toMatchObject({ type: "array", minItems: 1, maxItems: 100 });
    expect(JSON.stringify(events.properties.events)).toContain("agent.session.input.cancel");
    expect(Object.keys(body("openai", "post", "/v1/agents/sessions").properties)).toEqual(
      expect.arrayContaining(["agent_id", "agent", "environment", "input", "metadata", "stream"]),
    );
    expect(Object.keys(body("template", "post", "/v1/agents/sessions").properties)).toEqual(
      expect.arrayContaining(["agent", "agent_id", "input", "stream", "goal"]),
    );
    expect(body("template", "post", "/v1/agents/sessions/{session_id}/goal").properties.status).toMatchObject(
      {
        enum: ["active", "paused"],
      },
    );
    const limit = docs.openai["/v1/agents/sessions/{session_id}/traces"]!.get!.parameters!.find(
      (p) => p.name === "limit",
    );
    expect(limit).toMatchObject({ in: "query", schema: { type: "integer", minimum: 1, maximum: 1000 } });
    // Each dialect's errors in its own shape.
    const errorOf = (dialect: "openai" | "template") =>
      JSON.stringify(docs[dialect]["/v1/agents"]!.get!.responses["4XX"]);
    expect(errorOf("openai")).toContain('"param"');
    expect(errorOf("template")).not.toContain('"param"');
  });
});

describe("authentication", () => {
  const TOKEN = "observability-test-token";
  let f: ServerFixture;
  beforeAll(async () => {
    f = await startServer({ args: ["--token", TOKEN] });
  });
  afterAll(async () => {
    await f?.close();
  });

  it("/metrics needs the operator token or an admin key; /health stays open", async () => {
    expect((await fetch(`${f.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${f.url}/metrics`, { headers: { authorization: "Bearer wrong" } })).status).toBe(
      401,
    );
    expect((await fetch(`${f.url}/health`)).status).toBe(200);
    const ok = await fetch(`${f.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("codex_agent_api_active_turns");
    expect((await fetch(`${f.url}/metrics`, { headers: { "x-access-token": TOKEN } })).status).toBe(200);

    const project = await f.service.core.keys.create("team-a");
    const refused = await fetch(`${f.url}/metrics`, { headers: { authorization: `Bearer ${project.key}` } });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toMatch(/admin/);
    const admin = await f.service.core.keys.create("ops", true);
    expect(
      (await fetch(`${f.url}/metrics`, { headers: { authorization: `Bearer ${admin.key}` } })).status,
    ).toBe(200);
  });
});

describe("traces survive a restart", () => {
  it("traces.list answers the same trace from the stored events after the service restarted", async () => {
    const first = await startServer();
    let second: ServerFixture | undefined;
    try {
      const client = sdk(first);
      const agent = await client.beta.agents.create({ model: "mock-model" });
      const result = await (
        await client.beta.agents.sessions.create({
          agent_id: agent.id,
          environment: { type: "none" },
          input: COMMAND_TURN("echo durable", "kept"),
          stream: true,
        })
      ).finalResult();
      const sid = result.turn.session_id;
      const before = await allTraces(client, sid);
      expect(before).toHaveLength(1);
      await first.close({ keepData: true });
      second = await startServer({ dataDir: first.dataDir });
      expect(await allTraces(sdk(second), sid)).toEqual(before);
    } finally {
      await second?.close();
      await first.close();
      rmSync(first.dataDir, { recursive: true, force: true });
    }
  });
});

describe("OTLP export", () => {
  it("exports request spans and each turn's trace to the configured collector (http/json)", async () => {
    const collector = await otlpReceiver();
    const traced = await startTraced({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=secret%20value",
      OTEL_SERVICE_NAME: "cas-under-test",
      OTEL_BSP_SCHEDULE_DELAY: "100",
    });
    try {
      const url = traced.service.url;
      const client = sdk({ url });
      const agent = await client.beta.agents.create({ model: "mock-model" });
      const result = await (
        await client.beta.agents.sessions.create({
          agent_id: agent.id,
          environment: { type: "none" },
          input: COMMAND_TURN("echo exported", "exported"),
          stream: true,
        })
      ).finalResult();
      const sid = result.turn.session_id;
      const turnId = result.turn.id;
      // A caller's trace context makes the request span its child.
      const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
      const callerSpan = "00f067aa0ba902b7";
      const listed = await fetch(`${url}/v1/agents`, {
        headers: { "OpenAI-Beta": "agents=v1", traceparent: `00-${callerTrace}-${callerSpan}-01` },
      });
      expect(listed.status).toBe(200);
      expect((await fetch(`${url}/health`)).status).toBe(200);

      const spans = await waitForValue(
        () => {
          const all = collector.spans();
          const turn = all.find((s) => s.name === "turn" && attr(s.attributes, "agent.turn.id") === turnId);
          const child = all.find((s) => s.traceId === callerTrace && s.name === "GET /v1/agents");
          return turn && child && all.filter((s) => s.traceId === turn.traceId).length >= 4 ? all : null;
        },
        20_000,
        "the collector to receive the spans",
      );
      expect(collector.received.every((r) => r.path === "/v1/traces")).toBe(true);
      const turn = spans.find((s) => s.name === "turn" && attr(s.attributes, "agent.turn.id") === turnId)!;
      expect(turn.traceId).toBe(turnTraceId(sid, turnId));
      const items = spans.filter((s) => s.traceId === turn.traceId && s !== turn);
      expect(items.map((s) => s.name)).toEqual(["user_message", "command_execution", "agent_message"]);
      for (const item of items) expect(item.parentSpanId).toBe(turn.spanId);
      // The same spans traces.list returns.
      const listedTrace = (await allTraces(client, sid))[0]!.otlp as unknown as OtlpRequest;
      expect(
        spansOf(listedTrace).map((s) => [s.spanId, s.name, s.startTimeUnixNano, s.endTimeUnixNano]),
      ).toEqual([turn, ...items].map((s) => [s.spanId, s.name, s.startTimeUnixNano, s.endTimeUnixNano]));
      // The turn links to the request that started it: POST /v1/agents/sessions, in the official dialect.
      const started = spans.find((s) => s.spanId === turn.links?.[0]?.spanId)!;
      expect(started).toMatchObject({ name: "POST /v1/agents/sessions", kind: 2 });
      expect(attr(started.attributes, "agent.api.dialect")).toBe("openai");
      expect(attr(started.attributes, "http.response.status_code")).toBe(200);
      expect(attr(started.attributes, "http.route")).toBe("/v1/agents/sessions");
      const child = spans.find((s) => s.traceId === callerTrace && s.name === "GET /v1/agents")!;
      expect(child.parentSpanId).toBe(callerSpan);
      // Probes are not traced; every span carries the configured service name.
      expect(spans.some((s) => s.name.includes("/health"))).toBe(false);
      for (const r of collector.resources())
        expect(attr(r.attributes, "service.name")).toBe("cas-under-test");
    } finally {
      await traced.close();
      await collector.close();
    }
  });

  it("speaks http/protobuf by default, and flushes on shutdown", async () => {
    const collector = await otlpReceiver();
    const dataDir = mkdtempSync(join(tmpdir(), "cas-otel-app-"));
    const config = loadConfig(["--port", "0", "--data-dir", dataDir], {}, dataDir);
    const store = SqliteStore.open(":memory:");
    const core = createCore(config, { store, engines: stubEngines(), logger: pino({ level: "silent" }) });
    const observability = new Observability(core, {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/` },
    });
    const app = buildApp(core, observability);
    try {
      await app.ready();
      const res = await app.inject({
        method: "GET",
        url: "/v1/agents",
        headers: { "openai-beta": "agents=v1" },
      });
      expect(res.statusCode).toBe(200);
      await observability.shutdown();
      expect(collector.received).toHaveLength(1);
      const sent = collector.received[0]!;
      expect(sent.path).toBe("/v1/traces");
      expect(sent.contentType).toBe("application/x-protobuf");
      expect(sent.body.includes(Buffer.from("GET /v1/agents"))).toBe(true);
      expect(sent.body.includes(Buffer.from("codex-agent-api"))).toBe(true);
    } finally {
      await app.close();
      await store.close();
      await collector.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("is off without an endpoint (nothing is created, nothing is sent), and rejects what it cannot speak", () => {
    expect(tracingConfig({})).toBeNull();
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_SERVICE_NAME: "x" })).toBeNull();
    expect(
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }),
    ).toBeNull();
    expect(
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" }),
    ).toBeNull();
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" })).toMatchObject({
      url: "http://c:4318/v1/traces",
      protocol: "http/protobuf",
    });
    expect(
      tracingConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:9999/custom",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
      }),
    ).toMatchObject({ url: "http://t:9999/custom", protocol: "http/json" });
    expect(() =>
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }),
    ).toThrow(/grpc is not supported/);
    expect(() => tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" })).toThrow(/not a URL/);
    expect(parseOtlpHeaders("a=1, b = two%20words ,broken,=x")).toEqual({ a: "1", b: "two words" });
  });
});
