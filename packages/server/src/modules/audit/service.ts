import { sql } from 'kysely';
import { sha256Hex } from '../../core/crypto.js';
import type { Dialect, Executor } from '../../store/database.js';

/** The append-only, hash-chained audit log. This module alone writes audit_log and audit_chain_heads. */

export const GENESIS_HASH = '0'.repeat(64);

export interface AuditEntry {
  organizationId: string;
  projectId: string | null;
  actorType: string;
  actorId: number | null;
  action: string;
  targetType: string;
  targetId: string | null;
  result: string;
  requestId: string | null;
  createdAt: string;
}

/** The hash of a row covers every field of it and the hash of the row before it in the chain. */
export function chainHash(entry: AuditEntry, prevHash: string): string {
  return sha256Hex(
    JSON.stringify([
      entry.organizationId, entry.projectId, entry.actorType, entry.actorId, entry.action, entry.targetType,
      entry.targetId, entry.result, entry.requestId, entry.createdAt, prevHash,
    ]),
  );
}

/**
 * Appends entries to their organizations' chains inside the caller's transaction. The chain
 * head row is locked first (PostgreSQL) so concurrent appends line up instead of forking.
 */
export async function appendAudit(trx: Executor, dialect: Dialect, entries: AuditEntry[]): Promise<void> {
  const byOrg = new Map<string, AuditEntry[]>();
  for (const e of entries) byOrg.set(e.organizationId, [...(byOrg.get(e.organizationId) ?? []), e]);
  for (const [organizationId, orgEntries] of byOrg) {
    await trx
      .insertInto('audit_chain_heads')
      .values({ organization_id: organizationId, last_hash: GENESIS_HASH })
      .onConflict((oc) => oc.column('organization_id').doNothing())
      .execute();
    const head = await sql<{ last_hash: string }>`
      SELECT last_hash FROM audit_chain_heads WHERE organization_id = ${organizationId}
      ${dialect === 'postgres' ? sql`FOR UPDATE` : sql``}`.execute(trx);
    let prev = head.rows[0]!.last_hash;
    for (const e of orgEntries) {
      const hash = chainHash(e, prev);
      await trx
        .insertInto('audit_log')
        .values({
          organization_id: e.organizationId, project_id: e.projectId, actor_type: e.actorType, actor_id: e.actorId,
          action: e.action, target_type: e.targetType, target_id: e.targetId, result: e.result,
          request_id: e.requestId, created_at: e.createdAt, prev_hash: prev, hash,
        })
        .execute();
      prev = hash;
    }
    await trx.updateTable('audit_chain_heads').set({ last_hash: prev }).where('organization_id', '=', organizationId).execute();
  }
}
