-- Intelligence: per-project ontology, resolutions of conflicting statements, and the superseded mark on memories.

ALTER TABLE memories ADD COLUMN superseded_by INTEGER;

CREATE TABLE ontologies (
  project_id TEXT PRIMARY KEY REFERENCES projects(id),
  document   TEXT NOT NULL,
  revision   INTEGER NOT NULL,
  -- The background job reclassifying the project's memories after the last change.
  reclassify_job_id INTEGER,
  updated_at TEXT NOT NULL
);

-- A decision is derived from two memories (older, newer); its id is stable, so a resolution is keyed by it.
CREATE TABLE decision_resolutions (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id     TEXT NOT NULL,
  tenant_id      TEXT NOT NULL,
  end_user_id    TEXT NOT NULL,
  decision_id    INTEGER NOT NULL,
  older_memory_id INTEGER NOT NULL,
  newer_memory_id INTEGER NOT NULL,
  resolution     TEXT NOT NULL,
  kept_memory_id INTEGER,
  note           TEXT,
  actor_type     TEXT NOT NULL,
  actor_id       INTEGER,
  created_at     TEXT NOT NULL
);
CREATE UNIQUE INDEX decision_resolutions_decision ON decision_resolutions (project_id, tenant_id, end_user_id, decision_id);
CREATE INDEX decision_resolutions_older ON decision_resolutions (older_memory_id);
CREATE INDEX decision_resolutions_newer ON decision_resolutions (newer_memory_id);
