-- Audit sealing: a write appends its audit rows unchained (and queues them in audit_unsealed); the
-- sealer (core/audit-log.ts) later chains committed rows per organization into audit_seals, so no
-- write waits on an organization-wide chain head. Existing chains move into audit_seals unchanged.

CREATE TABLE audit_seals (
  organization_id TEXT NOT NULL,
  position        BIGINT NOT NULL,
  audit_id        BIGINT NOT NULL UNIQUE,
  prev_hash       TEXT NOT NULL,
  hash            TEXT NOT NULL,
  -- true: chained before sealing existed (the hash covers the row and prev_hash, not its id or position).
  legacy          BOOLEAN NOT NULL DEFAULT false,
  PRIMARY KEY (organization_id, position)
);
INSERT INTO audit_seals (organization_id, position, audit_id, prev_hash, hash, legacy)
SELECT organization_id, ROW_NUMBER() OVER (PARTITION BY organization_id ORDER BY id), id, prev_hash, hash, true FROM audit_log;
CREATE FUNCTION audit_seals_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_seals is append-only';
END;
$$;
CREATE TRIGGER audit_seals_no_change BEFORE UPDATE OR DELETE ON audit_seals
  FOR EACH ROW EXECUTE FUNCTION audit_seals_append_only();
CREATE TRIGGER audit_seals_no_truncate BEFORE TRUNCATE ON audit_seals
  FOR EACH STATEMENT EXECUTE FUNCTION audit_seals_append_only();

ALTER TABLE audit_chain_heads ADD COLUMN last_position BIGINT NOT NULL DEFAULT 0;
UPDATE audit_chain_heads SET last_position = (SELECT count(*) FROM audit_seals s WHERE s.organization_id = audit_chain_heads.organization_id);

ALTER TABLE audit_log DROP COLUMN prev_hash;
ALTER TABLE audit_log DROP COLUMN hash;

-- The rows the sealer has yet to chain; a row leaves in the transaction that seals it.
CREATE TABLE audit_unsealed (
  audit_id        BIGINT PRIMARY KEY,
  organization_id TEXT NOT NULL
);
CREATE INDEX audit_unsealed_org ON audit_unsealed (organization_id, audit_id);
CREATE FUNCTION audit_log_queue_unsealed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO audit_unsealed (audit_id, organization_id) VALUES (NEW.id, NEW.organization_id);
  RETURN NULL;
END;
$$;
CREATE TRIGGER audit_log_queue_unsealed AFTER INSERT ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_queue_unsealed();
