// Security at the HTTP edge, on a running service: token auth, the non-loopback bind guard, workspace confinement of
// artifacts and uploads, body validation and size cap. (The "bad input" sweep over every route, on the HTTP app
// alone: security.test.ts.)
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/load.js";
import { type CliServer, runCliToExit, startCliServer } from "../support/cli-process.js";
import { cleanup, readSse, type ServerFixture, startServer, waitFor } from "../support/fixture.js";

const TOKEN = "s3cret-token-value";

const b64url = (p: string) => Buffer.from(p, "utf8").toString("base64url");

type Json = Record<string, unknown>;

async function jsonOf(res: Response): Promise<Json> {
  const text = await res.text();
  try {
    return JSON.parse(text) as Json;
  } catch {
    throw new Error(`not JSON (HTTP ${res.status}): ${text.slice(0, 200)}`);
  }
}

// As root every file is readable, so this runs the server as `nobody` (only possible when the tests run as root).

describe("token auth", () => {
  let s: ServerFixture;
  beforeAll(async () => {
    s = await startServer({ args: ["--token", TOKEN] });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("leaves /health open", async () => {
    const res = await s.request("GET", "/health");
    expect(res.status).toBe(200);
    expect((await jsonOf(res)).status).toBe("ok");
    expect((await s.request("GET", "/health?verbose=1")).status).toBe(200);
  });

  it("rejects a missing or wrong token with 401 {error:'unauthorized', type:'AuthError'}", async () => {
    const cases: Array<Record<string, string>> = [
      {},
      { authorization: "Bearer wrong" },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: TOKEN },
      { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString("base64")}` },
      { "x-access-token": "wrong" },
      { "x-access-token": "" },
      { "x-access-token": `${TOKEN}x` },
      { authorization: "Bearer " },
    ];
    for (const headers of cases) {
      for (const [method, path] of [
        ["GET", "/v1/agents"],
        ["GET", "/v1/agents/sessions"],
        ["GET", "/v1/agents/sessions/sess_x/events"],
        ["DELETE", "/v1/agents/sessions/sess_x"],
        ["POST", "/files/upload-stream"],
      ] as const) {
        const res = await s.request(method, path, undefined, headers);
        expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(await jsonOf(res)).toEqual({ error: "unauthorized", type: "AuthError" });
      }
    }
  });

  it("checks the token before reading the body and creates nothing without it", async () => {
    const before = await s.json<{ data: unknown[] }>("GET", "/v1/agents", undefined, {
      authorization: `Bearer ${TOKEN}`,
    });
    expect(before.status).toBe(200);
    const created = await s.request("POST", "/v1/agents", { name: "intruder" });
    expect(created.status).toBe(401);
    const badJson = await s.request("POST", "/v1/agents", "{not json");
    expect(badJson.status).toBe(401);
    expect((await jsonOf(badJson)).type).toBe("AuthError");
    const session = await s.request("POST", "/v1/agents/sessions", { input: "hello" });
    expect(session.status).toBe(401);
    const after = await s.json<{ data: unknown[] }>("GET", "/v1/agents", undefined, {
      "x-access-token": TOKEN,
    });
    expect(after.body.data).toHaveLength(before.body.data.length);
    const sessions = await s.json<{ data: unknown[] }>("GET", "/v1/agents/sessions", undefined, {
      "x-access-token": TOKEN,
    });
    expect(sessions.body.data).toHaveLength(0);
    expect(s.mock.requests()).toHaveLength(0);
  });

  it("accepts the token as Bearer (any case of the scheme) or as X-Access-Token", async () => {
    const accepted: Array<Record<string, string>> = [
      { authorization: `Bearer ${TOKEN}` },
      { authorization: `bearer ${TOKEN}` },
      { authorization: `BEARER  ${TOKEN}` },
      { "x-access-token": TOKEN },
      // The openai SDK always sends its own Bearer key; the server token then travels as X-Access-Token.
      { authorization: "Bearer sk-openai-key", "x-access-token": TOKEN },
      { authorization: `Bearer ${TOKEN}`, "x-access-token": "stale" },
    ];
    for (const headers of accepted) {
      const res = await s.request("POST", "/v1/agents", { name: "ok" }, headers);
      expect(res.status, JSON.stringify(headers)).toBe(200);
      expect((await jsonOf(res)).object).toBe("agent");
    }
  });

  it("answers 401 in the official shape for OpenAI-Beta requests", async () => {
    const res = await s.request("GET", "/v1/agents", undefined, { "openai-beta": "agents=v1" });
    expect(res.status).toBe(401);
    const body = await jsonOf(res);
    expect(body.error).toMatchObject({ message: "unauthorized", type: "authentication_error" });
  });

  it("streams a turn for an authorised client", async () => {
    const res = await s.request(
      "POST",
      "/v1/agents/sessions",
      { input: "Reply with exactly: authorised", stream: true },
      { "x-access-token": TOKEN },
    );
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events.at(-1)?.event).toBe("agent.session.turn.completed");
    const text = events
      .filter((e) => e.event === "agent.session.output_item.done")
      .map((e) => (e.data.item as { text?: string }).text);
    expect(text).toContain("authorised");
  });

  it("reads the token from AGENT_API_TOKEN and its alias EBX_SERVER_TOKEN", async () => {
    const base = ["--mock-model"];
    expect(loadConfig(base, { AGENT_API_TOKEN: "a" }).token).toBe("a");
    expect(loadConfig(base, { EBX_SERVER_TOKEN: "e" }).token).toBe("e");
    expect(loadConfig(base, { AGENT_API_TOKEN: "a", EBX_SERVER_TOKEN: "e" }).token).toBe("a");
    expect(loadConfig([...base, "--token", "f"], { AGENT_API_TOKEN: "a" }).token).toBe("f");
    // An empty value is "unset", never "auth off" while another source has a token.
    expect(loadConfig([...base, "--token", ""], { AGENT_API_TOKEN: "a" }).token).toBe("a");
    expect(loadConfig(base, { AGENT_API_TOKEN: "", EBX_SERVER_TOKEN: "e" }).token).toBe("e");
    expect(loadConfig(base, {}).token).toBeNull();

    const alias = await startServer({ env: { EBX_SERVER_TOKEN: "alias-token" } });
    try {
      expect((await alias.request("GET", "/v1/agents")).status).toBe(401);
      expect(
        (await alias.request("GET", "/v1/agents", undefined, { "x-access-token": "alias-token" })).status,
      ).toBe(200);
      expect(
        (await alias.request("GET", "/v1/agents", undefined, { authorization: "Bearer alias-token" })).status,
      ).toBe(200);
      expect((await alias.request("GET", "/health")).status).toBe(200);
    } finally {
      await alias.close();
    }
  });
});

describe("request logs", () => {
  it("never contain a token or key (headers are not logged; secret-looking query values are redacted)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cas-logs-"));
    const server = await startCliServer(join(dir, "data"), ["--token", "log-secret-token"]);
    try {
      const secrets = ["log-secret-token", "query-secret-1", "query-secret-2", "header-secret"];
      await fetch(`${server.url}/v1/agents?token=query-secret-1&api_key=query-secret-2&limit=2`, {
        headers: { authorization: "Bearer log-secret-token", "x-access-token": "header-secret" },
      });
      await fetch(`${server.url}/v1/agents`, { headers: { authorization: "Bearer header-secret" } });
      const logged = () => server.logs().filter((l) => l.msg === "request");
      await waitFor(() => logged().length >= 2, 10_000, "request log lines");
      const text = server.stdout() + server.stderr();
      for (const secret of secrets) expect(text).not.toContain(secret);
      expect(logged()[0]).toMatchObject({ method: "GET", status: 200 });
      expect(String(logged()[0]!.url)).toMatch(/limit=2/);
      expect(logged()[1]).toMatchObject({ status: 401 });
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
      cleanup(dir);
    }
  });
});

describe("non-loopback bind", () => {
  const refuse =
    /refusing to bind (\S+) without a token: set AGENT_API_TOKEN \(or --token\), or pass --insecure-no-auth/;

  it("loadConfig refuses a non-loopback host without a token", () => {
    for (const host of [
      "0.0.0.0",
      "::",
      "192.168.1.10",
      "example.com",
      "127.evil.example",
      "::ffff:10.0.0.1",
    ]) {
      let caught: unknown;
      try {
        loadConfig(["--host", host], {});
      } catch (err) {
        caught = err;
      }
      expect(caught, host).toBeInstanceOf(ConfigError);
      expect((caught as Error).message).toMatch(refuse);
      expect(() => loadConfig([], { HOST: host })).toThrow(ConfigError);
    }
  });

  it("loadConfig allows loopback, a token, or --insecure-no-auth", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "::1", "localhost", "::ffff:127.0.0.1"]) {
      expect(loadConfig(["--host", host], {}).host).toBe(host);
    }
    expect(loadConfig(["--host", "0.0.0.0", "--token", "t"], {}).token).toBe("t");
    expect(loadConfig(["--host", "0.0.0.0"], { AGENT_API_TOKEN: "t" }).token).toBe("t");
    expect(loadConfig(["--host", "0.0.0.0"], { EBX_SERVER_TOKEN: "t" }).token).toBe("t");
    const insecure = loadConfig(["--host", "0.0.0.0", "--insecure-no-auth"], {});
    expect(insecure.insecureNoAuth).toBe(true);
    expect(insecure.token).toBeNull();
  });

  it("the CLI exits non-zero with a clear message, and starts with --insecure-no-auth", async () => {
    const parent = mkdtempSync(join(tmpdir(), "cas-bind-"));
    const dataDir = join(parent, "data");
    try {
      const refused = await runCliToExit([
        "--mock-model",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--data-dir",
        dataDir,
      ]);
      expect(refused.code).not.toBe(0);
      expect(refused.code).not.toBeNull();
      expect(refused.stderr).toMatch(/refusing to bind 0\.0\.0\.0 without a token/);
      expect(refused.stderr).toContain("--insecure-no-auth");
      expect(refused.stderr).not.toMatch(/at .*\.js:\d+/); // a message, not a stack trace
      expect(existsSync(join(dataDir, "agents.db"))).toBe(false);

      const badPort = await runCliToExit(["--mock-model", "--port", "99999", "--data-dir", dataDir]);
      expect(badPort.code).toBe(2);
      expect(badPort.stderr).toMatch(/--port must be an integer between 0 and 65535, got "99999"/);

      const unknown = await runCliToExit(["--mock-model", "--no-such-flag"]);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/no-such-flag/);

      const server = await startCliServer(dataDir, ["--host", "0.0.0.0", "--insecure-no-auth"]);
      const health = await fetch(`${server.url}/health`);
      expect(health.status).toBe(200);
      expect((await fetch(`${server.url}/v1/agents`)).status).toBe(200); // no token configured: open
      server.child.kill("SIGTERM");
      expect(await server.exited).toEqual({ code: 0, signal: null });
    } finally {
      cleanup(parent);
    }
  });
});

describe("workspace confinement, validation and bad input", () => {
  let s: ServerFixture;
  let sessionId: string;
  let outside: string;

  beforeAll(async () => {
    s = await startServer();
    const created = await s.json<{ id: string }>("POST", "/v1/agents/sessions", {});
    expect(created.status).toBe(200);
    sessionId = created.body.id;
    // dataDir holds the workspace; a sibling directory is outside of it.
    outside = join(s.dataDir, "outside");
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, "secret.txt"), "top secret");
    mkdirSync(join(s.workspace, "sub"), { recursive: true });
    writeFileSync(join(s.workspace, "ok.txt"), "fine");
    writeFileSync(join(s.workspace, "sub", "inner.txt"), "inner");
    symlinkSync(join(outside, "secret.txt"), join(s.workspace, "link-file"));
    symlinkSync(outside, join(s.workspace, "link-dir"));
    symlinkSync("../outside/secret.txt", join(s.workspace, "link-relative"));
    symlinkSync(join(outside, "not-yet.txt"), join(s.workspace, "link-dangling"));
    symlinkSync(join(s.workspace, "ok.txt"), join(s.workspace, "link-inside"));
  });
  afterAll(async () => {
    await s?.close();
  });

  const artifact = (id: string) => `/v1/agents/sessions/${sessionId}/artifacts/${id}`;

  it("serves files inside the workspace (control)", async () => {
    for (const [path, content] of [
      ["ok.txt", "fine"],
      ["sub/inner.txt", "inner"],
      ["sub/../ok.txt", "fine"],
      ["link-inside", "fine"],
    ] as const) {
      const res = await s.json("GET", artifact(b64url(path)));
      expect(res.status, path).toBe(200);
      expect(res.body).toMatchObject({ object: "artifact", session_id: sessionId, content });
    }
  });

  it("answers 403 to GET and DELETE of paths leading out of the workspace", async () => {
    const escapes = [
      "../outside/secret.txt",
      "../../../../../../etc/passwd",
      "sub/../../outside/secret.txt",
      "../codex-home/config.toml",
      "/etc/passwd",
      join(outside, "secret.txt"),
      "link-file",
      "link-relative",
      "link-dir/secret.txt",
      "link-dir",
      "link-dangling",
      "sub/../link-dir/secret.txt",
      "ok.txt\0../../etc/passwd",
    ];
    for (const path of escapes) {
      for (const method of ["GET", "DELETE"] as const) {
        const res = await s.json(method, artifact(b64url(path)));
        expect(res.status, `${method} ${JSON.stringify(path)}`).toBe(403);
        expect(res.body).toEqual({ error: "Access denied: path outside workspace", type: "ForbiddenError" });
      }
    }
    // Ids that are not base64url are taken as plain paths (template behaviour): same confinement.
    for (const raw of ["..%2F", "..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "link-dir%2Fsecret.txt"]) {
      const res = await s.json("GET", artifact(raw));
      expect(res.status, raw).toBe(403);
    }
    // Nothing outside was read or removed, and the links themselves are still there.
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("top secret");
    expect(existsSync(join(outside, "not-yet.txt"))).toBe(false);
    for (const link of ["link-file", "link-dir", "link-relative"]) {
      expect(existsSync(join(s.workspace, link)), link).toBe(true);
    }
  });

  it("deletes inside the workspace (control)", async () => {
    writeFileSync(join(s.workspace, "doomed.txt"), "bye");
    const del = await s.json("DELETE", artifact(b64url("doomed.txt")));
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: b64url("doomed.txt"), object: "artifact", deleted: true });
    expect(existsSync(join(s.workspace, "doomed.txt"))).toBe(false);
    expect((await s.json("GET", artifact(b64url("doomed.txt")))).status).toBe(404);
  });

  it("confines /files/upload-stream to the workspace", async () => {
    const content_base64 = Buffer.from("payload").toString("base64");
    const escapes = [
      "../outside/uploaded.txt",
      join(outside, "uploaded.txt"),
      "/tmp/cas-upload-escape.txt",
      "link-dir/uploaded.txt",
      "link-dangling",
      "sub/../../outside/uploaded.txt",
    ];
    for (const path of escapes) {
      const res = await s.json("POST", "/files/upload-stream", { path, content_base64 });
      expect(res.status, path).toBe(403);
      expect(res.body).toEqual({ error: "Path escapes base directory", type: "ForbiddenError" });
    }
    expect(existsSync(join(outside, "uploaded.txt"))).toBe(false);
    expect(existsSync(join(outside, "not-yet.txt"))).toBe(false);
    expect(existsSync("/tmp/cas-upload-escape.txt")).toBe(false);

    const inside = await s.json<{ path: string; bytes: number }>("POST", "/files/upload-stream", {
      path: "up/new.txt",
      content_base64,
    });
    expect(inside.status).toBe(200);
    expect(inside.body.bytes).toBe(7);
    expect(readFileSync(join(s.workspace, "up", "new.txt"), "utf8")).toBe("payload");
    const absolute = await s.json("POST", "/files/upload-stream", {
      path: join(s.workspace, "abs.txt"),
      content_base64,
    });
    expect(absolute.status).toBe(200);
    expect(readFileSync(join(s.workspace, "abs.txt"), "utf8")).toBe("payload");
    // Paths the filesystem refuses are the client's mistake: 4xx, never 500.
    for (const [path, message] of [
      [`${"a".repeat(300)}/b.txt`, /Path name too long/],
      [`dir/${"c".repeat(300)}`, /Path name too long/],
      [`${"x/".repeat(3000)}y`, /Path name too long/],
      ["ok.txt/below.txt", /not a directory/],
    ] as const) {
      const r = await s.json<{ error: string; type: string }>("POST", "/files/upload-stream", {
        path,
        content_base64,
      });
      expect(r.status, path.slice(0, 40)).toBe(400);
      expect(r.body.error).toMatch(message);
      expect(r.body.error.length).toBeLessThan(300);
    }
  });

  it("answers malformed JSON with 400 {error:'Invalid JSON: …', type:'ValueError'}", async () => {
    for (const [path, body] of [
      ["/v1/agents", '{"model":'],
      ["/v1/agents/sessions", "{input: 'x'}"],
      [`/v1/agents/sessions/${sessionId}/events`, '{"input":"x",}'],
      [`/v1/agents/sessions/${sessionId}`, "nope"],
      ["/files/upload-stream", "[1,2"],
    ] as const) {
      const res = await s.json<{ error: string; type: string }>("POST", path, body);
      expect(res.status, path).toBe(400);
      expect(res.body.type).toBe("ValueError");
      expect(res.body.error).toMatch(/^Invalid JSON: \S/);
    }
    // JSON with a JSON content type only (trust.engine.test.ts covers the rest).
    const form = await s.request("POST", "/v1/agents", "a=b", {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(form.status).toBe(415);
    expect((await jsonOf(form)).type).toBe("UnsupportedMediaTypeError");
  });

  it("answers wrongly typed fields with 400 naming the field", async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ["POST", "/v1/agents", { model: 5 }, "model"],
      ["POST", "/v1/agents", { tools: {} }, "tools"],
      ["POST", "/v1/agents", { metadata: "x" }, "metadata"],
      ["POST", "/v1/agents", { name: ["n"] }, "name"],
      ["POST", "/v1/agents", { instructions: 1 }, "instructions"],
      ["POST", "/v1/agents/sessions", { stream: "yes" }, "stream"],
      ["POST", "/v1/agents/sessions", { metadata: "x" }, "metadata"],
      ["POST", "/v1/agents/sessions", { metadata: { k: 5 } }, "metadata.k"],
      ["POST", "/v1/agents/sessions", { agent: { model: 5 } }, "agent.model"],
      ["POST", "/v1/agents/sessions", { agent: { tools: {} } }, "agent.tools"],
      ["POST", "/v1/agents/sessions", { agent: 5 }, "agent"],
      ["POST", `/v1/agents/sessions/${sessionId}`, { model: 5 }, "model"],
      ["POST", `/v1/agents/sessions/${sessionId}`, { metadata: [] }, "metadata"],
      ["POST", `/v1/agents/sessions/${sessionId}/events`, { input: "hi", stream: "yes" }, "stream"],
    ];
    for (const [method, path, body, field] of cases) {
      const res = await s.json<{ error: string; type: string }>(method, path, body);
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body.type).toBe("ValueError");
      expect(res.body.error).toContain(`'${field}'`);
    }
    const agentType = await s.json<{ error: string }>("POST", "/v1/agents/sessions", { agent: 5 });
    expect(agentType.body.error).toMatch(/expected string or object, received number/);
    // None of these started a turn or created a session.
    expect(s.mock.requests()).toHaveLength(0);
    const list = await s.json<{ data: Array<{ id: string }> }>("GET", "/v1/agents/sessions");
    expect(list.body.data.map((x) => x.id)).toEqual([sessionId]);
  });

  it("rejects strings that are not Unicode (unpaired surrogates) instead of hanging the session", async () => {
    const events = `/v1/agents/sessions/${sessionId}/events`;
    for (const [path, raw] of [
      [events, '{"input":"Reply with exactly: x\\ud800y","stream":false}'],
      [events, '{"input":[{"type":"input_text","text":"\\udc00"}]}'],
      ["/v1/agents/sessions", '{"input":"hi","agent":{"model":"m\\uDBFF"},"stream":false}'],
      ["/v1/agents/sessions", '{"input":"hi","agent":{"instructions":"\\ude00\\ud83d"}}'],
      ["/v1/agents", '{"name":"ok","metadata":{"k\\ud800":"v"}}'],
    ] as const) {
      const res = await s.json<{ error: string; type: string }>("POST", path, raw);
      expect(res.status, raw).toBe(400);
      expect(res.body.type).toBe("ValueError");
      expect(res.body.error).toMatch(/^Invalid JSON: .*unpaired UTF-16 surrogate/);
    }
    expect(s.mock.requests()).toHaveLength(0);
    expect((await s.json<{ status: string }>("GET", `/v1/agents/sessions/${sessionId}`)).body.status).toBe(
      "idle",
    );
    const sessions = await s.json<{ data: unknown[] }>("GET", "/v1/agents/sessions");
    expect(sessions.body.data).toHaveLength(1);

    // Escaped pairs and an escaped backslash followed by "ud800" are fine.
    const literal = await s.json<{ name: string }>(
      "POST",
      "/v1/agents",
      '{"name":"\\\\ud800 \\ud83d\\ude00"}',
    );
    expect(literal.status).toBe(200);
    expect(literal.body.name).toBe("\\ud800 😀");
    const pair = await s.json<{ status: string; output: Array<{ item: { text?: string } }> }>(
      "POST",
      events,
      '{"input":"Reply with exactly: smile \\ud83d\\ude00","stream":false}',
    );
    expect(pair.status).toBe(200);
    expect(pair.body.status).toBe("idle");
    expect(pair.body.output.map((o) => o.item.text)).toContain("smile 😀");
    s.mock.reset();
  });

  it("answers a turn without input with 400 'Missing input text'", async () => {
    const events = `/v1/agents/sessions/${sessionId}/events`;
    for (const body of [
      {},
      { input: "" },
      { input: "   " },
      { input: [] },
      { stream: false },
      { input: null },
    ]) {
      const res = await s.json("POST", events, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toEqual({ error: "Missing input text", type: "ValueError" });
    }
    for (const body of [
      { input: 5 },
      { input: [{ type: "input_image" }] },
      { input: [{ role: "assistant", content: "x" }] },
    ]) {
      const res = await s.json<{ type: string; error: string }>("POST", events, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.type).toBe("ValueError");
      expect(res.body.error).toMatch(/input/);
    }
    expect(s.mock.requests()).toHaveLength(0);
    const session = await s.json<{ status: string }>("GET", `/v1/agents/sessions/${sessionId}`);
    expect(session.body.status).toBe("idle");
  });
});

describe("body size cap", () => {
  let s: ServerFixture;
  beforeAll(async () => {
    s = await startServer({ env: { AGENT_BODY_LIMIT: "2048" } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("answers 413 to a body over AGENT_BODY_LIMIT, however it is sent", async () => {
    const small = await s.json("POST", "/v1/agents", { instructions: "x".repeat(1500) });
    expect(small.status).toBe(200);
    for (const path of ["/v1/agents", "/v1/agents/sessions", "/files/upload-stream"]) {
      const res = await s.json("POST", path, { instructions: "x".repeat(4000), input: "y" });
      expect(res.status, path).toBe(413);
      expect(res.body).toEqual({ error: "Request body too large", type: "ValueError" });
    }
    // Chunked (no Content-Length): the cap still applies while reading.
    const chunks = [JSON.stringify({ instructions: "z".repeat(3000) })];
    const chunked = await fetch(`${s.url}/v1/agents`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(new TextEncoder().encode(next));
        },
      }),
      duplex: "half",
    } as RequestInit & { duplex: "half" });
    expect(chunked.status).toBe(413);
    expect((await jsonOf(chunked)).type).toBe("ValueError");
    const agents = await s.json<{ data: unknown[] }>("GET", "/v1/agents");
    expect(agents.body.data).toHaveLength(1);
    expect(s.mock.requests()).toHaveLength(0);
    expect(loadConfig(["--mock-model"], { AGENT_BODY_LIMIT: "2048" }).bodyLimitBytes).toBe(2048);
    expect(() => loadConfig(["--mock-model"], { AGENT_BODY_LIMIT: "big" })).toThrow(ConfigError);
  });
});

describe.skipIf(process.getuid?.() !== 0)("files the server may not touch", () => {
  const NOBODY = 65534;
  let parent: string;
  let server: CliServer | undefined;
  beforeAll(() => {
    parent = mkdtempSync(join(tmpdir(), "cas-perm-"));
    chmodSync(parent, 0o755);
    mkdirSync(join(parent, "data", "workspace"), { recursive: true });
    chownSync(join(parent, "data"), NOBODY, NOBODY);
    chownSync(join(parent, "data", "workspace"), NOBODY, NOBODY);
  });
  afterAll(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill("SIGKILL");
      await server.exited;
    }
    cleanup(parent);
  });

  it("answers 403 (never 500) for unreadable, undeletable and unwritable paths", async () => {
    const ws = join(parent, "data", "workspace");
    // Owned by root: `nobody` may not read locked.txt, nor enter sealed/, nor change anything in ro/.
    writeFileSync(join(ws, "locked.txt"), "secret");
    chmodSync(join(ws, "locked.txt"), 0o000);
    mkdirSync(join(ws, "sealed"));
    writeFileSync(join(ws, "sealed", "inside.txt"), "hidden");
    chmodSync(join(ws, "sealed"), 0o000);
    mkdirSync(join(ws, "ro"));
    writeFileSync(join(ws, "ro", "keep.txt"), "kept");
    writeFileSync(join(ws, "open.txt"), "readable");

    server = await startCliServer(join(parent, "data"), [], {}, { uid: NOBODY, gid: NOBODY });
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server!.url}${path}`, {
        method,
        ...(body !== undefined
          ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
          : {}),
      });
      return { status: res.status, body: await jsonOf(res) };
    };
    const session = await call("POST", "/v1/agents/sessions", {});
    expect(session.status).toBe(200);
    const artifact = (p: string) => `/v1/agents/sessions/${String(session.body.id)}/artifacts/${b64url(p)}`;

    const readable = await call("GET", artifact("open.txt"));
    expect(readable.status).toBe(200);
    expect(readable.body.content).toBe("readable");

    for (const [method, path] of [
      ["GET", "locked.txt"],
      ["GET", "sealed/inside.txt"],
      ["DELETE", "sealed/inside.txt"],
      ["DELETE", "ro/keep.txt"],
    ] as const) {
      const res = await call(method, artifact(path));
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toEqual({ error: `Permission denied: ${path}`, type: "ForbiddenError" });
    }
    const content_base64 = Buffer.from("x").toString("base64");
    for (const path of ["ro/new.txt", "sealed/new.txt", "sealed/deeper/new.txt", "ro/sub/new.txt"]) {
      const res = await call("POST", "/files/upload-stream", { path, content_base64 });
      expect(res.status, path).toBe(403);
      expect(res.body).toEqual({ error: `Permission denied: ${path}`, type: "ForbiddenError" });
    }
    chmodSync(join(ws, "sealed"), 0o755);
    expect(readFileSync(join(ws, "ro", "keep.txt"), "utf8")).toBe("kept");
    expect(existsSync(join(ws, "sealed", "inside.txt"))).toBe(true);
    expect(existsSync(join(ws, "ro", "new.txt"))).toBe(false);

    expect((await call("GET", "/health")).status).toBe(200);
    server.child.kill("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });
});
