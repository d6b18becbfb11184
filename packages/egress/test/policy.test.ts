// The egress proxy's policy over real sockets: a sandbox's requests (plain HTTP and CONNECT) reach allowed names
// and nothing else. Targets run on 127.0.0.2 (the one non-public address the policy lets through, `allowPrivate`),
// a canary on 127.0.0.1 that no request may reach; names resolve through a map, nothing leaves this machine.
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EgressEndpoint, type EgressPolicy, EgressProxy } from "../src/index.js";
import {
  Canary,
  connectThrough,
  decisionLog,
  mapResolver,
  peerIssuer,
  proxiedGet,
  requestOver,
  socketIn,
  TARGET_IP,
  Targets,
  tempDir,
  tlsOver,
  waitFor,
} from "./helpers.js";

let targets: Targets;
let canary: Canary;
let service: Canary;
let proxy: EgressProxy;
let endpoint: EgressEndpoint;
let policy: EgressPolicy;
const tmp = tempDir();
const log = decisionLog();

/** Names the resolver knows, each pointing where a test needs it. */
const NAMES: Record<string, string[]> = {};

beforeAll(async () => {
  targets = await Targets.start(["allowed.test", "a.wild.test", "other.test"]);
  canary = await Canary.start();
  service = await Canary.start(TARGET_IP);
  Object.assign(NAMES, {
    "allowed.test": [TARGET_IP],
    "other.test": [TARGET_IP],
    "a.wild.test": [TARGET_IP],
    "x.y.wild.test": [TARGET_IP],
    "wild.test": [TARGET_IP],
    "blocked.wild.test": [TARGET_IP],
    "unlisted.test": [TARGET_IP],
    "service.test": [TARGET_IP],
    "nowhere.test": [],
    // Allowed names whose DNS answer is not public: all refused.
    "loopback.test": ["127.0.0.1"],
    "loopback2.test": ["127.0.0.3"],
    "metadata.test": ["169.254.169.254"],
    "mapped.test": ["::ffff:127.0.0.1"],
    "mapped-hex.test": ["::ffff:7f00:1"],
    "mapped-metadata.test": ["::ffff:a9fe:a9fe"],
    "compat.test": ["::7f00:1"],
    "nat64.test": ["64:ff9b::7f00:1"],
    "sixtofour.test": ["2002:7f00:1::1"],
    "private10.test": ["10.0.0.1"],
    "private192.test": ["192.168.1.1"],
    "cgnat.test": ["100.64.0.1"],
    "ula.test": ["fd00::1"],
    "v6loopback.test": ["::1"],
    "v6linklocal.test": ["fe80::1"],
    "unspecified.test": ["0.0.0.0"],
    "multicast.test": ["224.0.0.1"],
    "reserved.test": ["240.0.0.1"],
    "mixed.test": [TARGET_IP, "10.0.0.1"],
  });
  const ports = [targets.httpPort, targets.httpsPort, canary.port, service.port];
  const privateNames = Object.keys(NAMES).filter((n) => !n.endsWith("wild.test") && n !== "unlisted.test");
  policy = {
    mode: "allowlist",
    allowed: [...privateNames, "*.wild.test", "localhost"],
    blocked: ["blocked.wild.test"],
    ports,
    allowPrivate: [`${TARGET_IP}/32`],
  };
  proxy = new EgressProxy({
    resolve: mapResolver(NAMES),
    serviceAddresses: [`${TARGET_IP}:${service.port}`],
    onDecision: log.hook,
  });
  endpoint = await proxy.open({ id: "sandbox-1", socketPath: socketIn(tmp.dir), policy });
});

afterAll(async () => {
  await proxy?.close();
  await targets?.close();
  await canary?.close();
  await service?.close();
  tmp.cleanup();
});

const url = (host: string, path = "/x") => `http://${host}:${targets.httpPort}${path}`;

