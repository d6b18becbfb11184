-- 2: the schema of SQLite version 4 (automations and their invocations, webhook endpoints, the webhook outbox),
-- and append_events() writing the outbox: one delivery per webhook event of the batch and subscribed endpoint of
-- the session's project, in the same statement (and transaction) as the events

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
