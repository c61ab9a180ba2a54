-- Expiry (issue 54.9): a memory may carry the time it stops being readable; the sweep (memories.expiry) then
-- erases it as forgetting does. The index serves the sweep's "expired and not yet erased, oldest first".
ALTER TABLE memories ADD COLUMN expires_at TEXT;
CREATE INDEX memories_expiring ON memories (expires_at) WHERE expires_at IS NOT NULL AND deleted_at IS NULL;
