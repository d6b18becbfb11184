import { isIPv4 } from "node:net";

/** Names a loopback bind always answers to (the Host header check against DNS rebinding). */
export const LOOPBACK_HOST_NAMES: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

const LOOPBACK = new Set(["localhost", "::1", "0:0:0:0:0:0:0:1"]);

/** Loopback addresses only: 127.0.0.0/8 (also IPv4-mapped), ::1, localhost. A host NAME like "127.x.com" is not. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (LOOPBACK.has(h)) return true;
  const v4 = h.startsWith("::ffff:") ? h.slice(7) : h;
  return isIPv4(v4) && v4.startsWith("127.");
}
