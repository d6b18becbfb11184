/**
 * SQLite schema migrations: an ordered list of SQL steps. Step i (0-based) brings the database to `PRAGMA user_version`
 * i + 1. Only append new steps; never edit a released one.
 */
import type Database from "better-sqlite3";

export const MIGRATIONS: readonly string[] = [
  // 1: initial schema
  `
  CREATE TABLE agents (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    name TEXT,
    model TEXT NOT NULL,
    instructions TEXT,
    tools TEXT NOT NULL,
    metadata TEXT NOT NULL,
    extra TEXT NOT NULL
  );
  CREATE INDEX agents_created ON agents (created_at, rid);

  CREATE TABLE sessions (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    last_active_at REAL NOT NULL,
    status TEXT NOT NULL,
    agent_id TEXT,
    name TEXT,
    model TEXT NOT NULL,
    instructions TEXT,
    tools TEXT NOT NULL,
    metadata TEXT NOT NULL,
    thread_id TEXT,
    workspace TEXT NOT NULL,
    usage TEXT NOT NULL,
    error TEXT,
    active_turn_id TEXT,
    extra TEXT NOT NULL
  );
  CREATE INDEX sessions_created ON sessions (created_at, rid);
  CREATE INDEX sessions_agent ON sessions (agent_id, created_at, rid);
  CREATE INDEX sessions_last_active ON sessions (last_active_at);
  CREATE INDEX sessions_status ON sessions (status);
  CREATE INDEX sessions_active_turn ON sessions (active_turn_id) WHERE active_turn_id IS NOT NULL;

  CREATE TABLE turns (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    created_at REAL NOT NULL,
    started_at REAL,
    completed_at REAL,
    status TEXT NOT NULL,
    input TEXT NOT NULL,
    error TEXT,
    usage TEXT,
    goal TEXT,
    UNIQUE (session_id, id)
  );
  CREATE INDEX turns_session_created ON turns (session_id, created_at, rid);

  CREATE TABLE items (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    turn_id TEXT NOT NULL,
    id TEXT NOT NULL,
    type TEXT NOT NULL,
    created_at REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, ordinal)
  );
  CREATE INDEX items_turn ON items (session_id, turn_id, ordinal);
  CREATE INDEX items_id ON items (session_id, id);

  CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    turn_id TEXT,
    created_at REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
  ) WITHOUT ROWID;
  CREATE INDEX events_turn ON events (session_id, turn_id, seq);

  CREATE TABLE goals (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    data TEXT NOT NULL,
    updated_at REAL NOT NULL
  );

  CREATE TABLE idempotency (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    body_hash TEXT NOT NULL,
    status INTEGER NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (scope, key)
  );
  CREATE INDEX idempotency_created ON idempotency (created_at);
  `,
  // 2: projects (every agent and session belongs to one), API keys, item states (items are stored when they
  // start, so what a client saw survives a crash)
  `
  ALTER TABLE agents ADD COLUMN project_id TEXT NOT NULL DEFAULT 'default';
  CREATE INDEX agents_project_created ON agents (project_id, created_at, rid);
  ALTER TABLE sessions ADD COLUMN project_id TEXT NOT NULL DEFAULT 'default';
  CREATE INDEX sessions_project_created ON sessions (project_id, created_at, rid);
  CREATE INDEX sessions_project_agent ON sessions (project_id, agent_id, created_at, rid);
  ALTER TABLE items ADD COLUMN state TEXT NOT NULL DEFAULT 'completed';
  CREATE INDEX items_open ON items (session_id, turn_id) WHERE state = 'started';
  CREATE INDEX turns_session_status ON turns (session_id, status, created_at, rid);

  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY NOT NULL,
    project_id TEXT NOT NULL,
    hash TEXT NOT NULL,
    salt TEXT NOT NULL,
    admin INTEGER NOT NULL,
    created_at REAL NOT NULL,
    revoked_at REAL
  );
  `,
  // 3: what a running turn waits for from the client (function call results, approvals); the turn's lease (the
  // owning instance and the claim's fencing token: one instance here, kept for the same record in both stores)
  `
  ALTER TABLE sessions ADD COLUMN required_actions TEXT NOT NULL DEFAULT '[]';
  ALTER TABLE sessions ADD COLUMN owner_instance TEXT;
  ALTER TABLE sessions ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE turns ADD COLUMN subagent_id TEXT;
  `,
  // 4: automations (schedules that start or notify sessions; one invocation per automation and scheduled time),
  // webhook endpoints (signing secrets sealed with the service's secret key) and the webhook outbox (one delivery
  // per event and endpoint, written by the event append in the same transaction as the event)
  `
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
  `,
  // 5: environments this server prepares for sessions (a directory per environment; what may be shown as JSON, the
  // write-only parts — env values, setup commands — sealed), their reusable templates (confidential inputs sealed),
  // vaults and their credentials (secrets sealed with the service's key ring; the MCP server URL, normalised, to
  // match credentials to MCP servers)
  `
  CREATE TABLE environments (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    session_id TEXT,
    directory TEXT NOT NULL,
    config TEXT NOT NULL,
    secrets TEXT,
    error TEXT,
    vault_ids TEXT NOT NULL DEFAULT '[]',
    owner_instance TEXT
  );
  CREATE INDEX environments_project_created ON environments (project_id, created_at, rid);
  CREATE INDEX environments_session ON environments (session_id) WHERE session_id IS NOT NULL;
  CREATE INDEX environments_pending ON environments (status) WHERE status = 'pending';

  CREATE TABLE environment_templates (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    name TEXT,
    config TEXT NOT NULL,
    secrets TEXT
  );
  CREATE INDEX environment_templates_project_created ON environment_templates (project_id, created_at, rid);

  CREATE TABLE vaults (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    name TEXT,
    metadata TEXT NOT NULL,
    status TEXT NOT NULL
  );
  CREATE INDEX vaults_project_created ON vaults (project_id, created_at, rid);

  CREATE TABLE vault_credentials (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    vault_id TEXT NOT NULL REFERENCES vaults (id) ON DELETE CASCADE,
    project_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    name TEXT NOT NULL,
    metadata TEXT NOT NULL,
    status TEXT NOT NULL,
    auth TEXT NOT NULL,
    secret TEXT NOT NULL,
    server_url TEXT
  );
  CREATE INDEX vault_credentials_vault_created ON vault_credentials (vault_id, created_at, rid);
  CREATE INDEX vault_credentials_server_url ON vault_credentials (server_url) WHERE server_url IS NOT NULL;
  `,
  // 6: files of the Files API, per project (their contents are on disk, under the files directory)
  `
  CREATE TABLE files (
    rid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    bytes INTEGER NOT NULL,
    filename TEXT NOT NULL,
    purpose TEXT NOT NULL,
    expires_at REAL,
    sha256 TEXT NOT NULL
  );
  CREATE INDEX files_project_created ON files (project_id, created_at, rid);
  CREATE INDEX files_expiry ON files (expires_at) WHERE expires_at IS NOT NULL;
  `,
  // 7: schedule times are whole Unix seconds up to the end of year 9999 (kernel/unix-seconds.ts; the stores now refuse
  // anything else): times stored before, a client's fractional or huge run_at, are brought in range
  `
  UPDATE automations SET run_at = MAX(0, MIN(CAST(run_at AS INTEGER), 253402300799))
    WHERE run_at IS NOT NULL AND (run_at <> CAST(run_at AS INTEGER) OR run_at < 0 OR run_at > 253402300799);
  UPDATE automations SET next_run_at = MAX(0, MIN(CAST(next_run_at AS INTEGER), 253402300799))
    WHERE next_run_at IS NOT NULL
      AND (next_run_at <> CAST(next_run_at AS INTEGER) OR next_run_at < 0 OR next_run_at > 253402300799);
  UPDATE automation_invocations SET scheduled_at = MAX(0, MIN(CAST(scheduled_at AS INTEGER), 253402300799))
    WHERE scheduled_at IS NOT NULL
      AND (scheduled_at <> CAST(scheduled_at AS INTEGER) OR scheduled_at < 0 OR scheduled_at > 253402300799);
  `,
];

/** The schema version this build expects. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Applies every pending step in one transaction (all or nothing) and returns the resulting version.
 * Refuses a database written by a newer build.
 */
export function migrate(db: Database.Database): number {
  const version = () => db.pragma("user_version", { simple: true }) as number;
  if (version() === MIGRATIONS.length) return MIGRATIONS.length;
  // IMMEDIATE: take the write lock first, then re-read the version (another process may have migrated meanwhile).
  return db
    .transaction(() => {
      const current = version();
      if (current > MIGRATIONS.length) {
        throw new Error(
          `database schema version ${current} is newer than this build supports (${MIGRATIONS.length})`,
        );
      }
      for (let v = current; v < MIGRATIONS.length; v++) {
        db.exec(MIGRATIONS[v]!);
        db.pragma(`user_version = ${v + 1}`);
      }
      return MIGRATIONS.length;
    })
    .immediate();
}
