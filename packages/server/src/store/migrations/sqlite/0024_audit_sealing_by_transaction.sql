-- The sealer finds unsealed audit rows past a horizon instead of through a queue (PostgreSQL: by the
-- transaction that wrote them, whose id each row records). SQLite has one writer, which commits rows in
-- id order, so xid stays 0 here and the horizon is a place in id order before which every row is sealed
-- (core/audit-log.ts).

ALTER TABLE audit_log ADD COLUMN xid INTEGER NOT NULL DEFAULT 0;
CREATE INDEX audit_log_xid ON audit_log (xid, id);

CREATE TABLE audit_seal_horizon (
  id        INTEGER PRIMARY KEY CHECK (id = 1),
  xid       INTEGER NOT NULL,
  audit_id  INTEGER NOT NULL,
  -- Comma-separated transaction ids (PostgreSQL; none here).
  open_xids TEXT NOT NULL DEFAULT ''
);
-- Sealed rows may lie past the first still queued (the sealer went organization by organization), so
-- the horizon stops at it and the first pass skips the sealed.
INSERT INTO audit_seal_horizon (id, xid, audit_id)
SELECT 1, 0, coalesce((SELECT min(audit_id) FROM audit_unsealed), (SELECT max(id) + 1 FROM audit_log), 0);

DROP TRIGGER audit_log_queue_unsealed;
DROP TABLE audit_unsealed;
