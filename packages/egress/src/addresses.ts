/**
 * Which IP addresses are public (global unicast), with ipaddr.js. Importable on its own
 * (`@codex-agent-api/egress/addresses`) so that every place that connects on someone else's behalf — the egress
 * proxy, the server's outbound guard — judges addresses the same way:
 * - an IPv4 address must be in ipaddr.js's `unicast` range (not loopback, private, link-local, shared/CGNAT,
 *   reserved, benchmarking, multicast, broadcast, unspecified, AS112, AMT);
 * - an IPv6 address that carries an IPv4 one (IPv4-mapped ::ffff:0:0/96, IPv4-translated ::ffff:0:0:0/96,
 *   IPv4-compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32: its server and its client) is
 *   judged by that IPv4 address; any other IPv6 address must be `unicast` and inside 2000::/3.
 */
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

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
  notGlobalUnicast: "outside the global unicast space (2000::/3)",
};

/** A range name in words. */
export const rangeInWords = (range: string): string => RANGES[range] ?? `a non-public address (${range})`;

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

export type AddressClass =
  | { public: true }
  | {
      public: false;
      /** The ipaddr.js range (`loopback`, `private`, `linkLocal`, …; `notGlobalUnicast` for IPv6 outside 2000::/3). */
      range: string;
      /** When an IPv6 address is refused for the IPv4 address it carries. */
      carried?: { form: string; ipv4: string };
    };

/** Whether an address is public, and if not, which range it falls in. Throws a TypeError for a non-address. */
export function classifyAddress(ip: string): AddressClass {
  if (isIP(ip) === 0) throw new TypeError(`${ip} is not an IP address`);
  const a = ipaddr.parse(ip);
  if (a instanceof ipaddr.IPv4) {
    const range = a.range();
    return range === "unicast" ? { public: true } : { public: false, range };
  }
  const v6 = a as ipaddr.IPv6;
  const range = v6.range();
  if (range === "loopback" || range === "unspecified") return { public: false, range };
  const inner = carried(v6);
  if (inner) {
    for (const v4 of inner.addresses) {
      const r = v4.range();
      if (r !== "unicast")
        return { public: false, range: r, carried: { form: inner.form, ipv4: v4.toString() } };
    }
    return { public: true };
  }
  if (range !== "unicast") return { public: false, range };
  if (!v6.match(GLOBAL_UNICAST)) return { public: false, range: "notGlobalUnicast" };
  return { public: true };
}

/** Why an address is not a public one, in words (null: it is public). */
export function nonPublic(ip: string): string | null {
  if (isIP(ip) === 0) return `${ip} is not an IP address`;
  const c = classifyAddress(ip);
  if (c.public) return null;
  if (c.carried) return `${ip} carries ${c.carried.ipv4} (${c.carried.form}), ${rangeInWords(c.range)}`;
  return `${ip} is ${rangeInWords(c.range)}`;
}

/**
 * An address in canonical text, an IPv4-mapped IPv6 address as the IPv4 address it reaches (a socket connected to
 * ::ffff:127.0.0.1 talks to 127.0.0.1). Throws a TypeError for a non-address.
 */
export function normalizeAddress(ip: string): string {
  if (isIP(ip) === 0) throw new TypeError(`${ip} is not an IP address`);
  const a = ipaddr.parse(ip);
  if (a instanceof ipaddr.IPv6 && a.isIPv4MappedAddress()) return a.toIPv4Address().toString();
  return a.toString();
}

/** `localhost` and names under `.localhost` (RFC 6761: always loopback). */
export const isLoopbackName = (host: string): boolean => {
  const h = host.toLowerCase().replace(/\.$/, "");
  return h === "localhost" || h.endsWith(".localhost");
};

export type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses CIDRs (a bare address is a /32 or /128); throws a TypeError naming the bad one. */
export function parseCidrs(cidrs: readonly string[]): Cidr[] {
  return cidrs.map((c) => {
    try {
      if (!c.includes("/")) {
        const a = ipaddr.parse(c);
        return [a, a.kind() === "ipv4" ? 32 : 128];
      }
      return ipaddr.parseCIDR(c);
    } catch {
      throw new TypeError(`${JSON.stringify(c)} is not an address or a CIDR range`);
    }
  });
}

/** Whether an address (IPv4-mapped IPv6 judged as its IPv4 address) is inside one of the ranges. */
export function inCidrs(ip: string, cidrs: readonly Cidr[]): boolean {
  const a = ipaddr.parse(normalizeAddress(ip));
  return cidrs.some(([range, bits]) => range.kind() === a.kind() && a.match(range, bits));
}
