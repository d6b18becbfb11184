-- 2: projects (every agent and session belongs to one), API keys, item states (items are stored when they
-- start, so what a client saw survives a crash)

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
