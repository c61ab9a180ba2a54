-- Background exports and imports (modules/exports). Artifacts and uploaded files live in the blob store.

CREATE TABLE exports (
  id                      INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id         TEXT NOT NULL,
  project_id              TEXT NOT NULL,
  created_by              INTEGER,
  status                  TEXT NOT NULL,
  scope                   TEXT NOT NULL,
  format                  TEXT NOT NULL,
  gzip                    INTEGER NOT NULL,
  include                 TEXT NOT NULL,
  rows_done               INTEGER NOT NULL DEFAULT 0,
  rows_total              INTEGER,
  last_memory_id          INTEGER NOT NULL DEFAULT 0,
  erasures                INTEGER NOT NULL DEFAULT 0,
  blob_key                TEXT,
  size                    INTEGER,
  sha256                  TEXT,
  error                   TEXT,
  artifact_deleted_at     TEXT,
  artifact_deleted_reason TEXT,
  created_at              TEXT NOT NULL,
  updated_at              TEXT NOT NULL,
  started_at              TEXT,
  completed_at            TEXT,
  expires_at              TEXT NOT NULL,
  deleted_at              TEXT
);
CREATE INDEX exports_project ON exports (project_id, id);
CREATE INDEX exports_expiry ON exports (expires_at) WHERE artifact_deleted_at IS NULL;

CREATE TABLE imports (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id TEXT NOT NULL,
  project_id      TEXT NOT NULL,
  created_by      INTEGER,
  status          TEXT NOT NULL,
  format          TEXT NOT NULL,
  blob_key        TEXT,
  bytes_total     INTEGER NOT NULL,
  bytes_done      INTEGER NOT NULL DEFAULT 0,
  rows_done       INTEGER NOT NULL DEFAULT 0,
  rows_created    INTEGER NOT NULL DEFAULT 0,
  rows_skipped    INTEGER NOT NULL DEFAULT 0,
  error           TEXT,
  error_record    INTEGER,
  error_line      INTEGER,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  completed_at    TEXT
);
CREATE INDEX imports_project ON imports (project_id, id);
