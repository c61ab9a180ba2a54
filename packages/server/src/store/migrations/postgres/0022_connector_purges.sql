-- When a purge (or removal) of a connection's memories began; null when none is under way. No sync
-- is queued meanwhile (modules/connectors/sync.ts#queueSync), so none adds back what the purge forgets.
ALTER TABLE connector_connections ADD COLUMN purging_since TIMESTAMPTZ;
