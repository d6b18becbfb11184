/**
 * SQLite's lease claims of webhook deliveries and automation invocations: each one UPDATE … RETURNING (atomic by
 * itself; SQLite has one writer, so no row is claimed twice).
 */
import { limitOf, sql } from "../sql/query.js";
import { INVOCATIONS } from "../tables/automations.js";
import type { ClaimStatements } from "../tables/claims.js";
import { DELIVERIES } from "../tables/webhooks.js";

export const SQLITE_CLAIMS: ClaimStatements = {
  deliveries: (now, owner, leaseUntil, limit) =>
    sql`UPDATE webhook_deliveries SET lease_owner = ${owner}, lease_until = ${leaseUntil}, attempts = attempts + 1
      WHERE rid IN (SELECT rid FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ${now}
        AND (lease_until IS NULL OR lease_until < ${now}) ORDER BY next_attempt_at ASC, rid ASC LIMIT ${limitOf(limit)})
      RETURNING ${DELIVERIES.columns}`,
  invocations: (now, owner, leaseUntil, limit) =>
    sql`UPDATE automation_invocations SET lease_owner = ${owner}, lease_until = ${leaseUntil}, claims = claims + 1
      WHERE rid IN (SELECT i.rid FROM automation_invocations i JOIN automations a ON a.id = i.automation_id
        WHERE i.status = 'queued' AND i.next_attempt_at <= ${now} AND (i.lease_until IS NULL OR i.lease_until < ${now})
        AND (i.scheduled_at IS NULL OR a.status <> 'paused')
        ORDER BY i.next_attempt_at ASC, i.rid ASC LIMIT ${limitOf(limit)})
      RETURNING ${INVOCATIONS.columns}`,
};
