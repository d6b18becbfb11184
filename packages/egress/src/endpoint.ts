/**
 * One sandbox's endpoint: a unix socket on which the proxy speaks HTTP (forward requests and CONNECT) and SOCKS5,
 * told apart by the first byte. It holds the sandbox's current policy, credentials and substitutions, counts what it
 * decided and caps its connections.
 */
import {
  Agent,
  createServer as createHttpServer,
  type Server as HttpServer,
  type IncomingMessage,
} from "node:http";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import type { SecureContext } from "node:tls";
import {
  admit,
  type DecisionInput,
  type EgressDecision,
  type EgressLimits,
  type EndpointContext,
  type TrackedTunnel,
} from "./context.js";
import { forwardPlain } from "./forward.js";
import { BadTarget, parseAuthority, parseHost, type TargetHost } from "./hosts.js";
import { CompiledCredentials, CompiledPolicy, type EgressCredential, type EgressPolicy } from "./policy.js";
import { type EgressRefusal, type Refusal, rawHttpRefusal, socksReplyOf } from "./refusals.js";
import { type BoundSocket, bindSocket, removeSocket, type SocketAccess } from "./socket-file.js";
import { methodChoice, parseGreeting, parseRequest, reply, SOCKS_VERSION } from "./socks5.js";
import { CompiledSubstitutions, type EgressSubstitution } from "./substitutions.js";
import { type AddressRules, connectChecked, type Resolver, type ServiceAddress } from "./target.js";
import { handleIntercepted, runTunnel } from "./tunnel.js";

export interface EgressStats {
  connections: { open: number; total: number };
  allowed: number;
  refused: Partial<Record<EgressRefusal, number>>;
  bytes: { fromSandbox: number; toSandbox: number };
}

/** What the proxy gives each endpoint. */
export interface EndpointDeps {
  resolver: Resolver;
  serviceAddresses: readonly ServiceAddress[];
  upstreamCa: string[] | undefined;
  leafContext: ((host: string) => Promise<SecureContext>) | null;
  onDecision: (d: EgressDecision) => void;
  onClosed: () => void;
}

export interface EndpointOptions {
  id: string;
  socketPath: string;
  policy: EgressPolicy;
  credentials: readonly EgressCredential[];
  substitutions: readonly EgressSubstitution[];
  access: SocketAccess;
  limits: EgressLimits;
}

export class EgressEndpoint {
  readonly id: string;
  readonly socketPath: string;
  private policy: CompiledPolicy;
  private credentials: CompiledCredentials;
  private substitutions: CompiledSubstitutions;
  private readonly limits: EgressLimits;
  private readonly deps: EndpointDeps;
  private readonly net: NetServer;
  private readonly http: HttpServer;
  private readonly inner: HttpServer;
  private readonly agent: Agent;
  private readonly sockets = new Set<Socket>();
  private readonly tunnels = new Set<TrackedTunnel>();
  private readonly counts: EgressStats = {
    connections: { open: 0, total: 0 },
    allowed: 0,
    refused: {},
    bytes: { fromSandbox: 0, toSandbox: 0 },
  };
  private bound: BoundSocket | null = null;
  private closing: Promise<void> | null = null;
  private readonly ctx: EndpointContext;

