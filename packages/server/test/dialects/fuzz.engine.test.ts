// The fuzz run: thousands of random and malformed requests over every route of both dialects, against the real
// service (engine, scripted model, SQLite), and never a 5xx (but the deliberate 501 of what this server does not
// provide), never a hang, never an error in another shape than the dialect's; the service is healthy afterwards
// and still runs turns in both dialects.
//
// The routes come from the app's own route table and the bodies and queries from its OpenAPI documents, so new
// routes are fuzzed without touching this file. Requests are generated up front from one seed: the same seed gives
// the same requests (ids of objects the run creates aside). FUZZ_SEED=<n> repeats a run, FUZZ_COUNT=<n> sizes it,
// FUZZ_ONLY=<i,j,…> sends only those requests of the run (after its setup), e.g. the ones a failure names.
// Most requests are malformed and stop at validation; the valid ones among them start a few real turns.
import { Agent, request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/index.js";
import type { SessionRecord, Store } from "../../src/store/types.js";
import { type AppFixture, type ServerFixture, startApp, startServer, waitFor } from "../support/fixture.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_202);
const COUNT = Number(process.env.FUZZ_COUNT ?? 3000);
const ONLY = process.env.FUZZ_ONLY?.split(",").map(Number);
/** Requests in flight at once (several: some failures only show when requests meet). */
const CONCURRENCY = 4;
/** A request that gets no answer (its status line) within this is a hang. */
const ANSWER_TIMEOUT_MS = 20_000;
const BODY_LIMIT = 256 * 1024;
/** Where generated URLs point: this machine, a port nothing listens on (nothing may leave the machine). */
const NOWHERE = "http://127.0.0.1:9";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = Record<string, unknown>;
interface Operation {
  parameters?: Array<{ in: string; name: string; schema?: Schema }>;
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

interface FuzzRequest {
  index: number;
  /** What the request tries (for the summary and the failure report). */
  kind: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** The route it was made from (`GET /v1/agents/:agent_id`). */
  route: string;
}

interface Answer {
  status: number;
  type: string;
  text: string;
  /** Only the status was read (a stream, a HEAD, a request refused before it was read). */
  statusOnly?: boolean;
}

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
class Rand {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)]!;
  }
}

const ODD_STRINGS = [
  "",
  " ",
  "\u0000",
  "null",
  "undefined",
  "../../etc/passwd",
  "..\\..\\windows",
  "%00",
  "%",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "$\u007bjndi:ldap://127.0.0.1:9/x}", // a log4j-style lookup
  "\u202eevil\u202c",
  "\u200b\u200b",
  "😀🤖👩‍👩‍👧‍👦",
  "ﷺ",
  "\ud83d", // a lone surrogate (sent as an escape)
  "Ω≈ç√∫",
  "日本語のテキスト",
  "\r\n\r\nX-Injected: 1",
  "0",
  "-1",
  "1e400",
  "true",
  "[]",
  "{}",
];

const HUGE_NUMBERS = [
  "1e400",
  "-1e400",
  "100000000000000000000",
  "9007199254740993",
  "-9007199254740993",
  "1.7976931348623157e308",
  "5e-324",
  "-0",
  "0.1e1",
  "123456789012345678901234567890",
];

const MALFORMED = [
  '{"a":',
  "{",
  "}",
  "[1,2",
  '{"a":1,}',
  "{'a':1}",
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":undefined}',
  "// comment\n{}",
  "\ufeff{}",
  '{"a":"\\x41"}',
  '{"a":"\\u12"}',
  '{"a":"unterminated}',
  '{"a" 1}',
  "nul",
  "tru",
  '"just a string',
  "{}{}",
  "[][]",
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"a":"\\ud800"}',
  '{"\\udc00":1}',
  "\u0000",
  "0x10",
  "01",
  "+1",
  ".5",
];

const CONTENT_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/vnd.api+json",
  "application/json; charset=utf-16",
  "APPLICATION/JSON",
  "application/jsonx",
  "application/json, text/plain",
  "a/b/c",
  ";",
  "",
];

const ODD_METHODS = ["PUT", "PATCH", "OPTIONS", "HEAD", "DELETE", "GET", "POST", "PROPFIND", "SEARCH"];

/** Percent-encoding that takes any string: a lone surrogate becomes its (invalid) UTF-8 bytes, as a client might. */
function enc(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...text].map((c) => (/[\ud800-\udfff]/.test(c) ? "%ED%A0%80" : encodeURIComponent(c))).join("");
  }
}

/** Ids that are not an object's: the path segment as sent (already encoded where it has to be). */
function oddId(r: Rand): string {
  switch (r.int(0, 11)) {
    case 0:
      return "..";
    case 1:
      return "%2e%2e%2f%2e%2e%2fetc%2fpasswd";
    case 2:
      return "%00";
    case 3:
      return "%E0%A4%A"; // broken percent-encoding
    case 4:
      return "x".repeat(r.int(200, 6000));
    case 5:
      return enc(r.pick(ODD_STRINGS)) || "%20";
    case 6:
      return `sess_${"0".repeat(24)}`;
    case 7:
      return "%F0%9F%98%80";
    case 8:
      return Buffer.from(r.pick(["../../x", "/etc/passwd", "a/../../b", "\u0000"])).toString("base64url");
    case 9:
      return ";x=1";
    case 10:
      return "a%2Fb";
    default:
      return `nope_${r.int(0, 1e6)}`;
  }
}

