-- Typed links between two memories of one end user (summaries link to their sources with `summarizes`).

CREATE TABLE memory_relations (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id  TEXT NOT NULL,
  tenant_id   TEXT NOT NULL,
  end_user_id TEXT NOT NULL,
  source_id   INTEGER NOT NULL REFERENCES memories(id),
  target_id   INTEGER NOT NULL REFERENCES memories(id),
  type        TEXT NOT NULL,
  metadata    TEXT NOT NULL,
  created_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX memory_relations_link ON memory_relations (project_id, source_id, target_id, type);
CREATE INDEX memory_relations_target ON memory_relations (project_id, target_id);
CREATE INDEX memory_relations_owner ON memory_relations (project_id, tenant_id, end_user_id);
