-- A stored index snapshot's pieces (modules/retrieval/snapshots.ts), a row each, so a load reads one piece while the
-- thread pool decompresses the one before. `piece` 0 is the filter metadata, 1.. the index's pieces in order, each
-- compressed, with its length uncompressed; `revision` is the snapshot's, so a reader sees when the snapshot was
-- replaced between two of its reads. They go with their snapshot (forgetting, removing the end user).
-- index_snapshots.index_data and doc_meta stay (empty from this version on) for the previous version's processes
-- during a rolling upgrade: they read a snapshot of another format as none and build from rows.
CREATE TABLE index_snapshot_pieces (
  project_id  TEXT NOT NULL,
  tenant_id   TEXT NOT NULL,
  end_user_id TEXT NOT NULL,
  piece       INTEGER NOT NULL,
  revision    INTEGER NOT NULL,
  length      INTEGER NOT NULL,
  data        BLOB NOT NULL,
  PRIMARY KEY (project_id, tenant_id, end_user_id, piece),
  FOREIGN KEY (project_id, tenant_id, end_user_id) REFERENCES index_snapshots (project_id, tenant_id, end_user_id) ON DELETE CASCADE
);
