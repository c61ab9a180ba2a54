import type { ExpressionBuilder, Selectable } from 'kysely';
import { decrypt, deriveKey, encrypt } from '../../core/crypto.js';
import type { Database, Executor } from '../../store/database.js';
import type { ConnectorConnectionsTable, DB } from '../../store/schema.js';

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

/**
 * The connection's credentials (sealed) as a check or a refresh last read or stored them. A write
 * decided from them is made only while they are still stored (`sameCredentials`): a consent, new
 * credentials or another refresh in between makes it void.
 */
export interface StoredCredentials {
  sealed: string | null;
}

export const sameCredentials = (sealed: string | null) => (eb: ExpressionBuilder<DB, 'connector_connections'>) =>
  sealed === null ? eb('credentials', 'is', null) : eb('credentials', '=', sealed);

/**
 * A purge or removal holds the connection's mark (purging_since) while it forgets in batches, renewing
 * it with each batch. A mark not renewed for this long is a purge that died: the next purge or
 * removal takes it over and finishes its work; the purge that stalled then commits nothing more.
 */
export const PURGE_LEASE_MS = 5 * 60_000;

/** The mark a purge that failed half way leaves: lapsed at once, so the next purge finishes its work without waiting. */
export const PURGE_STOPPED = new Date(0).toISOString();

/** Whether the connection's mark is held by a purge still under way, not one that died or stopped. */
export const purgeUnderWay = (row: Pick<ConnectionRow, 'purging_since'>, now = Date.now()) =>
  row.purging_since !== null && Date.parse(row.purging_since) > now - PURGE_LEASE_MS;

/**
 * The connection's row, locked until the transaction ends on PostgreSQL (SQLite has one writer):
 * queueing a sync and starting or ending a purge take turns on it.
 */
export const lockedConnection = (database: Database, trx: Executor, projectId: string, id: number) =>
  trx
    .selectFrom('connector_connections')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .$if(database.dialect === 'postgres', (qb) => qb.forUpdate())
    .executeTakeFirst();
