-- A memory's history rows and outbox events are documents written once and read back whole, never
-- queried inside: `json` stores their text as written, where `jsonb` parsed it into its binary form on
-- every insert, about a seventh of the database's time per bulk-added memory. Their keys are now
-- served in the order they were written, as on SQLite, rather than in jsonb's (shorter keys first).
-- Both tables are rewritten once by this migration.
ALTER TABLE memory_history ALTER COLUMN changes TYPE json USING changes::json;
ALTER TABLE outbox_events ALTER COLUMN payload TYPE json USING payload::json;
