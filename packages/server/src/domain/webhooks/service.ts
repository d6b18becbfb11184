/**
 * Webhook endpoints of a project: where its sessions' lifecycle events are sent (`agent.session.created`,
 * `.in_progress`, `.action_required`, `.idle`, `.failed`). The signing secret is shown once (creation, rotation)
 * and kept sealed; a rotation may keep the old secret signing for 24 hours beside the new one.
 */
import { randomBytes } from "node:crypto";
import type { Clock } from "../../kernel/clock.js";
import { badRequest, notFound, unprocessable } from "../../kernel/errors.js";
import type { Scope } from "../../model/scope.js";
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from "../../model/webhooks.js";
import { TargetRefused } from "../../platform/net/outbound-guard.js";
import type {
  ListOptions,
  Page,
  Store,
  WebhookDeliveryRecord,
  WebhookDeliveryStatus,
  WebhookEndpointPatch,
  WebhookEndpointRecord,
} from "../../store/types.js";
import { eventBody, type Sealer, secretContext, signingSecrets, signingTimestamp } from "./events.js";
import { checkWebhookUrl, postWebhook, type WebhookTargets } from "./sender.js";
import { newSigningSecret, secretHint, signedHeaders } from "./signing.js";

/** How long a rotated-out secret keeps signing when asked to. */
export const OLD_SECRET_OVERLAP_SECONDS = 24 * 3600;

export const newEndpointId = (): string => `whe_${randomBytes(12).toString("hex")}`;

export interface EndpointFields {
  name: string;
  url: string;
  event_types: string[];
}

export interface WebhookDeps {
  store: Store;
  clock: Clock;
  secrets: Sealer;
  targets: WebhookTargets;
}

export class WebhookService {
  constructor(private readonly deps: WebhookDeps) {}

  /** Creates an endpoint; returns it with its signing secret (the only time the secret is shown, with rotation). */
  async create(
    scope: Scope,
    f: EndpointFields,
  ): Promise<{ endpoint: WebhookEndpointRecord; signingSecret: string }> {
    const name = checkName(f.name);
    const eventTypes = checkEventTypes(f.event_types);
    const url = await this.checkUrl(f.url);
    const now = this.deps.clock.now();
    const id = newEndpointId();
    const signingSecret = newSigningSecret();
    const endpoint: WebhookEndpointRecord = {
      id,
      project_id: scope.projectId,
      created_at: now,
      updated_at: now,
      name,
      url,
      event_types: eventTypes,
      secret: this.deps.secrets.seal(signingSecret, secretContext(id)),
      secret_hint: secretHint(signingSecret),
      old_secret: null,
      old_secret_expires_at: null,
    };
    await this.deps.store.insertWebhookEndpoint(endpoint);
    return { endpoint, signingSecret };
  }

  /** The endpoint, if it belongs to the caller's project (another project's is "not found" too). */
  async get(scope: Scope, id: string): Promise<WebhookEndpointRecord> {
    const e = await this.deps.store.getWebhookEndpoint(id);
    if (!e || e.project_id !== scope.projectId) {
      throw notFound(`Webhook endpoint ${id} not found`, "webhook_endpoint_id");
    }
    return e;
  }

  list(scope: Scope, opts: ListOptions): Promise<Page<WebhookEndpointRecord>> {
    return this.deps.store.listWebhookEndpoints({ ...opts, project_id: scope.projectId });
  }

  /** Changes the given fields; `updated_at` moves only when something changed. */
  async update(scope: Scope, id: string, f: Partial<EndpointFields>): Promise<WebhookEndpointRecord> {
    const e = await this.get(scope, id);
    const patch: WebhookEndpointPatch = {};
    if (f.name !== undefined && f.name !== e.name) patch.name = checkName(f.name);
    if (f.url !== undefined && f.url !== e.url) patch.url = await this.checkUrl(f.url);
    if (f.event_types !== undefined) {
      const types = checkEventTypes(f.event_types);
      if (types.join(" ") !== e.event_types.join(" ")) patch.event_types = types;
    }
    if (Object.keys(patch).length === 0) return e;
    patch.updated_at = this.deps.clock.now();
    return this.saved(await this.deps.store.updateWebhookEndpoint(id, patch), id);
  }

  async delete(scope: Scope, id: string): Promise<void> {
    await this.get(scope, id);
    if (!(await this.deps.store.deleteWebhookEndpoint(id))) {
      throw notFound(`Webhook endpoint ${id} not found`, "webhook_endpoint_id");
    }
  }

