import type { Queries, WebhookDeliveryRecord, WebhookEndpointRecord } from "../types.js";
import { asIs, json, listByCreated, parse, type SqliteDb, setClause } from "./db.js";

interface EndpointRow {
  id: string;
  project_id: string;
  created_at: number;
  updated_at: number;
  name: string;
  url: string;
  event_types: string;
  secret: string;
  secret_hint: string;
  old_secret: string | null;
  old_secret_expires_at: number | null;
}

const COLS =
  "id, project_id, created_at, updated_at, name, url, event_types, secret, secret_hint, old_secret, " +
  "old_secret_expires_at";

const fromRow = (r: EndpointRow): WebhookEndpointRecord => ({ ...r, event_types: parse(r.event_types) });

const ENCODE = {
  updated_at: asIs,
  name: asIs,
  url: asIs,
  event_types: json,
  secret: asIs,
  secret_hint: asIs,
  old_secret: asIs,
  old_secret_expires_at: asIs,
};

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  project_id: string;
  session_id: string | null;
  event_id: string;
  event_type: string;
  event_created_at: number;
  data: string;
  created_at: number;
  status: string;
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  last_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: number | null;
  attempt_log: string;
}

const D_COLS =
  "id, endpoint_id, project_id, session_id, event_id, event_type, event_created_at, data, created_at, status, " +
  "attempts, next_attempt_at, lease_owner, lease_until, last_attempt_at, last_status_code, last_error, " +
  "delivered_at, attempt_log";

const deliveryFromRow = (r: DeliveryRow): WebhookDeliveryRecord => ({
  ...r,
  data: parse(r.data),
  status: r.status as WebhookDeliveryRecord["status"],
  attempt_log: parse(r.attempt_log),
});

const D_ENCODE = {
  status: asIs,
  next_attempt_at: asIs,
  last_attempt_at: asIs,
  last_status_code: asIs,
  last_error: asIs,
  delivered_at: asIs,
  attempt_log: json,
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

/** Webhook endpoints and their deliveries (the outbox rows themselves are written by the event append). */
export function webhookQueries(db: SqliteDb): WebhookQueries {
  const get = (id: string) => {
    const row = db.get<EndpointRow>(`SELECT ${COLS} FROM webhook_endpoints WHERE id = ?`, id);
    return row && fromRow(row);
  };
  const getDelivery = (id: string) => {
    const row = db.get<DeliveryRow>(`SELECT ${D_COLS} FROM webhook_deliveries WHERE id = ?`, id);
    return row && deliveryFromRow(row);
  };
  return {
    async insertWebhookEndpoint(e) {
      db.run(
        `INSERT INTO webhook_endpoints (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
      );
    },
    async getWebhookEndpoint(id) {
      return get(id);
    },
    async updateWebhookEndpoint(id, patch) {
      const set = setClause(patch, ENCODE);
      if (set.params.length > 0) {
        db.run(`UPDATE webhook_endpoints SET ${set.sql} WHERE id = ?`, ...set.params, id);
      }
      return get(id);
    },
    async deleteWebhookEndpoint(id) {
      // its deliveries go with it (ON DELETE CASCADE)
      return db.run("DELETE FROM webhook_endpoints WHERE id = ?", id).changes > 0;
    },
    async listWebhookEndpoints(opts) {
      return listByCreated(db, {
        table: "webhook_endpoints",
        cols: COLS,
        where: ["project_id = ?"],
        params: [opts.project_id],
        opts,
        map: fromRow,
      });
    },
    async getWebhookDelivery(id) {
      return getDelivery(id);
    },
    async listWebhookDeliveries(endpointId, opts) {
      const where = ["endpoint_id = ?"];
      const params: unknown[] = [endpointId];
      if (opts.status !== undefined) {
        where.push("status = ?");
        params.push(opts.status);
      }
      return listByCreated(db, {
        table: "webhook_deliveries",
        cols: D_COLS,
        where,
        params,
        opts,
        map: deliveryFromRow,
      });
    },
    async claimWebhookDeliveries(now, owner, leaseUntil, limit) {
      return db
        .all<DeliveryRow>(
          "UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 WHERE rid IN (" +
            "SELECT rid FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? " +
            "AND (lease_until IS NULL OR lease_until < ?) ORDER BY next_attempt_at ASC, rid ASC LIMIT ?) " +
            `RETURNING ${D_COLS}`,
          owner,
          leaseUntil,
          now,
          now,
          Math.max(0, Math.trunc(limit)),
        )
        .map(deliveryFromRow)
        .sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at);
    },
    async updateClaimedWebhookDelivery(id, owner, patch) {
      const set = setClause(patch, D_ENCODE);
      const changed = db.run(
        `UPDATE webhook_deliveries SET ${set.sql ? `${set.sql}, ` : ""}lease_owner = NULL, lease_until = NULL ` +
          "WHERE id = ? AND lease_owner = ?",
        ...set.params,
        id,
        owner,
      );
      return changed.changes > 0 ? getDelivery(id) : undefined;
    },
  };
}
