-- People: invitations to an organization and password-reset links (owned by modules/people).
-- Only SHA-256 digests of the single-use tokens are stored.

CREATE TABLE invitations (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  email           TEXT NOT NULL,
  role            TEXT NOT NULL,
  token_hash      TEXT NOT NULL UNIQUE,
  invited_by      INTEGER REFERENCES users(id),
  created_at      TEXT NOT NULL,
  expires_at      TEXT NOT NULL,
  accepted_at     TEXT,
  accepted_by     INTEGER REFERENCES users(id)
);
CREATE INDEX invitations_organization ON invitations (organization_id, id);

CREATE TABLE password_resets (
  token_hash TEXT PRIMARY KEY,
  user_id    INTEGER NOT NULL REFERENCES users(id),
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at    TEXT
);
CREATE INDEX password_resets_user ON password_resets (user_id);
