import type { Selectable } from 'kysely';
import { decrypt, deriveKey, encrypt } from '../../core/crypto.js';
import type { ConnectorConnectionsTable } from '../../store/schema.js';

/** This module owns connector_connections, connector_syncs, connector_objects, connector_oauth_states and integration_settings. */

export type ConnectionRow = Selectable<ConnectorConnectionsTable>;

const credentialKey = (secret: Uint8Array) => deriveKey(secret, 'connector-credentials');

/** Credentials at rest: AES-256-GCM under a key derived from the service secret; never returned or logged. */
export const sealCredentials = (secret: Uint8Array, credentials: Record<string, unknown> | null | undefined) =>
  credentials ? encrypt(credentialKey(secret), JSON.stringify(credentials)) : null;

export const openCredentials = (secret: Uint8Array, sealed: string | null): Record<string, unknown> | null =>
  sealed === null ? null : (JSON.parse(decrypt(credentialKey(secret), sealed)) as Record<string, unknown>);

/** One secret string at rest (a PKCE verifier), under the same key. */
export const sealSecret = (secret: Uint8Array, value: string) => encrypt(credentialKey(secret), value);
export const openSecret = (secret: Uint8Array, sealed: string) => decrypt(credentialKey(secret), sealed);
