/**
 * Where the service may connect on a client's behalf (the SSRF guard). Three kinds of URL come from clients and
 * lead to a connection: webhook endpoints and `mcp_oauth` token endpoints (the service sends those requests
 * itself) and HTTP MCP servers (the engine connects to them). Left open, any caller could make the service reach its
 * own loopback services, the cloud metadata address or the private network. Unless the operator allows private
 * targets (`--allow-private-targets`), only public (global unicast) addresses are allowed:
 * - addresses are parsed with ipaddr.js; an IPv4 address must be in its `unicast` range (not loopback, private,
 *   link-local, shared/CGNAT, reserved, benchmarking, multicast, broadcast, unspecified, AS112, AMT);
 * - an IPv6 address that carries an IPv4 one (IPv4-mapped ::ffff:0:0/96, IPv4-translated ::ffff:0:0:0/96,
 *   IPv4-compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32: its server and its client) is
 *   judged by that IPv4 address; any other IPv6 address must be `unicast` and inside the global unicast space
 *   2000::/3 (so not loopback, unique local, link-local, site-local, multicast, documentation, the local-use NAT64
 *   prefix, ORCHID, …);
 * - `localhost` and names under `.localhost` are refused as written; any other name is refused when one of the
 *   addresses it resolves to is.
 *
 * When: a URL is checked as written and resolved when it is registered (`checkResolved`), and again when a turn
 * starts for MCP servers (the engine resolves and connects itself: that is the last moment the service can check).
 * The requests the service sends itself go through `lookup` / `fetch`: the name is resolved once per connection,
 * every address it resolves to is checked, and the socket is handed only the checked addresses, so a name that
 * resolves to a public address when checked and to a private one when connecting (DNS rebinding) cannot slip
 * through.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { Agent, fetch as undiciFetch } from "undici";

/** The operator's flag that lifts the guard (named in refusals). */
const ALLOW_PRIVATE_FLAG = "--allow-private-targets";

export class TargetRefused extends Error {}

/** How a name is resolved (every address): the system resolver, or a stand-in in tests. */
export type Resolve = (
  hostname: string,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolve: Resolve = (hostname, callback) =>
  dnsLookup(hostname, { all: true, verbatim: true }, callback);

/** ipaddr.js range names, in words. */
const RANGES: Record<string, string> = {
  unspecified: "an unspecified address",
  broadcast: "the broadcast address",
  multicast: "a multicast address",
  linkLocal: "a link-local address (where cloud metadata services answer)",
  loopback: "a loopback address",
  carrierGradeNat: "a shared (carrier-grade NAT) address",
  private: "a private address",
  uniqueLocal: "a unique local (private) address",
  deprecatedSiteLocal: "a site-local (private) address",
  reserved: "a reserved address",
  benchmarking: "a benchmarking address",
  rfc6052: "a local-use NAT64 address",
  discard: "a discard-only address",
};

const inWords = (range: string) => RANGES[range] ?? `a non-public address (${range})`;

const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3");
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR("64:ff9b::/96");

const ipv4Of = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

/** The IPv4 addresses an IPv6 address carries, and the form carrying them (null: it carries none). */
function carried(a: ipaddr.IPv6): { form: string; addresses: ipaddr.IPv4[] } | null {
  const p = a.parts as [number, number, number, number, number, number, number, number];
  switch (a.range()) {
    case "ipv4Mapped":
      return { form: "IPv4-mapped", addresses: [ipv4Of(p[6], p[7])] };
    case "rfc6145":
      return { form: "IPv4-translated", addresses: [ipv4Of(p[6], p[7])] };
    case "rfc6052":
      // (The local-use prefix 64:ff9b:1::/48 places the address where its operator chose: refused as it is.)
      return a.match(NAT64_WELL_KNOWN) ? { form: "NAT64", addresses: [ipv4Of(p[6], p[7])] } : null;
    case "6to4":
      return { form: "6to4", addresses: [ipv4Of(p[1], p[2])] };
    case "teredo":
      return {
        form: "Teredo",
        addresses: [ipv4Of(p[2], p[3]), ipv4Of(~p[6] & 0xffff, ~p[7] & 0xffff)],
      };
    case "unicast":
      return p.slice(0, 6).every((g) => g === 0)
        ? { form: "IPv4-compatible", addresses: [ipv4Of(p[6], p[7])] }
        : null;
    default:
      return null;
  }
}

/** Why an address is not a public one (null: it is). Whatever the operator allows. */
export function nonPublic(ip: string): string | null {
  if (isIP(ip) === 0) return `${ip} is not an IP address`;
  const a = ipaddr.parse(ip);
  if (a instanceof ipaddr.IPv4) {
    const range = a.range();
    return range === "unicast" ? null : `${ip} is ${inWords(range)}`;
  }
  const v6 = a as ipaddr.IPv6;
  const range = v6.range();
  if (range === "loopback" || range === "unspecified") return `${ip} is ${inWords(range)}`;
  const inner = carried(v6);
  if (inner) {
    for (const v4 of inner.addresses) {
      const r = v4.range();
      if (r !== "unicast") return `${ip} carries ${v4.toString()} (${inner.form}), ${inWords(r)}`;
    }
    return null;
  }
  if (range !== "unicast") return `${ip} is ${inWords(range)}`;
  if (!v6.match(GLOBAL_UNICAST)) return `${ip} is outside the global unicast space (2000::/3)`;
  return null;
}

const refusal = (why: string) =>
  new TargetRefused(
    `${why}: this server does not connect to loopback, private, link-local or other non-public addresses on a ` +
      `client's behalf unless its operator allows it (${ALLOW_PRIVATE_FLAG})`,
  );

/** The host of a URL as a name or a bare address (no brackets, no trailing dot). */
const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "");

