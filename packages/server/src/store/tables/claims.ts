/**
 * Lease claims of webhook deliveries and automation invocations: each backend writes the one statement that
 * claims (its own way: see sqlite/claims.ts, postgres/claims.ts); running it and ordering what it claimed — the
 * most overdue first — is the same for both.
 */
import type { SqlDb } from "../sql/db.js";
import type { Sql } from "../sql/query.js";
import { rows } from "../sql/table.js";
import type { Queries } from "../types.js";
import { INVOCATIONS } from "./automations.js";
import { DELIVERIES } from "./webhooks.js";

/** A claim: lease rows due at `now` to `owner` until `leaseUntil`, at most `limit`; RETURNING the table's columns. */
export type ClaimStatement = (now: number, owner: string, leaseUntil: number, limit: number) => Sql;

export interface ClaimStatements {
  deliveries: ClaimStatement;
  invocations: ClaimStatement;
}

const byDue = <T extends { next_attempt_at: number; created_at: number }>(a: T, b: T) =>
  a.next_attempt_at - b.next_attempt_at || a.created_at - b.created_at;

export function claimQueries(
  db: SqlDb,
  statements: ClaimStatements,
): Pick<Queries, "claimWebhookDeliveries" | "claimInvocations"> {
  const deliveries = rows(db, DELIVERIES);
  const invocations = rows(db, INVOCATIONS);
  return {
    async claimWebhookDeliveries(...args) {
      return deliveries.decode(await db.rows<unknown>(statements.deliveries(...args))).sort(byDue);
    },
    async claimInvocations(...args) {
      return invocations.decode(await db.rows<unknown>(statements.invocations(...args))).sort(byDue);
    },
  };
}