describe("allowed names", () => {
  it("a plain HTTP request to an allowed name reaches it, at the address the proxy resolved", async () => {
    const before = targets.to("allowed.test").length;
    const a = await proxiedGet(endpoint.socketPath, url("allowed.test", "/hello?q=1"), {
      "proxy-authorization": "x",
    });
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toMatchObject({ host: `allowed.test:${targets.httpPort}`, url: "/hello?q=1" });
    const seen = targets.to("allowed.test");
    expect(seen.length).toBe(before + 1);
    expect(seen.at(-1)!.headers["proxy-authorization"]).toBeUndefined();
    expect(log.list.at(-1)).toMatchObject({
      endpoint: "sandbox-1",
      protocol: "http",
      host: "allowed.test",
      port: targets.httpPort,
      decision: "allowed",
      address: TARGET_IP,
      status: 200,
      credentialed: false,
    });
  });

  it("a CONNECT tunnel to an allowed name carries the upstream's own TLS (not intercepted)", async () => {
    const t = await connectThrough(endpoint.socketPath, `allowed.test:${targets.httpsPort}`);
    expect(t.status).toBe(200);
    // The client trusts only the upstream's CA: the handshake succeeds only with the upstream's own certificate.
    const tls = await tlsOver(t.socket!, "allowed.test", targets.ca.certPem);
    expect(peerIssuer(tls)).toBe("upstream test CA");
    const a = await requestOver(tls, "allowed.test", "/secure");
    expect(JSON.parse(a.body)).toMatchObject({ tls: true, url: "/secure" });
    tls.destroy();
    expect(log.list.find((d) => d.protocol === "connect" && d.host === "allowed.test")).toMatchObject({
      decision: "allowed",
      intercepted: false,
      address: TARGET_IP,
    });
  });

  it("wildcards match names under the domain at any depth, not the domain itself", async () => {
    expect((await proxiedGet(endpoint.socketPath, url("a.wild.test"))).status).toBe(200);
    expect((await proxiedGet(endpoint.socketPath, url("x.y.wild.test"))).status).toBe(200);
    const apex = await proxiedGet(endpoint.socketPath, url("wild.test"));
    expect(apex.status).toBe(403);
    expect(apex.headers["x-egress-refused"]).toBe("not_allowed");
  });

  it("names are compared case-insensitively and without a trailing dot", async () => {
    expect((await proxiedGet(endpoint.socketPath, url("ALLOWED.Test."))).status).toBe(200);
  });
});

describe("refusals by name", () => {
  it("an unlisted name is refused with 403, a reason header and a JSON body naming it, before any resolution", async () => {
    const resolver = mapResolver(NAMES);
    const p = new EgressProxy({ resolve: resolver });
    const e = await p.open({ id: "s", socketPath: socketIn(tmp.dir), policy });
    try {
      const a = await proxiedGet(e.socketPath, url("unlisted.test"));
      expect(a.status).toBe(403);
      expect(a.headers["x-egress-refused"]).toBe("not_allowed");
      expect(JSON.parse(a.body)).toEqual({
        error: {
          type: "egress_refused",
          reason: "not_allowed",
          host: "unlisted.test",
          port: targets.httpPort,
          message: expect.stringContaining("unlisted.test"),
        },
      });
      const c = await connectThrough(e.socketPath, `unlisted.test:${targets.httpsPort}`);
      expect(c.status).toBe(403);
      expect(c.answer!.headers["x-egress-refused"]).toBe("not_allowed");
      expect(resolver.calls.get("unlisted.test")).toBeUndefined();
    } finally {
      await p.close();
    }
  });

  it("blocked wins over allowed (a blocked name under an allowed wildcard)", async () => {
    const a = await proxiedGet(endpoint.socketPath, url("blocked.wild.test"));
    expect(a.status).toBe(403);
    expect(a.headers["x-egress-refused"]).toBe("blocked");
    const c = await connectThrough(endpoint.socketPath, `blocked.wild.test:${targets.httpsPort}`);
    expect(c.answer!.headers["x-egress-refused"]).toBe("blocked");
  });

  it("ports outside the policy's list are refused; the default list is 80 and 443", async () => {
    const a = await proxiedGet(endpoint.socketPath, "http://allowed.test:8081/");
    expect(a.headers["x-egress-refused"]).toBe("port_not_allowed");
    const p = new EgressProxy({ resolve: mapResolver(NAMES) });
    const e = await p.open({
      id: "d",
      socketPath: socketIn(tmp.dir),
      policy: { mode: "allowlist", allowed: ["allowed.test"], allowPrivate: [`${TARGET_IP}/32`] },
    });
    try {
      const c = await connectThrough(e.socketPath, `allowed.test:${targets.httpsPort}`);
      expect(c.answer!.headers["x-egress-refused"]).toBe("port_not_allowed");
      // Port 443 passes the policy (and then fails upstream: nothing listens there).
      const c443 = await connectThrough(e.socketPath, "allowed.test:443");
      expect(c443.answer!.headers["x-egress-refused"]).toBe("upstream_failed");
      expect(c443.status).toBe(502);
    } finally {
      await p.close();
    }
  });

  it("an allowed name that does not resolve is refused (resolve_failed)", async () => {
    const a = await proxiedGet(endpoint.socketPath, url("nowhere.test"));
    expect(a.status).toBe(403);
    expect(a.headers["x-egress-refused"]).toBe("resolve_failed");
  });
});

