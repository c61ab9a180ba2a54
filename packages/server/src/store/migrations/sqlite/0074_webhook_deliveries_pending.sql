-- Each endpoint's pending deliveries in the order they fall due: PostgreSQL's claim (modules/webhooks/claim.ts)
-- walks it endpoint by endpoint and stops at what the endpoint may still take; reading webhook_deliveries_due
-- across endpoints, a planner without statistics read and sorted every pending row for each claim.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, next_attempt_at, id) WHERE status = 'pending';
