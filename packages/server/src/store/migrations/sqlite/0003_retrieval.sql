-- Retrieval: feedback that moves ranking, stored embeddings of a remote embedder, /v1 turn usage.

CREATE TABLE feedback (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id   TEXT NOT NULL,
  tenant_id    TEXT NOT NULL,
  end_user_id  TEXT NOT NULL,
  memory_id    INTEGER NOT NULL REFERENCES memories(id),
  rating       INTEGER NOT NULL,
  query        TEXT,
  comment      TEXT,
  actor_type   TEXT NOT NULL,
  actor_id     INTEGER,
  created_at   TEXT NOT NULL,
  withdrawn_at TEXT
);
CREATE INDEX feedback_memory ON feedback (memory_id) WHERE withdrawn_at IS NULL;
CREATE INDEX feedback_owner ON feedback (project_id, tenant_id, end_user_id);

CREATE TABLE memory_embeddings (
  memory_id  INTEGER NOT NULL REFERENCES memories(id),
  embedder   TEXT NOT NULL,
  project_id TEXT NOT NULL,
  vector     BLOB NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (memory_id, embedder)
);

CREATE TABLE tenant_usage (
  project_id TEXT NOT NULL,
  tenant_id  TEXT NOT NULL,
  period     TEXT NOT NULL,
  turns      INTEGER NOT NULL,
  PRIMARY KEY (project_id, tenant_id, period)
);