describe("non-public addresses, whatever the DNS says", () => {
  const PRIVATE = [
    "loopback.test",
    "loopback2.test",
    "metadata.test",
    "mapped.test",
    "mapped-hex.test",
    "mapped-metadata.test",
    "compat.test",
    "nat64.test",
    "sixtofour.test",
    "private10.test",
    "private192.test",
    "cgnat.test",
    "ula.test",
    "v6loopback.test",
    "v6linklocal.test",
    "unspecified.test",
    "multicast.test",
    "reserved.test",
    "mixed.test",
  ];

  it("an allowed name resolving to loopback, link-local (metadata), private, IPv4-in-IPv6 … is refused; nothing reaches the canary", async () => {
    for (const name of PRIVATE) {
      const a = await proxiedGet(endpoint.socketPath, `http://${name}:${canary.port}/latest/meta-data`);
      expect(a.status, name).toBe(403);
      expect(a.headers["x-egress-refused"], name).toBe("private_address");
      expect(JSON.parse(a.body).error.message, name).toMatch(
        new RegExp(`^${name.replace(".", "\\.")} resolves to`),
      );
      const c = await connectThrough(endpoint.socketPath, `${name}:${canary.port}`);
      expect(c.status, name).toBe(403);
      expect(c.answer!.headers["x-egress-refused"], name).toBe("private_address");
    }
    expect(
      JSON.parse((await proxiedGet(endpoint.socketPath, url("metadata.test"))).body).error.message,
    ).toMatch(/169\.254\.169\.254, a link-local address/);
    expect(
      JSON.parse((await proxiedGet(endpoint.socketPath, url("mapped.test"))).body).error.message,
    ).toMatch(/carries 127\.0\.0\.1 \(IPv4-mapped\), a loopback/);
    expect(canary.connections).toBe(0);
  });

  it("localhost is refused as written", async () => {
    const a = await proxiedGet(endpoint.socketPath, `http://localhost:${canary.port}/`);
    expect(a.headers["x-egress-refused"]).toBe("private_address");
    expect(canary.connections).toBe(0);
  });

  it("IP-literal targets are refused (every spelling), even the address the policy lets through", async () => {
    for (const host of [
      TARGET_IP,
      "127.0.0.1",
      "2130706433",
      "0x7f.1",
      "127.1",
      "[::ffff:7f00:2]",
      "[::1]",
      "169.254.169.254",
    ]) {
      const a = await proxiedGet(endpoint.socketPath, `http://${host}:${targets.httpPort}/`);
      expect(a.status, host).toBe(403);
      expect(a.headers["x-egress-refused"], host).toBe("ip_literal");
      const c = await connectThrough(endpoint.socketPath, `${host}:${targets.httpsPort}`);
      expect(c.answer!.headers["x-egress-refused"], host).toBe("ip_literal");
    }
    expect(canary.connections).toBe(0);
  });

  it("an IP literal listed in the allowlist is reached, still under the address check", async () => {
    const p = new EgressProxy({ resolve: mapResolver(NAMES) });
    const e = await p.open({
      id: "ip",
      socketPath: socketIn(tmp.dir),
      policy: {
        mode: "allowlist",
        allowed: [TARGET_IP, "127.0.0.1"],
        ports: [targets.httpPort, canary.port],
        allowPrivate: [`${TARGET_IP}/32`],
      },
    });
    try {
      expect((await proxiedGet(e.socketPath, `http://${TARGET_IP}:${targets.httpPort}/`)).status).toBe(200);
      const lo = await proxiedGet(e.socketPath, `http://127.0.0.1:${canary.port}/`);
      expect(lo.headers["x-egress-refused"]).toBe("private_address");
      expect(canary.connections).toBe(0);
    } finally {
      await p.close();
    }
  });

  it("the service's own address is refused, even where private addresses are allowed", async () => {
    const a = await proxiedGet(endpoint.socketPath, `http://service.test:${service.port}/`);
    expect(a.headers["x-egress-refused"]).toBe("service_address");
    // `0.0.0.0:port` (a service on every address) covers every local address, with allowPrivate: true.
    const p = new EgressProxy({ resolve: mapResolver(NAMES), serviceAddresses: [`0.0.0.0:${service.port}`] });
    const e = await p.open({
      id: "svc",
      socketPath: socketIn(tmp.dir),
      policy: { mode: "allow-public", ports: [service.port, targets.httpPort], allowPrivate: true },
    });
    try {
      for (const name of ["service.test", "loopback.test", "mapped.test", "unspecified.test"]) {
        const r = await proxiedGet(e.socketPath, `http://${name}:${service.port}/`);
        expect(r.headers["x-egress-refused"], name).toBe("service_address");
      }
      // Another port of the same address is not the service's.
      expect((await proxiedGet(e.socketPath, url("allowed.test"))).status).toBe(200);
    } finally {
      await p.close();
    }
    expect(service.connections).toBe(0);
  });

  it("one resolution per request, and the connection goes to the address checked (DNS rebinding)", async () => {
    // The first answer is the allowed address, every later one the canary's: a second lookup would reach it.
    let calls = 0;
    const rebinding = async () => {
      calls++;
      return [{ address: calls === 1 ? TARGET_IP : "127.0.0.1", family: 4 }];
    };
    const p = new EgressProxy({ resolve: rebinding });
    const e = await p.open({
      id: "rebind",
      socketPath: socketIn(tmp.dir),
      policy: {
        mode: "allowlist",
        allowed: ["rebind.test"],
        ports: [targets.httpPort],
        allowPrivate: [`${TARGET_IP}/32`],
      },
    });
    try {
      const a = await proxiedGet(e.socketPath, `http://rebind.test:${targets.httpPort}/`);
      expect(a.status).toBe(200);
      expect(calls).toBe(1);
      const b = await proxiedGet(e.socketPath, `http://rebind.test:${targets.httpPort}/`);
      expect(b.headers["x-egress-refused"]).toBe("private_address");
      expect(calls).toBe(2);
      expect(canary.connections).toBe(0);
    } finally {
      await p.close();
    }
  });

  it("allow-public: any name with public addresses only; IP literals refused unless allowed", async () => {
    const p = new EgressProxy({ resolve: mapResolver(NAMES) });
    const e = await p.open({
      id: "pub",
      socketPath: socketIn(tmp.dir),
      policy: { mode: "allow-public", ports: [canary.port] },
    });
    try {
      expect(
        (await proxiedGet(e.socketPath, `http://unlisted.test:${canary.port}/`)).headers["x-egress-refused"],
      ).toBe("private_address");
      expect(
        (await proxiedGet(e.socketPath, `http://127.0.0.1:${canary.port}/`)).headers["x-egress-refused"],
      ).toBe("ip_literal");
      e.update({ mode: "allow-public", ports: [canary.port], allowIpLiterals: true });
      expect(
        (await proxiedGet(e.socketPath, `http://127.0.0.1:${canary.port}/`)).headers["x-egress-refused"],
      ).toBe("private_address");
      expect(canary.connections).toBe(0);
    } finally {
      await p.close();
    }
  });
});

