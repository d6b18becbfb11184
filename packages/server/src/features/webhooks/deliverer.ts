/**
 * Delivers the webhook outbox, on every instance, at least once: a pending delivery is claimed (SKIP LOCKED on
 * PostgreSQL, one UPDATE on SQLite) with a lease, sent, and its outcome recorded. Each attempt is signed afresh
 * (a new timestamp; `webhook-id` is the event id, the same for every attempt so receivers can drop duplicates).
 * A failed attempt (no answer, a timeout, anything but a 2xx, a redirect) is retried with exponential backoff and
 * jitter — about 30 s, 2 min, 8 min, 32 min, 2 h, then every 6 h (±25 %) — until `retrySeconds` after the event,
 * then the delivery is failed. Events are not ordered across deliveries (as with the official webhooks).
 */
import type { Logger } from "pino";
import { eventBody, type Sealer, signingSecrets, signingTimestamp } from "../../domain/webhooks/events.js";
import { postWebhook, type SendResult, type WebhookTargets } from "../../domain/webhooks/sender.js";
import { signedHeaders } from "../../domain/webhooks/signing.js";
import type { Clock } from "../../kernel/clock.js";
import { Poller } from "../../kernel/poller.js";
import type { Store, WebhookDeliveryPatch, WebhookDeliveryRecord } from "../../store/types.js";

/** Deliveries claimed (and sent in parallel) at once. */
const BATCH = 20;
/** A claim's lease: longer than an attempt can take (10 s), so one instance at a time makes it. */
const LEASE_SECONDS = 60;
/** Attempts kept on a delivery. */
const KEEP_ATTEMPTS = 10;
const FIRST_RETRY_SECONDS = 30;
const MAX_RETRY_SECONDS = 6 * 3600;

/**
 * The delay before attempt n + 1 after n failed ones: 30 s × 4^(n−1), at most 6 h, ±25 % jitter, in whole seconds
 * (times are stored as whole seconds: a fractional delay would be cut, and 22.5 s would become 22, below −25 %).
 * Rounding to the nearest second keeps it inside the ±25 % bounds, whose ends are whole or half seconds.
 */
export function retryDelay(failedAttempts: number, random = Math.random): number {
  const base = Math.min(MAX_RETRY_SECONDS, FIRST_RETRY_SECONDS * 4 ** Math.max(0, failedAttempts - 1));
  return Math.round(base * (0.75 + 0.5 * random()));
}

export interface WebhookDelivererDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  secrets: Sealer;
  targets: WebhookTargets;
  instanceId: string;
  pollMs: number;
  /** How long after its event a delivery is retried. */
  retrySeconds: number;
}

export class WebhookDeliverer {
  private readonly poller: Poller;
  private abort = new AbortController();

  constructor(private readonly deps: WebhookDelivererDeps) {
    this.poller = new Poller(deps, "webhook delivery pass failed", () => this.pass());
  }

  private get stopped(): boolean {
    return this.poller.stopped;
  }

  start(): void {
    this.abort = new AbortController();
    this.poller.start();
  }

  /** Stops: attempts in flight are abandoned unrecorded (their lease expires and the delivery is made again). */
  async stop(): Promise<void> {
    const stopped = this.poller.stop();
    this.abort.abort();
    await stopped;
  }

  /** Sends what is due now (one pass at a time; a kick during one runs another after it). */
  kick(): void {
    this.poller.kick();
  }

  async pass(): Promise<void> {
    const { store, clock, instanceId } = this.deps;
    for (;;) {
      if (this.stopped) return;
      const now = clock.now();
      const batch = await store.claimWebhookDeliveries(now, instanceId, now + LEASE_SECONDS, BATCH);
      await Promise.all(batch.map((d) => this.attempt(d)));
      if (batch.length < BATCH) return;
    }
  }

  /** One attempt of a claimed delivery, and its outcome. */
  private async attempt(d: WebhookDeliveryRecord): Promise<void> {
    const { store, clock, logger, instanceId } = this.deps;
    const endpoint = await store.getWebhookEndpoint(d.endpoint_id);
    if (!endpoint) return; // deleted meanwhile, and its deliveries with it
    let result: SendResult;
    try {
      const body = eventBody(d);
      const headers = signedHeaders(
        signingSecrets(endpoint, clock.now(), this.deps.secrets),
        d.event_id,
        signingTimestamp(),
        body,
      );
      result = await postWebhook(endpoint.url, body, headers, {
        ...this.deps.targets,
        signal: this.abort.signal,
      });
    } catch (err) {
      // e.g. a secret sealed with another key (instances that do not share AGENT_SECRET_KEY)
      result = { status_code: null, error: err instanceof Error ? err.message : String(err), duration_ms: 0 };
    }
    if (this.stopped) return;
    const now = clock.now();
    const attempt = { at: now, ...result };
    const common: WebhookDeliveryPatch = {
      last_attempt_at: now,
      last_status_code: result.status_code,
      last_error: result.error,
      attempt_log: [...d.attempt_log, attempt].slice(-KEEP_ATTEMPTS),
    };
    let patch: WebhookDeliveryPatch;
    if (result.error === null) {
      patch = { ...common, status: "delivered", delivered_at: now };
    } else {
      const retryAt = now + retryDelay(d.attempts);
      patch =
        retryAt > d.created_at + this.deps.retrySeconds
          ? { ...common, status: "failed" }
          : { ...common, status: "pending", next_attempt_at: retryAt };
      logger.warn(
        {
          endpoint: d.endpoint_id,
          delivery: d.id,
          event: d.event_id,
          attempt: d.attempts,
          status: result.status_code,
          err: result.error,
          gave_up: patch.status === "failed",
        },
        "webhook attempt failed",
      );
    }
    if (!(await store.updateClaimedWebhookDelivery(d.id, instanceId, patch))) {
      logger.warn({ delivery: d.id }, "webhook delivery lease lost before its outcome was recorded");
    }
  }
}
