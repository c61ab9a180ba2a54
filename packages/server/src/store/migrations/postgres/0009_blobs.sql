-- The blob store's database backend (store/blobs/database-blobs.ts): a blob is listed in `blobs`
-- once all its chunks are written.

CREATE TABLE blobs (
  key         TEXT PRIMARY KEY,
  size        BIGINT NOT NULL,
  chunk_bytes INTEGER NOT NULL,
  sha256      TEXT NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE blob_chunks (
  key  TEXT NOT NULL,
  n    INTEGER NOT NULL,
  data BYTEA NOT NULL,
  PRIMARY KEY (key, n)
);
