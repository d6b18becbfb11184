/**
 * Host names and authorities as a proxy receives them, normalised the way a URL parser does (lower case, punycode,
 * IPv4 in dotted form however it was written: `127.1`, `2130706433`, `0x7f.0.0.1`), so that the policy compares
 * one spelling of each host.
 */
import { isIP } from "node:net";
import { normalizeAddress } from "./addresses.js";

/** A target host: a DNS name (ASCII, lower case, no trailing dot) or an IP address (no brackets). */
export interface TargetHost {
  readonly kind: "name" | "ip";
  readonly host: string;
}

export class BadTarget extends Error {}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** Normalises a host as written (a name, an IPv4 address in any URL form, an IPv6 address with or without brackets). */
export function parseHost(written: string): TargetHost {
  const raw = written.trim();
  if (raw === "" || /[\s/?#@\\%]/.test(raw))
    throw new BadTarget(`${JSON.stringify(written)} is not a host name`);
  const bare = raw.replace(/^\[(.*)\]$/, "$1");
  if (isIP(bare) === 6) return { kind: "ip", host: normalizeAddress(bare) };
  if (bare.includes(":")) throw new BadTarget(`${JSON.stringify(written)} is not a host name`);
  let hostname: string;
  try {
    hostname = new URL(`http://${bare}/`).hostname;
  } catch {
    throw new BadTarget(`${JSON.stringify(written)} is not a host name`);
  }
  if (isIP(hostname) === 4) return { kind: "ip", host: hostname };
  const name = hostname.replace(/\.$/, "");
  if (name.length === 0 || name.length > 253 || !name.split(".").every((l) => LABEL.test(l))) {
    throw new BadTarget(`${JSON.stringify(written)} is not a host name`);
  }
  return { kind: "name", host: name };
}

const parsePort = (text: string, written: string): number => {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) throw new BadTarget(`${JSON.stringify(written)} has no valid port`);
  return port;
};

/** A CONNECT authority, `host:port` or `[v6]:port` (the port is required). */
export function parseAuthority(authority: string): { target: TargetHost; port: number } {
  const m = /^(\[[^\]]*\]|[^:[\]]+):([^:]*)$/.exec(authority);
  if (!m) throw new BadTarget(`${JSON.stringify(authority)} is not host:port`);
  return { target: parseHost(m[1]!), port: parsePort(m[2]!, authority) };
}

/** An absolute-form request target (`http://host[:port]/path`). */
export function parseAbsoluteUrl(url: string): { target: TargetHost; port: number; path: string } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new BadTarget("a proxy request needs an absolute http:// URL");
  }
  if (u.protocol !== "http:") {
    throw new BadTarget(`${u.protocol}// is not proxied as a request (HTTPS goes through CONNECT)`);
  }
  if (u.username || u.password) throw new BadTarget("credentials in the URL are not proxied");
  if (!/^http:\/\//i.test(url)) throw new BadTarget("a proxy request needs an absolute http:// URL");
  const target = parseHost(u.hostname);
  return { target, port: u.port === "" ? 80 : Number(u.port), path: `${u.pathname}${u.search}` };
}

/** The host as it is written in a Host header or a URL (IPv6 in brackets). */
export const hostForUrl = (t: TargetHost): string =>
  t.kind === "ip" && t.host.includes(":") ? `[${t.host}]` : t.host;
