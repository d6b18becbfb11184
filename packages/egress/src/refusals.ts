/** Why the proxy refused, and how each reason is answered (HTTP status, SOCKS5 reply code). */

export type EgressRefusal =
  | "not_allowed"
  | "blocked"
  | "network_disabled"
  | "port_not_allowed"
  | "ip_literal"
  | "private_address"
  | "service_address"
  | "resolve_failed"
  | "sni_mismatch"
  | "host_mismatch"
  | "too_many_connections"
  | "bad_request"
  | "unsupported"
  | "upstream_failed"
  | "upstream_timeout"
  | "upstream_certificate";

export interface Refusal {
  reason: EgressRefusal;
  /** A short sentence for the client (names hosts and addresses, never a secret). */
  message: string;
}

const STATUS: Record<EgressRefusal, number> = {
  not_allowed: 403,
  blocked: 403,
  network_disabled: 403,
  port_not_allowed: 403,
  ip_literal: 403,
  private_address: 403,
  service_address: 403,
  resolve_failed: 403,
  sni_mismatch: 403,
  host_mismatch: 403,
  too_many_connections: 503,
  bad_request: 400,
  unsupported: 400,
  upstream_failed: 502,
  upstream_timeout: 504,
  upstream_certificate: 502,
};

export const statusOf = (reason: EgressRefusal): number => STATUS[reason];

/** SOCKS5 reply codes (RFC 1928 §6). */
export function socksReplyOf(reason: EgressRefusal): number {
  switch (reason) {
    case "resolve_failed":
      return 0x04; // host unreachable
    case "upstream_failed":
      return 0x05; // connection refused
    case "upstream_timeout":
      return 0x06; // TTL expired (the closest to a timeout)
    case "unsupported":
      return 0x07; // command not supported
    case "too_many_connections":
    case "bad_request":
    case "upstream_certificate":
      return 0x01; // general failure
    default:
      return 0x02; // connection not allowed by ruleset
  }
}

export const REFUSED_HEADER = "x-egress-refused";

/** The JSON body of a refusal. */
export function refusalBody(refusal: Refusal, host: string | null, port: number | null): string {
  return `${JSON.stringify({
    error: { type: "egress_refused", reason: refusal.reason, host, port, message: refusal.message },
  })}\n`;
}

/** A complete HTTP/1.1 refusal response as bytes (for raw sockets: CONNECT, unparsable input, the connection cap). */
export function rawHttpRefusal(
  refusal: Refusal,
  host: string | null,
  port: number | null,
  status = statusOf(refusal.reason),
): string {
  const body = refusalBody(refusal, host, port);
  const text = STATUS_TEXT[status] ?? "Error";
  return (
    `HTTP/1.1 ${status} ${text}\r\n${REFUSED_HEADER}: ${refusal.reason}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  );
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  431: "Request Header Fields Too Large",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};
