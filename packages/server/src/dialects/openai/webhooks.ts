/**
 * Official webhook endpoints (`/v1/webhook_endpoints`, `/v1/webhook_event_types`), as the openai SDK 7.55.0 types
 * them. The SDK sends these requests without `OpenAI-Beta: agents=v1`, so they are served whatever the dialect
 * header says, always in the official shapes (errors included). This server's extensions:
 * `GET /v1/webhook_endpoints/{id}/deliveries` lists an endpoint's deliveries and their latest attempts; a test's
 * result says whether the answer counts as delivered (`success` is the official constant `true`).
 */

import type {
  WebhookEndpoint,
  WebhookEndpointTestResult,
  WebhookEndpointWithSecret,
} from "openai/resources/webhooks/webhooks";
import { z } from "zod";
import type { Application } from "../../application/index.js";
import type { App } from "../../http/app-types.js";
import { ListQuery } from "../../http/validate.js";
import type { WebhookDeliveryRecord, WebhookEndpointRecord } from "../../model/records.js";
import { WEBHOOK_EVENT_TYPES } from "../../model/webhooks.js";
import * as openai from "./render.js";

const secs = (t: number) => Math.floor(t);
const secsOrNull = (t: number | null) => (t === null ? null : Math.floor(t));

const EventTypes = z.array(z.string().min(1)).min(1).max(50);

const Create = z.object({
  name: z.string().min(1).max(256),
  url: z.string().min(1).max(2048),
  event_types: EventTypes,
});
const Update = z.object({
  name: z.string().min(1).max(256).optional(),
  url: z.string().min(1).max(2048).optional(),
  event_types: EventTypes.optional(),
});
const Rotate = z.object({ keep_old_secret_active_for_24_hours: z.boolean().optional() });
const Test = z.object({ event_type: z.string().min(1) });

const EndpointParams = z.object({ webhook_endpoint_id: z.string() });
const EndpointListQuery = ListQuery.omit({ order: true });
const DeliveryListQuery = ListQuery.extend({ status: z.enum(["pending", "delivered", "failed"]).optional() });

export function endpointObject(e: WebhookEndpointRecord): WebhookEndpoint {
  return {
    id: e.id,
    object: "webhook_endpoint",
    created_at: secs(e.created_at),
    updated_at: secs(e.updated_at),
    name: e.name,
    url: e.url,
    event_types: e.event_types,
    signing_secret_hint: e.secret_hint,
  };
}

const withSecret = (e: WebhookEndpointRecord, signingSecret: string): WebhookEndpointWithSecret => ({
  ...endpointObject(e),
  signing_secret: signingSecret,
});

/** A delivery (this server's extension): the event, where its delivery stands and its latest attempts. */
export function deliveryObject(d: WebhookDeliveryRecord) {
  const last = d.attempt_log.at(-1) ?? null;
  return {
    id: d.id,
    object: "webhook_endpoint.delivery" as const,
    webhook_endpoint_id: d.endpoint_id,
    created_at: secs(d.created_at),
    event: { id: d.event_id, type: d.event_type, created_at: secs(d.event_created_at), data: d.data },
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.status === "pending" ? secs(d.next_attempt_at) : null,
    delivered_at: secsOrNull(d.delivered_at),
    last_attempt: last && attemptObject(last),
    attempt_log: d.attempt_log.map(attemptObject),
  };
}

const attemptObject = (a: WebhookDeliveryRecord["attempt_log"][number]) => ({
  at: secs(a.at),
  status_code: a.status_code,
  error: a.error,
  duration_ms: a.duration_ms,
});

/** Served whatever the dialect header says (http/dialect.ts: these paths are official), in the official shapes. */
export function webhookRoutes(app: App, ops: Application): void {
  routes(app, ops);
}

function routes(app: App, { webhooks }: Application): void {
  const path = "/v1/webhook_endpoints";
  const one = `${path}/:webhook_endpoint_id`;

  app.get("/v1/webhook_event_types", async () => ({ object: "list", data: [...WEBHOOK_EVENT_TYPES] }));

  app.post(path, { schema: { body: Create } }, async (req) => {
    const { endpoint, signingSecret } = await webhooks.create(req.scope, req.body);
    return withSecret(endpoint, signingSecret);
  });

  app.get(path, { schema: { querystring: EndpointListQuery } }, async (req) => {
    const q = req.query;
    const p = await webhooks.list(req.scope, {
      ...(q.limit ? { limit: q.limit } : {}),
      ...(q.after ? { after: q.after } : {}),
    });
    return openai.page({ data: p.data.map(endpointObject), has_more: p.has_more });
  });

  app.get(one, { schema: { params: EndpointParams } }, async (req) =>
    endpointObject(await webhooks.get(req.scope, req.params.webhook_endpoint_id)),
  );

  app.post(one, { schema: { params: EndpointParams, body: Update } }, async (req) => {
    const b = req.body;
    return endpointObject(
      await webhooks.update(req.scope, req.params.webhook_endpoint_id, {
        ...(b.name !== undefined ? { name: b.name } : {}),
        ...(b.url !== undefined ? { url: b.url } : {}),
        ...(b.event_types !== undefined ? { event_types: b.event_types } : {}),
      }),
    );
  });

  app.delete(one, { schema: { params: EndpointParams } }, async (req) => {
    await webhooks.delete(req.scope, req.params.webhook_endpoint_id);
    return { id: req.params.webhook_endpoint_id, object: "webhook_endpoint.deleted", deleted: true };
  });

  app.post(`${one}/rotate_secret`, { schema: { params: EndpointParams, body: Rotate } }, async (req) => {
    const { endpoint, signingSecret } = await webhooks.rotate(
      req.scope,
      req.params.webhook_endpoint_id,
      req.body.keep_old_secret_active_for_24_hours === true,
    );
    return withSecret(endpoint, signingSecret);
  });

  app.post(
    `${one}/test`,
    { schema: { params: EndpointParams, body: Test } },
    async (req): Promise<WebhookEndpointTestResult & { delivered: boolean; error: string | null }> => {
      const result = await webhooks.test(req.scope, req.params.webhook_endpoint_id, req.body.event_type);
      return {
        object: "webhook_endpoint.test",
        event_type: req.body.event_type,
        status_code: result.status_code,
        // The official API's constant: the test request completed (whatever the endpoint answered).
        success: true,
        webhook_endpoint_id: req.params.webhook_endpoint_id,
        // This server's extension: whether a delivery would count this answer as delivered (a 2xx), and if not why.
        delivered: result.error === null,
        error: result.error,
      };
    },
  );

  app.get(
    `${one}/deliveries`,
    { schema: { params: EndpointParams, querystring: DeliveryListQuery } },
    async (req) => {
      const q = req.query;
      const p = await webhooks.deliveries(req.scope, req.params.webhook_endpoint_id, {
        ...(q.limit ? { limit: q.limit } : {}),
        ...(q.after ? { after: q.after } : {}),
        ...(q.order ? { order: q.order } : {}),
        ...(q.status ? { status: q.status } : {}),
      });
      return openai.page({ data: p.data.map(deliveryObject), has_more: p.has_more });
    },
  );
}
