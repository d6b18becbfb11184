// The outbound guard (platform/net/outbound-guard.ts) on its own: which addresses are public (IPv4 inside IPv6 judged by the
// IPv4 address), URLs as written, names resolved when a URL is checked, and the requests the service sends itself
// (the OAuth token refresh, through the guard's fetch) checked on the address they connect to — a name that
// rebinds to a private address between the check and the connection is refused. Names are resolved by a stand-in
// (nothing leaves this machine), except this machine's own names.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/load.js";
import { OAuthRefreshError, refreshAccessToken } from "../../../src/domain/vaults/oauth.js";
import {
  nonPublic,
  OutboundGuard,
  type Resolve,
  TargetRefused,
} from "../../../src/platform/net/outbound-guard.js";

/** A resolver answering from a script: the n-th call gets the n-th answer (the last one after that). */
function scriptedResolver(...answers: Array<string[] | Error>): Resolve & { calls: string[] } {
  const calls: string[] = [];
  const r = ((host: string, cb: Parameters<Resolve>[1]) => {
    const answer = answers[Math.min(calls.length, answers.length - 1)]!;
    calls.push(host);
    if (answer instanceof Error) return cb(answer as NodeJS.ErrnoException, []);
    cb(
      null,
      answer.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })),
    );
  }) as Resolve & { calls: string[] };
  r.calls = calls;
  return r;
}

const strict = new OutboundGuard({ allowPrivate: false });
const open = new OutboundGuard({ allowPrivate: true });

/** Every form of a non-public address the guard must refuse (the issue's, and more). */
const REFUSED_ADDRESSES: Array<[string, RegExp]> = [
  ["127.0.0.1", /loopback/],
  ["127.1.2.3", /loopback/],
  ["0.0.0.0", /unspecified/],
  ["0.1.2.3", /unspecified/],
  ["10.0.0.1", /private/],
  ["172.16.0.1", /private/],
  ["172.31.255.255", /private/],
  ["192.168.0.1", /private/],
  ["100.64.0.1", /shared \(carrier-grade NAT\)/],
  ["169.254.169.254", /link-local/],
  ["192.0.0.8", /reserved/],
  ["192.0.2.1", /reserved/],
  ["198.18.0.1", /reserved/],
  ["203.0.113.9", /reserved/],
  ["240.0.0.1", /reserved/],
  ["224.0.0.1", /multicast/],
  ["255.255.255.255", /broadcast/],
  ["::", /unspecified/],
  ["::1", /loopback/],
  ["fc00::1", /unique local/],
  ["fd12:3456::1", /unique local/],
  ["fe80::1", /link-local/],
  ["fec0::1", /site-local/],
  ["ff02::1", /multicast/],
  ["2001:db8::1", /reserved/],
  ["100::1", /discard/],
  ["4000::1", /outside the global unicast space/],
  // IPv4 inside IPv6: judged by the IPv4 address.
  ["::ffff:127.0.0.1", /carries 127\.0\.0\.1 \(IPv4-mapped\), a loopback/],
  ["::ffff:7f00:1", /carries 127\.0\.0\.1 \(IPv4-mapped\)/],
  ["::ffff:a9fe:a9fe", /carries 169\.254\.169\.254 \(IPv4-mapped\), a link-local/],
  ["::7f00:1", /carries 127\.0\.0\.1 \(IPv4-compatible\), a loopback/],
  ["::a00:1", /carries 10\.0\.0\.1 \(IPv4-compatible\), a private/],
  ["::ffff:0:7f00:1", /carries 127\.0\.0\.1 \(IPv4-translated\), a loopback/],
  ["64:ff9b::10.0.0.1", /carries 10\.0\.0\.1 \(NAT64\), a private/],
  ["64:ff9b::7f00:1", /carries 127\.0\.0\.1 \(NAT64\)/],
  ["64:ff9b:1::808:808", /local-use NAT64/],
  ["2002:c0a8:0101::1", /carries 192\.168\.1\.1 \(6to4\), a private/],
  ["2002:7f00:1::1", /carries 127\.0\.0\.1 \(6to4\)/],
  // Teredo: the server (bits 32-63) and the client (the last 32 bits, inverted) are both judged.
  ["2001:0:7f00:1::1", /carries 127\.0\.0\.1 \(Teredo\)/],
  ["2001:0:808:808::f5ff:fffe", /carries 10\.0\.0\.1 \(Teredo\), a private/],
];

const PUBLIC_ADDRESSES = [
  "93.184.216.34",
  "8.8.8.8",
  "172.32.0.1",
  "100.128.0.1",
  "2606:4700::1111",
  "::ffff:8.8.8.8",
  "::ffff:0:808:808",
  "64:ff9b::8.8.8.8",
  "2002:808:808::1",
  "2001:0:808:808::f7f7:f7f7",
];

