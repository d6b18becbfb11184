/**
 * Reads the server name (SNI) from the first bytes a TLS client sends: the ClientHello handshake message, which may
 * span several TLS records. RFC 8446 §4.1.2 / RFC 6066 §3.
 */

/** The most a ClientHello may take before it is judged invalid. */
export const MAX_CLIENT_HELLO = 64 * 1024;

export type ClientHello =
  /** More bytes are needed. */
  | { state: "incomplete" }
  /** Not a TLS ClientHello. */
  | { state: "invalid" }
  | { state: "complete"; serverName: string | null };

/** Whether the first byte of a stream starts a TLS handshake record. */
export const looksLikeTls = (first: number): boolean => first === 0x16;

export function parseClientHello(data: Buffer): ClientHello {
  // Gather the handshake bytes from the records.
  const fragments: Buffer[] = [];
  let have = 0;
  let need = -1;
  let at = 0;
  while (need < 0 || have < need) {
    if (data.length < at + 5)
      return data.length > MAX_CLIENT_HELLO ? { state: "invalid" } : { state: "incomplete" };
    if (data[at] !== 0x16 || data[at + 1] !== 0x03) return { state: "invalid" };
    const len = data.readUInt16BE(at + 3);
    if (len === 0 || len > 16384 + 2048) return { state: "invalid" };
    if (data.length < at + 5 + len) return { state: "incomplete" };
    fragments.push(data.subarray(at + 5, at + 5 + len));
    have += len;
    at += 5 + len;
    if (need < 0) {
      const head = Buffer.concat(fragments);
      if (head.length < 4) continue;
      if (head[0] !== 0x01) return { state: "invalid" };
      need = 4 + head.readUIntBE(1, 3);
      if (need > MAX_CLIENT_HELLO) return { state: "invalid" };
    }
  }
  const hello = Buffer.concat(fragments).subarray(4, need);
  return parseHelloBody(hello);
}

function parseHelloBody(b: Buffer): ClientHello {
  let p = 2 + 32; // legacy_version, random
  const skip = (lenBytes: 1 | 2): boolean => {
    if (p + lenBytes > b.length) return false;
    const n = lenBytes === 1 ? b[p]! : b.readUInt16BE(p);
    p += lenBytes + n;
    return p <= b.length;
  };
  if (!skip(1) || !skip(2) || !skip(1)) return { state: "invalid" }; // session id, cipher suites, compression
  if (p === b.length) return { state: "complete", serverName: null }; // no extensions
  if (p + 2 > b.length) return { state: "invalid" };
  const end = p + 2 + b.readUInt16BE(p);
  p += 2;
  if (end > b.length) return { state: "invalid" };
  while (p + 4 <= end) {
    const type = b.readUInt16BE(p);
    const len = b.readUInt16BE(p + 2);
    const body = p + 4;
    p = body + len;
    if (p > end) return { state: "invalid" };
    if (type !== 0x0000) continue;
    // server_name: a list of (type, name); host_name is type 0.
    if (len < 2) return { state: "invalid" };
    let q = body + 2;
    const listEnd = q + b.readUInt16BE(body);
    if (listEnd > p) return { state: "invalid" };
    while (q + 3 <= listEnd) {
      const nameType = b[q]!;
      const nameLen = b.readUInt16BE(q + 1);
      const name = b.subarray(q + 3, q + 3 + nameLen);
      q += 3 + nameLen;
      if (q > listEnd) return { state: "invalid" };
      if (nameType === 0) return { state: "complete", serverName: name.toString("latin1") };
    }
    return { state: "complete", serverName: null };
  }
  return { state: "complete", serverName: null };
}
