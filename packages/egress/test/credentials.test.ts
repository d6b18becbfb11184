// Credential injection over real sockets: the headers reach the credentialed host only (plain HTTP directly, HTTPS
// by TLS interception with a leaf from the service's CA and TLS re-originated to the real host, verified), the
// sandbox never sees the secret, and hosts without credentials are tunnelled untouched.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CertificateAuthority, type EgressEndpoint, type EgressPolicy, EgressProxy } from "../src/index.js";
import {
  agentOver,
  connectThrough,
  decisionLog,
  mapResolver,
  peerIssuer,
  proxiedGet,
  requestOver,
  socketIn,
  socks5,
  TARGET_IP,
  Targets,
  tempDir,
  tlsOver,
} from "./helpers.js";

const SECRET = "Bearer s3cret-token-0123456789";
let targets: Targets;
let serviceCa: CertificateAuthority;
let proxy: EgressProxy;
let endpoint: EgressEndpoint;
let policy: EgressPolicy;
const tmp = tempDir();
const log = decisionLog();

beforeAll(async () => {
  targets = await Targets.start(["secret.test", "plain.test", "front.test"]);
  serviceCa = await CertificateAuthority.create({ commonName: "service egress CA" });
  policy = {
    mode: "allowlist",
    allowed: ["secret.test", "plain.test", "front.test"],
    ports: [targets.httpPort, targets.httpsPort],
    allowPrivate: [`${TARGET_IP}/32`],
  };
  proxy = new EgressProxy({
    ca: serviceCa,
    upstreamCa: targets.ca.certPem,
    resolve: mapResolver({
      "secret.test": [TARGET_IP],
      "plain.test": [TARGET_IP],
      "front.test": [TARGET_IP],
    }),
    onDecision: log.hook,
  });
  endpoint = await proxy.open({
    id: "cred",
    socketPath: socketIn(tmp.dir),
    policy,
    credentials: [{ hosts: ["secret.test"], headers: { Authorization: SECRET, "X-Api-Key": "key-abcdef" } }],
  });
});

afterAll(async () => {
  await proxy?.close();
  await targets?.close();
  tmp.cleanup();
});

describe("plain HTTP", () => {
  it("the credential's headers reach the credentialed host, replacing the client's own; the client never sees them", async () => {
    const a = await proxiedGet(endpoint.socketPath, `http://secret.test:${targets.httpPort}/api`, {
      Authorization: "Bearer from-the-sandbox",
      "x-api-key": "sandbox-key",
    });
    expect(a.status).toBe(200);
    const seen = targets.to("secret.test").at(-1)!;
    expect(seen.headers.authorization).toBe(SECRET);
    expect(seen.headers["x-api-key"]).toBe("key-abcdef");
    expect(seen.tls).toBe(false);
    // The upstream echoed the header back (x-echo-auth): dropped before the client.
    expect(JSON.parse(a.body)).toMatchObject({ hasAuth: true });
    expect(JSON.stringify(a.headers)).not.toContain("s3cret");
    expect(a.headers["x-echo-auth"]).toBeUndefined();
    expect(log.list.at(-1)).toMatchObject({ protocol: "http", host: "secret.test", credentialed: true });
  });

  it("other hosts get no credential", async () => {
    const a = await proxiedGet(endpoint.socketPath, `http://plain.test:${targets.httpPort}/`, {
      Authorization: "mine",
    });
    expect(a.status).toBe(200);
    expect(targets.to("plain.test").at(-1)!.headers.authorization).toBe("mine");
  });
});

