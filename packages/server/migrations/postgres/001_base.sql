-- 1: the schema of SQLite version 3 (projects, API keys, item states, required actions, turn leases), the log
-- counters, the fenced append_events(), and the cluster's tables (instances, control requests, rollouts)

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
