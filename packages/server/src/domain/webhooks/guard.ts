/**
 * Where webhooks may go (SSRF guard). A webhook URL is the project's to choose, the request is the server's: left
 * open, any caller could make the server POST to its own loopback services, the cloud metadata address or the
 * private network. Unless the operator allows them (`--webhook-allow-private`), targets on loopback, private,
 * link-local, shared (CGNAT), multicast and reserved addresses are refused, and plain http:// needs
 * `--webhook-allow-http`.
 *
 * The check is made on the address the request connects to: the host name is resolved once, every address it
 * resolves to must be allowed, and the connection goes to the checked address (a name that resolves to a public
 * address when checked and to a private one when connecting — DNS rebinding — cannot slip through).
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";

export class TargetRefused extends Error {}

export interface TargetPolicy {
  allowPrivate: boolean;
  allowHttp: boolean;
}

const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  BLOCKED.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  BLOCKED.addSubnet(net, prefix, "ipv6");
}

/** The IPv4 address an IPv6 one carries (IPv4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16), if any. */
function embeddedIPv4(ip: string): string | null {
  const lower = ip.toLowerCase();
  const mapped = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (mapped) return mapped[1]!;
  const groups = expandIPv6(lower);
  if (!groups) return null;
  const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0) {
    if (groups[5] === 0xffff) return quad(groups[6]!, groups[7]!);
  }
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) {
    return quad(groups[6]!, groups[7]!);
  }
  if (groups[0] === 0x2002) return quad(groups[1]!, groups[2]!);
  return null;
}

/** The eight 16-bit groups of an IPv6 address (null if it is not one this parser reads). */
function expandIPv6(ip: string): number[] | null {
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, -v4[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const parse = (s: string) => (s ? s.split(":").map((g) => Number.parseInt(g, 16)) : []);
  const h = parse(head);
  const t = tail === undefined ? [] : parse(tail);
  const fill = 8 - h.length - t.length;
  if (tail === undefined ? h.length !== 8 : fill < 0) return null;
  const groups = [...h, ...Array<number>(tail === undefined ? 0 : fill).fill(0), ...t];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

/** Why an address may not be a webhook target (null: it may). */
export function refusedAddress(ip: string, policy: TargetPolicy): string | null {
  if (policy.allowPrivate) return null;
  const family = isIP(ip);
  if (family === 0) return `${ip} is not an IP address`;
  const v4 = family === 6 ? embeddedIPv4(ip) : ip;
  const blocked = v4 ? BLOCKED.check(v4, "ipv4") : BLOCKED.check(ip, "ipv6");
  return blocked
    ? `${ip} is a loopback, private, link-local or reserved address: webhooks are not sent there unless the ` +
        "server allows it (--webhook-allow-private)"
    : null;
}

/** Checks a webhook URL as written (scheme, credentials, a literal address); throws TargetRefused. */
export function checkTargetUrl(raw: string, policy: TargetPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRefused(`"${raw}" is not a valid URL`);
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && policy.allowHttp)) {
    throw new TargetRefused(
      policy.allowHttp
        ? "Webhook URLs must be http:// or https://"
        : "Webhook URLs must be https:// (plain http:// needs --webhook-allow-http on the server)",
    );
  }
  if (url.username || url.password) throw new TargetRefused("Webhook URLs must not contain credentials");
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (isIP(host)) {
    const why = refusedAddress(host, policy);
    if (why) throw new TargetRefused(why);
  } else if (!policy.allowPrivate && (host === "localhost" || host.endsWith(".localhost"))) {
    throw new TargetRefused(
      `${host} is a loopback name: webhooks are not sent there unless the server allows it (--webhook-allow-private)`,
    );
  }
  return url;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** How a name is resolved (every address): the system resolver, or a stand-in in tests. */
export type Resolve = (
  hostname: string,
  callback: (err: NodeJS.ErrnoException | null, a: LookupAddress[]) => void,
) => void;

const systemResolve: Resolve = (hostname, callback) =>
  dnsLookup(hostname, { all: true, verbatim: true }, callback);

/**
 * A `lookup` for http(s).request: resolves the name, refuses it when any of its addresses is refused, and hands
 * the connection the checked addresses only.
 */
export function guardedLookup(policy: TargetPolicy, resolve: Resolve = systemResolve) {
  return (
    hostname: string,
    options: { all?: boolean; family?: number | string },
    callback: LookupCallback,
  ) => {
    resolve(hostname, (err, addresses) => {
      if (err) return callback(err, []);
      const family = Number(options.family ?? 0);
      const usable = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
      if (usable.length === 0) return callback(new TargetRefused(`${hostname} did not resolve`), []);
      // Every address it resolves to is checked (not just the one used): a mixed answer is refused.
      for (const a of addresses) {
        const why = refusedAddress(a.address, policy);
        if (why) return callback(new TargetRefused(`${hostname} resolves to ${why}`), []);
      }
      if (options.all) return callback(null, usable);
      const first = usable[0]!;
      callback(null, first.address, first.family);
    });
  };
}
