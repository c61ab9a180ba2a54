-- Nothing to do on SQLite: it has no notifications, and every request resolves its API key from the
-- database (an in-process lookup, no round trip), so no process keeps resolved keys in memory.
-- PostgreSQL's 0015 adds the triggers that notify engram_credentials.
SELECT 1;
