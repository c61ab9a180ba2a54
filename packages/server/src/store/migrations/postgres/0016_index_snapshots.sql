-- Built retrieval indexes of large end users (modules/retrieval/snapshots.ts), so a process that
-- has none in memory loads one instead of building it from every memory. A snapshot holds the
-- index as of `revision` (the end user's change sequence) and is caught up from the changes after
-- it; forgetting any of the end user's memories deletes it in the same transaction.
CREATE TABLE index_snapshots (
  project_id  TEXT NOT NULL,
  tenant_id   TEXT NOT NULL,
  end_user_id TEXT NOT NULL,
  revision    BIGINT NOT NULL,
  embedder    TEXT NOT NULL,
  format      INTEGER NOT NULL,
  memories    INTEGER NOT NULL,
  index_data  BYTEA NOT NULL,
  doc_meta    BYTEA NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (project_id, tenant_id, end_user_id),
  FOREIGN KEY (project_id, tenant_id, end_user_id) REFERENCES end_users (project_id, tenant_id, end_user_id)
);
-- Stored out of line without compression: read whole on every load, where decompressing would cost more than the bytes saved.
ALTER TABLE index_snapshots ALTER COLUMN index_data SET STORAGE EXTERNAL;
ALTER TABLE index_snapshots ALTER COLUMN doc_meta SET STORAGE EXTERNAL;