const isLoopbackName = (host: string) => host === "localhost" || host.endsWith(".localhost");

export interface OutboundOptions {
  /** The operator's `--allow-private-targets`: every address is allowed. */
  allowPrivate: boolean;
  /** How names are resolved (default: the system resolver). */
  resolve?: Resolve;
  /** How long resolving a name may take when a URL is checked (ms, default 5000). */
  resolveTimeoutMs?: number;
}

/** What a guarded request needs of fetch. */
export interface GuardedRequest {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

export interface GuardedResponse {
  ok: boolean;
  status: number;
  text(): Promise<string>;
}

export class OutboundGuard {
  readonly allowPrivate: boolean;
  private readonly resolve: Resolve;
  private readonly resolveTimeoutMs: number;
  private dispatcher: Agent | null = null;

  constructor(opts: OutboundOptions) {
    this.allowPrivate = opts.allowPrivate;
    this.resolve = opts.resolve ?? systemResolve;
    this.resolveTimeoutMs = opts.resolveTimeoutMs ?? 5000;
  }

  /** Why the service may not connect to this address (null: it may). */
  refusedAddress(ip: string): string | null {
    if (this.allowPrivate) return null;
    return nonPublic(ip);
  }

  /** Checks a URL's host as written (an address, a loopback name); throws TargetRefused. */
  checkHost(url: URL): void {
    if (this.allowPrivate) return;
    const host = hostOf(url);
    if (isIP(host)) {
      const why = nonPublic(host);
      if (why) throw refusal(why);
    } else if (isLoopbackName(host)) {
      throw refusal(`${host} is a loopback name`);
    }
  }

  /** Checks a URL's host as written and every address its name resolves to now; throws TargetRefused. */
  async checkResolved(url: URL): Promise<void> {
    await this.pinnedAddress(url);
  }

  /**
   * For a program that connects itself but can be told which address to use (git's `http.curloptResolve`): the
   * URL checked as written, its name resolved, every address checked, and the one to connect to (null: the
   * guard is off, or the host is an address literal, which needs no pin).
   */
  async pinnedAddress(url: URL): Promise<string | null> {
    this.checkHost(url);
    if (this.allowPrivate) return null;
    const host = hostOf(url);
    if (isIP(host)) return null;
    const addresses = await this.resolveNow(host);
    this.checkAddresses(host, addresses);
    return addresses[0]!.address;
  }

  /**
   * A `lookup` for sockets (http.request, net.connect, undici): resolves the name, refuses it when any of its
   * addresses is refused, and hands the socket the checked addresses only. (A socket to an address literal does
   * not look it up: check the URL with `checkHost` first.)
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname, (err, addresses) => {
      if (err) return callback(err, []);
      const family =
        options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : Number(options.family ?? 0);
      const usable = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
      try {
        if (usable.length === 0) throw new TargetRefused(`${hostname} did not resolve to any address`);
        // Every address the name resolves to is checked (not only the one used): a mixed answer is refused.
        this.checkAddresses(hostname, addresses);
      } catch (refused) {
        return callback(refused as TargetRefused, []);
      }
      if (options.all) return callback(null, usable);
      const first = usable[0]!;
      callback(null, first.address, first.family);
    });
  };

  /**
   * A request through the guard: the URL's host checked as written, the connection made to a checked address (a
   * fresh connection every time: none is kept alive), redirects never followed (an error).
   */
  async fetch(url: string, init: GuardedRequest): Promise<GuardedResponse> {
    this.checkHost(new URL(url));
    this.dispatcher ??= new Agent({ connect: { lookup: this.lookup }, pipelining: 0 });
    return undiciFetch(url, { ...init, redirect: "error", dispatcher: this.dispatcher });
  }

  private checkAddresses(host: string, addresses: readonly LookupAddress[]): void {
    if (this.allowPrivate) return;
    if (addresses.length === 0) throw new TargetRefused(`${host} did not resolve to any address`);
    for (const a of addresses) {
      const why = nonPublic(a.address);
      if (why) throw refusal(`${host} resolves to ${why.replace(`${a.address} is `, `${a.address}, `)}`);
    }
  }

  private resolveNow(host: string): Promise<LookupAddress[]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new TargetRefused(`${host} did not resolve within ${this.resolveTimeoutMs / 1000} s`)),
        this.resolveTimeoutMs,
      );
      timer.unref();
      this.resolve(host, (err, addresses) => {
        clearTimeout(timer);
        if (err) reject(new TargetRefused(`${host} could not be resolved (${err.code ?? err.message})`));
        else resolve(addresses);
      });
    });
  }
}
