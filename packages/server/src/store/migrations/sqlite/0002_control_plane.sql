-- Control plane: sign-in sessions and their refresh tokens, login throttling, idempotent replays,
-- plans and usage counters, and indexes for the audit-log listing.

CREATE TABLE sessions (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id        INTEGER NOT NULL REFERENCES users(id),
  scopes         TEXT NOT NULL,
  ip             TEXT,
  user_agent     TEXT,
  created_at     TEXT NOT NULL,
  expires_at     TEXT NOT NULL,
  last_used_at   TEXT,
  revoked_at     TEXT,
  revoked_reason TEXT
);
CREATE INDEX sessions_user ON sessions (user_id, id);

-- Rotating refresh tokens: only SHA-256 digests; a spent one presented again revokes its session.
CREATE TABLE refresh_tokens (
  token_hash TEXT PRIMARY KEY,
  session_id INTEGER NOT NULL REFERENCES sessions(id),
  created_at TEXT NOT NULL,
  spent_at   TEXT
);
CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

-- Failed sign-ins per account (e-mail digest) and per IP, in a fixed window.
CREATE TABLE login_throttle (
  key               TEXT PRIMARY KEY,
  failures          INTEGER NOT NULL,
  window_started_at TEXT NOT NULL
);

-- Stored responses of writes sent with Idempotency-Key (sealed with AES-256-GCM).
CREATE TABLE idempotency_keys (
  principal    TEXT NOT NULL,
  key_hash     TEXT NOT NULL,
  fingerprint  TEXT NOT NULL,
  status       INTEGER,
  response     TEXT,
  created_at   TEXT NOT NULL,
  locked_until TEXT NOT NULL,
  expires_at   TEXT NOT NULL,
  PRIMARY KEY (principal, key_hash)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

CREATE TABLE organization_plans (
  organization_id TEXT PRIMARY KEY REFERENCES organizations(id),
  plan            TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);

-- Authenticated requests per organization and calendar month, flushed in batches.
CREATE TABLE usage_counters (
  organization_id TEXT NOT NULL,
  period_start    TEXT NOT NULL,
  requests        INTEGER NOT NULL,
  PRIMARY KEY (organization_id, period_start)
);

CREATE INDEX memberships_user ON memberships (user_id, created_at);
CREATE INDEX audit_log_org_created ON audit_log (organization_id, created_at);
CREATE INDEX audit_log_org_action ON audit_log (organization_id, action, id);
