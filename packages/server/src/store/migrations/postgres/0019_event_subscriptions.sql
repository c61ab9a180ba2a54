-- Event subscriptions: which kinds of event someone receives, per organization and project. The
-- outbox keeps only events a subscription matches (core/events.ts): an event nobody can receive is
-- never written, so it costs no row, no dispatch and no copy of a memory to erase.
CREATE TABLE event_subscriptions (
  organization_id TEXT NOT NULL,
  type            TEXT NOT NULL,
  project_id      TEXT NOT NULL,
  subscriber      TEXT NOT NULL,
  PRIMARY KEY (organization_id, type, project_id, subscriber)
);
CREATE INDEX event_subscriptions_subscriber ON event_subscriptions (subscriber);

-- Webhook endpoints subscribe while not disabled (what delivery's fan-out sends to).
INSERT INTO event_subscriptions (organization_id, type, project_id, subscriber)
  SELECT DISTINCT e.organization_id, kind.value, e.project_id, 'webhook_endpoint:' || e.id
  FROM webhook_endpoints e, jsonb_array_elements_text(e.events) AS kind(value)
  WHERE e.status <> 'disabled';
