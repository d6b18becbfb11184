/**
 * What the proxy costs, measured side by side in one run on this machine (not part of the library's API):
 * `node --expose-gc packages/egress/dist/bench.js [iterations]`. Targets listen on 127.0.0.2; names resolve through
 * a map; nothing leaves the machine.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, createServer, type RequestOptions, request } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { CertificateAuthority } from "./ca.js";
import { EgressProxy } from "./proxy.js";
import { placeholderFor } from "./substitutions.js";

const N = Number(process.argv[2] ?? 400);
const PLACEHOLDER = placeholderFor("BENCH_KEY", "bench");
const IP = "127.0.0.2";

const listen = (s: { listen: (p: number, h: string, cb: () => void) => unknown; address: () => unknown }) =>
  new Promise<number>((r) => s.listen(0, IP, () => r((s.address() as AddressInfo).port)));

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

async function timeEach(n: number, f: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(50, n); i++) await f(); // warm up
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f();
    times.push(performance.now() - t);
  }
  return median(times);
}

const get = (opts: RequestOptions) =>
  new Promise<void>((resolve, reject) => {
    const req = request(opts, (res) => {
      res.resume();
      res.on("end", resolve);
    });
    req.on("error", reject);
    req.end();
  });

const connectTunnel = (socketPath: string, authority: string) =>
  new Promise<Socket>((resolve, reject) => {
    const req = request({ socketPath, method: "CONNECT", path: authority, agent: false });
    req.on("connect", (res, socket) =>
      res.statusCode === 200 ? resolve(socket) : reject(new Error(String(res.statusCode))),
    );
    req.on("error", reject);
    req.end();
  });

const echoOnce = (s: Socket) =>
  new Promise<void>((resolve) => {
    s.once("data", () => resolve());
    s.write("x");
  });

function line(what: string, direct: number, proxied: number): void {
  const added = proxied - direct;
  console.log(
    `${what.padEnd(52)} direct ${direct.toFixed(3).padStart(7)} ms  proxied ${proxied.toFixed(3).padStart(7)} ms  ` +
      `added ${added.toFixed(3).padStart(7)} ms  ratio ${(proxied / direct).toFixed(2)}`,
  );
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "egress-bench-"));
  const http = createServer((_req, res) => res.end("ok"));
  const echo = createNetServer((s) => s.pipe(s));
  const upstreamCa = await CertificateAuthority.create({ commonName: "bench upstream" });
  const leaf = await upstreamCa.issue("api.bench");
  const https = createHttpsServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => res.end("ok"));
  const [httpPort, echoPort, httpsPort] = [await listen(http), await listen(echo), await listen(https)];
  const ca = await CertificateAuthority.create();
  const proxy = new EgressProxy({
    ca,
    upstreamCa: upstreamCa.certPem,
    resolve: async () => [{ address: IP, family: 4 }],
  });
  const policy = {
    mode: "allowlist" as const,
    allowed: ["web.bench", "api.bench"],
    ports: [httpPort, echoPort, httpsPort],
    allowPrivate: [`${IP}/32`],
  };
  const ep = await proxy.open({
    id: "bench",
    socketPath: join(dir, "e", "proxy.sock"),
    policy,
    credentials: [{ hosts: ["api.bench"], headers: { Authorization: "Bearer bench-secret" } }],
    substitutions: [{ placeholder: PLACEHOLDER, value: "bench-substituted-secret", hosts: ["api.bench"] }],
  });
  console.log(
    `egress bench: ${N} sequential iterations each, median per iteration (node ${process.version})`,
  );

  const keep = new Agent({ keepAlive: true, maxSockets: 1 });
  const keepProxy = new Agent({ keepAlive: true, maxSockets: 1 });
  line(
    "HTTP GET, keep-alive",
    await timeEach(N, () => get({ host: IP, port: httpPort, path: "/", agent: keep })),
    await timeEach(N, () =>
      get({ socketPath: ep.socketPath, path: `http://web.bench:${httpPort}/`, agent: keepProxy }),
    ),
  );
  line(
    "HTTP GET, new connection each",
    await timeEach(N, () => get({ host: IP, port: httpPort, path: "/", agent: false })),
    await timeEach(N, () =>
      get({ socketPath: ep.socketPath, path: `http://web.bench:${httpPort}/`, agent: false }),
    ),
  );
  line(
    "TCP connect / CONNECT tunnel set up",
    await timeEach(N, async () => {
      const s = await new Promise<Socket>((r) => {
        const c = connect(echoPort, IP, () => r(c));
      });
      s.destroy();
    }),
    await timeEach(N, async () => (await connectTunnel(ep.socketPath, `web.bench:${echoPort}`)).destroy()),
  );
  const direct = await new Promise<Socket>((r) => {
    const c = connect(echoPort, IP, () => r(c));
  });
  const tunnel = await connectTunnel(ep.socketPath, `web.bench:${echoPort}`);
  line(
    "1-byte round trip in an open tunnel",
    await timeEach(N * 5, () => echoOnce(direct)),
    await timeEach(N * 5, () => echoOnce(tunnel)),
  );
  const bulk = Buffer.alloc(64 * 1024 * 1024);
  const stream = (s: Socket) =>
    new Promise<void>((resolve) => {
      let got = 0;
      const onData = (c: Buffer) => {
        got += c.length;
        if (got >= bulk.length) {
          s.off("data", onData);
          resolve();
        }
      };
      s.on("data", onData);
      s.write(bulk);
    });
  line(
    "64 MiB echoed through an open tunnel",
    await timeEach(3, () => stream(direct)),
    await timeEach(3, () => stream(tunnel)),
  );
  direct.destroy();
  tunnel.destroy();

  // HTTPS: direct (client trusts the upstream) vs intercepted (credential injected, TLS terminated and re-originated).
  const directTls = tlsConnect({
    host: IP,
    port: httpsPort,
    servername: "api.bench",
    ca: upstreamCa.certPem,
  });
  await new Promise((r) => directTls.once("secureConnect", r));
  const viaTls = tlsConnect({
    socket: await connectTunnel(ep.socketPath, `api.bench:${httpsPort}`),
    servername: "api.bench",
    ca: ca.certPem,
  });
  await new Promise((r) => viaTls.once("secureConnect", r));
  const over = (s: Socket) => {
    const a = new Agent({ keepAlive: true, maxSockets: 1 });
    a.createConnection = () => s;
    return a;
  };
  const [da, va] = [over(directTls), over(viaTls)];
  line(
    "HTTPS GET keep-alive, intercepted (credential)",
    await timeEach(N, () => get({ agent: da, path: "/", headers: { host: "api.bench" } })),
    await timeEach(N, () => get({ agent: va, path: "/", headers: { host: "api.bench" } })),
  );
  // The same with the secret by placeholder: in the query and a header (direct: the real value, for the same bytes).
  const withKey = (key: string) => ({
    path: `/?key=${key}`,
    headers: { host: "api.bench", "x-api-key": key },
  });
  line(
    "HTTPS GET keep-alive, intercepted (+2 placeholders)",
    await timeEach(N, () => get({ agent: da, ...withKey("bench-substituted-secret") })),
    await timeEach(N, () => get({ agent: va, ...withKey(PLACEHOLDER) })),
  );
  da.destroy();
  va.destroy();
  keep.destroy();
  keepProxy.destroy();

  // Memory per idle endpoint.
  const gc = (globalThis as { gc?: () => void }).gc;
  const settle = () => {
    gc?.();
    gc?.();
    return process.memoryUsage();
  };
  const M = 200;
  const before = settle();
  const idle = [];
  for (let i = 0; i < M; i++)
    idle.push(await proxy.open({ id: `idle-${i}`, socketPath: join(dir, `i${i}`, "p.sock"), policy }));
  const after = settle();
  console.log(
    `memory per idle endpoint (${M} opened${gc ? "" : ", no --expose-gc: rough"}): ` +
      `heap ${((after.heapUsed - before.heapUsed) / M / 1024).toFixed(1)} KiB, ` +
      `rss ${((after.rss - before.rss) / M / 1024).toFixed(1)} KiB`,
  );
  await proxy.close();
  for (const s of [http, echo, https]) s.close();
  rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
