-- Retention finds the deliveries that ended (succeeded or exhausted) longest ago without reading the pending ones.
CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (updated_at) WHERE status <> 'pending';
