-- 3: the schema of SQLite version 5 (environments, environment templates, vaults and vault credentials)

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
