-- OAuth consent of connector connections (modules/connectors/oauth.ts): one row per consent under way.
-- The state itself is never stored, only its SHA-256; the PKCE verifier is encrypted.

CREATE TABLE connector_oauth_states (
  state_hash    TEXT PRIMARY KEY,
  connection_id INTEGER NOT NULL REFERENCES connector_connections(id) ON DELETE CASCADE,
  project_id    TEXT NOT NULL,
  actor         TEXT NOT NULL,
  code_verifier TEXT,
  redirect_uri  TEXT NOT NULL,
  expires_at    TEXT NOT NULL,
  created_at    TEXT NOT NULL
);
CREATE INDEX connector_oauth_states_connection ON connector_oauth_states (connection_id);

-- An organization's own OAuth client for a provider (sealed JSON {client_id, client_secret}); absent: the server's.
ALTER TABLE integration_settings ADD COLUMN oauth_client TEXT;