describe("addresses", () => {
  it("refuses every non-public address, IPv4 inside IPv6 included, unless private targets are allowed", () => {
    for (const [ip, why] of REFUSED_ADDRESSES) {
      expect(nonPublic(ip), ip).toMatch(why);
      expect(strict.refusedAddress(ip), ip).toMatch(why);
      expect(open.refusedAddress(ip), ip).toBeNull();
    }
  });

  it("allows public addresses, also when an IPv6 form carries a public IPv4 address", () => {
    for (const ip of PUBLIC_ADDRESSES) expect(strict.refusedAddress(ip), ip).toBeNull();
    expect(nonPublic("not-an-address")).toMatch(/not an IP address/);
  });
});

describe("URLs as written", () => {
  /** Every form of a non-public host a client can write in a URL (the WHATWG parser normalises the odd ones). */
  const refused: Array<[string, RegExp]> = [
    ["https://[::7f00:1]:8443/", /127\.0\.0\.1 \(IPv4-compatible\), a loopback/],
    ["https://[::ffff:0:7f00:1]:8443/", /127\.0\.0\.1 \(IPv4-translated\), a loopback/],
    ["http://[::1]/", /::1 is a loopback/],
    ["http://0.0.0.0/", /0\.0\.0\.0 is an unspecified/],
    ["http://0/", /0\.0\.0\.0 is an unspecified/],
    ["http://2130706433/", /127\.0\.0\.1 is a loopback/],
    ["http://0x7f.1/", /127\.0\.0\.1 is a loopback/],
    ["http://017700000001/", /127\.0\.0\.1 is a loopback/],
    ["http://127.1/", /127\.0\.0\.1 is a loopback/],
    ["http://[::ffff:127.0.0.1]/", /127\.0\.0\.1 \(IPv4-mapped\), a loopback/],
    ["http://[0:0:0:0:0:ffff:7f00:1]/", /IPv4-mapped/],
    ["http://169.254.169.254/latest/meta-data", /link-local/],
    ["http://10.0.0.1/", /private/],
    ["http://100.64.0.1/", /carrier-grade NAT/],
    ["http://[fc00::1]/", /unique local/],
    ["http://[fe80::1]/", /link-local/],
    ["http://localhost/", /localhost is a loopback name/],
    ["http://LOCALHOST:9/", /localhost is a loopback name/],
    ["http://localhost./", /localhost is a loopback name/],
    ["http://api.localhost/", /api\.localhost is a loopback name/],
  ];

  it("refuses address literals and loopback names, naming the operator's flag", () => {
    for (const [url, why] of refused) {
      let err: unknown;
      try {
        strict.checkHost(new URL(url));
      } catch (e) {
        err = e;
      }
      expect(err, url).toBeInstanceOf(TargetRefused);
      expect((err as Error).message, url).toMatch(why);
      expect((err as Error).message, url).toMatch(
        /unless its operator allows it \(--allow-private-targets\)/,
      );
      expect(() => open.checkHost(new URL(url)), url).not.toThrow();
    }
    for (const url of [
      "https://hooks.example.com/x",
      "https://93.184.216.34/",
      "http://[2606:4700::1111]/",
    ]) {
      expect(() => strict.checkHost(new URL(url)), url).not.toThrow();
    }
  });
});

describe("names are resolved when a URL is checked", () => {
  it("a name is refused when any address it resolves to is (a mixed answer too); a public one passes", async () => {
    for (const answer of [["127.0.0.1"], ["93.184.216.34", "10.0.0.7"], ["::1"], ["::ffff:7f00:1"]]) {
      const guard = new OutboundGuard({ allowPrivate: false, resolve: scriptedResolver(answer) });
      await expect(
        guard.checkResolved(new URL("https://hooks.example.test/x")),
        answer.join(),
      ).rejects.toThrow(/hooks\.example\.test resolves to .*(loopback|private).*--allow-private-targets/);
    }
    const resolve = scriptedResolver(["93.184.216.34", "2606:4700::1111"]);
    await new OutboundGuard({ allowPrivate: false, resolve }).checkResolved(
      new URL("https://hooks.example.test/"),
    );
    expect(resolve.calls).toEqual(["hooks.example.test"]);
    // Private targets allowed: nothing to refuse, nothing resolved.
    const unused = scriptedResolver(["127.0.0.1"]);
    await new OutboundGuard({ allowPrivate: true, resolve: unused }).checkResolved(
      new URL("https://x.test/"),
    );
    expect(unused.calls).toEqual([]);
  });

  it("a name that does not resolve (or not in time) is refused", async () => {
    const missing = Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" });
    const none = new OutboundGuard({ allowPrivate: false, resolve: scriptedResolver(missing) });
    await expect(none.checkResolved(new URL("https://nowhere.test/"))).rejects.toThrow(
      /nowhere\.test could not be resolved \(ENOTFOUND\)/,
    );
    const empty = new OutboundGuard({ allowPrivate: false, resolve: scriptedResolver([]) });
    await expect(empty.checkResolved(new URL("https://empty.test/"))).rejects.toThrow(/did not resolve/);
    const hanging = new OutboundGuard({ allowPrivate: false, resolve: () => {}, resolveTimeoutMs: 50 });
    await expect(hanging.checkResolved(new URL("https://slow.test/"))).rejects.toThrow(
      /slow\.test did not resolve within 0\.05 s/,
    );
  });

  it("this machine's own name (the system resolver, /etc/hosts) is refused: it resolves to a loopback or private address", async () => {
    await expect(strict.checkResolved(new URL(`https://${hostname()}:8443/`))).rejects.toThrow(
      /resolves to .*(loopback|private)/,
    );
  });
});

