-- PostgreSQL only (a page fill factor and an index its claim does not use); SQLite's claim reads
-- webhook_deliveries_due across endpoints in due order, and SQLite has no fill factor.
SELECT 1;
