import { sha256Hex } from './crypto.js';
import type { Executor } from '../store/database.js';

/**
 * The append-only, hash-chained audit log: written only here, inside the unit of work; the audit
 * module reads and verifies it. Owns audit_log and audit_chain_heads.
 */

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
 * head row is locked first (PostgreSQL; SQLite has a single writer) so concurrent appends line
 * up instead of forking.
 */
export async function appendAudit(trx: Executor, entries: AuditEntry[]): Promise<void> {
  const byOrg = new Map<string, AuditEntry[]>();
  for (const e of entries) byOrg.set(e.organizationId, [...(byOrg.get(e.organizationId) ?? []), e]);
  for (const [organizationId, orgEntries] of byOrg) {
    // Creating the head, reading it and (on PostgreSQL) row-locking it until commit, in one statement.
    const head = await trx
      .insertInto('audit_chain_heads')
      .values({ organization_id: organizationId, last_hash: GENESIS_HASH })
      .onConflict((oc) => oc.column('organization_id').doUpdateSet((eb) => ({ last_hash: eb.ref('audit_chain_heads.last_hash') })))
      .returning('last_hash')
      .executeTakeFirstOrThrow();
    let prev = head.last_hash;
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
