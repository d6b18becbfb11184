-- 5: environments this server prepares for sessions (a directory per environment; what may be shown as JSON, the
-- write-only parts — env values, setup commands — sealed), their reusable templates (confidential inputs sealed),
-- vaults and their credentials (secrets sealed with the service's key ring; the MCP server URL, normalised, to
-- match credentials to MCP servers)

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
