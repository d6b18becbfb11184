import type { Queries, WebhookDeliveryRecord, WebhookEndpointRecord } from "../types.js";
import { asIs, asJson, json, listByCreated, type PgDb, setClause } from "./db.js";

/** jsonb columns come back parsed: a row is a WebhookEndpointRecord. */
const COLS =
  "id, project_id, created_at, updated_at, name, url, event_types, secret, secret_hint, old_secret, " +
  "old_secret_expires_at";

const ENCODE = {
  updated_at: asIs,
  name: asIs,
  url: asIs,
  event_types: asJson,
  secret: asIs,
  secret_hint: asIs,
  old_secret: asIs,
  old_secret_expires_at: asIs,
};

/** A row is a WebhookDeliveryRecord. */
const D_COLS =
  "id, endpoint_id, project_id, session_id, event_id, event_type, event_created_at, data, created_at, status, " +
  "attempts, next_attempt_at, lease_owner, lease_until, last_attempt_at, last_status_code, last_error, " +
  "delivered_at, attempt_log";
const qualified = (alias: string, cols: string) =>
  cols
    .split(", ")
    .map((c) => `${alias}.${c}`)
    .join(", ");

const D_ENCODE = {
  status: asIs,
  next_attempt_at: asIs,
  last_attempt_at: asIs,
  last_status_code: asIs,
  last_error: asIs,
  delivered_at: asIs,
  attempt_log: asJson,
};

export type WebhookQueries = Pick<
  Queries,
  | "insertWebhookEndpoint"
  | "getWebhookEndpoint"
  | "updateWebhookEndpoint"
  | "deleteWebhookEndpoint"
  | "listWebhookEndpoints"
  | "getWebhookDelivery"
  | "listWebhookDeliveries"
  | "claimWebhookDeliveries"
  | "updateClaimedWebhookDelivery"
>;

/**
 * Webhook endpoints and their deliveries (the outbox rows themselves are written by append_events()). Every
 * instance's deliverer claims with SKIP LOCKED plus a lease: an attempt is made by one instance at a time.
 */
export function webhookQueries(db: PgDb): WebhookQueries {
  const get = (id: string) =>
    db.row<WebhookEndpointRecord>(`SELECT ${COLS} FROM webhook_endpoints WHERE id = $1`, [id]);
  return {
    async insertWebhookEndpoint(e) {
      await db.run(
        `INSERT INTO webhook_endpoints (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11)`,
        [
          e.id,
          e.project_id,
          e.created_at,
          e.updated_at,
          e.name,
          e.url,
          json(e.event_types),
          e.secret,
          e.secret_hint,
          e.old_secret,
          e.old_secret_expires_at,
        ],
      );
    },
    getWebhookEndpoint: get,
    async updateWebhookEndpoint(id, patch) {
      const set = setClause(patch, ENCODE, 2);
      if (set.params.length === 0) return get(id);
      return db.row<WebhookEndpointRecord>(
        `UPDATE webhook_endpoints SET ${set.sql} WHERE id = $1 RETURNING ${COLS}`,
        [id, ...set.params],
      );
    },
    async deleteWebhookEndpoint(id) {
      // its deliveries go with it (ON DELETE CASCADE)
      return (await db.run("DELETE FROM webhook_endpoints WHERE id = $1", [id])) > 0;
    },
    async listWebhookEndpoints(opts) {
      return listByCreated<WebhookEndpointRecord, WebhookEndpointRecord>(db, {
        table: "webhook_endpoints",
        cols: COLS,
        where: ["project_id = $1"],
        params: [opts.project_id],
        opts,
        map: (r) => r,
      });
    },
    async getWebhookDelivery(id) {
      return db.row<WebhookDeliveryRecord>(`SELECT ${D_COLS} FROM webhook_deliveries WHERE id = $1`, [id]);
    },
    async listWebhookDeliveries(endpointId, opts) {
      const where = ["endpoint_id = $1"];
      const params: unknown[] = [endpointId];
      if (opts.status !== undefined) {
        params.push(opts.status);
        where.push(`status = $${params.length}`);
      }
      return listByCreated<WebhookDeliveryRecord, WebhookDeliveryRecord>(db, {
        table: "webhook_deliveries",
        cols: D_COLS,
        where,
        params,
        opts,
        map: (r) => r,
      });
    },
    async claimWebhookDeliveries(now, owner, leaseUntil, limit) {
      const rows = await db.rows<WebhookDeliveryRecord>(
        "WITH c AS MATERIALIZED (SELECT rid FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1 " +
          "AND (lease_until IS NULL OR lease_until < $1) ORDER BY next_attempt_at ASC, rid ASC LIMIT $4 " +
          "FOR UPDATE SKIP LOCKED) " +
          "UPDATE webhook_deliveries t SET lease_owner = $2, lease_until = $3, attempts = t.attempts + 1 FROM c " +
          `WHERE t.rid = c.rid RETURNING ${qualified("t", D_COLS)}`,
        [now, owner, leaseUntil, Math.max(0, Math.trunc(limit))],
      );
      return rows.sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at);
    },
    async updateClaimedWebhookDelivery(id, owner, patch) {
      const set = setClause(patch, D_ENCODE, 3);
      return db.row<WebhookDeliveryRecord>(
        `UPDATE webhook_deliveries SET ${set.sql ? `${set.sql}, ` : ""}lease_owner = NULL, lease_until = NULL ` +
          `WHERE id = $1 AND lease_owner = $2 RETURNING ${D_COLS}`,
        [id, owner, ...set.params],
      );
    },
  };
}
