// The endpoint's socket and limits: SOCKS5 under the same policy, garbage answered with 400 (the proxy stays up),
// the connection cap, and who may connect to the socket (its owner and mode, checked with a process running as
// uid 1000, the agent's uid in a container).
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from "node:net";
import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EgressEndpoint, type EgressPolicy, EgressProxy } from "../src/index.js";
import {
  Canary,
  connectThrough,
  decisionLog,
  mapResolver,
  proxiedGet,
  rawExchange,
  socketIn,
  socks5,
  TARGET_IP,
  Targets,
  tempDir,
  waitFor,
} from "./helpers.js";

let targets: Targets;
let canary: Canary;
let proxy: EgressProxy;
let endpoint: EgressEndpoint;
let policy: EgressPolicy;
const tmp = tempDir();
const log = decisionLog();

beforeAll(async () => {
  targets = await Targets.start(["allowed.test"]);
  canary = await Canary.start();
  policy = {
    mode: "allowlist",
    allowed: ["allowed.test", "loopback.test"],
    ports: [targets.httpPort, canary.port],
    allowPrivate: [`${TARGET_IP}/32`],
  };
  proxy = new EgressProxy({
    resolve: mapResolver({ "allowed.test": [TARGET_IP], "loopback.test": ["127.0.0.1"] }),
    onDecision: log.hook,
    limits: { maxConnections: 3, maxHeaderBytes: 4096 },
  });
  endpoint = await proxy.open({ id: "lim", socketPath: socketIn(tmp.dir), policy });
});

afterAll(async () => {
  await proxy?.close();
  await targets?.close();
  await canary?.close();
  tmp.cleanup();
});

const byName = (name: string, port: number, command = 1) =>
  Buffer.concat([
    Buffer.from([5, command, 0, 3, name.length]),
    Buffer.from(name),
    Buffer.from([port >> 8, port & 255]),
  ]);

describe("SOCKS5", () => {
  it("CONNECT by name to an allowed host carries any TCP (here HTTP)", async () => {
    const { code, socket } = await socks5(endpoint.socketPath, byName("allowed.test", targets.httpPort));
    expect(code).toBe(0);
    const answer = await new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (c) => {
        text += c;
      });
      socket.on("end", () => resolve(text));
      socket.write(`GET /via-socks HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n`);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain('"url":"/via-socks"');
    expect(log.list.find((d) => d.protocol === "socks5" && d.decision === "allowed")).toMatchObject({
      host: "allowed.test",
      address: TARGET_IP,
    });
  });

  it("the same policy: unlisted names, private answers and IP literals are refused with 'not allowed by ruleset'", async () => {
    const ipv4 = Buffer.from([5, 1, 0, 1, 127, 0, 0, 2, targets.httpPort >> 8, targets.httpPort & 255]);
    const ipv6 = Buffer.concat([
      Buffer.from([5, 1, 0, 4]),
      Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1]),
      Buffer.from([canary.port >> 8, canary.port & 255]),
    ]);
    const cases: Array<[Buffer, string]> = [
      [byName("unlisted.test", targets.httpPort), "not_allowed"],
      [byName("loopback.test", canary.port), "private_address"],
      [ipv4, "ip_literal"],
      [ipv6, "ip_literal"],
      [byName("127.1", targets.httpPort), "ip_literal"],
      [byName("allowed.test", 22), "port_not_allowed"],
    ];
    for (const [request, reason] of cases) {
      const { code, socket } = await socks5(endpoint.socketPath, request);
      expect(code, reason).toBe(0x02);
      socket.destroy();
      expect(log.list.at(-1), reason).toMatchObject({ protocol: "socks5", decision: "refused", reason });
    }
    expect(canary.connections).toBe(0);
  });

  it("commands other than CONNECT and authentication-only clients are refused", async () => {
    const bind = await socks5(endpoint.socketPath, byName("allowed.test", targets.httpPort, 2));
    expect(bind.code).toBe(0x07);
    const auth = await rawExchange(endpoint.socketPath, Buffer.from([5, 1, 2]));
    expect([...auth]).toEqual([5, 0xff]);
  });
});

