-- 3: what a running turn waits for from the client (function call results, approvals); the turn's lease (the
-- owning instance and the claim's fencing token: one instance here, kept for the same record in both stores)

  ALTER TABLE sessions ADD COLUMN required_actions TEXT NOT NULL DEFAULT '[]';
  ALTER TABLE sessions ADD COLUMN owner_instance TEXT;
  ALTER TABLE sessions ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE turns ADD COLUMN subagent_id TEXT;
