-- File ingest (modules/ingest) and connectors (modules/connectors).

-- One row per uploaded file name of an end user: the version (SHA-256) whose memories are live.
CREATE TABLE uploaded_files (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id  TEXT NOT NULL,
  tenant_id   TEXT NOT NULL,
  end_user_id TEXT NOT NULL,
  name        TEXT NOT NULL,
  type        TEXT NOT NULL,
  size        INTEGER NOT NULL,
  sha256      TEXT,
  memory_ids  TEXT NOT NULL,
  job_id      INTEGER,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  UNIQUE (project_id, tenant_id, end_user_id, name)
);
CREATE INDEX uploaded_files_job ON uploaded_files (project_id, job_id);

CREATE TABLE connector_connections (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id  TEXT NOT NULL,
  project_id       TEXT NOT NULL,
  provider         TEXT NOT NULL,
  name             TEXT NOT NULL,
  end_user_id      TEXT NOT NULL,
  config           TEXT NOT NULL,
  credentials      TEXT,
  state            TEXT NOT NULL,
  state_reason     TEXT,
  schedule_minutes INTEGER,
  next_sync_at     TEXT,
  cursor           TEXT,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
CREATE INDEX connector_connections_project ON connector_connections (project_id);
CREATE INDEX connector_connections_due ON connector_connections (next_sync_at) WHERE next_sync_at IS NOT NULL;

CREATE TABLE connector_syncs (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id       TEXT NOT NULL,
  connection_id    INTEGER NOT NULL REFERENCES connector_connections(id) ON DELETE CASCADE,
  job_id           INTEGER,
  status           TEXT NOT NULL,
  trigger          TEXT NOT NULL,
  seen             INTEGER NOT NULL DEFAULT 0,
  created          INTEGER NOT NULL DEFAULT 0,
  updated          INTEGER NOT NULL DEFAULT 0,
  deleted          INTEGER NOT NULL DEFAULT 0,
  unchanged        INTEGER NOT NULL DEFAULT 0,
  failed           INTEGER NOT NULL DEFAULT 0,
  checkpoint       TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  error            TEXT,
  started_at       TEXT,
  finished_at      TEXT,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);
-- At most one sync queued or running per connection: a second trigger is refused by the database.
CREATE UNIQUE INDEX connector_syncs_active ON connector_syncs (connection_id) WHERE status IN ('queued', 'running');
CREATE INDEX connector_syncs_connection ON connector_syncs (connection_id, id);

CREATE TABLE connector_objects (
  connection_id  INTEGER NOT NULL REFERENCES connector_connections(id) ON DELETE CASCADE,
  source_id      TEXT NOT NULL,
  project_id     TEXT NOT NULL,
  title          TEXT,
  url            TEXT,
  version        TEXT,
  content_hash   TEXT,
  memory_ids     TEXT NOT NULL,
  status         TEXT NOT NULL,
  error          TEXT,
  last_seen_sync INTEGER,
  created_at     TEXT NOT NULL,
  updated_at     TEXT NOT NULL,
  PRIMARY KEY (connection_id, source_id)
);

CREATE TABLE integration_settings (
  organization_id TEXT NOT NULL,
  provider        TEXT NOT NULL,
  enabled         INTEGER NOT NULL,
  updated_at      TEXT NOT NULL,
  PRIMARY KEY (organization_id, provider)
);
