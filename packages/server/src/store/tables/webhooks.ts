/**
 * Webhook endpoints and their deliveries (the deliveries themselves are written with the events that cause them:
 * store/outbox.ts). Claims take a lease; each backend claims its own way (PostgreSQL: SKIP LOCKED).
 */
import type { SqlDb } from "../sql/db.js";
import { raw, sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { Queries, WebhookDeliveryRecord, WebhookEndpointRecord } from "../types.js";

const ENDPOINTS = table<WebhookEndpointRecord>("webhook_endpoints", {
  id: "value",
  project_id: "value",
  created_at: "value",
  updated_at: "value",
  name: "value",
  url: "value",
  event_types: "json",
  secret: "value",
  secret_hint: "value",
  old_secret: "value",
  old_secret_expires_at: "value",
});

export const DELIVERIES = table<WebhookDeliveryRecord>("webhook_deliveries", {
  id: "value",
  endpoint_id: "value",
  project_id: "value",
  session_id: "value",
  event_id: "value",
  event_type: "value",
  event_created_at: "value",
  data: "json",
  created_at: "value",
  status: "value",
  attempts: "value",
  next_attempt_at: "value",
  lease_owner: "value",
  lease_until: "value",
  last_attempt_at: "value",
  last_status_code: "value",
  last_error: "value",
  delivered_at: "value",
  attempt_log: "json",
});

export type WebhookQueries = Pick<
  Queries,
  | "insertWebhookEndpoint"
  | "getWebhookEndpoint"
  | "updateWebhookEndpoint"
  | "deleteWebhookEndpoint"
  | "listWebhookEndpoints"
  | "getWebhookDelivery"
  | "listWebhookDeliveries"
  | "updateClaimedWebhookDelivery"
>;

export function webhookQueries(db: SqlDb): WebhookQueries {
  const endpoints = rows(db, ENDPOINTS);
  const deliveries = rows(db, DELIVERIES);
  return {
    async insertWebhookEndpoint(e) {
      await endpoints.insert(e);
    },
    getWebhookEndpoint: endpoints.get,
    updateWebhookEndpoint: (id, patch) => endpoints.update(id, patch),
    // its deliveries go with it (ON DELETE CASCADE)
    deleteWebhookEndpoint: endpoints.remove,
    listWebhookEndpoints: (opts) => endpoints.list(opts, [sql`project_id = ${opts.project_id}`]),
    getWebhookDelivery: deliveries.get,
    listWebhookDeliveries(endpointId, opts) {
      const conds = [sql`endpoint_id = ${endpointId}`];
      if (opts.status !== undefined) conds.push(sql`status = ${opts.status}`);
      return deliveries.list(opts, conds);
    },
    updateClaimedWebhookDelivery: (id, owner, patch) =>
      deliveries.update(id, patch, {
        set: [raw("lease_owner = NULL"), raw("lease_until = NULL")],
        conds: [sql`lease_owner = ${owner}`],
      }),
  };
}
