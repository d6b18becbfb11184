/**
 * An endpoint's policy and credentials, validated and compiled once (on open and on update) into matchers: which
 * host:port a sandbox may reach by name, which non-public addresses an operator lets through, which headers go to
 * which hosts. Address checks after resolution are in target.ts.
 */
import { type Cidr, isLoopbackName, parseCidrs } from "./addresses.js";
import { BadTarget, parseHost, type TargetHost } from "./hosts.js";
import type { Refusal } from "./refusals.js";

interface PolicyOptions {
  /** Names that are refused whatever else matches (blocked wins over allowed). */
  blocked?: string[];
  /** Ports that may be reached (default 80 and 443). */
  ports?: number[];
  /** Operator/test escape hatch: `true` lets every non-public address through, a CIDR list only those. */
  allowPrivate?: boolean | string[];
}

export type EgressPolicy =
  | { mode: "deny-all" }
  | ({ mode: "allow-public"; allowIpLiterals?: boolean } & PolicyOptions)
  | ({ mode: "allowlist"; allowed: string[] } & PolicyOptions);

export interface EgressCredential {
  /** Host patterns (the policy's syntax) whose requests get the headers. */
  hosts: string[];
  /** Headers set on those requests (replacing the client's own with the same names). */
  headers: Record<string, string>;
}

export const DEFAULT_PORTS: readonly number[] = [80, 443];

/** Exact names / addresses and `*.` suffixes. */
export class Patterns {
  private readonly exact = new Set<string>();
  private readonly suffixes: string[] = [];

  constructor(patterns: readonly string[], what: string) {
    if (!Array.isArray(patterns)) throw new TypeError(`${what} must be an array of host names`);
    for (const p of patterns) {
      if (typeof p !== "string") throw new TypeError(`${what} must be an array of host names`);
      const wildcard = p.startsWith("*.");
      try {
        const t = parseHost(wildcard ? p.slice(2) : p);
        if (wildcard && t.kind === "ip") throw new BadTarget("a wildcard cannot hold an address");
        if (wildcard) this.suffixes.push(`.${t.host}`);
        else this.exact.add(t.host);
      } catch (e) {
        const why = e instanceof BadTarget ? e.message : String(e);
        throw new TypeError(
          `${what}: ${JSON.stringify(p)} is not a host name, *.name or IP address (${why})`,
        );
      }
    }
  }

  matches(t: TargetHost): boolean {
    if (this.exact.has(t.host)) return true;
    return t.kind === "name" && this.suffixes.some((s) => t.host.endsWith(s));
  }
}

/** Private ranges an operator lets through: all of them, some, or none. */
export type PrivateAllowance = "all" | Cidr[] | null;

export class CompiledPolicy {
  readonly mode: EgressPolicy["mode"];
  private readonly allowed: Patterns | null;
  private readonly blocked: Patterns;
  private readonly ports: ReadonlySet<number>;
  private readonly allowIpLiterals: boolean;
  readonly privateAllowance: PrivateAllowance;

  constructor(policy: EgressPolicy) {
    if (typeof policy !== "object" || policy === null) throw new TypeError("policy must be an object");
    this.mode = policy.mode;
    if (policy.mode === "deny-all") {
      this.allowed = new Patterns([], "allowed");
      this.blocked = new Patterns([], "blocked");
      this.ports = new Set();
      this.allowIpLiterals = false;
      this.privateAllowance = null;
      return;
    }
    if (policy.mode !== "allow-public" && policy.mode !== "allowlist") {
      throw new TypeError(`policy.mode must be "deny-all", "allow-public" or "allowlist"`);
    }
    this.allowed = policy.mode === "allowlist" ? new Patterns(policy.allowed, "allowed") : null;
    this.blocked = new Patterns(policy.blocked ?? [], "blocked");
    const ports = policy.ports ?? DEFAULT_PORTS;
    if (!Array.isArray(ports) || !ports.every((p) => Number.isInteger(p) && p >= 1 && p <= 65535)) {
      throw new TypeError("policy.ports must be port numbers (1-65535)");
    }
    this.ports = new Set(ports);
    this.allowIpLiterals = policy.mode === "allow-public" && policy.allowIpLiterals === true;
    const ap = policy.allowPrivate;
    this.privateAllowance = ap === true ? "all" : Array.isArray(ap) ? parseCidrs(ap) : null;
  }

