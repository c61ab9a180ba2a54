-- Security fixes (issue 8).
-- A session belongs to its person and to the organization it was opened for: only that person, or an
-- admin of that organization, may list or end it, and its events are audited there.
ALTER TABLE sessions ADD COLUMN organization_id TEXT REFERENCES organizations(id);

-- Exactly-once across a crash: the results an idempotent request's writes committed, sealed, written in
-- their own transactions, so a retry after a crash between commit and answer recognises them.
ALTER TABLE idempotency_keys ADD COLUMN committed TEXT;
