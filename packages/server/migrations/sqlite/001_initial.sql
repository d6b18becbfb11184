-- 1: the initial schema

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
