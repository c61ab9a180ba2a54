import { chainHash, GENESIS_HASH, type AuditEntry } from '../../core/audit-log.js';
import { keysetPages } from '../../core/paging.js';
import type { Executor } from '../../store/database.js';

/** Reading and verifying the audit log that core/audit-log.ts appends to inside every unit of work. */

export interface ChainReport {
  organizationId: string;
  rows: number;
  ok: boolean;
  /** The first row that does not fit the chain (null id: the chain head disagrees with the last row). */
  broken?: { id: number | null; reason: string };
}

/**
 * Walks each organization's chain from genesis, recomputing every hash: a changed, inserted or
 * removed row breaks the chain at the first row that no longer fits; rows removed from the end are
 * caught by the chain head.
 */
export async function verifyAuditChains(db: Executor, organizationId?: string): Promise<ChainReport[]> {
  let heads = db.selectFrom('audit_chain_heads').select(['organization_id', 'last_hash']).orderBy('organization_id');
  if (organizationId) heads = heads.where('organization_id', '=', organizationId);
  const reports: ChainReport[] = [];
  for (const head of await heads.execute()) {
    const report: ChainReport = { organizationId: head.organization_id, rows: 0, ok: true };
    let prev = GENESIS_HASH;
    const pages = keysetPages(
      (after, limit) =>
        db.selectFrom('audit_log').selectAll().where('organization_id', '=', head.organization_id).where('id', '>', after).orderBy('id').limit(limit).execute(),
      1000,
    );
    walk: for await (const rows of pages) {
      for (const row of rows) {
        const entry: AuditEntry = {
          organizationId: row.organization_id, projectId: row.project_id, actorType: row.actor_type, actorId: row.actor_id,
          action: row.action, targetType: row.target_type, targetId: row.target_id, result: row.result,
          requestId: row.request_id, createdAt: row.created_at,
        };
        if (row.prev_hash !== prev) {
          report.broken = { id: row.id, reason: 'prev_hash does not match the hash of the row before it (a row was removed or inserted)' };
          break walk;
        }
        if (chainHash(entry, prev) !== row.hash) {
          report.broken = { id: row.id, reason: 'hash does not match the row (the row was changed)' };
          break walk;
        }
        prev = row.hash;
        report.rows++;
      }
    }
    if (!report.broken && prev !== head.last_hash) {
      report.broken = { id: null, reason: 'the chain head does not match the last row (rows were removed from the end)' };
    }
    report.ok = !report.broken;
    reports.push(report);
  }
  return reports;
}

export interface AuditFilter {
  actor_id?: number;
  actor_type?: string;
  action?: string;
  created_after?: string;
  created_before?: string;
}

/**
 * The audit events of an organization (optionally one project, optionally only one API key's own
 * actions), newest first.
 */
export function auditEvents(
  db: Executor, scope: { organizationId: string; projectId: string | null; onlyApiKeyId?: number }, filter: AuditFilter,
) {
  let query = db
    .selectFrom('audit_log')
    .select(['id', 'actor_id', 'actor_type', 'action', 'target_type', 'target_id', 'result', 'request_id', 'created_at', 'project_id'])
    .where('organization_id', '=', scope.organizationId);
  if (scope.projectId) query = query.where('project_id', '=', scope.projectId);
  if (scope.onlyApiKeyId !== undefined) query = query.where('actor_type', '=', 'api_key').where('actor_id', '=', scope.onlyApiKeyId);
  if (filter.actor_id !== undefined) query = query.where('actor_id', '=', filter.actor_id);
  if (filter.actor_type !== undefined) query = query.where('actor_type', '=', filter.actor_type);
  if (filter.action !== undefined) query = query.where('action', '=', filter.action);
  // Stored timestamps are UTC with milliseconds; bounds are brought to the same form to compare.
  if (filter.created_after !== undefined) query = query.where('created_at', '>', new Date(filter.created_after).toISOString());
  if (filter.created_before !== undefined) query = query.where('created_at', '<', new Date(filter.created_before).toISOString());
  return query.orderBy('id', 'desc');
}