  /** Whether the policy lets a sandbox ask for this host:port at all (before any resolution). */
  check(t: TargetHost, port: number): Refusal | null {
    const name = t.host;
    if (this.mode === "deny-all")
      return { reason: "network_disabled", message: "this sandbox has no network" };
    if (this.blocked.matches(t)) return { reason: "blocked", message: `${name} is blocked` };
    if (t.kind === "ip") {
      const listed = this.allowed ? this.allowed.matches(t) : this.allowIpLiterals;
      if (!listed)
        return { reason: "ip_literal", message: `${name} is an IP address: only host names are allowed` };
    } else if (isLoopbackName(name)) {
      return { reason: "private_address", message: `${name} is a loopback name` };
    } else if (this.allowed && !this.allowed.matches(t)) {
      return { reason: "not_allowed", message: `${name} is not on this sandbox's allowlist` };
    }
    if (!this.ports.has(port)) return { reason: "port_not_allowed", message: `port ${port} is not allowed` };
    return null;
  }
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers a credential may not set: they frame the message or belong to the hop, not to the request. */
const RESERVED_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "keep-alive",
  "te",
  "trailer",
  "upgrade",
  "expect",
]);

/** The headers to set on a request, lower-cased names. */
export type InjectedHeaders = ReadonlyMap<string, string>;

export class CompiledCredentials {
  private readonly entries: Array<{ hosts: Patterns; headers: Array<[string, string]> }>;
  /** Every secret value (to keep them out of responses). */
  readonly secrets: readonly string[];

  constructor(credentials: readonly EgressCredential[]) {
    if (!Array.isArray(credentials)) throw new TypeError("credentials must be an array");
    this.entries = credentials.map((c, i) => {
      if (typeof c !== "object" || c === null || typeof c.headers !== "object" || c.headers === null) {
        throw new TypeError(`credentials[${i}] must be { hosts, headers }`);
      }
      const headers = Object.entries(c.headers).map(([name, value]): [string, string] => {
        const lower = name.toLowerCase();
        if (!TOKEN.test(name))
          throw new TypeError(`credentials[${i}]: ${JSON.stringify(name)} is not a header name`);
        if (RESERVED_HEADERS.has(lower) || lower.startsWith("proxy-")) {
          throw new TypeError(`credentials[${i}]: the ${name} header cannot be injected`);
        }
        // (The value is a secret: never in a message.)
        if (typeof value !== "string" || value === "" || /[\r\n\0]/.test(value)) {
          throw new TypeError(
            `credentials[${i}]: the value of ${name} must be a non-empty single-line string`,
          );
        }
        return [lower, value];
      });
      if (headers.length === 0) throw new TypeError(`credentials[${i}] has no headers`);
      return { hosts: new Patterns(c.hosts, `credentials[${i}].hosts`), headers };
    });
    // The value, and its token without an auth scheme word (`Bearer abc` → also `abc`).
    const values = this.entries.flatMap((e) => e.headers.map(([, v]) => v));
    const tokens = values.map((v) => /^[A-Za-z][\w-]* +(\S.*)$/.exec(v)?.[1]).filter((v) => v !== undefined);
    this.secrets = [...new Set([...values, ...tokens])].filter((v) => v.length >= 4);
  }

  get empty(): boolean {
    return this.entries.length === 0;
  }

  /** The headers for a host (every matching credential, in order; null: none). */
  for(t: TargetHost): InjectedHeaders | null {
    let out: Map<string, string> | null = null;
    for (const e of this.entries) {
      if (!e.hosts.matches(t)) continue;
      out ??= new Map();
      for (const [k, v] of e.headers) out.set(k, v);
    }
    return out;
  }
}