  /**
   * A new signing secret (returned: shown once). With `keepOld`, the current secret keeps signing for 24 hours beside
   * the new one (each delivery carries both signatures); otherwise it stops at once.
   */
  async rotate(
    scope: Scope,
    id: string,
    keepOld: boolean,
  ): Promise<{ endpoint: WebhookEndpointRecord; signingSecret: string }> {
    const e = await this.get(scope, id);
    const now = this.deps.clock.now();
    const signingSecret = newSigningSecret();
    const endpoint = this.saved(
      await this.deps.store.updateWebhookEndpoint(id, {
        secret: this.deps.secrets.seal(signingSecret, secretContext(id)),
        secret_hint: secretHint(signingSecret),
        old_secret: keepOld ? e.secret : null,
        old_secret_expires_at: keepOld ? now + OLD_SECRET_OVERLAP_SECONDS : null,
        updated_at: now,
      }),
      id,
    );
    return { endpoint, signingSecret };
  }

  /**
   * Sends a sample event of `eventType` now (signed like any delivery): the endpoint's HTTP status, and why it does
   * not count as delivered (null: a 2xx; a redirect is not followed, so it is a failure like any other answer).
   */
  async test(
    scope: Scope,
    id: string,
    eventType: string,
  ): Promise<{ status_code: number; error: string | null }> {
    const e = await this.get(scope, id);
    const [type] = checkEventTypes([eventType], "event_type");
    const now = this.deps.clock.now();
    const sample = {
      event_id: `evt_test_${randomBytes(12).toString("hex")}`,
      event_type: type!,
      event_created_at: now,
      data: sampleData(type!),
    };
    const body = eventBody(sample);
    const headers = signedHeaders(
      signingSecrets(e, now, this.deps.secrets),
      sample.event_id,
      signingTimestamp(),
      body,
    );
    const result = await postWebhook(e.url, body, headers, this.deps.targets);
    if (result.status_code === null) {
      throw unprocessable(`The test event could not be delivered: ${result.error ?? "no answer"}`, "url");
    }
    return { status_code: result.status_code, error: result.error };
  }

  /** The endpoint's deliveries, newest first (this server's extension). */
  async deliveries(
    scope: Scope,
    id: string,
    opts: ListOptions & { status?: WebhookDeliveryStatus | undefined },
  ): Promise<Page<WebhookDeliveryRecord>> {
    await this.get(scope, id);
    const { status, ...rest } = opts;
    return this.deps.store.listWebhookDeliveries(id, { ...rest, ...(status ? { status } : {}) });
  }

  /** A URL webhooks may go to: as written, and every address its name resolves to now (each delivery checks again). */
  private async checkUrl(url: string): Promise<string> {
    const { targets } = this.deps;
    try {
      await targets.guard.checkResolved(checkWebhookUrl(url, targets));
    } catch (err) {
      if (err instanceof TargetRefused) throw badRequest(`'url': ${err.message}`, "url");
      throw err;
    }
    return url;
  }

  private saved(e: WebhookEndpointRecord | undefined, id: string): WebhookEndpointRecord {
    if (!e) throw notFound(`Webhook endpoint ${id} not found`, "webhook_endpoint_id");
    return e;
  }
}

function checkName(name: string): string {
  if (!name.trim()) throw badRequest("'name' must not be empty", "name");
  return name;
}

/** Event types this server sends, without duplicates, in the order given (400 for others). */
function checkEventTypes(types: readonly string[], param = "event_types"): WebhookEventType[] {
  if (types.length === 0) throw badRequest(`'${param}' must name at least one event type`, param);
  const known = new Set<string>(WEBHOOK_EVENT_TYPES);
  const out: WebhookEventType[] = [];
  for (const t of types) {
    if (!known.has(t)) {
      throw badRequest(
        `'${param}': this server does not send ${t} events (it sends ${WEBHOOK_EVENT_TYPES.join(", ")})`,
        param,
      );
    }
    if (!out.includes(t as WebhookEventType)) out.push(t as WebhookEventType);
  }
  return out;
}

/** The data of a test event (a made-up session). */
function sampleData(type: WebhookEventType): Record<string, unknown> {
  if (type.startsWith("agent.environment.")) return { id: `env_test_${randomBytes(8).toString("hex")}` };
  const id = `sess_test_${randomBytes(8).toString("hex")}`;
  if (type === "agent.session.action_required") return { id, required_action: { type: "function_call" } };
  if (type === "agent.session.repository.output") {
    const commit = randomBytes(20).toString("hex");
    return {
      id,
      turn_id: null,
      repository: 0,
      url: "https://git.example.com/app.git",
      branch: `codex/${id}`,
      commit,
      push: "pushed",
      error: null,
    };
  }
  return { id, environment_type: "none" };
}