  /** @internal Use `EgressProxy.open`. */
  constructor(opts: EndpointOptions, deps: EndpointDeps) {
    this.id = opts.id;
    this.socketPath = opts.socketPath;
    this.limits = opts.limits;
    this.deps = deps;
    [this.policy, this.credentials, this.substitutions] = this.compile(
      opts.policy,
      opts.credentials,
      opts.substitutions,
    );
    this.agent = new Agent({
      keepAlive: true,
      maxSockets: opts.limits.maxConnections,
      timeout: opts.limits.idleTimeoutMs,
    });
    // (A request without Host is judged by the handlers: absolute-form carries its host, a tunnel has one.)
    const httpOptions = {
      maxHeaderSize: opts.limits.maxHeaderBytes,
      requestTimeout: 0,
      requireHostHeader: false,
    };
    this.http = createHttpServer(httpOptions);
    this.inner = createHttpServer(httpOptions);
    for (const s of [this.http, this.inner]) {
      s.headersTimeout = opts.limits.handshakeTimeoutMs;
      s.keepAliveTimeout = opts.limits.keepAliveTimeoutMs;
      s.timeout = opts.limits.idleTimeoutMs;
      s.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => this.onClientError(err, socket));
    }
    this.ctx = {
      id: this.id,
      limits: this.limits,
      resolver: deps.resolver,
      policy: () => this.policy,
      credentials: () => this.credentials,
      substitutions: () => this.substitutions,
      intercepts: (t) =>
        (!this.credentials.empty && this.credentials.for(t) !== null) || this.substitutions.appliesTo(t),
      rules: (): AddressRules => ({
        privateAllowance: this.policy.privateAllowance,
        serviceAddresses: deps.serviceAddresses,
      }),
      decide: (d) => this.decide(d),
      leafContext: (host) => deps.leafContext?.(host) ?? null,
      upstreamCa: deps.upstreamCa,
      httpAgent: this.agent,
      innerServer: this.inner,
      track: (t) => {
        this.tunnels.add(t);
        return () => this.tunnels.delete(t);
      },
      closed: () => this.closing !== null,
    };
    this.http.on("request", (req, res) => {
      forwardPlain(this.ctx, req, res).catch(() => res.destroy());
    });
    this.http.on("connect", (req: IncomingMessage, socket: Socket, head: Buffer) =>
      this.onConnect(req, socket, head),
    );
    this.http.on("upgrade", (req: IncomingMessage, socket: Socket) =>
      this.refuseRaw(socket, "http", req, {
        reason: "unsupported",
        message: "protocol upgrades are not proxied",
      }),
    );
    this.inner.on("request", (req, res) => handleIntercepted(this.ctx, req, res));
    this.inner.on("upgrade", (req: IncomingMessage, socket: Socket) =>
      this.refuseRaw(socket, "https", req, {
        reason: "unsupported",
        message: "protocol upgrades are not intercepted",
      }),
    );
    this.net = createNetServer({ allowHalfOpen: true, pauseOnConnect: false }, (socket) =>
      this.onConnection(socket),
    );
  }

  /** @internal */
  async listen(access: SocketAccess): Promise<void> {
    this.bound = await bindSocket(this.net, this.socketPath, access);
  }

  /**
   * Replaces the policy, credentials and substitutions (omitted: none): every later request and tunnel is decided by
   * them; open tunnels the new policy refuses are ended. Nothing changes when one of them is invalid (a TypeError).
   */
  update(
    policy: EgressPolicy,
    credentials: readonly EgressCredential[] = [],
    substitutions: readonly EgressSubstitution[] = [],
  ): void {
    const [p, c, s] = this.compile(policy, credentials, substitutions);
    this.policy = p;
    this.credentials = c;
    this.substitutions = s;
    for (const t of [...this.tunnels]) if (p.check(t.target, t.port)) t.destroy();
  }

  stats(): EgressStats {
    let fromSandbox = this.counts.bytes.fromSandbox;
    let toSandbox = this.counts.bytes.toSandbox;
    for (const s of this.sockets) {
      fromSandbox += s.bytesRead;
      toSandbox += s.bytesWritten;
    }
    return {
      connections: { ...this.counts.connections },
      allowed: this.counts.allowed,
      refused: { ...this.counts.refused },
      bytes: { fromSandbox, toSandbox },
    };
  }

  /** Stops listening, ends every connection and tunnel, removes the socket. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const stopped = new Promise<void>((resolve) => this.net.close(() => resolve()));
      for (const t of [...this.tunnels]) t.destroy();
      for (const s of [...this.sockets]) s.destroy();
      this.agent.destroy();
      await stopped;
      if (this.bound) await removeSocket(this.bound);
      this.deps.onClosed();
    })();
    return this.closing;
  }

  private compile(
    policy: EgressPolicy,
    credentials: readonly EgressCredential[],
    substitutions: readonly EgressSubstitution[],
  ): [CompiledPolicy, CompiledCredentials, CompiledSubstitutions] {
    const p = new CompiledPolicy(policy);
    const c = new CompiledCredentials(credentials);
    const s = new CompiledSubstitutions(substitutions);
    if (!c.empty && !this.deps.leafContext) {
      throw new TypeError("credentials need the proxy's certificate authority (EgressProxy option `ca`)");
    }
    if (!s.empty && !this.deps.leafContext) {
      throw new TypeError("substitutions need the proxy's certificate authority (EgressProxy option `ca`)");
    }
    // As the official API requires: a secret for "any" host goes only where an explicit allowlist lets a sandbox go.
    if (s.anyHost && p.mode === "allow-public") {
      throw new TypeError(
        'a substitution for "any" host needs an allowlist policy (with allow-public, any public host would get the secret)',
      );
    }
    return [p, c, s];
  }

  private decide(d: DecisionInput): void {
    if (d.decision === "allowed") this.counts.allowed++;
    else if (d.reason) this.counts.refused[d.reason] = (this.counts.refused[d.reason] ?? 0) + 1;
    try {
      this.deps.onDecision({ endpoint: this.id, ...d });
    } catch {
      // A hook that throws must not break the proxy.
    }
  }

  private onConnection(socket: Socket): void {
    this.counts.connections.total++;
    socket.on("error", () => socket.destroy());
    const overCap = this.counts.connections.open >= this.limits.maxConnections || this.closing !== null;
    if (!overCap) {
      this.counts.connections.open++;
      this.sockets.add(socket);
      socket.once("close", () => {
        this.counts.connections.open--;
        this.sockets.delete(socket);
        this.counts.bytes.fromSandbox += socket.bytesRead;
        this.counts.bytes.toSandbox += socket.bytesWritten;
      });
    }
    socket.setTimeout(this.limits.handshakeTimeoutMs, () => socket.destroy());
    // Half-open sockets are allowed (for tunnels): one that ends before saying anything is done.
    const endedEarly = () => socket.destroy();
    socket.once("end", endedEarly);
    socket.once("data", (first: Buffer) => {
      socket.off("end", endedEarly);
      socket.pause();
      if (overCap) {
        const refusal: Refusal = {
          reason: "too_many_connections",
          message: `this sandbox has ${this.limits.maxConnections} connections open`,
        };
        this.decide({
          protocol: first[0] === SOCKS_VERSION ? "socks5" : "http",
          host: null,
          port: null,
          decision: "refused",
          ...refusal,
        });
        socket.end(first[0] === SOCKS_VERSION ? methodChoice(false) : rawHttpRefusal(refusal, null, null));
        return;
      }
      if (first[0] === SOCKS_VERSION) {
        this.onSocks(socket, first);
        return;
      }
      socket.unshift(first);
      this.http.emit("connection", socket);
      socket.resume();
    });
  }

  private onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
    const tooLarge = err.code === "HPE_HEADER_OVERFLOW";
    const refusal: Refusal = {
      reason: "bad_request",
      message: tooLarge
        ? `the request head is larger than ${this.limits.maxHeaderBytes} bytes`
        : "the request could not be parsed as HTTP",
    };
    if (err.code !== "ECONNRESET" && err.code !== "ERR_HTTP_REQUEST_TIMEOUT") {
      this.decide({ protocol: "http", host: null, port: null, decision: "refused", ...refusal });
    }
    if (socket.writable && !socket.destroyed)
      socket.end(rawHttpRefusal(refusal, null, null, tooLarge ? 431 : undefined));
    else socket.destroy();
  }

  private refuseRaw(
    socket: Socket,
    protocol: "http" | "https" | "connect",
    req: IncomingMessage | null,
    refusal: Refusal,
    target?: { host: TargetHost; port: number },
  ): void {
    const host = target?.host.host ?? null;
    const port = target?.port ?? null;
    this.decide({
      protocol,
      host,
      port,
      decision: "refused",
      ...refusal,
      ...(req?.method ? { method: req.method } : {}),
    });
    if (socket.writable) socket.end(rawHttpRefusal(refusal, host, port));
    else socket.destroy();
  }

  private async onConnect(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    socket.on("error", () => socket.destroy());
    let target: TargetHost;
    let port: number;
    try {
      ({ target, port } = parseAuthority(req.url ?? ""));
    } catch (e) {
      const message = e instanceof BadTarget ? e.message : "bad CONNECT target";
      this.refuseRaw(socket, "connect", null, { reason: "bad_request", message });
      return;
    }
    const where = { host: target, port };
    const outcome = await this.connectUpstream(target, port);
    if ("refusal" in outcome) {
      this.refuseRaw(socket, "connect", null, outcome.refusal, where);
      return;
    }
    if (socket.destroyed || this.closing) {
      outcome.socket.destroy();
      return;
    }
    socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    this.tunnel(socket, outcome.socket, head, target, port, outcome.address, "connect");
  }

  private async connectUpstream(target: TargetHost, port: number) {
    const admitted = await admit(this.ctx, target, port);
    if ("refusal" in admitted) return admitted;
    if (this.closing)
      return { refusal: { reason: "upstream_failed", message: "the endpoint is closing" } as Refusal };
    return connectChecked(admitted.addresses, port, target.host, this.limits.connectTimeoutMs);
  }

  private tunnel(
    client: Socket,
    upstream: Socket,
    head: Buffer,
    target: TargetHost,
    port: number,
    address: string,
    protocol: "connect" | "socks5",
  ): void {
    const intercepted = this.ctx.intercepts(target);
    this.decide({ protocol, host: target.host, port, address, decision: "allowed", intercepted });
    runTunnel(this.ctx, client, upstream, head, { target, port, address, protocol }, () => {});
  }

  private onSocks(socket: Socket, first: Buffer): void {
    let buffered = first;
    let stage: "greeting" | "request" | "busy" = "greeting";
    const fail = (refusal: Refusal, code: number | null, where?: { host: string; port: number }) => {
      this.decide({
        protocol: "socks5",
        host: where?.host ?? null,
        port: where?.port ?? null,
        decision: "refused",
        ...refusal,
      });
      socket.off("data", onData);
      socket.end(code === null ? methodChoice(false) : reply(code));
    };
    const step = async () => {
      if (stage === "greeting") {
        const g = parseGreeting(buffered);
        if (g.state === "incomplete") return;
        if (g.state === "invalid") return fail({ reason: "bad_request", message: g.message }, null);
        if (!g.noAuth)
          return fail(
            { reason: "unsupported", message: "only SOCKS5 without authentication is offered" },
            null,
          );
        socket.write(methodChoice(true));
        buffered = g.rest;
        stage = "request";
      }
      if (stage !== "request") return;
      const r = parseRequest(buffered);
      if (r.state === "incomplete") return;
      if (r.state === "invalid") return fail({ reason: "bad_request", message: r.message }, 0x01);
      if (r.command !== 0x01)
        return fail(
          { reason: "unsupported", message: `SOCKS5 command ${r.command} is not offered (CONNECT only)` },
          0x07,
        );
      stage = "busy";
      socket.off("data", onData);
      socket.pause();
      socket.setTimeout(0); // resolving and connecting have their own timeouts
      let target: TargetHost;
      try {
        target = parseHost(r.host);
      } catch (e) {
        return fail(
          { reason: "bad_request", message: e instanceof BadTarget ? e.message : "bad host" },
          0x01,
        );
      }
      if (r.port === 0)
        return fail({ reason: "bad_request", message: "port 0" }, 0x01, { host: target.host, port: 0 });
      const outcome = await this.connectUpstream(target, r.port);
      if ("refusal" in outcome)
        return fail(outcome.refusal, socksReplyOf(outcome.refusal.reason), {
          host: target.host,
          port: r.port,
        });
      if (socket.destroyed || this.closing) {
        outcome.socket.destroy();
        return;
      }
      socket.write(reply(0x00));
      this.tunnel(socket, outcome.socket, r.rest, target, r.port, outcome.address, "socks5");
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length > 1024) {
        fail({ reason: "bad_request", message: "the SOCKS5 handshake is too long" }, 0x01);
        return;
      }
      step().catch(() => socket.destroy());
    };
    socket.on("data", onData);
    socket.resume();
    step().catch(() => socket.destroy());
  }
}