describe("bad input and limits", () => {
  it("garbage gets 400 and the proxy stays up", async () => {
    for (const garbage of [
      "NOT HTTP AT ALL\r\n\r\n",
      "\x16\x03\x01\x00\x05hello\r\n\r\n",
      "GET / HTTP/1.1\r\n\r\n",
    ]) {
      const answer = (await rawExchange(endpoint.socketPath, garbage)).toString();
      expect(answer, JSON.stringify(garbage)).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain("x-egress-refused: bad_request");
    }
    const connectBad = (
      await rawExchange(endpoint.socketPath, "CONNECT nonsense HTTP/1.1\r\n\r\n")
    ).toString();
    expect(connectBad).toMatch(/^HTTP\/1\.1 400 /);
    const https = (
      await rawExchange(endpoint.socketPath, "GET https://allowed.test/ HTTP/1.1\r\nHost: x\r\n\r\n")
    ).toString();
    expect(https).toMatch(/^HTTP\/1\.1 400 /);
    const big = (
      await rawExchange(
        endpoint.socketPath,
        `GET http://allowed.test/ HTTP/1.1\r\nX: ${"a".repeat(8000)}\r\n\r\n`,
      )
    ).toString();
    expect(big).toMatch(/^HTTP\/1\.1 431 /);
    expect((await proxiedGet(endpoint.socketPath, `http://allowed.test:${targets.httpPort}/`)).status).toBe(
      200,
    );
  });

  it("connections beyond the cap get 503 too_many_connections; a freed slot is usable again", async () => {
    await waitFor("earlier connections to close", () => endpoint.stats().connections.open === 0);
    const held: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      held.push(
        await new Promise<Socket>((resolve) => {
          const s = connect(endpoint.socketPath, () => resolve(s));
        }),
      );
    }
    await waitFor("three open connections", () => endpoint.stats().connections.open === 3);
    const refused = (
      await rawExchange(endpoint.socketPath, "GET http://allowed.test/ HTTP/1.1\r\nHost: a\r\n\r\n")
    ).toString();
    expect(refused).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused).toContain("too_many_connections");
    held.pop()!.destroy();
    await waitFor("a freed slot", () => endpoint.stats().connections.open === 2);
    expect((await proxiedGet(endpoint.socketPath, `http://allowed.test:${targets.httpPort}/`)).status).toBe(
      200,
    );
    for (const s of held) s.destroy();
    expect(endpoint.stats().refused.too_many_connections).toBe(1);
  });

  it("a tunnel whose client ends before sending anything is closed at once, upstream too", async () => {
    await waitFor("earlier connections to close", () => endpoint.stats().connections.open === 0);
    const upstreamClosed = new Promise<void>((resolve) => {
      const echo = createNetServer((s) => s.on("close", () => resolve()));
      echo.listen(0, TARGET_IP, async () => {
        const port = (echo.address() as AddressInfo).port;
        endpoint.update({ ...policy, ports: [port] } as EgressPolicy);
        const t = await connectThrough(endpoint.socketPath, `allowed.test:${port}`);
        expect(t.status).toBe(200);
        t.socket!.end();
      });
    });
    await upstreamClosed;
    await waitFor("the tunnel's connection to close", () => endpoint.stats().connections.open === 0);
    endpoint.update(policy);
  });

  it("a client that sends nothing is disconnected after the handshake timeout", async () => {
    const p = new EgressProxy({ limits: { handshakeTimeoutMs: 200 } });
    const e = await p.open({ id: "idle", socketPath: socketIn(tmp.dir), policy });
    try {
      const closed = await new Promise<boolean>((resolve) => {
        const s = connect(e.socketPath);
        s.on("close", () => resolve(true));
      });
      expect(closed).toBe(true);
    } finally {
      await p.close();
    }
  });
});

/** Tries to connect to a unix socket as another user (a separate process); "ok" or the error code. */
function connectAs(uid: number, gid: number, path: string): string {
  const script = `const s=require("net").connect(${JSON.stringify(path)});s.on("connect",()=>{console.log("ok");s.destroy()});s.on("error",e=>console.log(e.code))`;
  const r = spawnSync(process.execPath, ["-e", script], {
    uid,
    gid,
    encoding: "utf8",
    timeout: 10_000,
    cwd: "/",
  });
  return r.stdout.trim() || r.stderr.trim();
}

describe("the socket file", () => {
  it("is 0600 by default in a created 0711 directory: another user cannot connect", async () => {
    const e = await proxy.open({ id: "perm-default", socketPath: socketIn(tmp.dir), policy });
    try {
      expect(statSync(e.socketPath).mode & 0o777).toBe(0o600);
      expect(statSync(dirname(e.socketPath)).mode & 0o777).toBe(0o711);
      expect(connectAs(1000, 1000, e.socketPath)).toBe("EACCES");
    } finally {
      await e.close();
    }
  });

  it("access {uid: 1000, gid: 1000}: the agent's uid can connect; the directory is root:1000 0710 and removed on close", async () => {
    // The temp root must be traversable for the other user (its own mode is 0700).
    chmodSync(tmp.dir, 0o711);
    const e = await proxy.open({
      id: "perm-1000",
      socketPath: socketIn(tmp.dir),
      policy,
      access: { uid: 1000, gid: 1000 },
    });
    const dir = dirname(e.socketPath);
    const sock = statSync(e.socketPath);
    expect([sock.uid, sock.gid, sock.mode & 0o777]).toEqual([1000, 1000, 0o600]);
    const d = statSync(dir);
    expect([d.gid, d.mode & 0o777]).toEqual([1000, 0o710]);
    expect(connectAs(1000, 1000, e.socketPath)).toBe("ok");
    expect(connectAs(1001, 1001, e.socketPath)).toBe("EACCES");
    await e.close();
    expect(() => statSync(dir)).toThrow();
  });

  it("a stale socket at the path is replaced; any other file is not", async () => {
    const path = socketIn(tmp.dir);
    const first = await proxy.open({ id: "stale-1", socketPath: path, policy });
    // Simulates a crash: the listener goes, the socket file stays.
    await new Promise<void>((r) =>
      (first as unknown as { net: { close(cb: () => void): void } }).net.close(() => r()),
    );
    const p2 = new EgressProxy({ resolve: mapResolver({ "allowed.test": [TARGET_IP] }) });
    const second = await p2.open({ id: "stale-2", socketPath: path, policy });
    expect((await proxiedGet(path, `http://allowed.test:${targets.httpPort}/`)).status).toBe(200);
    await second.close();
    await p2.close();
    const file = socketIn(tmp.dir);
    mkdirSync(dirname(file));
    writeFileSync(file, "not a socket");
    await expect(proxy.open({ id: "file", socketPath: file, policy })).rejects.toThrow(/not a socket/);
  });
});
