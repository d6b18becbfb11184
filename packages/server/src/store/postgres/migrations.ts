/**
 * PostgreSQL schema migrations: an ordered list of SQL steps. Step i (0-based) brings the database to version i + 1,
 * recorded as a row of `schema_version`. Only append new steps; never edit a released one.
 *
 * The schema means what the SQLite one means (see ../sqlite/migrations.ts at its latest version); the differences
 * are PostgreSQL's: jsonb for JSON, double precision Unix seconds, bigserial rids, identifiers in the "C" collation
 * (byte order, as in SQLite), and the per-session log counters `last_seq` / `last_ordinal` kept on the sessions row,
 * whose row lock serialises appends to a session across instances (see append_events).
 */
import type pg from "pg";
import { checkedOut } from "./checkout.js";

export const MIGRATIONS: readonly string[] = [
  // 1: the schema of SQLite version 3 (projects, API keys, item states, required actions, turn leases), the log
  // counters, the fenced append_events(), and the cluster's tables (instances, control requests, rollouts)
  `
  CREATE TABLE agents (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    name text,
    model text NOT NULL,
    instructions text,
    tools jsonb NOT NULL,
    metadata jsonb NOT NULL,
    extra jsonb NOT NULL
  );
  CREATE INDEX agents_project_created ON agents (project_id, created_at, rid);

  -- Updated on every append (the counters): room on each page for HOT updates (no indexed column changes).
  CREATE TABLE sessions (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    last_active_at double precision NOT NULL,
    status text NOT NULL,
    agent_id text COLLATE "C",
    name text,
    model text NOT NULL,
    instructions text,
    tools jsonb NOT NULL,
    metadata jsonb NOT NULL,
    thread_id text,
    workspace text NOT NULL,
    usage jsonb NOT NULL,
    error text,
    active_turn_id text COLLATE "C",
    required_actions jsonb NOT NULL DEFAULT '[]'::jsonb,
    -- the instance running the active turn, and the fencing token of that claim (bumped by every claim/takeover)
    owner_instance text COLLATE "C",
    lease_epoch bigint NOT NULL DEFAULT 0,
    extra jsonb NOT NULL,
    -- the last event seq (0: none) and item ordinal (-1: none) of the session
    last_seq bigint NOT NULL DEFAULT 0,
    last_ordinal bigint NOT NULL DEFAULT -1
  ) WITH (fillfactor = 80);
  CREATE INDEX sessions_project_created ON sessions (project_id, created_at, rid);
  CREATE INDEX sessions_project_agent ON sessions (project_id, agent_id, created_at, rid);
  CREATE INDEX sessions_metadata ON sessions USING gin (metadata jsonb_path_ops);
  CREATE INDEX sessions_idle ON sessions (last_active_at, rid) WHERE status = 'idle' AND active_turn_id IS NULL;
  CREATE INDEX sessions_busy ON sessions (rid)
    WHERE status IN ('in_progress', 'requires_action') OR active_turn_id IS NOT NULL;
  CREATE INDEX sessions_owner ON sessions (owner_instance) WHERE active_turn_id IS NOT NULL;

  CREATE TABLE turns (
    rid bigserial PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    started_at double precision,
    completed_at double precision,
    status text NOT NULL,
    input jsonb NOT NULL,
    error jsonb,
    usage jsonb,
    goal jsonb,
    subagent_id text COLLATE "C",
    UNIQUE (session_id, id)
  );
  CREATE INDEX turns_session_created ON turns (session_id, created_at, rid);
  CREATE INDEX turns_session_status ON turns (session_id, status, created_at, rid);

  CREATE TABLE items (
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    ordinal bigint NOT NULL,
    turn_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    type text NOT NULL,
    state text NOT NULL,
    created_at double precision NOT NULL,
    data jsonb NOT NULL,
    PRIMARY KEY (session_id, ordinal)
  );
  CREATE INDEX items_turn ON items (session_id, turn_id, ordinal);
  CREATE INDEX items_id ON items (session_id, id, ordinal);
  CREATE INDEX items_open ON items (session_id, turn_id) WHERE state = 'started';

  CREATE TABLE events (
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq bigint NOT NULL,
    type text NOT NULL,
    turn_id text COLLATE "C",
    created_at double precision NOT NULL,
    data jsonb NOT NULL,
    PRIMARY KEY (session_id, seq)
  );
  CREATE INDEX events_turn ON events (session_id, turn_id, seq);

  -- one JSON document per session (read and written whole)
  CREATE TABLE goals (
    session_id text COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    data jsonb NOT NULL,
    updated_at double precision NOT NULL
  );

  CREATE TABLE idempotency (
    scope text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    body_hash text NOT NULL,
    status integer NOT NULL,
    response jsonb NOT NULL,
    created_at double precision NOT NULL,
    PRIMARY KEY (scope, key)
  );
  CREATE INDEX idempotency_created ON idempotency (created_at);

  CREATE TABLE api_keys (
    id text COLLATE "C" PRIMARY KEY,
    project_id text COLLATE "C" NOT NULL,
    hash text NOT NULL,
    salt text NOT NULL,
    admin boolean NOT NULL,
    created_at double precision NOT NULL,
    revoked_at double precision
  );

  -- Appends a batch of events (and their item writes) to a session's log in one statement: the whole batch is one
  -- round trip, and one transaction when called outside one.
  --   p_events: [{type, turn_id, created_at, data}] in log order; seqs last_seq + 1, + 2, …
  --   p_items: the batch's item writes after merging those that target an item written earlier in the same batch
  --     (see events.ts): [{i, turn_id, id, type, state, created_at, data, lookup}], i the index of the event in
  --     p_events. lookup = false: insert (a start). lookup = true (a finish): update the turn's latest stored item
  --     with that id, or insert when there is none. Inserted items take ordinals last_ordinal + 1, + 2, … in
  --     event order.
  -- Returns the seq before the batch and, for each inserted item, its event index and ordinal.
  -- The session row is locked first (FOR NO KEY UPDATE: other transactions can still insert rows referencing
  -- the session); the statements after it take a fresh snapshot (READ COMMITTED, a volatile function), so they see
  -- everything an earlier append of this session committed, whichever instance made it.
  -- p_epoch (fencing): when not null, the batch is refused (SQLSTATE CF001, nothing written) unless the session's
  -- lease_epoch is still p_epoch: the writer's claim of the session's turn has not been taken over since.
  CREATE FUNCTION append_events(p_session text, p_events jsonb, p_items jsonb, p_epoch bigint,
                                OUT base_seq bigint, OUT item_index integer[], OUT item_ordinal bigint[])
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_count bigint := jsonb_array_length(p_events);
    v_ord bigint;
    v_epoch bigint;
  BEGIN
    SELECT s.last_seq, s.last_ordinal, s.lease_epoch INTO base_seq, v_ord, v_epoch FROM sessions s
      WHERE s.id = p_session FOR NO KEY UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'append_events: no session %', p_session USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF p_epoch IS NOT NULL AND v_epoch <> p_epoch THEN
      RAISE EXCEPTION 'append_events: session % was taken over (lease epoch % is not %)', p_session, v_epoch,
        p_epoch USING ERRCODE = 'CF001';
    END IF;
    WITH w AS (
      SELECT * FROM jsonb_to_recordset(p_items) AS x(i integer, turn_id text, id text, type text, state text,
                                                     created_at double precision, data jsonb, lookup boolean)
    ), t AS (
      SELECT w.*, CASE WHEN w.lookup THEN (
          SELECT max(it.ordinal) FROM items it
          WHERE it.session_id = p_session AND it.id = w.id AND it.turn_id = w.turn_id
        ) END AS target
      FROM w
    ), ins AS (
      SELECT t.*, v_ord + row_number() OVER (ORDER BY t.i) AS ord FROM t WHERE t.target IS NULL
    ), upd AS (
      UPDATE items it SET state = t.state, type = t.type, data = t.data FROM t
      WHERE t.target IS NOT NULL AND it.session_id = p_session AND it.ordinal = t.target
    ), ins_items AS (
      INSERT INTO items (session_id, ordinal, turn_id, id, type, state, created_at, data)
      SELECT p_session, ins.ord, ins.turn_id, ins.id, ins.type, ins.state, ins.created_at, ins.data FROM ins
    ), ins_events AS (
      INSERT INTO events (session_id, seq, type, turn_id, created_at, data)
      SELECT p_session, base_seq + e.n, e.v->>'type', e.v->>'turn_id', (e.v->>'created_at')::double precision,
             e.v->'data'
      FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e(v, n)
    ), bump AS (
      UPDATE sessions s SET last_seq = base_seq + v_count, last_ordinal = v_ord + (SELECT count(*) FROM ins)
      WHERE s.id = p_session
    )
    SELECT coalesce(array_agg(ins.i ORDER BY ins.i), '{}'), coalesce(array_agg(ins.ord ORDER BY ins.i), '{}')
      INTO item_index, item_ordinal FROM ins;
  END
  $fn$;

  -- The cluster: every instance heartbeats its row (database time); one whose heartbeat is too old is dead and the
  -- turns it owned are taken over.
  CREATE TABLE instances (
    id text COLLATE "C" PRIMARY KEY,
    started_at timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
  );

  -- Operations on a running turn (steer, cancel, answers) sent to the instance that owns it, and their results.
  CREATE TABLE control_requests (
    id bigserial PRIMARY KEY,
    target text COLLATE "C" NOT NULL,
    op jsonb NOT NULL,
    result jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
  );
  CREATE INDEX control_requests_created ON control_requests (created_at);

  -- Each engine thread's rollout file (append-only), as the chunks uploaded after each turn: another instance
  -- rebuilds the file from them to continue the conversation.
  CREATE TABLE rollout_chunks (
    thread_id text COLLATE "C" NOT NULL,
    start_offset bigint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (thread_id, start_offset)
  );
  `,
  // 2: the schema of SQLite version 4 (automations and their invocations, webhook endpoints, the webhook outbox),
  // and append_events() writing the outbox: one delivery per webhook event of the batch and subscribed endpoint of
  // the session's project, in the same statement (and transaction) as the events
  `
  CREATE TABLE automations (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    name text NOT NULL,
    metadata jsonb NOT NULL,
    type text NOT NULL,
    expression text,
    timezone text,
    run_at double precision,
    status text NOT NULL,
    next_run_at double precision,
    target jsonb NOT NULL,
    target_session_id text COLLATE "C",
    created_by jsonb NOT NULL
  );
  CREATE INDEX automations_project_created ON automations (project_id, created_at, rid);
  CREATE INDEX automations_target_session ON automations (project_id, target_session_id, created_at, rid)
    WHERE target_session_id IS NOT NULL;
  CREATE INDEX automations_due ON automations (next_run_at) WHERE status = 'active' AND next_run_at IS NOT NULL;

  -- One row per occurrence: UNIQUE (automation_id, scheduled_at) makes a scheduled occurrence fire once whatever
  -- the instances do (manual runs have no scheduled_at: NULLs are distinct, unconstrained).
  CREATE TABLE automation_invocations (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    automation_id text COLLATE "C" NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    scheduled_at double precision,
    source text NOT NULL,
    snapshot jsonb,
    target jsonb NOT NULL,
    status text NOT NULL,
    skip_reason text,
    session_id text COLLATE "C",
    error jsonb,
    claims integer NOT NULL DEFAULT 0,
    next_attempt_at double precision NOT NULL,
    lease_owner text COLLATE "C",
    lease_until double precision,
    completed_at double precision,
    UNIQUE (automation_id, scheduled_at)
  );
  CREATE INDEX automation_invocations_created ON automation_invocations (automation_id, created_at, rid);
  CREATE INDEX automation_invocations_queued ON automation_invocations (next_attempt_at, rid) WHERE status = 'queued';

  CREATE TABLE webhook_endpoints (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    name text NOT NULL,
    url text NOT NULL,
    event_types jsonb NOT NULL,
    -- sealed (AES-256-GCM) with the service's secret key, never in clear
    secret text NOT NULL,
    secret_hint text NOT NULL,
    old_secret text,
    old_secret_expires_at double precision
  );
  CREATE INDEX webhook_endpoints_project_created ON webhook_endpoints (project_id, created_at, rid);

  CREATE TABLE webhook_deliveries (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    endpoint_id text COLLATE "C" NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    project_id text COLLATE "C" NOT NULL,
    session_id text COLLATE "C",
    event_id text COLLATE "C" NOT NULL,
    event_type text NOT NULL,
    event_created_at double precision NOT NULL,
    data jsonb NOT NULL,
    created_at double precision NOT NULL,
    status text NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at double precision NOT NULL,
    lease_owner text COLLATE "C",
    lease_until double precision,
    last_attempt_at double precision,
    last_status_code integer,
    last_error text,
    delivered_at double precision,
    attempt_log jsonb NOT NULL DEFAULT '[]'::jsonb,
    UNIQUE (endpoint_id, event_id)
  );
  CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at, rid);
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, rid) WHERE status = 'pending';

  -- append_events() of step 1, plus the outbox. p_outbox: the batch's webhook events [{event_id, type, created_at,
  -- data}] (see store/outbox.ts); each becomes one pending delivery per endpoint of the session's project that
  -- subscribes to its type. Callers that pass no p_outbox write no deliveries.
  DROP FUNCTION append_events(text, jsonb, jsonb, bigint);
  CREATE FUNCTION append_events(p_session text, p_events jsonb, p_items jsonb, p_epoch bigint,
                                p_outbox jsonb DEFAULT '[]'::jsonb,
                                OUT base_seq bigint, OUT item_index integer[], OUT item_ordinal bigint[])
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_count bigint := jsonb_array_length(p_events);
    v_ord bigint;
    v_epoch bigint;
    v_project text;
  BEGIN
    SELECT s.last_seq, s.last_ordinal, s.lease_epoch, s.project_id INTO base_seq, v_ord, v_epoch, v_project
      FROM sessions s WHERE s.id = p_session FOR NO KEY UPDATE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'append_events: no session %', p_session USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF p_epoch IS NOT NULL AND v_epoch <> p_epoch THEN
      RAISE EXCEPTION 'append_events: session % was taken over (lease epoch % is not %)', p_session, v_epoch,
        p_epoch USING ERRCODE = 'CF001';
    END IF;
    WITH w AS (
      SELECT * FROM jsonb_to_recordset(p_items) AS x(i integer, turn_id text, id text, type text, state text,
                                                     created_at double precision, data jsonb, lookup boolean)
    ), t AS (
      SELECT w.*, CASE WHEN w.lookup THEN (
          SELECT max(it.ordinal) FROM items it
          WHERE it.session_id = p_session AND it.id = w.id AND it.turn_id = w.turn_id
        ) END AS target
      FROM w
    ), ins AS (
      SELECT t.*, v_ord + row_number() OVER (ORDER BY t.i) AS ord FROM t WHERE t.target IS NULL
    ), upd AS (
      UPDATE items it SET state = t.state, type = t.type, data = t.data FROM t
      WHERE t.target IS NOT NULL AND it.session_id = p_session AND it.ordinal = t.target
    ), ins_items AS (
      INSERT INTO items (session_id, ordinal, turn_id, id, type, state, created_at, data)
      SELECT p_session, ins.ord, ins.turn_id, ins.id, ins.type, ins.state, ins.created_at, ins.data FROM ins
    ), ins_events AS (
      INSERT INTO events (session_id, seq, type, turn_id, created_at, data)
      SELECT p_session, base_seq + e.n, e.v->>'type', e.v->>'turn_id', (e.v->>'created_at')::double precision,
             e.v->'data'
      FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e(v, n)
    ), bump AS (
      UPDATE sessions s SET last_seq = base_seq + v_count, last_ordinal = v_ord + (SELECT count(*) FROM ins)
      WHERE s.id = p_session
    )
    SELECT coalesce(array_agg(ins.i ORDER BY ins.i), '{}'), coalesce(array_agg(ins.ord ORDER BY ins.i), '{}')
      INTO item_index, item_ordinal FROM ins;
    IF jsonb_array_length(p_outbox) > 0 THEN
      INSERT INTO webhook_deliveries (id, endpoint_id, project_id, session_id, event_id, event_type,
                                      event_created_at, data, created_at, status, next_attempt_at)
      SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), w.id, w.project_id, p_session, o.event_id, o.type,
             o.created_at, o.data, o.created_at, 'pending', o.created_at
      FROM jsonb_to_recordset(p_outbox) AS o(event_id text, type text, created_at double precision, data jsonb)
      JOIN webhook_endpoints w ON w.project_id = v_project AND w.event_types ? o.type;
    END IF;
  END
  $fn$;
  `,
  // 3: the schema of SQLite version 5 (environments, environment templates, vaults and vault credentials)
  `
  CREATE TABLE environments (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    type text NOT NULL,
    status text NOT NULL,
    session_id text COLLATE "C",
    directory text NOT NULL,
    config jsonb NOT NULL,
    secrets text,
    error jsonb,
    vault_ids jsonb NOT NULL DEFAULT '[]',
    owner_instance text COLLATE "C"
  );
  CREATE INDEX environments_project_created ON environments (project_id, created_at, rid);
  CREATE INDEX environments_session ON environments (session_id) WHERE session_id IS NOT NULL;
  CREATE INDEX environments_pending ON environments (status) WHERE status = 'pending';

  CREATE TABLE environment_templates (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    name text,
    config jsonb NOT NULL,
    secrets text
  );
  CREATE INDEX environment_templates_project_created ON environment_templates (project_id, created_at, rid);

  CREATE TABLE vaults (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    name text,
    metadata jsonb NOT NULL,
    status text NOT NULL
  );
  CREATE INDEX vaults_project_created ON vaults (project_id, created_at, rid);

  CREATE TABLE vault_credentials (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    vault_id text COLLATE "C" NOT NULL REFERENCES vaults (id) ON DELETE CASCADE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    name text NOT NULL,
    metadata jsonb NOT NULL,
    status text NOT NULL,
    auth jsonb NOT NULL,
    secret text NOT NULL,
    server_url text
  );
  CREATE INDEX vault_credentials_vault_created ON vault_credentials (vault_id, created_at, rid);
  CREATE INDEX vault_credentials_server_url ON vault_credentials (server_url) WHERE server_url IS NOT NULL;
  `,
  // 4: the schema of SQLite version 6 (files of the Files API)
  `
  CREATE TABLE files (
    rid bigserial PRIMARY KEY,
    id text COLLATE "C" NOT NULL UNIQUE,
    project_id text COLLATE "C" NOT NULL,
    created_at double precision NOT NULL,
    bytes bigint NOT NULL,
    filename text NOT NULL,
    purpose text NOT NULL,
    expires_at double precision,
    sha256 text NOT NULL
  );
  CREATE INDEX files_project_created ON files (project_id, created_at, rid);
  CREATE INDEX files_expiry ON files (expires_at) WHERE expires_at IS NOT NULL;
  `,
  // 5: SQLite version 7: schedule times brought to whole Unix seconds up to the end of year 9999
  `
  UPDATE automations SET run_at = GREATEST(0, LEAST(floor(run_at), 253402300799))
    WHERE run_at <> floor(run_at) OR run_at < 0 OR run_at > 253402300799;
  UPDATE automations SET next_run_at = GREATEST(0, LEAST(floor(next_run_at), 253402300799))
    WHERE next_run_at <> floor(next_run_at) OR next_run_at < 0 OR next_run_at > 253402300799;
  UPDATE automation_invocations SET scheduled_at = GREATEST(0, LEAST(floor(scheduled_at), 253402300799))
    WHERE scheduled_at <> floor(scheduled_at) OR scheduled_at < 0 OR scheduled_at > 253402300799;
  `,
];