describe("requests the service sends itself: checked on the address connected to", () => {
  let server: Server;
  let port: number;
  const seen: Array<{ host: string | undefined; body: string }> = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (d) => {
        body += d;
      });
      req.on("end", () => {
        seen.push({ host: req.headers.host, body });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ access_token: "fresh-token", expires_in: 60 }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const refreshVia = (guard: OutboundGuard, endpoint: string) =>
    refreshAccessToken(
      {
        token_endpoint: endpoint,
        client_id: "c",
        auth: "none",
        client_secret: null,
        refresh_token: "r",
        resource: null,
        scope: null,
      },
      1000,
      (url, init) => guard.fetch(url, init),
    );

  it("the connection goes to the address the name resolved to (checked), one resolution per connection", async () => {
    // Private targets allowed here, so that a name can lead to this machine's test endpoint.
    const resolve = scriptedResolver(["127.0.0.1"]);
    const guard = new OutboundGuard({ allowPrivate: true, resolve });
    const before = seen.length;
    const t = await refreshVia(guard, `http://tokens.example.test:${port}/token`);
    expect(t).toMatchObject({ access_token: "fresh-token", expires_at: 1060 });
    await refreshVia(guard, `http://tokens.example.test:${port}/token`);
    expect(seen.slice(before).map((s) => s.host)).toEqual([
      `tokens.example.test:${port}`,
      `tokens.example.test:${port}`,
    ]);
    // No connection kept alive: each request resolved (and checked) the name again.
    expect(resolve.calls).toEqual(["tokens.example.test", "tokens.example.test"]);
  });

  it("DNS rebinding: public when checked at registration, loopback when connecting: refused, nothing sent", async () => {
    const resolve = scriptedResolver(["93.184.216.34"], ["127.0.0.1"]);
    const guard = new OutboundGuard({ allowPrivate: false, resolve });
    const endpoint = `http://tokens.example.test:${port}/token`;
    await guard.checkResolved(new URL(endpoint)); // what registration checks: passes
    const before = seen.length;
    const err = await refreshVia(guard, endpoint).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OAuthRefreshError);
    expect((err as Error).message).toMatch(
      /could not be reached: tokens\.example\.test resolves to 127\.0\.0\.1, a loopback address/,
    );
    expect(resolve.calls).toHaveLength(2);
    expect(seen.length).toBe(before);
  });

  it("an address literal is refused before any connection (the metadata address, a loopback in IPv6 form)", async () => {
    const resolve = scriptedResolver(["93.184.216.34"]);
    const guard = new OutboundGuard({ allowPrivate: false, resolve });
    for (const endpoint of [
      "https://169.254.169.254/token",
      `http://[::ffff:127.0.0.1]:${port}/token`,
      `http://[::7f00:1]:${port}/token`,
    ]) {
      await expect(refreshVia(guard, endpoint), endpoint).rejects.toThrow(
        /could not be reached: .*non-public/,
      );
    }
    expect(resolve.calls).toEqual([]);
  });

  it("a redirect is not followed", async () => {
    const target = createServer((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${port}/elsewhere` });
      res.end();
    });
    await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
    try {
      const before = seen.length;
      const p = (target.address() as AddressInfo).port;
      await expect(refreshVia(open, `http://127.0.0.1:${p}/token`)).rejects.toThrow(/could not be reached/);
      expect(seen.length).toBe(before);
    } finally {
      target.closeAllConnections();
      await new Promise<void>((r) => target.close(() => r()));
    }
  });
});

describe("the operator's flag", () => {
  it("--allow-private-targets (or AGENT_ALLOW_PRIVATE_TARGETS=1), and the former webhook flag as its alias", () => {
    expect(loadConfig(["--data-dir", "/tmp/unused"], {}).allowPrivateTargets).toBe(false);
    expect(loadConfig(["--data-dir", "/tmp/unused", "--allow-private-targets"], {}).allowPrivateTargets).toBe(
      true,
    );
    expect(loadConfig(["--data-dir", "/tmp/unused", "--webhook-allow-private"], {}).allowPrivateTargets).toBe(
      true,
    );
    for (const env of [{ AGENT_ALLOW_PRIVATE_TARGETS: "1" }, { AGENT_WEBHOOK_ALLOW_PRIVATE: "1" }]) {
      expect(loadConfig(["--data-dir", "/tmp/unused"], env).allowPrivateTargets).toBe(true);
    }
  });
});
