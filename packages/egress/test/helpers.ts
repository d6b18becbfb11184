// Test harness for the egress proxy: target servers on this machine (HTTP and HTTPS with their own test CA, on
// 127.0.0.2, the address the tests' policies let through), a canary on 127.0.0.1 that must never be reached, a
// resolver answering from a map (nothing is resolved for real), and clients that talk to an endpoint's socket.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import {
  Agent,
  createServer as createHttpServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import {
  type AddressInfo,
  connect,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecureContext, type PeerCertificate, type TLSSocket, connect as tlsConnect } from "node:tls";
import { CertificateAuthority, type EgressDecision, type Resolver } from "../src/index.js";

/** Where the tests' targets listen; policies let exactly this non-public address through (`allowPrivate`). */
export const TARGET_IP = "127.0.0.2";
/** Where the canary listens: a loopback address no policy lets through. */
export const CANARY_IP = "127.0.0.1";

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The header lines as received (names and values alternating). */
  rawHeaders: string[];
  tls: boolean;
  /** The request body (complete once the response is sent). */
  body: string;
}

/** An HTTP and an HTTPS server on 127.0.0.2 that record what reaches them and echo it back (minus credentials). */
export class Targets {
  readonly seen: SeenRequest[] = [];
  /** TLS handshakes the HTTPS server completed. */
  handshakes = 0;
  /** TCP connections the HTTPS server accepted. */
  httpsConnections = 0;
  httpPort = 0;
  httpsPort = 0;
  private servers: Server[] = [];

  private constructor(readonly ca: CertificateAuthority) {}

  static async start(names: string[]): Promise<Targets> {
    const ca = await CertificateAuthority.create({ commonName: "upstream test CA" });
    const t = new Targets(ca);
    const contexts = new Map<string, ReturnType<typeof createSecureContext>>();
    for (const n of names) {
      const leaf = await ca.issue(n);
      contexts.set(n, createSecureContext({ cert: leaf.certPem, key: leaf.keyPem }));
    }
    const first = contexts.values().next().value!;
    const handler = (tls: boolean) => (req: IncomingMessage, res: import("node:http").ServerResponse) => {
      const seen: SeenRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        tls,
        body: "",
      };
      t.seen.push(seen);
      const auth = req.headers.authorization;
      // Echoes the authorization in a header (the proxy must drop it) and says in the body whether one came.
      if (auth) res.setHeader("x-echo-auth", auth);
      res.setHeader("content-type", "application/json");
      req.setEncoding("utf8");
      req.on("data", (c: string) => {
        seen.body += c;
      });
      req.on("end", () =>
        res.end(JSON.stringify({ host: req.headers.host, url: req.url, tls, hasAuth: !!auth })),
      );
    };
    const http = createHttpServer(handler(false));
    const https = createHttpsServer(
      { SNICallback: (n, cb) => cb(null, contexts.get(n) ?? first) },
      handler(true),
    );
    https.on("connection", () => t.httpsConnections++);
    https.on("secureConnection", () => t.handshakes++);
    t.servers = [http, https];
    t.httpPort = await listen(http, TARGET_IP);
    t.httpsPort = await listen(https, TARGET_IP);
    return t;
  }

  /** The requests that arrived with this Host name. */
  to(host: string): SeenRequest[] {
    return this.seen.filter((r) => r.headers.host?.replace(/:\d+$/, "") === host);
  }

  async close(): Promise<void> {
    for (const s of this.servers) s.closeAllConnections?.();
    await Promise.all(this.servers.map((s) => new Promise((r) => s.close(r))));
  }
}

export const listen = (s: Server | NetServer, host: string): Promise<number> =>
  new Promise((resolve, reject) => {
    s.once("error", reject);
    s.listen(0, host, () => resolve((s.address() as AddressInfo).port));
  });

