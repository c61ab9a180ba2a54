-- Foundation: tenancy, API keys, memories and their history, audit log, event outbox, jobs.
-- Timestamps are RFC 3339 UTC strings with milliseconds, which sort as text.

CREATE TABLE organizations (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  created_at TEXT NOT NULL
);

CREATE TABLE projects (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  name            TEXT NOT NULL,
  slug            TEXT NOT NULL,
  description     TEXT NOT NULL DEFAULT '',
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  deleted_at      TEXT
);
CREATE UNIQUE INDEX projects_org_slug ON projects (organization_id, slug) WHERE deleted_at IS NULL;

CREATE TABLE users (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  email         TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  created_at    TEXT NOT NULL
);

CREATE TABLE memberships (
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  user_id         INTEGER NOT NULL REFERENCES users(id),
  role            TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  PRIMARY KEY (organization_id, user_id)
);

CREATE TABLE api_keys (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  project_id      TEXT REFERENCES projects(id),
  name            TEXT NOT NULL,
  prefix          TEXT NOT NULL,
  key_hash        TEXT NOT NULL UNIQUE,
  scopes          TEXT NOT NULL,
  tenant_id       TEXT,
  end_user_id     TEXT,
  created_by      INTEGER REFERENCES users(id),
  created_at      TEXT NOT NULL,
  expires_at      TEXT,
  revoked_at      TEXT,
  last_used_at    TEXT
);
CREATE INDEX api_keys_prefix ON api_keys (prefix);
CREATE INDEX api_keys_org ON api_keys (organization_id);

-- One row per end user; revision is bumped by every change to that end user's memories,
-- so a cache can tell in one indexed read whether it is current.
CREATE TABLE end_users (
  project_id  TEXT NOT NULL REFERENCES projects(id),
  tenant_id   TEXT NOT NULL,
  end_user_id TEXT NOT NULL,
  revision    INTEGER NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  PRIMARY KEY (project_id, tenant_id, end_user_id)
);

CREATE TABLE memories (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id   TEXT NOT NULL REFERENCES projects(id),
  tenant_id    TEXT NOT NULL,
  end_user_id  TEXT NOT NULL,
  text         TEXT NOT NULL,
  tags         TEXT NOT NULL,
  is_summary   INTEGER NOT NULL DEFAULT 0,
  source       TEXT,
  importance   REAL NOT NULL,
  metadata     TEXT NOT NULL,
  client_ref   TEXT,
  session_id   TEXT,
  speaker      TEXT,
  dedupe_hash  TEXT,
  seq          INTEGER NOT NULL,
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL,
  deleted_at   TEXT
);
CREATE INDEX memories_owner_seq ON memories (project_id, tenant_id, end_user_id, seq);
CREATE INDEX memories_project_id ON memories (project_id, id);
CREATE UNIQUE INDEX memories_client_ref ON memories (project_id, tenant_id, end_user_id, client_ref)
  WHERE client_ref IS NOT NULL AND deleted_at IS NULL;
CREATE UNIQUE INDEX memories_dedupe ON memories (project_id, tenant_id, end_user_id, dedupe_hash)
  WHERE dedupe_hash IS NOT NULL AND deleted_at IS NULL;

CREATE TABLE memory_history (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id  TEXT NOT NULL,
  memory_id   INTEGER NOT NULL REFERENCES memories(id),
  action      TEXT NOT NULL,
  changes     TEXT,
  actor_type  TEXT NOT NULL,
  actor_id    INTEGER,
  request_id  TEXT,
  created_at  TEXT NOT NULL
);
CREATE INDEX memory_history_memory ON memory_history (memory_id, id);

-- Append-only, hash-chained per organization. audit_chain_heads serialises appends per chain.
CREATE TABLE audit_log (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id TEXT NOT NULL,
  project_id      TEXT,
  actor_type      TEXT NOT NULL,
  actor_id        INTEGER,
  action          TEXT NOT NULL,
  target_type     TEXT NOT NULL,
  target_id       TEXT,
  result          TEXT NOT NULL,
  request_id      TEXT,
  created_at      TEXT NOT NULL,
  prev_hash       TEXT NOT NULL,
  hash            TEXT NOT NULL
);
CREATE INDEX audit_log_org ON audit_log (organization_id, id);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;

CREATE TABLE audit_chain_heads (
  organization_id TEXT PRIMARY KEY,
  last_hash       TEXT NOT NULL
);

-- Durable outbox: events are written in the same transaction as the change they describe;
-- webhook delivery reads them from here.
CREATE TABLE outbox_events (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id TEXT NOT NULL,
  project_id      TEXT,
  type            TEXT NOT NULL,
  payload         TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  dispatched_at   TEXT
);
CREATE INDEX outbox_events_pending ON outbox_events (id) WHERE dispatched_at IS NULL;

-- Durable background work, leased by workers.
CREATE TABLE jobs (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  kind         TEXT NOT NULL,
  project_id   TEXT,
  payload      TEXT NOT NULL,
  status       TEXT NOT NULL,
  progress     REAL NOT NULL DEFAULT 0,
  attempts     INTEGER NOT NULL DEFAULT 0,
  run_after    TEXT NOT NULL,
  locked_until TEXT,
  result       TEXT,
  error        TEXT,
  created_at   TEXT NOT NULL,
  updated_at   TEXT NOT NULL
);
CREATE INDEX jobs_runnable ON jobs (status, run_after);
