-- 4: the schema of SQLite version 6 (files of the Files API)

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
