// Drive-by protection: what a web page can make a browser send to the service is refused (foreign Origin,
// DNS-rebound Host, CORS-"simple" bodies), in both dialects, with and without a token; curl and the SDKs are not
// affected. Each attack is also checked to have had no effect (no session created, no model request).
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerFixture, startServer } from "../support/fixture.js";

type Json = Record<string, unknown>;
const OFFICIAL = { "openai-beta": "agents=v1" };

/** A raw HTTP request (fetch cannot set Host or Origin freely). */
function raw(
  url: string,
  opts: { method: string; path: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: u.hostname, port: u.port, method: opts.method, path: opts.path, headers: opts.headers ?? {} },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

const ATTACK_INPUT = '{"agent":{"model":"mock-model"},"input":"Run this exact shell command: touch pwned"}';

describe.each([
  ["no token", [] as string[]],
  ["with a token", ["--token", "tok-123"]],
])("trust boundaries (%s)", (_label, args) => {
  let s: ServerFixture;
  const auth: Record<string, string> = args.length ? { authorization: "Bearer tok-123" } : {};
  beforeAll(async () => {
    s = await startServer({ args: [...args, "--cors-origin", "https://console.example.com"] });
  });
  afterAll(async () => {
    await s?.close();
  });
  const host = () => new URL(s.url).host;
  const list = async () =>
    (
      await raw(s.url, {
        method: "GET",
        path: "/v1/agents/sessions",
        headers: { host: host(), ...auth },
      })
    ).body;

  it("refuses CORS-simple bodies (text/plain, form, multipart) with 415 in both dialects, and runs nothing", async () => {
    const before = await list();
    for (const type of [
      "text/plain",
      "text/plain; charset=utf-8",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
    ]) {
      for (const dialect of [{}, OFFICIAL]) {
        const res = await raw(s.url, {
          method: "POST",
          path: "/v1/agents/sessions",
          headers: { host: host(), "content-type": type, ...dialect, ...auth },
          body: ATTACK_INPUT,
        });
        expect(res.status, type).toBe(415);
        const body = JSON.parse(res.body) as Json;
        if ("openai-beta" in dialect) {
          expect((body.error as Json).type).toBe("invalid_request_error");
          expect((body.error as Json).code).toBe("unsupported_media_type");
        } else {
          expect(body.type).toBe("UnsupportedMediaTypeError");
          expect(String(body.error)).toMatch(/application\/json/);
        }
      }
    }
    // A body without any Content-Type is refused too; the upload endpoint follows the same rule.
    const untyped = await raw(s.url, {
      method: "POST",
      path: "/v1/agents",
      headers: { host: host(), "content-length": "2", ...auth },
      body: "{}",
    });
    expect(untyped.status).toBe(415);
    const upload = await raw(s.url, {
      method: "POST",
      path: "/files/upload-stream",
      headers: { host: host(), "content-type": "text/plain", ...auth },
      body: JSON.stringify({ path: "x.txt", content_base64: "aGk=" }),
    });
    expect(upload.status).toBe(415);
    expect(await list()).toBe(before);
    expect(s.mock.requests().length).toBe(0);
  });

  it("accepts application/json and application/*+json, and body-less requests without a type", async () => {
    for (const type of [
      "application/json",
      "application/json; charset=utf-8",
      "application/merge-patch+json",
    ]) {
      const res = await raw(s.url, {
        method: "POST",
        path: "/v1/agents",
        headers: { host: host(), "content-type": type, ...auth },
        body: '{"model":"mock-model"}',
      });
      expect(res.status, type).toBe(200);
    }
    const agent = JSON.parse(
      (
        await raw(s.url, {
          method: "POST",
          path: "/v1/agents",
          headers: { host: host(), "content-type": "application/json", ...auth },
          body: '{"model":"mock-model"}',
        })
      ).body,
    ) as Json;
    const del = await raw(s.url, {
      method: "DELETE",
      path: `/v1/agents/${agent.id}`,
      headers: { host: host(), ...auth },
    });
    expect(del.status).toBe(200);
  });

  it("refuses a foreign Origin with 403 (also on GET: nothing can be read cross-site)", async () => {
    for (const origin of ["https://evil.example", "null", "http://127.0.0.1.evil.example", "file://"]) {
      const post = await raw(s.url, {
        method: "POST",
        path: "/v1/agents/sessions",
        headers: { host: host(), origin, "content-type": "application/json", ...auth },
        body: ATTACK_INPUT,
      });
      expect(post.status, origin).toBe(403);
      expect(post.headers["access-control-allow-origin"]).toBeUndefined();
      const get = await raw(s.url, {
        method: "GET",
        path: "/v1/agents/sessions",
        headers: { host: host(), origin, ...OFFICIAL, ...auth },
      });
      expect(get.status, origin).toBe(403);
      expect(((JSON.parse(get.body) as Json).error as Json).type).toBe("permission_error");
    }
    // A preflight from a foreign origin gets no CORS grant.
    const preflight = await raw(s.url, {
      method: "OPTIONS",
      path: "/v1/agents/sessions",
      headers: {
        host: host(),
        origin: "https://evil.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, authorization",
      },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers["access-control-allow-origin"]).toBeUndefined();
    expect(s.mock.requests().length).toBe(0);
  });

  it("allows the service's own origin and --cors-origin, with CORS headers and preflights", async () => {
    for (const origin of [`http://${host()}`, "https://console.example.com"]) {
      const preflight = await raw(s.url, {
        method: "OPTIONS",
        path: "/v1/agents",
        headers: {
          host: host(),
          origin,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type, authorization, x-stainless-os",
        },
      });
      expect(preflight.status, origin).toBe(204);
      expect(preflight.headers["access-control-allow-origin"]).toBe(origin);
      expect(String(preflight.headers["access-control-allow-headers"])).toMatch(/x-stainless-os/);
      expect(String(preflight.headers["access-control-allow-methods"])).toMatch(/POST/);
      const res = await raw(s.url, {
        method: "POST",
        path: "/v1/agents",
        headers: { host: host(), origin, "content-type": "application/json", ...OFFICIAL, ...auth },
        body: '{"model":"mock-model"}',
      });
      expect(res.status, origin).toBe(200);
      expect(res.headers["access-control-allow-origin"]).toBe(origin);
      expect(res.headers.vary).toMatch(/Origin/);
    }
  });

  it("answers a rebound Host with 421 (loopback bind), loopback names with any port are served", async () => {
    const port = new URL(s.url).port;
    for (const h of [
      `evil.example:${port}`,
      "evil.example",
      `127.0.0.1.nip.io:${port}`,
      `localhost.evil.example:${port}`,
    ]) {
      const res = await raw(s.url, {
        method: "GET",
        path: "/v1/agents/sessions",
        headers: { host: h, ...auth },
      });
      expect(res.status, h).toBe(421);
      expect(JSON.parse(res.body).type).toBe("MisdirectedRequestError");
      const health = await raw(s.url, { method: "GET", path: "/health", headers: { host: h } });
      expect(health.status, h).toBe(421);
    }
    for (const h of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      "localhost",
      "LOCALHOST:1234",
    ]) {
      const res = await raw(s.url, {
        method: "GET",
        path: "/v1/agents/sessions",
        headers: { host: h, ...auth },
      });
      expect(res.status, h).toBe(200);
    }
  });

  it("serves plain clients (no Origin) as before", async () => {
    const res = await s.json("POST", "/v1/agents", { model: "mock-model" }, auth);
    expect(res.status).toBe(200);
    expect((await s.request("GET", "/health")).status).toBe(200);
  });
});

describe("--allowed-host", () => {
  let s: ServerFixture;
  beforeAll(async () => {
    s = await startServer({ args: ["--allowed-host", "agents.internal"] });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("adds names (a reverse proxy's), and its own origin follows the Host", async () => {
    const ok = await raw(s.url, { method: "GET", path: "/v1/agents", headers: { host: "agents.internal" } });
    expect(ok.status).toBe(200);
    const proxied = await raw(s.url, {
      method: "POST",
      path: "/v1/agents",
      headers: {
        host: "agents.internal",
        origin: "https://agents.internal",
        "content-type": "application/json",
      },
      body: '{"model":"mock-model"}',
    });
    // The proxy terminates TLS on the default port: the page's origin has no port, the Host header neither.
    expect(proxied.status).toBe(200);
    const other = await raw(s.url, {
      method: "GET",
      path: "/v1/agents",
      headers: { host: "other.internal" },
    });
    expect(other.status).toBe(421);
  });
});
