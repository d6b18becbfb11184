// Secrets by placeholder over real sockets: the sandbox sends a placeholder, the host a substitution names receives
// the secret (in the request target and header values; plain HTTP directly, HTTPS by interception), other hosts
// receive the placeholder (their HTTPS is not intercepted), bodies are untouched, and the secret never appears in
// decisions, stats, errors or response headers.
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CertificateAuthority,
  type EgressEndpoint,
  type EgressPolicy,
  EgressProxy,
  type EgressSubstitution,
  placeholderFor,
} from "../src/index.js";
import {
  agentOver,
  connectThrough,
  decisionLog,
  mapResolver,
  peerIssuer,
  proxiedGet,
  rawExchange,
  requestOver,
  socketIn,
  socks5,
  TARGET_IP,
  Targets,
  tempDir,
  tlsOver,
} from "./helpers.js";

const NAMES = ["sub.test", "other.test", "second.test"];
const KEY = placeholderFor("SERVICE_API_KEY", "cred_1");
const TOKEN = placeholderFor("OTHER_TOKEN", "cred_2");
const KEY_VALUE = "sk-live-9f8e7d6c5b4a";
const TOKEN_VALUE = "tok-0a1b2c3d4e5f";
let targets: Targets;
let serviceCa: CertificateAuthority;
let proxy: EgressProxy;
let endpoint: EgressEndpoint;
let policy: EgressPolicy;
let subs: EgressSubstitution[];
const tmp = tempDir();
const log = decisionLog();

beforeAll(async () => {
  targets = await Targets.start(NAMES);
  serviceCa = await CertificateAuthority.create({ commonName: "service egress CA" });
  policy = {
    mode: "allowlist",
    allowed: NAMES,
    ports: [targets.httpPort, targets.httpsPort],
    allowPrivate: [`${TARGET_IP}/32`],
  };
  proxy = new EgressProxy({
    ca: serviceCa,
    upstreamCa: targets.ca.certPem,
    resolve: mapResolver(Object.fromEntries(NAMES.map((n) => [n, [TARGET_IP]]))),
    onDecision: log.hook,
  });
  subs = [
    { placeholder: KEY, value: KEY_VALUE, hosts: ["sub.test"] },
    { placeholder: TOKEN, value: TOKEN_VALUE, hosts: ["sub.test", "second.test"] },
  ];
  endpoint = await proxy.open({ id: "subs", socketPath: socketIn(tmp.dir), policy, substitutions: subs });
});

afterAll(async () => {
  await proxy?.close();
  await targets?.close();
  tmp.cleanup();
});

const last = (host: string) => targets.to(host).at(-1)!;

/** Raw bytes of one plain proxied request (for header lines a client library would merge or refuse). */
const rawGet = (host: string, path: string, headerLines: string[]) =>
  rawExchange(
    endpoint.socketPath,
    `GET http://${host}:${targets.httpPort}${path} HTTP/1.1\r\nHost: ${host}\r\n${headerLines.join("\r\n")}\r\nConnection: close\r\n\r\n`,
  ).then((b) => b.toString("latin1"));

describe("placeholderFor", () => {
  it("is stable, distinct per credential and per name, a URL/header token, and derived from no secret", () => {
    expect(KEY).toBe(placeholderFor("SERVICE_API_KEY", "cred_1"));
    expect(KEY).toMatch(/^cas-secret-SERVICE_API_KEY-[0-9a-f]{32}$/);
    expect(placeholderFor("SERVICE_API_KEY", "cred_9")).not.toBe(KEY);
    expect(placeholderFor("OTHER", "cred_1")).not.toBe(placeholderFor("OTHER_", "cred_1"));
    expect(encodeURIComponent(KEY)).toBe(KEY);
    expect(() => placeholderFor("1BAD", "cred_1")).toThrow(TypeError);
    expect(() => placeholderFor("BAD-NAME", "cred_1")).toThrow(TypeError);
    expect(() => placeholderFor("OK", "")).toThrow(TypeError);
  });
});

