/** Webhook event bodies and which secrets sign them. */
import type { WebhookDeliveryRecord, WebhookEndpointRecord } from "../../store/types.js";

/** What seals and opens secrets at rest (kernel/secrets.ts). */
export interface Sealer {
  seal(plain: string, context: string): string;
  open(sealed: string, context: string): string;
}

/** What a sealed endpoint secret is bound to. */
export const secretContext = (endpointId: string): string => `webhook_endpoint:${endpointId}`;

/** The body of a webhook event (`{id, object: "event", created_at, type, data}`), as sent. */
export function eventBody(
  d: Pick<WebhookDeliveryRecord, "event_id" | "event_type" | "event_created_at" | "data">,
): string {
  return JSON.stringify({
    id: d.event_id,
    object: "event",
    created_at: Math.floor(d.event_created_at),
    type: d.event_type,
    data: d.data,
  });
}

/** The secrets an endpoint signs with at `now`: its secret, and the previous one during a rotation's overlap. */
export function signingSecrets(e: WebhookEndpointRecord, now: number, box: Sealer): string[] {
  const secrets = [box.open(e.secret, secretContext(e.id))];
  if (e.old_secret && e.old_secret_expires_at !== null && e.old_secret_expires_at > now) {
    secrets.push(box.open(e.old_secret, secretContext(e.id)));
  }
  return secrets;
}

/**
 * The time a signature carries: the wall clock, always. Receivers check it against their own clock (the official
 * SDK allows 5 minutes either way), so it must be real time even when the service's clock is not (tests move it).
 */
export const signingTimestamp = (): number => Math.floor(Date.now() / 1000);
