-- The sealer finds unsealed audit rows by the transaction that wrote them instead of through a queue:
-- each row records its transaction's id (xid), and audit_seal_horizon holds a place in (xid, id) order
-- before which every row is sealed, but those of the transactions then still open (open_xids). A write
-- no longer queues its audit rows (a trigger, a row and two index entries each, deleted again by the
-- sealer); see core/audit-log.ts.

ALTER TABLE audit_log ADD COLUMN xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE audit_log ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
CREATE INDEX audit_log_xid ON audit_log (xid, id);

CREATE TABLE audit_seal_horizon (
  id        INTEGER PRIMARY KEY CHECK (id = 1),
  xid       xid8 NOT NULL,
  audit_id  BIGINT NOT NULL,
  -- Comma-separated transaction ids.
  open_xids TEXT NOT NULL DEFAULT ''
);
-- Existing rows all have xid 0. Sealed rows may lie past the first still queued (the sealer went
-- organization by organization), so the horizon stops at it and the first pass skips the sealed.
INSERT INTO audit_seal_horizon (id, xid, audit_id)
SELECT 1, '0', coalesce((SELECT min(audit_id) FROM audit_unsealed), (SELECT max(id) + 1 FROM audit_log), 0);

DROP TRIGGER audit_log_queue_unsealed ON audit_log;
DROP FUNCTION audit_log_queue_unsealed();
DROP TABLE audit_unsealed;
