import { chainHash, entryOf, GENESIS_HASH, unsealedCounts } from '../../core/audit-log.js';
import { keysetPages } from '../../core/paging.js';
import type { Database, Executor } from '../../store/database.js';

/** Reading and verifying the audit log that core/audit-log.ts appends to and seals. */

export interface ChainReport {
  organizationId: string;
  /** Sealed rows verified. */
  rows: number;
  /** Rows written but not yet chained by the sealer: listed, but not yet protected. */
  unsealed: number;
  ok: boolean;
  /** The first row that does not fit the chain (null id: the chain head disagrees with the last seal). */
  broken?: { id: number | null; reason: string };
}

/**
 * Walks each organization's chain from genesis in position order, recomputing every hash: a
 * changed row, a removed row or seal, or seals moved to other positions break the chain at the
 * first place that no longer fits; seals removed from the end are caught by the chain head.
 */
export async function verifyAuditChains(database: Database, organizationId?: string): Promise<ChainReport[]> {
  const { db } = database;
  let heads = db
    .selectFrom('audit_chain_heads')
    .select(['organization_id', 'last_hash', 'last_position'])
    .orderBy('organization_id');
  if (organizationId) heads = heads.where('organization_id', '=', organizationId);
  const unsealed = await unsealedCounts(database, organizationId);
  const reports: ChainReport[] = [];
  const chains = await heads.execute();
  // An organization whose rows were never sealed yet has no head: nothing chained, everything pending.
  for (const [org] of unsealed) {
    if (!chains.some((h) => h.organization_id === org))
      chains.push({ organization_id: org, last_hash: GENESIS_HASH, last_position: 0 });
  }
  chains.sort((a, b) => a.organization_id.localeCompare(b.organization_id));
  for (const head of chains) {
    const report: Omit<ChainReport, 'ok'> = {
      organizationId: head.organization_id,
      rows: 0,
      unsealed: unsealed.get(head.organization_id) ?? 0,
    };
    let prev = GENESIS_HASH;
    let expected = 1;
    const pages = keysetPages(
      db,
      (executor, after, limit) =>
        executor
          .selectFrom('audit_seals as s')
          .leftJoin('audit_log as a', 'a.id', 's.audit_id')
          .select(['s.position as id', 's.audit_id', 's.prev_hash', 's.hash', 's.legacy'])
          .select([
            'a.organization_id',
            'a.project_id',
            'a.actor_type',
            'a.actor_id',
            'a.action',
            'a.target_type',
            'a.target_id',
            'a.result',
            'a.request_id',
            'a.created_at',
          ])
          .where('s.organization_id', '=', head.organization_id)
          .where('s.position', '>', after)
          .orderBy('s.position')
          .limit(limit),
      1000,
      // One organization's chain, read by its (organization, position) key: no sort to avoid.
      false,
    );
    walk: for await (const seals of pages) {
      for (const seal of seals) {
        if (Number(seal.id) !== expected || seal.prev_hash !== prev) {
          report.broken = {
            id: seal.audit_id,
            reason: 'the seal does not follow the one before it (a row was removed, inserted or moved)',
          };
          break walk;
        }
        // A removed row joins as nulls, so its organization is null too.
        if (seal.organization_id !== head.organization_id) {
          report.broken = { id: seal.audit_id, reason: 'the sealed row is missing (it was removed)' };
          break walk;
        }
        const place = { auditId: seal.audit_id, position: expected, legacy: Boolean(seal.legacy) };
        if (chainHash(entryOf(seal as Parameters<typeof entryOf>[0]), place, prev) !== seal.hash) {
          report.broken = { id: seal.audit_id, reason: 'hash does not match the row (the row was changed)' };
          break walk;
        }
        prev = seal.hash;
        expected++;
        report.rows++;
      }
    }
    if (!report.broken && (prev !== head.last_hash || report.rows !== Number(head.last_position))) {
      report.broken = {
        id: null,
        reason: 'the chain head does not match the last seal (seals were removed from the end)',
      };
    }
    reports.push({ ...report, ok: !report.broken });
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
  db: Executor,
  scope: { organizationId: string; projectId: string | null; onlyApiKeyId?: number },
  filter: AuditFilter,
) {
  let query = db
    .selectFrom('audit_log')
    .select([
      'id',
      'actor_id',
      'actor_type',
      'action',
      'target_type',
      'target_id',
      'result',
      'request_id',
      'created_at',
      'project_id',
    ])
    // Sealed: chained (core/audit-log.ts); a row stays unsealed for the moments until the sealer's next pass.
    .select((eb) =>
      eb
        .exists(
          eb
            .selectFrom('audit_seals')
            .select('audit_seals.audit_id')
            .whereRef('audit_seals.audit_id', '=', 'audit_log.id'),
        )
        .as('sealed'),
    )
    .where('organization_id', '=', scope.organizationId);
  if (scope.projectId) query = query.where('project_id', '=', scope.projectId);
  if (scope.onlyApiKeyId !== undefined)
    query = query.where('actor_type', '=', 'api_key').where('actor_id', '=', scope.onlyApiKeyId);
  if (filter.actor_id !== undefined) query = query.where('actor_id', '=', filter.actor_id);
  if (filter.actor_type !== undefined) query = query.where('actor_type', '=', filter.actor_type);
  if (filter.action !== undefined) query = query.where('action', '=', filter.action);
  // Stored timestamps are UTC with milliseconds; bounds are brought to the same form to compare.
  if (filter.created_after !== undefined)
    query = query.where('created_at', '>', new Date(filter.created_after).toISOString());
  if (filter.created_before !== undefined)
    query = query.where('created_at', '<', new Date(filter.created_before).toISOString());
  return query.orderBy('id', 'desc');
}
