/**
 * Webhook signatures the Standard Webhooks way (what the official SDK's `client.webhooks.unwrap` verifies): the
 * secret is `whsec_<base64 key>`; each attempt sends `webhook-id` (the event id), `webhook-timestamp` (Unix
 * seconds, when the attempt is made) and `webhook-signature: v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`,
 * one signature per secret in use (space-separated: the new and the old one during a rotation's overlap).
 */
import { createHmac, randomBytes } from "node:crypto";

const PREFIX = "whsec_";

/** A new signing secret: 24 random bytes (192 bits), base64. */
export const newSigningSecret = (): string => `${PREFIX}${randomBytes(24).toString("base64")}`;

/** A masked hint of a secret: its prefix and last four characters. */
export const secretHint = (secret: string): string => `${PREFIX}…${secret.slice(-4)}`;

function keyOf(secret: string): Buffer {
  return secret.startsWith(PREFIX) ? Buffer.from(secret.slice(PREFIX.length), "base64") : Buffer.from(secret);
}

/** The `webhook-signature` header value for a message signed with each of `secrets`. */
export function signature(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets
    .map((s) => `v1,${createHmac("sha256", keyOf(s)).update(`${id}.${timestamp}.${body}`).digest("base64")}`)
    .join(" ");
}

/** The three Standard Webhooks headers of one attempt. */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  timestamp: number,
  body: string,
): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signature(secrets, id, timestamp, body),
  };
}
