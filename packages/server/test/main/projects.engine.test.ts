// API keys with projects: keys are managed with the CLI while the server runs; once one exists every request
// but the open routes (health, console, the API description: nothing per project) needs a key; a key sees only
// its project (another project's objects are 404 and never listed); revoked keys stop working; the operator token
// keeps working; rate limits are per key, with 429 + Retry-After.
import { mkdtempSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliToExit } from "../support/cli-process.js";
import { cleanup, type ServerFixture, startServer } from "../support/fixture.js";

type Json = Record<string, unknown>;
const OFFICIAL = { "openai-beta": "agents=v1" };

async function keys(dataDir: string, ...args: string[]): Promise<Json[]> {
  const r = await runCliToExit([...args, "--data-dir", dataDir], {}, 20_000, "keys");
  expect(r.code, r.stderr).toBe(0);
  return r.stdout
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Json);
}

/** A request whose path is sent exactly as written (no dot-segment resolution). */
function raw(base: string, method: string, path: string): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, method, path }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("API keys and projects", () => {
  let s: ServerFixture;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cas-keys-"));
    s = await startServer({ dataDir: dir, args: ["--token", "operator-token"] });
  });
  afterAll(async () => {
    await s?.close();
    cleanup(dir);
  });

  const as = (key: string, extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${key}`,
    ...extra,
  });

  it("keys are created, listed and revoked with the CLI; only a hash is stored", async () => {
    const [created] = await keys(dir, "create", "--project", "team-a");
    expect(created).toMatchObject({ project: "team-a", admin: false });
    expect(String(created!.key)).toMatch(/^cas_[0-9a-f]{24}_[0-9a-f]{64}$/);
    const listed = await keys(dir, "list");
    const mine = listed.find((k) => k.id === created!.id)!;
    expect(mine).toMatchObject({ project: "team-a", revoked_at: null });
    expect(JSON.stringify(listed)).not.toContain(String(created!.key).slice(29));
    const stored = await s.service.core.store.getKey(String(created!.id));
    expect(stored?.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored?.hash).not.toContain(String(created!.key).slice(29));
    const bad = await runCliToExit(
      ["create", "--project", "no spaces allowed", "--data-dir", dir],
      {},
      20_000,
      "keys",
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/project must be/);
  });

  it("a key sees only its own project; the other project's objects are 404 and never listed", async () => {
    const [a] = await keys(dir, "create", "--project", "alpha");
    const [b] = await keys(dir, "create", "--project", "beta");
    const keyA = String(a!.key);
    const keyB = String(b!.key);
    const agent = await s.json<{ id: string }>("POST", "/v1/agents", { model: "mock-model" }, as(keyA));
    expect(agent.status).toBe(200);
    const session = await s.json<{ id: string }>(
      "POST",
      "/v1/agents/sessions",
      { agent_id: agent.body.id, input: "Reply with exactly: alpha only" },
      as(keyA),
    );
    expect(session.status).toBe(200);
    const sid = session.body.id;
    expect(JSON.stringify(session.body)).toContain("alpha only");

    // Project beta: every way to reach alpha's objects is "not found", in both dialects.
    for (const dialect of [{}, OFFICIAL]) {
      for (const [method, path, body] of [
        ["GET", `/v1/agents/${agent.body.id}`],
        ["POST", `/v1/agents/${agent.body.id}`, { name: "stolen" }],
        ["DELETE", `/v1/agents/${agent.body.id}`],
        ["GET", `/v1/agents/sessions/${sid}`],
        ["POST", `/v1/agents/sessions/${sid}`, { metadata: { x: "y" } }],
        ["GET", `/v1/agents/sessions/${sid}/items`],
        ["GET", `/v1/agents/sessions/${sid}/turns`],
        ["GET", `/v1/agents/sessions/${sid}/events`],
        [
          "POST",
          `/v1/agents/sessions/${sid}/events`,
          "openai-beta" in dialect
            ? { events: [{ type: "agent.session.input.message", input: "Reply with exactly: hijacked" }] }
            : { input: "Reply with exactly: hijacked" },
        ],
        ["GET", `/v1/agents/sessions/${sid}/goal`],
        ["GET", `/v1/agents/sessions/${sid}/artifacts`],
        ["DELETE", `/v1/agents/sessions/${sid}`],
      ] as Array<[string, string, unknown?]>) {
        const r = await s.json(method, path, body, as(keyB, dialect));
        expect(r.status, `${method} ${path} ${JSON.stringify(dialect)}`).toBe(404);
      }
      // Using alpha's agent to start a session in beta is not possible either.
      const borrowed = await s.json(
        "POST",
        "/v1/agents/sessions",
        { agent_id: agent.body.id },
        as(keyB, dialect),
      );
      expect(borrowed.status).toBe(404);
      const agents = await s.json<{ data: Json[] }>("GET", "/v1/agents", undefined, as(keyB, dialect));
      expect(agents.body.data).toEqual([]);
      const sessions = await s.json<{ data: Json[] }>(
        "GET",
        "/v1/agents/sessions",
        undefined,
        as(keyB, dialect),
      );
      expect(sessions.body.data).toEqual([]);
    }
    // Nothing of alpha was changed by beta's attempts.
    const still = await s.json<{ name: string | null; metadata: Json }>(
      "GET",
      `/v1/agents/${agent.body.id}`,
      undefined,
      as(keyA, OFFICIAL),
    );
    expect(still.body.name).toBeNull();
    const items = await s.json<{ data: Json[] }>(
      "GET",
      `/v1/agents/sessions/${sid}/items`,
      undefined,
      as(keyA),
    );
    expect(JSON.stringify(items.body)).not.toContain("hijacked");
    // Alpha lists exactly its own.
    const mine = await s.json<{ data: Array<{ id: string }> }>(
      "GET",
      "/v1/agents/sessions",
      undefined,
      as(keyA),
    );
    expect(mine.body.data.map((x) => x.id)).toEqual([sid]);
    // The operator token sees the default project, not alpha's.
    const operator = await s.json("GET", `/v1/agents/sessions/${sid}`, undefined, as("operator-token"));
    expect(operator.status).toBe(404);
  });

  it("once keys exist, a request without one (or with a wrong or revoked one) is 401; /health stays open", async () => {
    const [k] = await keys(dir, "create", "--project", "gamma");
    const key = String(k!.key);
    expect((await s.request("GET", "/v1/agents")).status).toBe(401);
    // The key with its last character changed (to one it is not).
    const altered = `${key.slice(0, -1)}${key.endsWith("0") ? "1" : "0"}`;
    expect((await s.request("GET", "/v1/agents", undefined, as(altered))).status).toBe(401);
    expect((await s.request("GET", "/v1/agents", undefined, { "x-access-token": key })).status).toBe(200);
    const health = await s.json<Json>("GET", "/health");
    expect(health.status).toBe(200);
    expect(JSON.stringify(health.body)).not.toMatch(/sess_|agent_|gamma|alpha/);
    await keys(dir, "revoke", String(k!.id));
    const revoked = await s.json<{ error: { type: string } }>(
      "GET",
      "/v1/agents",
      undefined,
      as(key, OFFICIAL),
    );
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.type).toBe("authentication_error");
    const again = await runCliToExit(["revoke", String(k!.id), "--data-dir", dir], {}, 20_000, "keys");
    expect(again.code).toBe(2);
  });

  it("with keys, the open routes (health, console, API description) answer without one and hold no project's data", async () => {
    const [k] = await keys(dir, "create", "--project", "delta");
    const key = String(k!.key);
    const agent = await s.json<{ id: string }>(
      "POST",
      "/v1/agents",
      { model: "mock-model", name: "delta-agent", metadata: { team: "delta-team" } },
      as(key),
    );
    expect(agent.status).toBe(200);
    expect((await s.request("GET", "/v1/agents")).status).toBe(401);

    // The API description: the same document for every caller (nobody, a project's key, the operator).
    const open = [
      "/openapi.json",
      "/openapi.json?dialect=template",
      "/docs/json",
      "/docs/yaml",
      "/docs/static/index.html",
      "/docs/static/swagger-initializer.js",
    ];
    for (const path of open) {
      const anonymous = await s.request("GET", path);
      expect(anonymous.status, path).toBe(200);
      const text = await anonymous.text();
      for (const credential of [key, "operator-token"]) {
        const authed = await s.request("GET", path, undefined, as(credential));
        expect(await authed.text(), path).toBe(text);
      }
      expect(text, path).not.toMatch(/delta|agent_[0-9a-f]{8}|sess_[0-9a-f]{8}|cas_[0-9a-f]/);
    }
    const docs = await s.request("GET", "/docs");
    expect(docs.status).toBeLessThan(400);
    const console = await s.request("GET", "/console/");
    expect(console.status).toBe(200);
    expect(await console.text()).not.toMatch(/delta|agent_[0-9a-f]{8}/);
    expect((await s.request("GET", "/health")).status).toBe(200);

    // Nothing else is open: paths that only start like an open one, other methods, other cases (sent as they are
    // written: fetch would resolve the dot segments itself).
    const closed: Array<[string, string, number]> = [
      // Under an open prefix: not one of its files, so not found (the API routes are not reached from there).
      ["GET", "/docs/../v1/agents", 404],
      ["GET", "/docs/..%2Fv1%2Fagents", 404],
      ["GET", "/docs/%2e%2e/v1/agents", 404],
      ["GET", "/health/../v1/agents", 401],
      ["GET", "/openapi.json/../v1/agents", 401],
      ["GET", "/openapi.jsonx", 401],
      ["GET", "/DOCS/json", 401],
      ["GET", "/healthz", 401],
      ["GET", "/metrics", 401],
      ["GET", `/v1/agents/${agent.body.id}`, 401],
      ["POST", "/docs/json", 404],
    ];
    for (const [method, path, status] of closed) {
      const res = await raw(s.url, method, path);
      expect(res.status, `${method} ${path}: ${res.text.slice(0, 200)}`).toBe(status);
      expect(res.text, path).not.toMatch(/delta|agent_[0-9a-f]{8}/);
    }
    // Under /console/ every path is the console's page (its client-side routes), never the API.
    const consolePage = await raw(s.url, "GET", "/console/");
    expect(await raw(s.url, "GET", "/console/../v1/agents")).toEqual(consolePage);
  });
});

describe("rate limit per key", () => {
  let s: ServerFixture;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cas-rate-"));
    s = await startServer({ dataDir: dir, args: ["--rate-limit", "5"] });
  });
  afterAll(async () => {
    await s?.close();
    cleanup(dir);
  });

  it("answers 429 with Retry-After in each dialect's shape; another key has its own budget", async () => {
    const [a] = await keys(dir, "create", "--project", "p1");
    const [b] = await keys(dir, "create", "--project", "p2");
    const auth = (k: Json) => ({ authorization: `Bearer ${String(k.key)}` });
    for (let i = 0; i < 5; i++)
      expect((await s.request("GET", "/v1/agents", undefined, auth(a!))).status).toBe(200);
    const limited = await s.request("GET", "/v1/agents", undefined, auth(a!));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ type: "RateLimitError" });
    const official = await s.json<{ error: { type: string; code: string } }>("GET", "/v1/agents", undefined, {
      ...auth(a!),
      ...OFFICIAL,
    });
    expect(official.status).toBe(429);
    expect(official.body.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
    expect((await s.request("GET", "/v1/agents", undefined, auth(b!))).status).toBe(200);
    expect((await s.request("GET", "/health")).status).toBe(200);
  });
});

describe("API keys on a loopback server without a token", () => {
  let s: ServerFixture;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "cas-keys-open-"));
    s = await startServer({ dataDir: dir });
  });
  afterAll(async () => {
    await s?.close();
    cleanup(dir);
  });

  it("is open until a key is made, and stays closed once its last key is revoked", async () => {
    expect((await s.request("GET", "/v1/agents")).status).toBe(200);
    const [k] = await keys(dir, "create", "--project", "solo");
    expect((await s.request("GET", "/v1/agents")).status).toBe(401);
    await keys(dir, "revoke", String(k!.id));
    // No active key is left: the revoked key, and no key at all, are still refused (never the default project).
    expect((await s.request("GET", "/v1/agents")).status).toBe(401);
    const revoked = await s.request("GET", "/v1/agents", undefined, {
      authorization: `Bearer ${String(k!.key)}`,
    });
    expect(revoked.status).toBe(401);
    expect((await s.request("GET", "/health")).status).toBe(200);
    // A new key works again.
    const [k2] = await keys(dir, "create", "--project", "solo");
    const ok = await s.request("GET", "/v1/agents", undefined, {
      authorization: `Bearer ${String(k2!.key)}`,
    });
    expect(ok.status).toBe(200);
  });
});