/** A TCP server that counts the connections it gets: what must never be reached. */
export class Canary {
  connections = 0;
  port = 0;
  private readonly server = createNetServer((s) => {
    this.connections++;
    s.destroy();
  });
  static async start(host = CANARY_IP, port = 0): Promise<Canary> {
    const c = new Canary();
    c.port = await new Promise<number>((resolve, reject) => {
      c.server.once("error", reject);
      c.server.listen(port, host, () => resolve((c.server.address() as AddressInfo).port));
    });
    return c;
  }
  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** A resolver answering from a map, counting the calls per name. */
export function mapResolver(map: Record<string, string[]>): Resolver & { calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const resolve: Resolver = async (name) => {
    calls.set(name, (calls.get(name) ?? 0) + 1);
    const answer = map[name];
    if (!answer) throw Object.assign(new Error(`no such name ${name}`), { code: "ENOTFOUND" });
    return answer.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "egress-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A short socket path (unix socket paths are limited to ~100 bytes). */
export const socketIn = (dir: string, name = "proxy.sock") =>
  join(dir, `${randomBytes(3).toString("hex")}`, name);

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

const collect = (res: IncomingMessage): Promise<Answer> =>
  new Promise((resolve, reject) => {
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (c: string) => {
      body += c;
    });
    res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    res.on("error", reject);
  });

/** A plain proxied request: `GET http://…` sent to the endpoint's socket. */
export function proxiedGet(
  socketPath: string,
  url: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method: "GET", path: url, headers, agent: false });
    req.on("response", (res) => collect(res).then(resolve, reject));
    req.on("error", reject);
    req.end();
  });
}

/** Sends a CONNECT; resolves with the tunnel socket (status 200) or the refusal. */
export function connectThrough(
  socketPath: string,
  authority: string,
): Promise<{ status: number; socket?: Socket; answer?: Answer }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method: "CONNECT", path: authority, agent: false });
    req.on("connect", (res, socket) => {
      if (res.statusCode === 200) resolve({ status: 200, socket });
      else collect(res).then((answer) => resolve({ status: res.statusCode ?? 0, answer }), reject);
    });
    req.on("response", (res) =>
      collect(res).then((answer) => resolve({ status: res.statusCode ?? 0, answer }), reject),
    );
    req.on("error", reject);
    req.end();
  });
}

/** TLS over a tunnel, trusting only `ca`. */
export function tlsOver(socket: Socket, servername: string, ca: string): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const t = tlsConnect({ socket, servername, ca, ALPNProtocols: ["h2", "http/1.1"] }, () => resolve(t));
    t.on("error", reject);
  });
}

/** An agent that keeps one established (TLS) connection alive for several requests. */
export function agentOver(conn: Socket): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  agent.createConnection = () => conn;
  return agent;
}

/** One HTTP/1.1 request over an established (TLS) connection (or an agent holding one). */
export function requestOver(
  conn: Socket | Agent,
  host: string,
  path = "/",
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const how = conn instanceof Agent ? { agent: conn } : { createConnection: () => conn };
    // (Without an agent `createConnection` is used, and the connection closes after the response.)
    const req = request({ ...how, host, path, headers: { host, ...headers } });
    req.on("response", (res) => collect(res).then(resolve, reject));
    req.on("error", reject);
    req.end();
  });
}

export const peerIssuer = (t: TLSSocket): string => {
  const c: PeerCertificate = t.getPeerCertificate();
  return String(c.issuer?.CN);
};

/** Raw bytes to the socket; resolves with everything it answered until it closed. */
export function rawExchange(
  socketPath: string,
  bytes: Buffer | string,
  opts: { endAfterWrite?: boolean } = {},
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = connect(socketPath, () => {
      s.write(bytes);
      if (opts.endAfterWrite) s.end();
    });
    const chunks: Buffer[] = [];
    s.on("data", (c) => chunks.push(c));
    s.on("close", () => resolve(Buffer.concat(chunks)));
    s.on("error", reject);
  });
}

/** Waits for a condition (no fixed sleeps). */
export async function waitFor(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Collects decisions. */
export function decisionLog(): { list: EgressDecision[]; hook: (d: EgressDecision) => void } {
  const list: EgressDecision[] = [];
  return { list, hook: (d) => list.push(d) };
}

/** A SOCKS5 CONNECT: the greeting, the request; resolves with the reply code and the open socket. */
export function socks5(
  socketPath: string,
  request: Buffer,
): Promise<{ method: number; code: number | null; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const s = connect(socketPath, () => s.write(Buffer.from([5, 1, 0])));
    let buf = Buffer.alloc(0);
    let sent = false;
    s.on("data", (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (!sent && buf.length >= 2) {
        sent = true;
        if (buf[1] !== 0) return resolve({ method: buf[1]!, code: null, socket: s });
        s.write(request);
      }
      if (buf.length >= 12) {
        s.removeAllListeners("data");
        resolve({ method: buf[1]!, code: buf[3]!, socket: s });
      }
    });
    s.on("error", reject);
    s.on("close", () => resolve({ method: buf[1] ?? -1, code: buf.length >= 4 ? buf[3]! : null, socket: s }));
  });
}