describe("plain HTTP", () => {
  it("the placeholder in a header, the path and the query reaches the allowed host as the secret", async () => {
    const a = await proxiedGet(
      endpoint.socketPath,
      `http://sub.test:${targets.httpPort}/v1/${KEY}/items?api_key=${KEY}&x=1`,
      { "X-Api-Key": KEY, Authorization: `Bearer ${KEY}` },
    );
    expect(a.status).toBe(200);
    const seen = last("sub.test");
    expect(seen.tls).toBe(false);
    expect(seen.url).toBe(`/v1/${KEY_VALUE}/items?api_key=${KEY_VALUE}&x=1`);
    expect(seen.headers["x-api-key"]).toBe(KEY_VALUE);
    expect(seen.headers.authorization).toBe(`Bearer ${KEY_VALUE}`);
    expect(JSON.stringify(seen)).not.toContain(KEY);
    // The target echoes the authorization in a response header: the sandbox gets the placeholder back, not the secret.
    expect(a.headers["x-echo-auth"]).toBe(`Bearer ${KEY}`);
    // Bodies are not rewritten: a server that echoes the request (here its URL) reveals the secret.
    expect(JSON.parse(a.body).url).toContain(KEY_VALUE);
    expect(log.list.at(-1)).toMatchObject({
      protocol: "http",
      host: "sub.test",
      decision: "allowed",
      substituted: true,
      credentialed: false,
    });
  });

  it("a host outside the substitution's hosts receives the placeholder unchanged", async () => {
    const a = await proxiedGet(endpoint.socketPath, `http://other.test:${targets.httpPort}/?k=${KEY}`, {
      "X-Api-Key": KEY,
    });
    expect(a.status).toBe(200);
    const seen = last("other.test");
    expect(seen.url).toBe(`/?k=${KEY}`);
    expect(seen.headers["x-api-key"]).toBe(KEY);
    expect(log.list.at(-1)).toMatchObject({ host: "other.test", decision: "allowed", substituted: false });
  });

  it("several substitutions in one request, each only towards its own hosts", async () => {
    await proxiedGet(endpoint.socketPath, `http://sub.test:${targets.httpPort}/?a=${KEY}&b=${TOKEN}`, {
      "X-Both": `${KEY}:${TOKEN}`,
      "X-Token": TOKEN,
    });
    const seen = last("sub.test");
    expect(seen.url).toBe(`/?a=${KEY_VALUE}&b=${TOKEN_VALUE}`);
    expect(seen.headers["x-both"]).toBe(`${KEY_VALUE}:${TOKEN_VALUE}`);
    expect(seen.headers["x-token"]).toBe(TOKEN_VALUE);
    // second.test is in TOKEN's hosts only.
    await proxiedGet(endpoint.socketPath, `http://second.test:${targets.httpPort}/?a=${KEY}&b=${TOKEN}`);
    expect(last("second.test").url).toBe(`/?a=${KEY}&b=${TOKEN_VALUE}`);
  });

  it("a placeholder repeated in a value and on repeated header lines is replaced everywhere; one split across lines is not a placeholder", async () => {
    const answer = await rawGet("sub.test", "/rep", [
      `X-Twice: ${KEY} and ${KEY}`,
      `X-Line: ${KEY}`,
      `X-Line: ${TOKEN}`,
      `X-Half-1: ${KEY.slice(0, 20)}`,
      `X-Half-2: ${KEY.slice(20)}`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    const raw = last("sub.test").rawHeaders;
    const values = (name: string) => raw.filter((_, i) => i % 2 === 1 && raw[i - 1] === name);
    expect(values("X-Twice")).toEqual([`${KEY_VALUE} and ${KEY_VALUE}`]);
    expect(values("X-Line")).toEqual([KEY_VALUE, TOKEN_VALUE]);
    expect(values("X-Half-1")).toEqual([KEY.slice(0, 20)]);
    expect(values("X-Half-2")).toEqual([KEY.slice(20)]);
  });

  it("a header folded over two lines (obs-fold) is refused as a bad request and reaches no one", async () => {
    const before = targets.seen.length;
    const answer = await rawGet("sub.test", "/fold", [`X-Folded: ${KEY.slice(0, 20)}`, ` ${KEY.slice(20)}`]);
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(targets.seen.length).toBe(before);
  });

  it("request bodies are not substituted: the placeholder reaches the host as sent", async () => {
    const a = await new Promise<number>((resolve, reject) => {
      const req = request({
        socketPath: endpoint.socketPath,
        method: "POST",
        path: `http://sub.test:${targets.httpPort}/form`,
        headers: { "content-type": "application/x-www-form-urlencoded" },
        agent: false,
      });
      req.on("response", (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      });
      req.on("error", reject);
      req.end(`key=${KEY}`);
    });
    expect(a).toBe(200);
    expect(last("sub.test").body).toBe(`key=${KEY}`);
  });

  it("the value is percent-encoded in the request target and sent as UTF-8 bytes in a header", async () => {
    const value = "a+b/c=d e%f&ü€";
    const p = placeholderFor("ODD", "cred_odd");
    endpoint.update(policy, [], [{ placeholder: p, value, hosts: ["sub.test"] }]);
    try {
      await proxiedGet(endpoint.socketPath, `http://sub.test:${targets.httpPort}/?v=${p}`, { "X-V": p });
      const seen = last("sub.test");
      expect(seen.url).toBe(`/?v=${encodeURIComponent(value)}`);
      expect(new URL(seen.url, "http://x").searchParams.get("v")).toBe(value);
      expect(Buffer.from(seen.headers["x-v"] as string, "latin1").toString("utf8")).toBe(value);
    } finally {
      endpoint.update(policy, [], subs);
    }
  });
});

describe("HTTPS", () => {
  it("a tunnel to a substitution host is intercepted: the client sees the proxy CA's certificate, the host gets the secret", async () => {
    const t = await connectThrough(endpoint.socketPath, `sub.test:${targets.httpsPort}`);
    expect(t.status).toBe(200);
    const tls = await tlsOver(t.socket!, "sub.test", serviceCa.certPem);
    expect(peerIssuer(tls)).toBe("service egress CA");
    const agent = agentOver(tls);
    const a = await requestOver(agent, "sub.test", `/v1/${KEY}?q=${TOKEN}`, {
      authorization: `Bearer ${KEY}`,
    });
    expect(a.status).toBe(200);
    const seen = last("sub.test");
    expect(seen.tls).toBe(true);
    expect(seen.url).toBe(`/v1/${KEY_VALUE}?q=${TOKEN_VALUE}`);
    expect(seen.headers.authorization).toBe(`Bearer ${KEY_VALUE}`);
    expect(a.headers["x-echo-auth"]).toBe(`Bearer ${KEY}`);
    expect(log.list.find((d) => d.protocol === "connect" && d.host === "sub.test")).toMatchObject({
      intercepted: true,
    });
    expect(log.list.at(-1)).toMatchObject({ protocol: "https", host: "sub.test", substituted: true });

    // update() swaps the value at once, also in a tunnel opened before.
    endpoint.update(policy, [], [{ placeholder: KEY, value: "sk-rotated-1234567", hosts: ["sub.test"] }]);
    try {
      await requestOver(agent, "sub.test", "/again", { "x-api-key": KEY });
      expect(last("sub.test").headers["x-api-key"]).toBe("sk-rotated-1234567");
    } finally {
      endpoint.update(policy, [], subs);
      agent.destroy();
    }
  });

  it("SOCKS5 to a substitution host is intercepted the same way", async () => {
    const name = Buffer.from("sub.test");
    const port = targets.httpsPort;
    const request = Buffer.concat([
      Buffer.from([5, 1, 0, 3, name.length]),
      name,
      Buffer.from([port >> 8, port & 255]),
    ]);
    const { code, socket } = await socks5(endpoint.socketPath, request);
    expect(code).toBe(0);
    const tls = await tlsOver(socket, "sub.test", serviceCa.certPem);
    await requestOver(tls, "sub.test", "/via-socks", { "x-api-key": KEY });
    expect(last("sub.test").headers["x-api-key"]).toBe(KEY_VALUE);
    tls.destroy();
  });

  it("a host no substitution names is not intercepted (its own certificate) and receives the placeholder", async () => {
    const t = await connectThrough(endpoint.socketPath, `other.test:${targets.httpsPort}`);
    const tls = await tlsOver(t.socket!, "other.test", targets.ca.certPem);
    expect(peerIssuer(tls)).toBe("upstream test CA");
    await requestOver(tls, "other.test", `/?k=${KEY}`, { "x-api-key": KEY });
    const seen = last("other.test");
    expect(seen.url).toBe(`/?k=${KEY}`);
    expect(seen.headers["x-api-key"]).toBe(KEY);
    expect(log.list.find((d) => d.protocol === "connect" && d.host === "other.test")).toMatchObject({
      intercepted: false,
    });
    tls.destroy();
  });
});

describe('hosts: "any"', () => {
  it("substitutes towards every host the allowlist allows and intercepts all their HTTPS", async () => {
    const e = await proxy.open({
      id: "any",
      socketPath: socketIn(tmp.dir),
      policy,
      substitutions: [{ placeholder: KEY, value: KEY_VALUE, hosts: "any" }],
    });
    try {
      await proxiedGet(e.socketPath, `http://other.test:${targets.httpPort}/?k=${KEY}`);
      expect(last("other.test").url).toBe(`/?k=${KEY_VALUE}`);
      for (const host of ["other.test", "second.test"]) {
        const t = await connectThrough(e.socketPath, `${host}:${targets.httpsPort}`);
        const tls = await tlsOver(t.socket!, host, serviceCa.certPem);
        expect(peerIssuer(tls)).toBe("service egress CA");
        await requestOver(tls, host, "/", { "x-api-key": KEY });
        expect(last(host)).toMatchObject({ tls: true, headers: { "x-api-key": KEY_VALUE } });
        tls.destroy();
      }
    } finally {
      await e.close();
    }
  });

  it("is refused with an allow-public policy (any public host would get the secret), on open and on update", async () => {
    const open = proxy.open({
      id: "any-public",
      socketPath: socketIn(tmp.dir),
      policy: { mode: "allow-public" },
      substitutions: [{ placeholder: KEY, value: KEY_VALUE, hosts: "any" }],
    });
    await expect(open).rejects.toThrow(/allowlist/);
    expect(() =>
      endpoint.update({ mode: "allow-public" }, [], [{ placeholder: KEY, value: KEY_VALUE, hosts: "any" }]),
    ).toThrow(/allowlist/);
    // Nothing changed: the endpoint still substitutes with its old settings.
    await proxiedGet(endpoint.socketPath, `http://sub.test:${targets.httpPort}/?k=${KEY}`);
    expect(last("sub.test").url).toBe(`/?k=${KEY_VALUE}`);
  });
});

describe("validation and secrecy", () => {
  it("bad substitutions are TypeErrors that never name the value; substitutions need the CA", async () => {
    const messages: string[] = [];
    const bad: unknown[] = [
      [{ placeholder: "short", value: "s3cr3t-value-xyz", hosts: ["sub.test"] }],
      [{ placeholder: KEY, value: "s3cr3t-value\nxyz", hosts: ["sub.test"] }],
      [{ placeholder: KEY, value: "s3cr3t-value\u0001xyz", hosts: ["sub.test"] }],
      [{ placeholder: KEY, value: "", hosts: ["sub.test"] }],
      [{ placeholder: KEY, value: "s3cr3t-value-xyz", hosts: [] }],
      [{ placeholder: KEY, value: "s3cr3t-value-xyz", hosts: ["bad host"] }],
      [
        { placeholder: KEY, value: "s3cr3t-value-xyz", hosts: ["sub.test"] },
        { placeholder: KEY, value: "s3cr3t-value-abc", hosts: ["sub.test"] },
      ],
      [
        { placeholder: KEY, value: "s3cr3t-value-xyz", hosts: ["sub.test"] },
        { placeholder: `${KEY}-2`, value: "s3cr3t-value-abc", hosts: ["sub.test"] },
      ],
    ];
    for (const b of bad) {
      try {
        endpoint.update(policy, [], b as EgressSubstitution[]);
        messages.push("accepted");
      } catch (e) {
        expect(e).toBeInstanceOf(TypeError);
        messages.push((e as Error).message);
      }
    }
    expect(messages).not.toContain("accepted");
    expect(messages.join("\n")).not.toContain("s3cr3t");

    const noCa = new EgressProxy({});
    await expect(
      noCa.open({
        id: "x",
        socketPath: socketIn(tmp.dir),
        policy,
        substitutions: [{ placeholder: KEY, value: KEY_VALUE, hosts: ["sub.test"] }],
      }),
    ).rejects.toThrow(/certificate authority/);
  });

  it("a request head that substitution would make larger than 4 × maxHeaderBytes is refused and sent nowhere", async () => {
    const long = "L".repeat(3_000);
    endpoint.update(policy, [], [{ placeholder: KEY, value: long, hosts: ["sub.test"] }]);
    try {
      const before = targets.seen.length;
      const a = await proxiedGet(endpoint.socketPath, `http://sub.test:${targets.httpPort}/`, {
        "X-Many": Array(22).fill(KEY).join(","), // 66 000 bytes of values from a 1.3 KB header
      });
      expect(a.status).toBe(400);
      expect(a.headers["x-egress-refused"]).toBe("bad_request");
      expect(a.body).not.toContain(long);
      expect(targets.seen.length).toBe(before);
      // Fewer go (the target's own limit is Node's default, 16 KiB).
      const b = await proxiedGet(endpoint.socketPath, `http://sub.test:${targets.httpPort}/`, {
        "X-Many": Array(4).fill(KEY).join(","),
      });
      expect(b.status).toBe(200);
      expect(last("sub.test").headers["x-many"]).toBe(Array(4).fill(long).join(","));
    } finally {
      endpoint.update(policy, [], subs);
    }
  });

  it("the values never appear in decisions or stats", () => {
    const all = JSON.stringify(log.list) + JSON.stringify(endpoint.stats());
    expect(log.list.filter((d) => d.substituted).length).toBeGreaterThan(3);
    for (const v of [KEY_VALUE, TOKEN_VALUE, "sk-rotated-1234567"]) expect(all).not.toContain(v);
  });
});
