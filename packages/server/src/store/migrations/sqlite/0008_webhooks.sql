-- Webhooks: endpoints, their deliveries (one per endpoint and event) and every attempt.
-- The outbox learns which memory an event carries, so forgetting can erase it there too.

ALTER TABLE outbox_events ADD COLUMN memory_id INTEGER;
CREATE INDEX outbox_events_memory ON outbox_events (memory_id) WHERE memory_id IS NOT NULL;

CREATE TABLE webhook_endpoints (
  id                      INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id         TEXT NOT NULL,
  project_id              TEXT NOT NULL,
  name                    TEXT NOT NULL,
  url                     TEXT NOT NULL,
  description             TEXT NOT NULL,
  events                  TEXT NOT NULL,
  retry_config            TEXT NOT NULL,
  signature_config        TEXT NOT NULL,
  status                  TEXT NOT NULL,
  disabled_reason         TEXT,
  secret                  TEXT NOT NULL,
  previous_secret         TEXT,
  previous_secret_until   TEXT,
  failing_since           TEXT,
  consecutive_failures    INTEGER NOT NULL DEFAULT 0,
  last_success_at         TEXT,
  last_failure_at         TEXT,
  created_at              TEXT NOT NULL,
  updated_at              TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_project ON webhook_endpoints (organization_id, project_id);

CREATE TABLE webhook_deliveries (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint_id     INTEGER NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  message_id      TEXT NOT NULL,
  event_type      TEXT NOT NULL,
  memory_id       INTEGER,
  body            TEXT NOT NULL,
  status          TEXT NOT NULL,
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_step       INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT,
  lease_until     TEXT,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_memory ON webhook_deliveries (memory_id) WHERE memory_id IS NOT NULL;

CREATE TABLE webhook_attempts (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  delivery_id   INTEGER NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  endpoint_id   INTEGER NOT NULL,
  attempted_at  TEXT NOT NULL,
  status_code   INTEGER,
  latency_ms    INTEGER NOT NULL,
  response_body TEXT,
  error         TEXT,
  succeeded     INTEGER NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, attempted_at);