describe("HTTPS", () => {
  it("a tunnel to a credentialed host is intercepted: the client trusts only the service CA, the upstream gets the header", async () => {
    const handshakes = targets.handshakes;
    const t = await connectThrough(endpoint.socketPath, `secret.test:${targets.httpsPort}`);
    expect(t.status).toBe(200);
    const tls = await tlsOver(t.socket!, "secret.test", serviceCa.certPem);
    expect(peerIssuer(tls)).toBe("service egress CA");
    expect(tls.alpnProtocol).toBe("http/1.1");
    const agent = agentOver(tls);
    const a = await requestOver(agent, "secret.test", "/v1/thing", { authorization: "Bearer sandbox" });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toMatchObject({ tls: true, hasAuth: true, url: "/v1/thing" });
    expect(JSON.stringify(a.headers)).not.toContain("s3cret");
    // Keep-alive: a second request on the same tunnel.
    const b = await requestOver(agent, "secret.test", "/v1/again");
    expect(b.status).toBe(200);
    const seen = targets.to("secret.test").filter((r) => r.tls);
    expect(seen.map((r) => r.url)).toEqual(["/v1/thing", "/v1/again"]);
    expect(seen.every((r) => r.headers.authorization === SECRET)).toBe(true);
    // The proxy re-originated TLS to the real server (verified against the upstream's CA).
    expect(targets.handshakes).toBeGreaterThan(handshakes);
    agent.destroy();
    expect(log.list.find((d) => d.protocol === "connect" && d.host === "secret.test")).toMatchObject({
      intercepted: true,
    });
    expect(log.list.filter((d) => d.protocol === "https" && d.credentialed).length).toBe(2);
  });

  it("SOCKS5 to a credentialed host is intercepted the same way", async () => {
    const name = Buffer.from("secret.test");
    const port = targets.httpsPort;
    const request = Buffer.concat([
      Buffer.from([5, 1, 0, 3, name.length]),
      name,
      Buffer.from([port >> 8, port & 255]),
    ]);
    const { code, socket } = await socks5(endpoint.socketPath, request);
    expect(code).toBe(0);
    const tls = await tlsOver(socket, "secret.test", serviceCa.certPem);
    const a = await requestOver(tls, "secret.test", "/via-socks");
    expect(JSON.parse(a.body)).toMatchObject({ tls: true, hasAuth: true });
    expect(targets.to("secret.test").at(-1)!.headers.authorization).toBe(SECRET);
    tls.destroy();
  });

  it("a client that trusts only the real server's CA fails against an intercepted host (it is the proxy's certificate)", async () => {
    const t = await connectThrough(endpoint.socketPath, `secret.test:${targets.httpsPort}`);
    await expect(tlsOver(t.socket!, "secret.test", targets.ca.certPem)).rejects.toThrow();
  });

  it("a host without credentials is tunnelled untouched: the client sees the upstream's own certificate", async () => {
    const t = await connectThrough(endpoint.socketPath, `plain.test:${targets.httpsPort}`);
    const tls = await tlsOver(t.socket!, "plain.test", targets.ca.certPem);
    expect(peerIssuer(tls)).toBe("upstream test CA");
    const a = await requestOver(tls, "plain.test", "/", { authorization: "mine" });
    expect(a.status).toBe(200);
    expect(targets.to("plain.test").at(-1)!.headers.authorization).toBe("mine");
    tls.destroy();
  });

  it("a request in an intercepted tunnel naming another host is refused (host_mismatch), and never sent", async () => {
    const before = targets.seen.length;
    const t = await connectThrough(endpoint.socketPath, `secret.test:${targets.httpsPort}`);
    const tls = await tlsOver(t.socket!, "secret.test", serviceCa.certPem);
    const a = await requestOver(tls, "front.test", "/steal");
    expect(a.status).toBe(403);
    expect(a.headers["x-egress-refused"]).toBe("host_mismatch");
    expect(targets.seen.length).toBe(before);
    tls.destroy();
  });

  it("a ClientHello naming another host than the tunnel's is refused (sni_mismatch) before it reaches the upstream", async () => {
    const handshakes = targets.handshakes;
    const t = await connectThrough(endpoint.socketPath, `plain.test:${targets.httpsPort}`);
    await expect(tlsOver(t.socket!, "front.test", targets.ca.certPem)).rejects.toThrow();
    expect(targets.handshakes).toBe(handshakes);
    expect(log.list.at(-1)).toMatchObject({
      protocol: "connect",
      host: "plain.test",
      reason: "sni_mismatch",
    });
  });

  it("an upstream whose certificate does not verify gets 502 upstream_certificate", async () => {
    // This proxy verifies upstreams against the system store, which does not know the test servers' CA.
    const p = new EgressProxy({ ca: serviceCa, resolve: mapResolver({ "secret.test": [TARGET_IP] }) });
    const e = await p.open({
      id: "strict",
      socketPath: socketIn(tmp.dir),
      policy,
      credentials: [{ hosts: ["secret.test"], headers: { Authorization: SECRET } }],
    });
    try {
      const before = targets.to("secret.test").length;
      const t = await connectThrough(e.socketPath, `secret.test:${targets.httpsPort}`);
      const tls = await tlsOver(t.socket!, "secret.test", serviceCa.certPem);
      const a = await requestOver(tls, "secret.test", "/");
      expect(a.status).toBe(502);
      expect(a.headers["x-egress-refused"]).toBe("upstream_certificate");
      expect(targets.to("secret.test").length).toBe(before);
      tls.destroy();
    } finally {
      await p.close();
    }
  });

  it("credentials update at once; a credential needs the CA; secrets never appear in decisions or errors", async () => {
    endpoint.update(policy, [
      { hosts: ["plain.test"], headers: { Authorization: "Bearer rotated-secret-value" } },
    ]);
    await proxiedGet(endpoint.socketPath, `http://plain.test:${targets.httpPort}/`);
    expect(targets.to("plain.test").at(-1)!.headers.authorization).toBe("Bearer rotated-secret-value");
    await proxiedGet(endpoint.socketPath, `http://secret.test:${targets.httpPort}/`);
    expect(targets.to("secret.test").at(-1)!.headers.authorization).toBeUndefined();

    const noCa = new EgressProxy({});
    await expect(
      noCa.open({
        id: "x",
        socketPath: socketIn(tmp.dir),
        policy,
        credentials: [{ hosts: ["a.test"], headers: { A: "bbbb" } }],
      }),
    ).rejects.toThrow(/certificate authority/);
    let message = "";
    try {
      endpoint.update(policy, [
        { hosts: ["a.test"], headers: { Authorization: "Bearer line\nbreak-secret" } },
      ]);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/single-line/);
    expect(message).not.toContain("break-secret");
    expect(() => endpoint.update(policy, [{ hosts: ["a.test"], headers: { Host: "x" } }])).toThrow(
      /cannot be injected/,
    );
    const all = JSON.stringify(log.list) + JSON.stringify(endpoint.stats());
    expect(all).not.toContain("s3cret");
    expect(all).not.toContain("rotated-secret");
    expect(all).not.toContain("key-abcdef");
  });
});