/** The schema version this build expects. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** The advisory lock every instance takes to migrate (a fixed key: "cas-migr"). */
export const MIGRATION_LOCK_KEY = 0x6361732d6d696772n;

export interface Migrated {
  /** The version found (0: an empty database). */
  from: number;
  to: number;
}

/**
 * Applies every pending step in one transaction, after taking the migration lock, so several instances starting
 * at once migrate exactly once (the others wait, then find nothing to do). Refuses a database written by a newer
 * build.
 */
export function migrate(pool: pg.Pool): Promise<Migrated> {
  return checkedOut(pool, async (client, broken) => {
    await client.query("BEGIN");
    try {
      await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK_KEY.toString()]);
      await client.query(
        "CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY, applied_at double precision NOT NULL)",
      );
      const res = await client.query<{ v: number | null }>("SELECT max(version) AS v FROM schema_version");
      const from = res.rows[0]?.v ?? 0;
      if (from > MIGRATIONS.length) {
        throw new Error(
          `database schema version ${from} is newer than this build supports (${MIGRATIONS.length})`,
        );
      }
      for (let v = from; v < MIGRATIONS.length; v++) {
        await client.query(MIGRATIONS[v]!);
        await client.query("INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)", [
          v + 1,
          Date.now() / 1000,
        ]);
      }
      await client.query("COMMIT");
      return { from, to: MIGRATIONS.length };
    } catch (err) {
      await client.query("ROLLBACK").catch((e: Error) => {
        broken.error ??= e;
      });
      throw err;
    }
  });
}