function randomString(r: Rand, max = 40): string {
  const kind = r.int(0, 5);
  if (kind === 0) return r.pick(ODD_STRINGS);
  if (kind === 1) return "x".repeat(r.int(0, Math.min(max, 3000)));
  const alphabet =
    kind === 2 ? "abcdefghijklmnopqrstuvwxyz0123456789_-" : "aZ09 _-./:@\"'\\{}[]<>é漢字😀\u0001\t\n";
  const chars = [...alphabet];
  let out = "";
  const n = r.int(0, max);
  for (let i = 0; i < n; i++) out += r.pick(chars);
  return out;
}

/** A JSON value of no particular shape. */
function randomJson(r: Rand, depth = 0): Json {
  const k = r.int(0, depth > 3 ? 4 : 7);
  switch (k) {
    case 0:
      return null;
    case 1:
      return r.chance(0.5);
    case 2:
      return r.pick([0, -1, 1, 2 ** 31, 2 ** 53, -(2 ** 53), 1e308, -1e-308, 0.5, 42]);
    case 3:
    case 4:
      return randomString(r);
    case 5:
      return Array.from({ length: r.int(0, 4) }, () => randomJson(r, depth + 1));
    default: {
      const o: Record<string, Json> = {};
      for (let i = r.int(0, 4); i > 0; i--) o[randomString(r, 12)] = randomJson(r, depth + 1);
      return o;
    }
  }
}

/** Values that look like what a field of that name holds (ids of the run's objects, local URLs, cron, …). */
function hinted(r: Rand, name: string, pool: Pool): Json | undefined {
  if (/(^|_)id$/.test(name)) {
    const kind = name === "id" ? r.pick(Object.keys(pool)) : name;
    const ids = pool[kind];
    if (ids && ids.length > 0 && r.chance(0.7)) return r.pick(ids);
  }
  if (name === "vault_ids" && pool.vault_id) return [...pool.vault_id];
  if (/url|endpoint$/.test(name)) return `${NOWHERE}/${randomString(r, 8).replace(/[^a-z0-9]/gi, "")}`;
  if (name === "expression") return r.pick(["0 0 1 1 *", "*/5 * * * *", "0 0 31 2 *", "61 * * * *", "* * *"]);
  if (name === "timezone") return r.pick(["UTC", "Europe/Paris", "Mars/Olympus", ""]);
  if (name === "model") return r.pick(["mock-model", "mock-model", "", "gpt-x"]);
  if (name === "input" || name === "text" || name === "instructions" || name === "objective") {
    return r.pick(["Reply with exactly: fuzz", randomString(r, 60), ""]);
  }
  if (name === "path") return r.pick(["fuzz/f.txt", "../escape.txt", "/etc/passwd", "a/b/c.txt", ""]);
  if (name === "content_base64") return r.pick(["aGk=", "not base64!", ""]);
  return undefined;
}

type Pool = Record<string, string[]>;

/**
 * How a body is made: the share of optional fields given, and what goes where the schema takes anything (its
 * `free` slots: `{}`, the items of an untyped array, the values of an open object): where a value reaches code the
 * schema does not check.
 */
interface Shape {
  optional: number;
  free?: () => Json;
}
const PLAIN: Shape = { optional: 0.35 };

const isFree = (schema: Schema) =>
  !["type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties"].some((k) => k in schema);

