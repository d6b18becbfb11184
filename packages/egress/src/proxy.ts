/**
 * The egress proxy of a service process: shared settings (how names resolve, the service's own addresses, the CA
 * and its cache of leaf certificates) and the endpoints it opened, one per sandbox.
 */
import { createSecureContext, type SecureContext } from "node:tls";
import { type CertificateAuthority, LEAF_VALIDITY_MS } from "./ca.js";
import { DEFAULT_LIMITS, type EgressDecision, type EgressLimits } from "./context.js";
import { EgressEndpoint } from "./endpoint.js";
import type { EgressCredential, EgressPolicy } from "./policy.js";
import type { SocketAccess } from "./socket-file.js";
import type { EgressSubstitution } from "./substitutions.js";
import { parseServiceAddresses, type Resolver, systemResolver } from "./target.js";

export interface EgressProxyOptions {
  /** Needed to intercept HTTPS to credentialed hosts and hosts a substitution applies to. */
  ca?: CertificateAuthority;
  /** PEM certificate(s) to verify upstream servers with when re-originating TLS (default: the system store). */
  upstreamCa?: string | string[];
  /** The service's own listeners (`ip:port`, `[ipv6]:port`, `ip`; 0.0.0.0 / :: for every local address). */
  serviceAddresses?: string[];
  /** How names are resolved (default: the system resolver, every address). */
  resolve?: Resolver;
  /** Defaults for every endpoint. */
  limits?: Partial<EgressLimits>;
  /** Every decision of every endpoint. */
  onDecision?: (d: EgressDecision) => void;
}

export interface OpenOptions {
  /** Names the endpoint in decisions; unique among open endpoints. */
  id: string;
  socketPath: string;
  policy: EgressPolicy;
  credentials?: EgressCredential[];
  /** Placeholders the proxy replaces by secrets in requests to their hosts. */
  substitutions?: EgressSubstitution[];
  access?: SocketAccess;
  limits?: Partial<EgressLimits>;
  onDecision?: (d: EgressDecision) => void;
}

/** Leaf certificates kept per host (the oldest goes first beyond this). */
const LEAF_CACHE_SIZE = 1000;
/** A leaf is reissued when less than this is left of its validity. */
const LEAF_RENEW_MS = 24 * 3_600_000;

function checkLimits(l: EgressLimits): EgressLimits {
  for (const [k, v] of Object.entries(l)) {
    if (!Number.isInteger(v) || v < 1) throw new TypeError(`limits.${k} must be a positive integer`);
  }
  return l;
}

export class EgressProxy {
  private readonly opts: EgressProxyOptions;
  private readonly serviceAddresses: ReturnType<typeof parseServiceAddresses>;
  private readonly open_ = new Map<string, EgressEndpoint>();
  private readonly paths = new Set<string>();
  private readonly leaves = new Map<string, { context: Promise<SecureContext>; renewAt: number }>();

  constructor(opts: EgressProxyOptions = {}) {
    this.opts = opts;
    this.serviceAddresses = parseServiceAddresses(opts.serviceAddresses ?? []);
    checkLimits({ ...DEFAULT_LIMITS, ...opts.limits });
  }

  /** Opens an endpoint: listens on its socket with its policy. */
  async open(o: OpenOptions): Promise<EgressEndpoint> {
    if (typeof o.id !== "string" || o.id === "") throw new TypeError("id must be a non-empty string");
    if (this.open_.has(o.id)) throw new Error(`an endpoint with id ${o.id} is open`);
    if (this.paths.has(o.socketPath)) throw new Error(`an endpoint listens on ${o.socketPath}`);
    const limits = checkLimits({ ...DEFAULT_LIMITS, ...this.opts.limits, ...o.limits });
    const ca = this.opts.ca;
    const upstreamCa = this.opts.upstreamCa === undefined ? undefined : [this.opts.upstreamCa].flat();
    const endpoint = new EgressEndpoint(
      {
        id: o.id,
        socketPath: o.socketPath,
        policy: o.policy,
        credentials: o.credentials ?? [],
        substitutions: o.substitutions ?? [],
        access: o.access ?? {},
        limits,
      },
      {
        resolver: this.opts.resolve ?? systemResolver,
        serviceAddresses: this.serviceAddresses,
        upstreamCa,
        leafContext: ca ? (host) => this.leafContext(ca, host) : null,
        onDecision: (d) => {
          o.onDecision?.(d);
          this.opts.onDecision?.(d);
        },
        onClosed: () => {
          this.open_.delete(o.id);
          this.paths.delete(o.socketPath);
        },
      },
    );
    this.open_.set(o.id, endpoint);
    this.paths.add(o.socketPath);
    try {
      await endpoint.listen(o.access ?? {});
    } catch (e) {
      this.open_.delete(o.id);
      this.paths.delete(o.socketPath);
      throw e;
    }
    return endpoint;
  }

  /** The open endpoints. */
  endpoints(): EgressEndpoint[] {
    return [...this.open_.values()];
  }

  /** Closes every endpoint. */
  async close(): Promise<void> {
    await Promise.all([...this.open_.values()].map((e) => e.close()));
  }

  private leafContext(ca: CertificateAuthority, host: string): Promise<SecureContext> {
    const now = Date.now();
    const hit = this.leaves.get(host);
    if (hit && hit.renewAt > now) {
      // Most recently used last (the Map's order is the eviction order).
      this.leaves.delete(host);
      this.leaves.set(host, hit);
      return hit.context;
    }
    const context = ca
      .issue(host)
      .then((leaf) => createSecureContext({ cert: leaf.certPem, key: leaf.keyPem }));
    const entry = { context, renewAt: now + LEAF_VALIDITY_MS - LEAF_RENEW_MS };
    context.catch(() => this.leaves.delete(host));
    this.leaves.delete(host);
    this.leaves.set(host, entry);
    while (this.leaves.size > LEAF_CACHE_SIZE) this.leaves.delete(this.leaves.keys().next().value!);
    return context;
  }
}
