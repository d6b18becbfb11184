/**
 * Sessions. A turn claims its session with one conditional statement (of concurrent claims, on any instance,
 * exactly one gets it; each claim bumps the lease epoch, the fencing token of the turn's writes). Deleting a
 * session is each backend's own (its log counters, one statement or one transaction).
 */
import type { SqlDb } from "../sql/db.js";
import { limitOf, raw, sql } from "../sql/query.js";
import { rows, table } from "../sql/table.js";
import type { Queries, SessionRecord } from "../types.js";

export const SESSIONS = table<SessionRecord>("sessions", {
  id: "value",
  project_id: "value",
  created_at: "value",
  updated_at: "value",
  last_active_at: "value",
  status: "value",
  agent_id: "value",
  name: "value",
  model: "value",
  instructions: "value",
  tools: "json",
  metadata: "json",
  thread_id: "value",
  workspace: "value",
  usage: "json",
  error: "value",
  active_turn_id: "value",
  required_actions: "json",
  owner_instance: "value",
  lease_epoch: "value",
  extra: "json",
});

export type SessionQueries = Pick<
  Queries,
  | "insertSession"
  | "getSession"
  | "updateSession"
  | "claimSession"
  | "releaseSession"
  | "listSessions"
  | "countSessions"
  | "listIdleSessionsBefore"
  | "listBusySessions"
>;

export function sessionQueries(db: SqlDb): SessionQueries {
  const sessions = rows(db, SESSIONS);
  return {
    async insertSession(s) {
      await sessions.insert(s);
    },
    getSession: sessions.get,
    updateSession: (id, patch) => sessions.update(id, patch),
    claimSession: (id, turnId, patch) =>
      sessions.update(
        id,
        { ...patch, active_turn_id: turnId },
        { set: [raw("lease_epoch = lease_epoch + 1")], conds: [sql`active_turn_id IS NULL`] },
      ),
    releaseSession: (id, turnId, patch) =>
      sessions.update(id, { ...patch, active_turn_id: null }, { conds: [sql`active_turn_id = ${turnId}`] }),
    listSessions(opts) {
      const conds = [sql`project_id = ${opts.project_id}`];
      if (opts.agent_id !== undefined) conds.push(sql`agent_id = ${opts.agent_id}`);
      conds.push(...db.dialect.jsonHas("sessions.metadata", opts.metadata));
      return sessions.list(opts, conds);
    },
    async countSessions(projectId) {
      const scope = projectId === undefined ? sql`` : sql` WHERE project_id = ${projectId}`;
      return Number((await db.value<number>(sql`SELECT count(*) FROM sessions${scope}`)) ?? 0);
    },
    listIdleSessionsBefore: (before, limit) =>
      sessions.select(
        [sql`last_active_at < ${before}`, sql`active_turn_id IS NULL`, sql`status = 'idle'`],
        sql` ORDER BY last_active_at ASC, rid ASC LIMIT ${limitOf(limit)}`,
      ),
    listBusySessions: () =>
      sessions.select(
        [sql`(status IN ('in_progress', 'requires_action') OR active_turn_id IS NOT NULL)`],
        sql` ORDER BY rid ASC`,
      ),
  };
}