/** A value for a JSON schema (the OpenAPI documents' dialect of it), mostly valid. */
function fromSchema(
  r: Rand,
  schema: Schema | undefined,
  doc: OpenApi,
  pool: Pool,
  name = "",
  depth = 0,
  shape: Shape = PLAIN,
): Json {
  if (!schema || isFree(schema)) {
    const hint = hinted(r, name, pool);
    if (hint !== undefined && r.chance(0.5)) return hint;
    return shape.free ? shape.free() : randomJson(r, 3);
  }
  if (depth > 8) return randomJson(r, 3);
  if (typeof schema.$ref === "string") {
    const target = doc.components?.schemas?.[schema.$ref.split("/").pop()!];
    return fromSchema(r, target, doc, pool, name, depth + 1, shape);
  }
  const hint = hinted(r, name, pool);
  if (hint !== undefined && r.chance(0.8)) return hint;
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (branches) return fromSchema(r, r.pick(branches), doc, pool, name, depth + 1, shape);
  if (Array.isArray(schema.allOf))
    return fromSchema(r, schema.allOf[0] as Schema, doc, pool, name, depth + 1, shape);
  if (Array.isArray(schema.enum)) return r.pick(schema.enum as Json[]);
  if ("const" in schema) return schema.const as Json;
  const types = [schema.type].flat().filter(Boolean) as string[];
  const type = types.length > 0 ? r.pick(types) : "object";
  switch (type) {
    case "null":
      return null;
    case "boolean":
      return r.chance(0.5);
    case "integer":
    case "number": {
      const lo = typeof schema.minimum === "number" ? schema.minimum : 0;
      const hi = typeof schema.maximum === "number" ? Math.min(schema.maximum, lo + 1000) : lo + 1000;
      return type === "integer" ? r.int(lo, hi) : lo + r.next() * (hi - lo);
    }
    case "string": {
      const max = typeof schema.maxLength === "number" ? schema.maxLength : 40;
      const min = typeof schema.minLength === "number" ? schema.minLength : 0;
      const s = randomString(r, Math.min(max, 60));
      return s.length >= min ? s : s.padEnd(min, "a");
    }
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 0;
      const n = r.int(min, min + 2);
      return Array.from({ length: n }, () =>
        fromSchema(r, schema.items as Schema | undefined, doc, pool, name, depth + 1, shape),
      );
    }
    default: {
      const out: Record<string, Json> = {};
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set((schema.required ?? []) as string[]);
      for (const [key, sub] of Object.entries(props)) {
        if (required.has(key) || r.chance(shape.optional))
          out[key] = fromSchema(r, sub, doc, pool, key, depth + 1, shape);
      }
      if (Object.keys(props).length === 0 && schema.additionalProperties !== false && r.chance(0.5)) {
        for (let i = r.int(1, 3); i > 0; i--) out[randomString(r, 10)] = shape.free?.() ?? randomJson(r, 3);
      }
      return out;
    }
  }
}

/** Stands for a value put into the text after serialisation (see `mutate`). */
const DEEP = "\u0000deep\u0000";

/**
 * Replaces one value somewhere in `v` by something wrong (a type, a size, a depth the field never holds), or by
 * `replacement` when given.
 */
function mutate(r: Rand, v: Json, replacement?: Json): Json {
  const wrong = (): Json =>
    replacement ??
    r.pick<() => Json>([
      () => randomJson(r),
      () => null,
      () => "x".repeat(r.int(1000, 70_000)),
      () => r.pick([1e308, -1e308, 2 ** 53 + 2, -1, 1.5, 0]),
      () => r.pick(ODD_STRINGS),
      () => [],
      () => ({}),
      () => {
        let deep: Json = 1;
        for (let i = r.int(20, 70); i > 0; i--) deep = r.chance(0.5) ? [deep] : { a: deep };
        return deep;
      },
    ])();
  if (v === null || typeof v !== "object" || r.chance(0.25)) return wrong();
  if (Array.isArray(v)) {
    if (v.length === 0 || r.chance(0.2)) return [...v, wrong()];
    const i = r.int(0, v.length - 1);
    return v.map((x, j) => (j === i ? mutate(r, x, replacement) : x));
  }
  const keys = Object.keys(v);
  if (keys.length === 0 || r.chance(0.15))
    return { ...v, [r.pick(["__proto__", "constructor", "x"])]: wrong() };
  const key = r.pick(keys);
  if (replacement === undefined && r.chance(0.15)) {
    const { [key]: _gone, ...rest } = v;
    return rest;
  }
  return { ...v, [key]: mutate(r, v[key]!, replacement) };
}

/** Text-level damage JSON.stringify cannot make: huge or odd numbers, lone surrogates, truncation. */
function damage(r: Rand, text: string): string {
  switch (r.int(0, 3)) {
    case 0:
      return text.replace(/-?\d+(\.\d+)?/, r.pick(HUGE_NUMBERS));
    case 1:
      return text.replace(/"([^"\\]*)"/, `"$1\\ud800"`);
    case 2:
      return text.slice(0, r.int(0, text.length));
    default:
      return text.replace(/:/, ": ".repeat(r.int(1, 3))).replace(/,/, " , ");
  }
}

interface Route {
  method: string;
  url: string;
}

function fillPath(r: Rand, url: string, pool: Pool, method: string): string {
  return url
    .replace(/:([a-z_]+)/g, (_m, name: string) => {
      const ids = pool[name];
      // Deleting the run's objects leaves the rest of the run with less to reach: mostly odd ids there.
      const valid = method === "DELETE" ? 0.15 : 0.75;
      return ids && ids.length > 0 && r.chance(valid) ? enc(r.pick(ids)) : oddId(r);
    })
    .replace(/\*$/, () => r.pick(["", "x", "a/b/c", "%2e%2e/%2e%2e", oddId(r)]));
}

