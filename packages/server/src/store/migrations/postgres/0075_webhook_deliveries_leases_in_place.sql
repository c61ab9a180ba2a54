-- Delivery work writes fewer index entries. A claim's lease changes no indexed column, but with pages filled to
-- 100 % no lease update stayed on its page (HOT): each wrote a new entry in every index of the table. Pages
-- filled to 70 % leave room for the lease's new row version. webhook_deliveries_due served only SQLite's claim
-- (across endpoints, in due order); PostgreSQL's walks webhook_deliveries_pending, which also answers the count
-- of pending deliveries, so here it was one more entry written by every insert and every recorded attempt.
ALTER TABLE webhook_deliveries SET (fillfactor = 70);
DROP INDEX webhook_deliveries_due;
