/**
 * What the protocol handlers of one endpoint share: its current policy, credentials and substitutions, its limits, how decisions
 * are reported, and the one admission step every protocol takes (policy, then resolution and address checks).
 */
import type { Agent, Server } from "node:http";
import type { SecureContext } from "node:tls";
import type { TargetHost } from "./hosts.js";
import type { CompiledCredentials, CompiledPolicy } from "./policy.js";
import type { EgressRefusal, Refusal } from "./refusals.js";
import type { CompiledSubstitutions } from "./substitutions.js";
import { type AddressRules, type ResolvedAddress, type Resolver, resolveChecked } from "./target.js";

export interface EgressLimits {
  /** Open client connections per endpoint (default 64). */
  maxConnections: number;
  /** To send a request head, a CONNECT line or a SOCKS5 handshake (ms, default 10 000). */
  handshakeTimeoutMs: number;
  /** A tunnel or request with no bytes either way is ended (ms, default 300 000). */
  idleTimeoutMs: number;
  /** To connect upstream (ms, default 10 000). */
  connectTimeoutMs: number;
  /** To resolve a name (ms, default 5 000). */
  resolveTimeoutMs: number;
  /** Request head size (bytes, default 16 384). */
  maxHeaderBytes: number;
  /** Idle keep-alive client connections are closed after (ms, default 5 000). */
  keepAliveTimeoutMs: number;
}

export const DEFAULT_LIMITS: EgressLimits = {
  maxConnections: 64,
  handshakeTimeoutMs: 10_000,
  idleTimeoutMs: 300_000,
  connectTimeoutMs: 10_000,
  resolveTimeoutMs: 5_000,
  maxHeaderBytes: 16_384,
  keepAliveTimeoutMs: 5_000,
};

export type EgressProtocol = "http" | "connect" | "socks5" | "https";

/** One decision: what a sandbox asked for and what the proxy did. No paths, headers or bodies. */
export interface EgressDecision {
  /** The endpoint's id. */
  endpoint: string;
  /** `http`: a proxied plain request; `connect` / `socks5`: a tunnel; `https`: a request inside an intercepted tunnel. */
  protocol: EgressProtocol;
  /** The host as the sandbox named it (normalised), or null when the request could not be read. */
  host: string | null;
  port: number | null;
  decision: "allowed" | "refused";
  reason?: EgressRefusal;
  /** Why, in words (for refusals). */
  message?: string;
  /** The checked address connected to. */
  address?: string;
  method?: string;
  /** The HTTP status answered (requests). */
  status?: number;
  /** TLS was terminated to inject credentials or substitute secrets (tunnels). */
  intercepted?: boolean;
  /** Credential headers were injected (requests). */
  credentialed?: boolean;
  /** At least one placeholder was replaced by its secret (requests). */
  substituted?: boolean;
}

export type DecisionInput = Omit<EgressDecision, "endpoint">;

/** An open tunnel, as the endpoint tracks it (to end it on update or close). */
export interface TrackedTunnel {
  target: TargetHost;
  port: number;
  destroy(): void;
}

export interface EndpointContext {
  readonly id: string;
  readonly limits: EgressLimits;
  readonly resolver: Resolver;
  policy(): CompiledPolicy;
  credentials(): CompiledCredentials;
  substitutions(): CompiledSubstitutions;
  /** Whether HTTPS to this host is terminated (a credential or a substitution applies to it). */
  intercepts(t: TargetHost): boolean;
  rules(): AddressRules;
  /** Reports a decision (hooks and stats). */
  decide(d: DecisionInput): void;
  /** A TLS context with a leaf certificate for a host (null: this proxy has no CA). */
  leafContext(host: string): Promise<SecureContext> | null;
  /** CAs to verify upstream servers with when re-originating TLS (undefined: the system store). */
  readonly upstreamCa: string[] | undefined;
  /** Keep-alive connections for plain HTTP requests. */
  readonly httpAgent: Agent;
  /** Where the decrypted requests of intercepted tunnels are parsed. */
  readonly innerServer: Server;
  track(t: TrackedTunnel): () => void;
  /** Whether the endpoint is closing (no new upstream work). */
  closed(): boolean;
}

/** Policy first (no resolution for a refused name), then every address checked. */
export async function admit(
  ctx: EndpointContext,
  target: TargetHost,
  port: number,
): Promise<{ addresses: ResolvedAddress[] } | { refusal: Refusal }> {
  const refusal = ctx.policy().check(target, port);
  if (refusal) return { refusal };
  return resolveChecked(target, port, ctx.rules(), ctx.resolver, ctx.limits.resolveTimeoutMs);
}