function queryFor(r: Rand, op: Operation | undefined, doc: OpenApi, pool: Pool): string {
  const params = (op?.parameters ?? []).filter((p) => p.in === "query");
  const parts: string[] = [];
  for (const p of params) {
    if (!r.chance(0.5)) continue;
    const value = r.chance(0.6) ? fromSchema(r, p.schema, doc, pool, p.name) : randomJson(r, 3);
    parts.push(`${enc(p.name)}=${enc(typeof value === "string" ? value : JSON.stringify(value))}`);
  }
  if (r.chance(0.2)) {
    parts.push(
      r.pick([
        "limit=-1",
        "limit=1e400",
        "limit=abc",
        "limit=1&limit=2",
        "after=",
        `after=${oddId(r)}`,
        "order=sideways",
        "metadata[k]=v",
        "metadata[]=x",
        "%zz=1",
        "a=%zz",
        `x=${"y".repeat(r.int(100, 20_000))}`,
        "dialect=template",
        "stream=true",
        "agent_id=",
        "&&&==",
      ]),
    );
  }
  return parts.length > 0 ? `?${parts.join("&")}` : "";
}

/** The operation a document describes for a route (its path written `{name}` instead of `:name`). */
const opOf = (doc: OpenApi, route: Route): Operation | undefined =>
  doc.paths[route.url.replace(/:([a-z_]+)/g, "{$1}")]?.[route.method.toLowerCase()];

const described = (route: Route, docs: { openai: OpenApi; template: OpenApi }) =>
  !!opOf(docs.openai, route) || !!opOf(docs.template, route);

/** Requests that start a real turn (with the scripted model): a few of the run's, among the malformed ones. */
function turnRequest(r: Rand, index: number, pool: Pool): FuzzRequest {
  const json = { "content-type": "application/json" };
  const official = { ...json, "openai-beta": "agents=v1" };
  const sessions = pool.session_id ?? [];
  const text = `Reply with exactly: turn ${index}`;
  const message = {
    events: [
      {
        type: "agent.session.input.message",
        input: [{ role: "user", content: [{ type: "input_text", text }] }],
      },
    ],
  };
  const [method, path, headers, body] = r.pick<[string, string, Record<string, string>, Json]>([
    ["POST", "/v1/agents/sessions", json, { input: text, stream: r.chance(0.5) }],
    ["POST", "/v1/agents/sessions", official, { environment: { type: "none" }, input: text }],
    ["POST", `/v1/agents/sessions/${r.pick(sessions)}/events`, json, { input: text, stream: false }],
    ["POST", `/v1/agents/sessions/${r.pick(sessions)}/events`, official, message],
    ["POST", `/v1/agents/sessions/${r.pick(sessions)}/goal`, json, { objective: text, max_turns: 2 }],
  ]);
  return {
    index,
    kind: "a turn",
    method,
    path,
    headers,
    body: JSON.stringify(body),
    route: `${method} ${path}`,
  };
}

