-- PostgreSQL drops the foreign keys of memories.project_id and memory_history.memory_id here, whose
-- checks lock the referenced rows. SQLite checks a foreign key with an index probe and takes no
-- row lock: its constraints stay, and this migration only keeps the two dialects' numbering alike.
SELECT 1;
