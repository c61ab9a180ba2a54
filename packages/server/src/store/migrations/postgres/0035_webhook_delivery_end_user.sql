-- The end user a delivery's event named (a SHA-256 of project and id, never the id), so removing the end user
-- erases what receivers answered to those deliveries (modules/webhooks/erase.ts#eraseEndUserDeliveries).
ALTER TABLE webhook_deliveries ADD COLUMN end_user_key TEXT;
CREATE INDEX webhook_deliveries_end_user ON webhook_deliveries (end_user_key) WHERE end_user_key IS NOT NULL;