/** One request of the run, from the route table and the dialect's OpenAPI document. */
function generate(
  r: Rand,
  index: number,
  routes: Route[],
  docs: { openai: OpenApi; template: OpenApi },
  pool: Pool,
): FuzzRequest {
  if (r.chance(0.006)) return turnRequest(r, index, pool);
  // Routes neither document describes (the console's and the docs' files, the 501s) come up less often.
  let route = r.pick(routes);
  while (!described(route, docs) && r.chance(0.7)) route = r.pick(routes);
  const headers: Record<string, string> = {};
  // Mostly the dialect the route is described in (the official resources have no template form).
  const beta = r.next();
  const officialOnly = !!opOf(docs.openai, route) && !opOf(docs.template, route);
  const official = beta < (officialOnly ? 0.85 : 0.46);
  if (official) headers["openai-beta"] = r.pick(["agents=v1", "agents=v1", "assistants=v2, agents=v1"]);
  else if (beta > 0.92) headers["openai-beta"] = r.pick(["agents=v2", "garbage", "agents=v10", ""]);
  const method = r.chance(0.92) ? route.method : r.pick(ODD_METHODS);
  const doc = official ? docs.openai : docs.template;
  const op = opOf(doc, { method, url: route.url });
  const path = fillPath(r, route.url, pool, method) + queryFor(r, op, doc, pool);
  let kind = "no body";
  let body: string | undefined;
  if (method !== "GET" && method !== "HEAD" ? r.chance(0.9) : r.chance(0.05)) {
    const schema = op?.requestBody?.content?.["application/json"]?.schema;
    const k = r.next();
    if (k < 0.4) {
      const value = fromSchema(r, schema, doc, pool);
      if (r.chance(0.55)) {
        kind = "mutated body";
        body = JSON.stringify(mutate(r, value));
      } else {
        kind = "schema body";
        body = JSON.stringify(value);
      }
      if (r.chance(0.15)) {
        kind = "damaged body";
        body = damage(r, body ?? "{}");
      }
    } else if (k < 0.52) {
      kind = "random JSON";
      body = JSON.stringify(randomJson(r));
    } else if (k < 0.64) {
      kind = "malformed JSON";
      body = r.pick(MALFORMED);
    } else if (k < 0.76) {
      kind = "deep nesting";
      const n = r.pick([65, 200, 10_000, 60_000]);
      const deep = r.chance(0.5)
        ? `${"[".repeat(n)}${"]".repeat(n)}`
        : `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
      // The whole body; or a body the route takes with the nesting where its schema takes anything (what it
      // stores, walks or passes on unchecked); or in one place of a body.
      const where = r.next();
      const placed =
        where < 0.2
          ? JSON.stringify(DEEP)
          : where < 0.7
            ? JSON.stringify(fromSchema(r, schema, doc, pool, "", 0, { optional: 0.7, free: () => DEEP }))
            : JSON.stringify(mutate(r, fromSchema(r, schema, doc, pool), DEEP));
      body = placed.replaceAll(JSON.stringify(DEEP), deep);
    } else if (k < 0.78) {
      kind = "over the body limit";
      body = JSON.stringify({ input: "x".repeat(BODY_LIMIT + r.int(1, 1000)) });
    } else if (k < 0.83) {
      kind = "empty body";
      body = r.pick(["", " ", "\n"]);
    } else {
      kind = "schema body";
      body = JSON.stringify(fromSchema(r, schema, doc, pool));
    }
  }
  if (body !== undefined) {
    headers["content-type"] = r.chance(0.85) ? "application/json" : r.pick(CONTENT_TYPES);
    if (headers["content-type"] !== "application/json")
      kind = `${kind}, content type ${headers["content-type"]}`;
  }
  const extra = r.next();
  if (extra < 0.04) {
    kind += ", huge header";
    headers["x-fuzz"] = "h".repeat(r.int(8000, 70_000));
  } else if (extra < 0.12) {
    kind += ", Last-Event-ID";
    headers["last-event-id"] = r.pick([
      "garbage",
      "-1",
      "1e400",
      "99999999999999999999",
      "0",
      "3",
      " 2 ",
      "",
    ]);
  } else if (extra < 0.18) {
    kind += ", Idempotency-Key";
    headers["idempotency-key"] = r.pick(["k", "k".repeat(5000), "a b c", `key-${r.int(0, 3)}`]);
  } else if (extra < 0.21) {
    kind += ", foreign Origin";
    headers.origin = r.pick(["https://evil.example", "null", "http://127.0.0.1.evil", "garbage"]);
  } else if (extra < 0.23) {
    kind += ", odd Host";
    headers.host = r.pick(["evil.example", "127.0.0.1:1", "[::1", "", "localhost:99999"]);
  } else if (extra < 0.27) {
    kind += ", Authorization";
    headers.authorization = r.pick(["Bearer", "Bearer x", "Basic Og==", "x".repeat(3000)]);
  } else if (extra < 0.3) {
    kind += ", Accept";
    headers.accept = r.pick(["text/event-stream", "application/xml", "*/*;q=abc"]);
  }
  return {
    index,
    kind,
    method,
    path,
    headers,
    ...(body !== undefined ? { body } : {}),
    route: `${route.method} ${route.url}`,
  };
}

const keepAlive = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/**
 * Sends a request as it is written (path, method, headers) and reads its answer (a stream: its status only). A
 * request the server may refuse before reading it all (headers too large, a body over the limit) gets a connection
 * of its own, since the server closes it; one that finds a kept-alive connection just closed is sent again on a new
 * one (the server never saw it).
 */
async function send(base: URL, req: FuzzRequest): Promise<Answer> {
  const own = req.kind.includes("huge header") || req.kind.includes("over the body limit");
  try {
    return await sendOn(base, req, own ? false : keepAlive, own);
  } catch (err) {
    // (A kept-alive connection the server had just closed: the request never reached it.)
    if (!own && /ECONNRESET|socket hang up/.test(String(err))) return sendOn(base, req, false);
    throw err;
  }
}

function sendOn(base: URL, req: FuzzRequest, agent: Agent | false, statusOnly = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...req.headers };
    if (req.body !== undefined) headers["content-length"] = String(Buffer.byteLength(req.body));
    const out = request(
      { host: base.hostname, port: base.port, method: req.method, path: req.path, headers, agent },
      (res) => {
        const type = String(res.headers["content-type"] ?? "");
        // A stream runs on; a HEAD answer has no body (whatever a refusal written before routing sends); a request
        // refused before it was read is answered as the connection closes: the status is what counts.
        if (type.startsWith("text/event-stream") || req.method === "HEAD" || statusOnly) {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, type, text: "", statusOnly: true });
          res.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size <= 1 << 20) chunks.push(c);
        });
        res.on("end", () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, type, text: Buffer.concat(chunks).toString("utf8") });
        });
        res.on("error", (err) => {
          clearTimeout(timer);
          reject(err);
        });
      },
    );
    const timer = setTimeout(() => {
      out.destroy(new Error(`no answer within ${ANSWER_TIMEOUT_MS / 1000} s`));
    }, ANSWER_TIMEOUT_MS);
    out.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    out.end(req.body);
  });
}

const officialAsked = (req: FuzzRequest) => /(^|[,\s])agents=v1\b/.test(req.headers["openai-beta"] ?? "");

/** What is wrong with an answer, if anything. */
function problem(req: FuzzRequest, a: Answer): string | null {
  if (a.status >= 500) {
    // The deliberate answer for what this server does not provide (in that dialect): not a failure.
    if (a.status === 501 && (a.statusOnly || /not_implemented|NotImplementedError/.test(a.text))) {
      return null;
    }
    return `answered ${a.status}`;
  }
  if (a.status < 400 || !a.type.startsWith("application/json") || a.statusOnly) return null;
  // Headers too large to be read: no dialect to answer in (Node's HTTP parser refuses them before any route).
  if (a.status === 431) return null;
  let body: unknown;
  try {
    body = JSON.parse(a.text);
  } catch {
    return `a ${a.status} whose JSON body does not parse`;
  }
  const error = (body as { error?: unknown }).error;
  // The official shape for requests that asked for it, and on the webhook and Files API routes (always official).
  const official =
    officialAsked(req) || req.route.includes("/v1/webhook") || / \/v1\/files(\/|$)/.test(req.route);
  if (official) {
    const e = error as { message?: unknown; type?: unknown } | undefined;
    if (typeof e?.message !== "string" || typeof e.type !== "string") return "not the official error shape";
  } else if (typeof error !== "string" || typeof (body as { type?: unknown }).type !== "string") {
    return "not the template error shape";
  }
  return null;
}

function describeRequest(req: FuzzRequest): string {
  const headers = Object.fromEntries(
    Object.entries(req.headers).map(([k, v]) => [
      k,
      v.length > 200 ? `${v.slice(0, 60)}… (${v.length} chars)` : v,
    ]),
  );
  const body =
    req.body === undefined
      ? "(none)"
      : req.body.length > 600
        ? `${JSON.stringify(req.body.slice(0, 300))}… (${req.body.length} chars)`
        : JSON.stringify(req.body);
  return [
    `#${req.index} (${req.kind}; from ${req.route})`,
    `  ${req.method} ${req.path.length > 400 ? `${req.path.slice(0, 400)}… (${req.path.length} chars)` : req.path}`,
    `  headers ${JSON.stringify(headers)}`,
    `  body ${body}`,
  ].join("\n");
}

describe("fuzz", () => {
  let s: ServerFixture;
  let receiver: WebhookReceiver;
  const pool: Pool = {};
  const official = { "openai-beta": "agents=v1" };

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
    s = await startServer({
      args: [
        "--webhook-allow-private",
        "--webhook-allow-http",
        // Nothing leaves the machine: environment setups have no network and no registry to reach.
        "--environment-setup-network",
        "off",
        "--environment-npm-registry",
        `${NOWHERE}/npm`,
        "--environment-pip-index-url",
        `${NOWHERE}/pypi/simple`,
      ],
      env: { AGENT_BODY_LIMIT: String(BODY_LIMIT) },
    });
    // Objects for the run's requests to reach (each kind by the name of its path parameter).
    const made = async (
      method: string,
      path: string,
      body: unknown,
      headers: Record<string, string> = official,
    ) => {
      const res = await s.json<{ id: string }>(method, path, body, headers);
      expect([200, 201], `${method} ${path}: ${JSON.stringify(res.body)}`).toContain(res.status);
      return res.body;
    };
    const add = (kind: string, id: string) => {
      pool[kind] = [...(pool[kind] ?? []), id];
    };
    add("agent_id", (await made("POST", "/v1/agents", { model: "mock-model", name: "fuzz" }, {})).id);
    add(
      "agent_id",
      (await made("POST", "/v1/agents", { model: "mock-model", instructions: "Be brief." })).id,
    );
    const first = await made(
      "POST",
      "/v1/agents/sessions",
      { input: "Reply with exactly: ready", stream: false },
      {},
    );
    add("session_id", first.id);
    const turns = await s.json<{ data: Array<{ id: string }> }>(
      "GET",
      `/v1/agents/sessions/${first.id}/turns`,
      undefined,
      official,
    );
    for (const t of turns.body.data) add("turn_id", t.id);
    add("session_id", (await made("POST", "/v1/agents/sessions", { environment: { type: "none" } })).id);
    await made("POST", "/files/upload-stream", { path: "fuzz/file.txt", content_base64: "aGVsbG8=" }, {});
    add("artifact_id", Buffer.from("fuzz/file.txt").toString("base64url"));
    add("checkpoint_id", (await made("POST", `/v1/agents/sessions/${first.id}/checkpoints`, {}, {})).id);
    add(
      "automation_id",
      (
        await made("POST", "/v1/agents/automations", {
          type: "periodic",
          name: "fuzz",
          expression: "0 0 1 1 *",
          timezone: "UTC",
          target: {
            type: "existing_session",
            session_id: first.id,
            instructions: "Reply with exactly: woke",
          },
        })
      ).id,
    );
    add(
      "webhook_endpoint_id",
      (
        await made("POST", "/v1/webhook_endpoints", {
          name: "fuzz",
          url: receiver.urlOf("/fuzz"),
          event_types: ["agent.session.idle"],
        })
      ).id,
    );
    const vault = await made("POST", "/v1/vaults", { name: "fuzz" });
    add("vault_id", vault.id);
    add(
      "credential_id",
      (
        await made("POST", `/v1/vaults/${vault.id}/credentials`, {
          name: "fuzz",
          auth: { type: "static_bearer", token: "fuzz-token", mcp_server_url: `${NOWHERE}/mcp` },
        })
      ).id,
    );
    add(
      "environment_id",
      (await made("POST", "/v1/agents/environments", { environment: { type: "openai_hosted" } })).id,
    );
  });
  afterAll(async () => {
    await s?.close();
    await receiver?.close();
    keepAlive.destroy();
  });

  it(`${COUNT} random and malformed requests over every route of both dialects: no 5xx, no hang`, async () => {
    const routes = s.service.app.routeTable.filter((r) => !/^\/console\/assets\//.test(r.url));
    const docs = {
      openai: (await s.json<OpenApi>("GET", "/openapi.json")).body,
      template: (await s.json<OpenApi>("GET", "/openapi.json?dialect=template")).body,
    };
    expect(routes.length).toBeGreaterThan(80);
    const r = new Rand(SEED);
    const all = Array.from({ length: COUNT }, (_, i) => generate(r, i, routes, docs, pool));
    const run = ONLY ? all.filter((q) => ONLY.includes(q.index)) : all;
    console.log(
      `fuzz: seed ${SEED}, ${run.length} requests over ${routes.length} routes ` +
        `(repeat with FUZZ_SEED=${SEED}; one request with FUZZ_ONLY=<#>)`,
    );
    const base = new URL(s.url);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < run.length) {
          const req = run[next++]!;
          let why: string | null;
          let answer: Answer | undefined;
          try {
            answer = await send(base, req);
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
            why = problem(req, answer);
          } catch (err) {
            // The server may close the connection of a request it refused before reading it all (over the
            // body limit, headers too large): an answer may then not reach the client. Anything else is a failure.
            const refusedEarly = req.kind.includes("huge header") || req.kind.includes("over the body limit");
            why =
              refusedEarly && /ECONNRESET|EPIPE|socket hang up|aborted/.test(String(err))
                ? null
                : String(err);
          }
          if (why) {
            failures.push(
              `${why}\n${describeRequest(req)}\n  answer ${answer ? `${answer.status} ${answer.text.slice(0, 300)}` : "(none)"}`,
            );
          }
        }
      }),
    );
    const took = Date.now() - started;
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    const turnsStarted = [
      ...metrics.matchAll(/^codex_agent_api_turns_started_total\{[^}]*\} (\d+)/gm),
    ].reduce((n, m) => n + Number(m[1]), 0);
    console.log(
      `fuzz: ${run.length} requests in ${(took / 1000).toFixed(1)} s, ${turnsStarted} turns started; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
    );
    if (failures.length > 0) {
      const kinds = new Map<string, number>();
      for (const f of failures) {
        const [why, what] = f.split("\n");
        const key = `${why} — ${what?.replace(/^#\d+ \(/, "(")}`;
        kinds.set(key, (kinds.get(key) ?? 0) + 1);
      }
      console.log(`fuzz: failures by kind:\n${[...kinds].map(([k, n]) => `${n} × ${k}`).join("\n")}`);
      console.log(
        `fuzz: seed ${SEED}: ${failures.length} failures, the first ones:\n\n${failures.slice(0, 15).join("\n\n")}`,
      );
    }
    expect(failures.slice(0, 5), `seed ${SEED}: ${failures.length} failures`).toEqual([]);
    // Some requests went through (the run is not only refusals), some of them real turns.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(run.length / 20);

    // Healthy afterwards: every turn the run started ends, and both dialects still run one.
    const idle = await waitFor(
      async () => {
        const h = await s.json<{
          status: string;
          active_turns: number;
          engines: Array<{ running: boolean }>;
        }>("GET", "/health");
        return h.status === 200 && h.body.active_turns === 0 ? h.body : null;
      },
      60_000,
      "every turn of the run to end",
    );
    expect(idle?.status).toBe("ok");
    const turn = await s.json<{ output: Array<{ item: { type: string; text?: string } }> }>(
      "POST",
      "/v1/agents/sessions",
      { input: "Reply with exactly: still here", stream: false },
    );
    expect(turn.status).toBe(200);
    expect(turn.body.output.map((o) => o.item.text)).toContain("still here");
    // (a new session: the run may have deleted its own)
    const sid = (
      await s.json<{ id: string }>("POST", "/v1/agents/sessions", { environment: { type: "none" } }, official)
    ).body.id;
    const sent = await s.request(
      "POST",
      `/v1/agents/sessions/${sid}/events`,
      {
        events: [
          {
            type: "agent.session.input.message",
            input: [
              { role: "user", content: [{ type: "input_text", text: "Reply with exactly: official too" }] },
            ],
          },
        ],
      },
      official,
    );
    expect([200, 202]).toContain(sent.status);
    const ended = await waitFor(
      async () => {
        const turns = await s.json<{ data: Array<{ status: string; error: unknown }> }>(
          "GET",
          `/v1/agents/sessions/${sid}/turns`,
          undefined,
          official,
        );
        const t = turns.body.data[0];
        return t && t.status !== "queued" && t.status !== "in_progress" ? t : null;
      },
      30_000,
      "the official dialect's turn",
    );
    expect(ended).toMatchObject({ status: "completed", error: null });
    const items = await s.json("GET", `/v1/agents/sessions/${sid}/items?limit=100`, undefined, official);
    // The input and the reply.
    expect(JSON.stringify(items.body).split("official too").length - 1).toBe(2);
  });
});