describe("updates and closing", () => {
  it("an update takes effect for the next request and ends open tunnels the new policy refuses", async () => {
    const p = new EgressProxy({ resolve: mapResolver(NAMES) });
    const e = await p.open({ id: "upd", socketPath: socketIn(tmp.dir), policy });
    try {
      expect((await proxiedGet(e.socketPath, url("other.test"))).status).toBe(200);
      const kept = await connectThrough(e.socketPath, `allowed.test:${targets.httpsPort}`);
      const cut = await connectThrough(e.socketPath, `other.test:${targets.httpsPort}`);
      let cutClosed = false;
      let keptClosed = false;
      cut.socket!.on("close", () => {
        cutClosed = true;
      });
      kept.socket!.on("close", () => {
        keptClosed = true;
      });
      e.update({ ...policy, mode: "allowlist", allowed: ["allowed.test"] } as EgressPolicy);
      const a = await proxiedGet(e.socketPath, url("other.test"));
      expect(a.headers["x-egress-refused"]).toBe("not_allowed");
      await waitFor("the refused tunnel to end", () => cutClosed);
      const tls = await tlsOver(kept.socket!, "allowed.test", targets.ca.certPem);
      expect((await requestOver(tls, "allowed.test")).status).toBe(200);
      expect(keptClosed).toBe(false);
      tls.destroy();
      // A bad update changes nothing.
      expect(() => e.update({ mode: "allowlist", allowed: ["bad host/x"] })).toThrow(TypeError);
      expect((await proxiedGet(e.socketPath, url("allowed.test"))).status).toBe(200);
    } finally {
      await p.close();
    }
  });

  it("closing an endpoint removes its socket and ends its tunnels", async () => {
    const p = new EgressProxy({ resolve: mapResolver(NAMES) });
    const e = await p.open({ id: "close", socketPath: socketIn(tmp.dir), policy });
    const t = await connectThrough(e.socketPath, `allowed.test:${targets.httpsPort}`);
    let closed = false;
    t.socket!.on("close", () => {
      closed = true;
    });
    expect(existsSync(e.socketPath)).toBe(true);
    await e.close();
    expect(existsSync(e.socketPath)).toBe(false);
    await waitFor("the tunnel to end", () => closed);
    await expect(proxiedGet(e.socketPath, url("allowed.test"))).rejects.toMatchObject({ code: "ENOENT" });
    expect(p.endpoints()).toEqual([]);
    // The id and path can be used again.
    const again = await p.open({ id: "close", socketPath: e.socketPath, policy });
    expect((await proxiedGet(again.socketPath, url("allowed.test"))).status).toBe(200);
    await p.close();
  });

  it("stats count allowed and refused requests by reason, and bytes", async () => {
    const s = endpoint.stats();
    expect(s.allowed).toBeGreaterThan(3);
    expect(s.refused.private_address).toBeGreaterThan(10);
    expect(s.refused.ip_literal).toBeGreaterThan(3);
    expect(s.refused.blocked).toBe(2);
    expect(s.bytes.fromSandbox).toBeGreaterThan(1000);
    expect(s.bytes.toSandbox).toBeGreaterThan(1000);
    expect(s.connections.total).toBeGreaterThan(10);
  });
});
