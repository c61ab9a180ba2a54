-- Nothing to do on SQLite: it has no notifications, and a write reads the subscriptions in its own
-- transaction (core/event-subscriptions.ts), so no process keeps them in memory. PostgreSQL's 0020
-- adds the triggers that notify engram_event_subscriptions.
SELECT 1;
