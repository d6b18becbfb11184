-- 6: files of the Files API, per project (their contents are on disk, under the files directory)

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
