/**
 * The SOCKS5 handshake (RFC 1928), as far as this proxy speaks it: no authentication, the CONNECT command only, any
 * address type (names are resolved by the proxy: `socks5h://`; addresses are IP literals, under the same policy).
 */

export const SOCKS_VERSION = 0x05;

export type Parsed<T> =
  | { state: "incomplete" }
  | { state: "invalid"; message: string }
  | ({ state: "done"; rest: Buffer } & T);

/** The client's greeting: the authentication methods it offers. */
export function parseGreeting(b: Buffer): Parsed<{ noAuth: boolean }> {
  if (b.length < 2) return { state: "incomplete" };
  if (b[0] !== SOCKS_VERSION) return { state: "invalid", message: "not a SOCKS5 greeting" };
  const n = b[1]!;
  if (n === 0) return { state: "invalid", message: "a SOCKS5 greeting offers no method" };
  if (b.length < 2 + n) return { state: "incomplete" };
  return { state: "done", noAuth: b.subarray(2, 2 + n).includes(0x00), rest: b.subarray(2 + n) };
}

/** The client's request: a command and where to. `host` is a name or an address as written. */
export function parseRequest(b: Buffer): Parsed<{ command: number; host: string; port: number }> {
  if (b.length < 5) return { state: "incomplete" };
  if (b[0] !== SOCKS_VERSION || b[2] !== 0x00) return { state: "invalid", message: "not a SOCKS5 request" };
  const command = b[1]!;
  const type = b[3]!;
  let host: string;
  let at: number;
  if (type === 0x01) {
    if (b.length < 4 + 4 + 2) return { state: "incomplete" };
    host = [...b.subarray(4, 8)].join(".");
    at = 8;
  } else if (type === 0x03) {
    const len = b[4]!;
    if (len === 0) return { state: "invalid", message: "an empty host name" };
    if (b.length < 5 + len + 2) return { state: "incomplete" };
    host = b.subarray(5, 5 + len).toString("latin1");
    at = 5 + len;
  } else if (type === 0x04) {
    if (b.length < 4 + 16 + 2) return { state: "incomplete" };
    const groups: string[] = [];
    for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(4 + i).toString(16));
    host = groups.join(":");
    at = 20;
  } else {
    return { state: "invalid", message: `SOCKS5 address type ${type} is not known` };
  }
  return { state: "done", command, host, port: b.readUInt16BE(at), rest: b.subarray(at + 2) };
}

/** A reply: `code` 0 for success; the bound address is never disclosed (0.0.0.0:0). */
export const reply = (code: number): Buffer =>
  Buffer.from([SOCKS_VERSION, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0]);

/** The answer to a greeting: no authentication (0x00) or no acceptable method (0xff). */
export const methodChoice = (noAuth: boolean): Buffer => Buffer.from([SOCKS_VERSION, noAuth ? 0x00 : 0xff]);
