/**
 * A tunnel once the proxy has connected upstream and told the client so (CONNECT 200 or the SOCKS5 success reply).
 * What the client sends first decides the rest:
 * - TLS to a credentialed host or one a substitution applies to: the proxy terminates TLS with a leaf certificate for
 *   that host, reads the requests (innerServer), injects the credential headers, replaces the placeholders and
 *   re-originates TLS to the real host, verifying it;
 * - other TLS: the ClientHello's server name must be the tunnel's host (when it names one), then bytes are copied;
 * - anything else (or the server speaking first): bytes are copied untouched.
 */
import { Agent, type ClientRequestArgs, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { Duplex } from "node:stream";
import { type SecureContext, TLSSocket, connect as tlsConnect } from "node:tls";
import { looksLikeTls, MAX_CLIENT_HELLO, parseClientHello } from "./client-hello.js";
import type { EgressProtocol, EndpointContext } from "./context.js";
import { forward, hostHeaderMatches, refuseRequest } from "./forward.js";
import { BadTarget, parseHost, type TargetHost } from "./hosts.js";

export interface TunnelTarget {
  target: TargetHost;
  port: number;
  address: string;
  protocol: EgressProtocol;
}

/** The connections of one intercepted tunnel: the already-connected socket first, new ones to the same address after. */
class PinnedTlsAgent extends Agent {
  private first: Socket | null;

  constructor(
    first: Socket,
    private readonly t: TunnelTarget,
    private readonly ca: string[] | undefined,
  ) {
    super({ keepAlive: true, maxSockets: 1 });
    this.first = first;
  }

  override createConnection(_options: ClientRequestArgs): Duplex {
    const socket = this.first;
    this.first = null;
    const servername = this.t.target.kind === "name" ? this.t.target.host : undefined;
    const common = { servername, ca: this.ca, ALPNProtocols: ["http/1.1"] };
    return socket
      ? tlsConnect({ ...common, socket, host: this.t.target.host })
      : tlsConnect({ ...common, host: this.t.address, port: this.t.port });
  }

  override destroy(): void {
    this.first?.destroy();
    this.first = null;
    super.destroy();
  }
}

/** What a decrypted connection of an intercepted tunnel leads to. */
const intercepted = new WeakMap<object, { t: TunnelTarget; agent: PinnedTlsAgent }>();

/** A request read from an intercepted tunnel (innerServer's request handler). */
export function handleIntercepted(ctx: EndpointContext, req: IncomingMessage, res: ServerResponse): void {
  const route = intercepted.get(req.socket);
  if (!route) {
    res.destroy();
    return;
  }
  const { t, agent } = route;
  const base = { protocol: "https" as const, host: t.target.host, port: t.port, method: req.method ?? "GET" };
  if (!hostHeaderMatches(req.headers.host, t.target)) {
    refuseRequest(
      ctx,
      res,
      {
        reason: "host_mismatch",
        message: `the request names ${req.headers.host}, the tunnel is to ${t.target.host}`,
      },
      base,
    );
    return;
  }
  if (req.headers.upgrade) {
    refuseRequest(
      ctx,
      res,
      { reason: "unsupported", message: "protocol upgrades are not intercepted" },
      base,
    );
    return;
  }
  if (!/^\//.test(req.url ?? "")) {
    refuseRequest(
      ctx,
      res,
      { reason: "bad_request", message: "a request in a tunnel needs an origin-form path" },
      base,
    );
    return;
  }
  const refusal = ctx.policy().check(t.target, t.port);
  if (refusal) {
    refuseRequest(ctx, res, refusal, base);
    return;
  }
  forward(ctx, req, res, { ...t, agent, defaultPort: 443, protocol: "https" }, req.url!);
}

/** Copies bytes both ways until either side ends; idle tunnels are ended. */
function pipeBoth(client: Socket, upstream: Socket, idleMs: number): void {
  client.setTimeout(idleMs, () => destroyBoth());
  upstream.setTimeout(idleMs, () => destroyBoth());
  const destroyBoth = () => {
    client.destroy();
    upstream.destroy();
  };
  client.pipe(upstream);
  upstream.pipe(client);
  client.resume();
  upstream.resume();
}

/**
 * Runs a tunnel. `head` is what the client sent after its handshake; the upstream socket is connected. Returns when
 * the tunnel is set up (it then runs by itself).
 */
export function runTunnel(
  ctx: EndpointContext,
  client: Socket,
  upstream: Socket,
  head: Buffer,
  t: TunnelTarget,
  done: () => void,
): void {
  let finished = false;
  const end = () => {
    if (finished) return;
    finished = true;
    client.destroy();
    upstream.destroy();
    untrack();
    done();
  };
  const untrack = ctx.track({ target: t.target, port: t.port, destroy: end });
  client.on("close", end);
  upstream.on("close", end);
  client.on("error", end);
  upstream.on("error", end);
  // The client's socket was an HTTP or SOCKS5 connection so far: its timeouts are the tunnel's now.
  client.setTimeout(ctx.limits.idleTimeoutMs, end);

  let buffered: Buffer = head;
  // A side that ends before the tunnel's kind is known ends the tunnel.
  const endedWhileWaiting = () => end();
  const stopWaiting = () => {
    client.off("data", onClient);
    upstream.off("data", onUpstream);
    client.off("end", endedWhileWaiting);
    upstream.off("end", endedWhileWaiting);
    client.pause();
    upstream.pause();
  };
  const raw = (toUpstream: Buffer, toClient: Buffer | null) => {
    stopWaiting();
    if (toUpstream.length > 0) upstream.write(toUpstream);
    if (toClient) client.write(toClient);
    pipeBoth(client, upstream, ctx.limits.idleTimeoutMs);
  };
  const onUpstream = (chunk: Buffer) => {
    // The server spoke first: not TLS (its client always speaks first); nothing to check or intercept.
    raw(buffered, chunk);
  };
  const onClient = (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    decide();
  };
  const decide = () => {
    if (buffered.length === 0) return;
    if (!looksLikeTls(buffered[0]!)) return raw(buffered, null);
    const hello = parseClientHello(buffered);
    if (hello.state === "incomplete" && buffered.length <= MAX_CLIENT_HELLO) return;
    if (hello.state !== "complete") {
      refuse("bad_request", "the tunnel's TLS ClientHello could not be read");
      return;
    }
    const leaf = ctx.intercepts(t.target) ? ctx.leafContext(t.target.host) : null;
    if (leaf) return intercept(leaf);
    if (hello.serverName !== null && !sniMatches(hello.serverName, t.target)) {
      refuse(
        "sni_mismatch",
        `the TLS server name ${hello.serverName} is not the tunnel's host ${t.target.host}`,
      );
      return;
    }
    raw(buffered, null);
  };
  const refuse = (reason: "bad_request" | "sni_mismatch", message: string) => {
    stopWaiting();
    ctx.decide({ ...base(), decision: "refused", reason, message });
    end();
  };
  const base = () => ({ protocol: t.protocol, host: t.target.host, port: t.port, address: t.address });
  const intercept = (leaf: Promise<SecureContext>) => {
    stopWaiting();
    leaf.then(
      (secureContext) => {
        if (finished) return;
        const tls = new TLSSocket(replay(client, buffered), {
          isServer: true,
          secureContext,
          ALPNProtocols: ["http/1.1"],
        });
        const agent = new PinnedTlsAgent(upstream, t, ctx.upstreamCa);
        // From here the agent owns the upstream connection(s): its close no longer ends the tunnel.
        upstream.off("close", end);
        upstream.off("error", end);
        upstream.on("error", () => {});
        intercepted.set(tls, { t, agent });
        tls.on("error", end);
        tls.on("close", () => {
          agent.destroy();
          end();
        });
        ctx.innerServer.emit("connection", tls);
      },
      () => end(),
    );
  };
  client.on("data", onClient);
  upstream.on("data", onUpstream);
  client.once("end", endedWhileWaiting);
  upstream.once("end", endedWhileWaiting);
  client.resume();
  upstream.resume();
  decide();
}

/**
 * The client's socket as a stream that first yields the bytes already read from it. (A TLSSocket wrapping the
 * socket itself would read its handle directly and miss bytes that were read and put back.)
 */
function replay(socket: Socket, head: Buffer): Duplex {
  const d = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk, encoding, callback) {
      socket.write(chunk, encoding, callback);
    },
    final(callback) {
      socket.end();
      callback();
    },
    destroy(err, callback) {
      socket.destroy();
      callback(err);
    },
  });
  if (head.length > 0) d.push(head);
  socket.on("data", (chunk: Buffer) => {
    if (!d.push(chunk)) socket.pause();
  });
  socket.on("end", () => d.push(null));
  socket.on("close", () => d.destroy());
  return d;
}

function sniMatches(serverName: string, target: TargetHost): boolean {
  try {
    return parseHost(serverName).host === target.host;
  } catch (e) {
    if (e instanceof BadTarget) return false;
    throw e;
  }
}
