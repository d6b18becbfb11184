-- 4: automations (schedules that start or notify sessions; one invocation per automation and scheduled time),
-- webhook endpoints (signing secrets sealed with the service's secret key) and the webhook outbox (one delivery
-- per event and endpoint, written by the event append in the same transaction as the event)

  CREATE TABLE automations (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    name TEXT NOT NULL,
    metadata TEXT NOT NULL,
    type TEXT NOT NULL,
    expression TEXT,
    timezone TEXT,
    run_at REAL,
    status TEXT NOT NULL,
    next_run_at REAL,
    target TEXT NOT NULL,
    target_session_id TEXT,
    created_by TEXT NOT NULL
  );
  CREATE INDEX automations_project_created ON automations (project_id, created_at, rid);
  CREATE INDEX automations_target_session ON automations (project_id, target_session_id, created_at, rid)
    WHERE target_session_id IS NOT NULL;
  CREATE INDEX automations_due ON automations (next_run_at) WHERE status = 'active' AND next_run_at IS NOT NULL;

  CREATE TABLE automation_invocations (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    automation_id TEXT NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
    project_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    scheduled_at REAL,
    source TEXT NOT NULL,
    snapshot TEXT,
    target TEXT NOT NULL,
    status TEXT NOT NULL,
    skip_reason TEXT,
    session_id TEXT,
    error TEXT,
    claims INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    lease_owner TEXT,
    lease_until REAL,
    completed_at REAL,
    UNIQUE (automation_id, scheduled_at)
  );
  CREATE INDEX automation_invocations_created ON automation_invocations (automation_id, created_at, rid);
  CREATE INDEX automation_invocations_queued ON automation_invocations (next_attempt_at, rid) WHERE status = 'queued';

  CREATE TABLE webhook_endpoints (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    event_types TEXT NOT NULL,
    secret TEXT NOT NULL,
    secret_hint TEXT NOT NULL,
    old_secret TEXT,
    old_secret_expires_at REAL
  );
  CREATE INDEX webhook_endpoints_project_created ON webhook_endpoints (project_id, created_at, rid);

  CREATE TABLE webhook_deliveries (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    project_id TEXT NOT NULL,
    session_id TEXT,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    event_created_at REAL NOT NULL,
    data TEXT NOT NULL,
    created_at REAL NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    lease_owner TEXT,
    lease_until REAL,
    last_attempt_at REAL,
    last_status_code INTEGER,
    last_error TEXT,
    delivered_at REAL,
    attempt_log TEXT NOT NULL DEFAULT '[]',
    UNIQUE (endpoint_id, event_id)
  );
  CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at, rid);
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, rid) WHERE status = 'pending';
