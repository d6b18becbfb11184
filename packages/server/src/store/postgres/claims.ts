/**
 * PostgreSQL's lease claims of webhook deliveries and automation invocations, each one statement: the rows are
 * picked (and locked, skipping those another instance holds) once, then leased — an attempt is made by one
 * instance at a time.
 */
import { limitOf, sql } from "../sql/query.js";
import { INVOCATIONS } from "../tables/automations.js";
import type { ClaimStatements } from "../tables/claims.js";
import { DELIVERIES } from "../tables/webhooks.js";

export const POSTGRES_CLAIMS: ClaimStatements = {
  deliveries: (now, owner, leaseUntil, limit) =>
    sql`WITH c AS MATERIALIZED (SELECT rid FROM webhook_deliveries WHERE status = 'pending'
        AND next_attempt_at <= ${now} AND (lease_until IS NULL OR lease_until < ${now})
        ORDER BY next_attempt_at ASC, rid ASC LIMIT ${limitOf(limit)} FOR UPDATE SKIP LOCKED)
      UPDATE webhook_deliveries t SET lease_owner = ${owner}, lease_until = ${leaseUntil}, attempts = t.attempts + 1
      FROM c WHERE t.rid = c.rid RETURNING ${DELIVERIES.qualified("t")}`,
  invocations: (now, owner, leaseUntil, limit) =>
    sql`WITH c AS MATERIALIZED (SELECT i.rid FROM automation_invocations i JOIN automations a ON a.id = i.automation_id
        WHERE i.status = 'queued' AND i.next_attempt_at <= ${now} AND (i.lease_until IS NULL OR i.lease_until < ${now})
        AND (i.scheduled_at IS NULL OR a.status <> 'paused')
        ORDER BY i.next_attempt_at ASC, i.rid ASC LIMIT ${limitOf(limit)} FOR UPDATE OF i SKIP LOCKED)
      UPDATE automation_invocations t SET lease_owner = ${owner}, lease_until = ${leaseUntil}, claims = t.claims + 1
      FROM c WHERE t.rid = c.rid RETURNING ${INVOCATIONS.qualified("t")}`,
};
