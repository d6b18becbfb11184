/**
 * From an allowed host:port to a connected socket: the name resolved once by the proxy, every address checked
 * (public, or let through by the operator; never one of the service's own), and the connection made to a checked
 * address only — never a second resolution, so DNS rebinding cannot swap the address in between.
 */
import { lookup } from "node:dns";
import { connect, isIP, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { classifyAddress, inCidrs, nonPublic, normalizeAddress } from "./addresses.js";
import type { TargetHost } from "./hosts.js";
import type { PrivateAllowance } from "./policy.js";
import type { Refusal } from "./refusals.js";

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** How names are resolved: every address of a name. */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    lookup(hostname, { all: true, verbatim: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses),
    ),
  );

/** One of the service's own listeners: an address (or every local one) and a port (or every port). */
export interface ServiceAddress {
  address: string | "local";
  port: number | null;
}

/** Parses `ip:port`, `[v6]:port` or a bare address; `0.0.0.0` / `::` stand for every address of this machine. */
export function parseServiceAddresses(list: readonly string[]): ServiceAddress[] {
  return list.map((entry) => {
    const m = /^\[([^\]]+)\]:(\d+)$/.exec(entry) ?? /^([^:]+):(\d+)$/.exec(entry);
    const address = m ? m[1]! : entry.replace(/^\[(.*)\]$/, "$1");
    const port = m ? Number(m[2]) : null;
    if (isIP(address) === 0 || (port !== null && !(port >= 1 && port <= 65535))) {
      throw new TypeError(
        `serviceAddresses: ${JSON.stringify(entry)} is not ip:port, [ipv6]:port or an address`,
      );
    }
    const normal = normalizeAddress(address);
    return { address: normal === "0.0.0.0" || normal === "::" ? "local" : normal, port };
  });
}

/** Whether an address is this machine's: loopback, unspecified, or on one of its interfaces. */
function isLocalAddress(address: string): boolean {
  const c = classifyAddress(address);
  if (!c.public && (c.range === "loopback" || c.range === "unspecified") && !c.carried) return true;
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) if (normalizeAddress(i.address.replace(/%.*$/, "")) === address) return true;
  }
  return false;
}

function isServiceAddress(address: string, port: number, service: readonly ServiceAddress[]): boolean {
  // Connecting to the unspecified address reaches this machine's own listeners.
  const unspecified = address === "0.0.0.0" || address === "::";
  return service.some(
    (s) =>
      (s.port === null || s.port === port) &&
      (s.address === "local" ? isLocalAddress(address) : s.address === address || unspecified),
  );
}

export interface AddressRules {
  privateAllowance: PrivateAllowance;
  serviceAddresses: readonly ServiceAddress[];
}

/** Why the proxy must not connect to this address:port (null: it may). */
export function refuseAddress(
  host: string,
  address: string,
  port: number,
  rules: AddressRules,
): Refusal | null {
  const normal = normalizeAddress(address);
  const shown = host === address ? address : `${host} (${address})`;
  if (isServiceAddress(normal, port, rules.serviceAddresses)) {
    return { reason: "service_address", message: `${shown}:${port} is this service's own address` };
  }
  if (rules.privateAllowance === "all") return null;
  const why = nonPublic(address);
  if (why === null) return null;
  if (rules.privateAllowance && inCidrs(normal, rules.privateAllowance)) return null;
  return {
    reason: "private_address",
    message: host === address ? why : `${host} resolves to ${why.replace(`${address} is `, `${address}, `)}`,
  };
}

/** Resolves a target and checks every address; the checked addresses to connect to, or a refusal. */
export async function resolveChecked(
  target: TargetHost,
  port: number,
  rules: AddressRules,
  resolver: Resolver,
  timeoutMs: number,
): Promise<{ addresses: ResolvedAddress[] } | { refusal: Refusal }> {
  let answer: readonly ResolvedAddress[];
  if (target.kind === "ip") {
    answer = [{ address: target.host, family: isIP(target.host) }];
  } else {
    try {
      answer = await withTimeout(resolver(target.host), timeoutMs);
    } catch (e) {
      const code = e instanceof TimedOut ? `no answer within ${timeoutMs} ms` : errorCode(e);
      return {
        refusal: { reason: "resolve_failed", message: `${target.host} could not be resolved (${code})` },
      };
    }
  }
  const addresses: ResolvedAddress[] = [];
  for (const a of answer) {
    if (isIP(a.address) === 0) {
      return { refusal: { reason: "resolve_failed", message: `${target.host} resolved to a non-address` } };
    }
    // Every address is checked, not only the one used: a mixed answer is refused.
    const refusal = refuseAddress(target.host, a.address, port, rules);
    if (refusal) return { refusal };
    addresses.push({ address: normalizeAddress(a.address), family: isIP(normalizeAddress(a.address)) });
  }
  if (addresses.length === 0) {
    return {
      refusal: { reason: "resolve_failed", message: `${target.host} did not resolve to any address` },
    };
  }
  return { addresses };
}

class TimedOut extends Error {}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new TimedOut()), ms);
    timer.unref();
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

const errorCode = (e: unknown): string =>
  (e as NodeJS.ErrnoException)?.code ?? (e instanceof Error ? e.message : String(e));

/**
 * Connects to the first checked address that answers (in the resolver's order). The socket is returned connected;
 * a refusal says why none did.
 */
export async function connectChecked(
  addresses: readonly ResolvedAddress[],
  port: number,
  host: string,
  timeoutMs: number,
): Promise<{ socket: Socket; address: string } | { refusal: Refusal }> {
  let last: Refusal = { reason: "upstream_failed", message: `${host}:${port} could not be reached` };
  for (const a of addresses) {
    const outcome = await new Promise<Socket | Refusal>((resolve) => {
      const socket = connect({ host: a.address, port, family: a.family, noDelay: true });
      const timer = setTimeout(() => {
        socket.destroy();
        resolve({
          reason: "upstream_timeout",
          message: `${host}:${port} did not answer within ${timeoutMs} ms`,
        });
      }, timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(socket);
      });
      socket.once("error", (e) => {
        clearTimeout(timer);
        resolve({
          reason: "upstream_failed",
          message: `${host}:${port} could not be reached (${errorCode(e)})`,
        });
      });
    });
    if (!("reason" in outcome)) return { socket: outcome, address: a.address };
    last = outcome;
  }
  return { refusal: last };
}
