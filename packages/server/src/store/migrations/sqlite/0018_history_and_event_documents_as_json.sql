-- PostgreSQL stores memory_history.changes and outbox_events.payload as json instead of jsonb here.
-- SQLite stores JSON as the text written already: this migration only keeps the two dialects'
-- numbering alike.
SELECT 1;