// What the fuzz run found, each made to happen every time.
describe("found by the fuzz run", () => {
  /**
   * A store on which a session is deleted right after a turn claims it (a DELETE landing in between), or, where the
   * claim and the turn's record are one write (a turn without a goal), right before it.
   */
  function deletingOnClaim(): { store: Store; victim: { id: string | null } } {
    const inner = SqliteStore.open(":memory:");
    const victim: { id: string | null } = { id: null };
    const store = new Proxy(inner, {
      get(target, key) {
        if (key === "claimSession") {
          return async (id: string, ...rest: unknown[]) => {
            const claimed = await (
              target.claimSession as (...a: unknown[]) => Promise<SessionRecord | undefined>
            )(id, ...rest);
            if (claimed && id === victim.id) await target.deleteSession(id);
            return claimed;
          };
        }
        if (key === "startTurn") {
          return async (s: SessionRecord, ...rest: unknown[]) => {
            if (s.id === victim.id) await target.deleteSession(s.id);
            return (target.startTurn as (...a: unknown[]) => Promise<unknown>)(s, ...rest);
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    return { store, victim };
  }

  let f: AppFixture;
  let victim: { id: string | null };
  beforeAll(async () => {
    const made = deletingOnClaim();
    victim = made.victim;
    f = await startApp({ store: made.store });
  });
  afterAll(async () => {
    await f?.close();
  });

  it("a session deleted while its turn starts is not found (it was a 500: the turn's insert failed)", async () => {
    const official = { "openai-beta": "agents=v1" };
    const message = {
      events: [
        {
          type: "agent.session.input.message",
          input: [{ role: "user", content: [{ type: "input_text", text: "Reply with exactly: gone" }] }],
        },
      ],
    };
    const cases: Array<[Record<string, string>, string, unknown]> = [
      [{}, "events", { input: "Reply with exactly: gone", stream: false }],
      [{}, "events", { input: "Reply with exactly: gone", stream: true }],
      [official, "events", message],
      [{}, "goal", { objective: "Reply with exactly: gone" }],
      [official, "goal", { objective: "Reply with exactly: gone" }],
    ];
    for (const [headers, what, body] of cases) {
      const created = await f.json<{ id: string }>("POST", "/v1/agents/sessions", {}, headers);
      victim.id = created.body.id;
      const res = await f.request("POST", `/v1/agents/sessions/${victim.id}/${what}`, body, headers);
      const answer = await res.json();
      const label = `${JSON.stringify(headers)} ${what} ${JSON.stringify(body).slice(0, 40)}`;
      expect(res.status, `${label}: ${JSON.stringify(answer)}`).toBe(404);
      expect(answer, label).toEqual(
        headers["openai-beta"]
          ? {
              error: {
                message: `Session ${victim.id} not found`,
                type: "not_found_error",
                param: "session_id",
                code: "not_found",
              },
            }
          : { error: `Session ${victim.id} not found`, type: "NotFoundError" },
      );
      expect(await f.core.store.getSession(victim.id)).toBeUndefined();
    }
  });

  it("the webhook routes answer every refusal in the official shape, with or without the header", async () => {
    const refusals: Array<[string, string, unknown, Record<string, string>, number]> = [
      ["POST", "/v1/webhook_endpoints", "a=b", { "content-type": "application/x-www-form-urlencoded" }, 415],
      ["GET", "/v1/webhook_endpoints", undefined, { origin: "https://evil.example" }, 403],
      ["GET", "/v1/webhook_event_types", undefined, { host: "evil.example" }, 421],
      ["PATCH", "/v1/webhook_endpoints/whe_x", undefined, {}, 404],
      ["GET", "/v1/webhook_endpoints/%E0%A4%A", undefined, {}, 400],
      ["POST", "/v1/webhook_endpoints", '{"a":', { "content-type": "application/json" }, 400],
    ];
    for (const [method, path, body, headers, status] of refusals) {
      const res = await f.request(method, path, body, headers);
      const answer = (await res.json()) as { error: { message: unknown; type: unknown } };
      expect(res.status, `${method} ${path}`).toBe(status);
      expect(typeof answer.error.message, `${method} ${path}: ${JSON.stringify(answer)}`).toBe("string");
      expect(typeof answer.error.type).toBe("string");
    }
    // Paths that only start like them stay the template's.
    const other = await f.json<{ error: unknown; type: unknown }>("GET", "/v1/webhook_endpointsx");
    expect(other.body).toEqual({ error: "Not found: /v1/webhook_endpointsx", type: "ValueError" });
  });
});
