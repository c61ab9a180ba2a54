import { sql, type Insertable } from 'kysely';
import { sha256Hex } from './crypto.js';
import { sqlLiteral, type Database, type Executor } from '../store/database.js';
import { prepared, preparedInsert } from '../store/prepared.js';
import type { AuditLogTable } from '../store/schema.js';

/**
 * The append-only, hash-chained audit log: written only here; the audit module reads and verifies
 * it. Owns audit_log, audit_unsealed, audit_seals and audit_chain_heads.
 *
 * A write appends its rows inside its own transaction, unchained: nothing organization-wide is
 * locked, so one organization's writes run side by side. A trigger queues each new row in
 * audit_unsealed. The sealer (sealAuditChains, a chore) then chains committed rows per
 * organization, in the order it finds them (by id), into audit_seals: position n holds the audit
 * row's id, the hash of position n-1 and a hash over the row, its id, n and that previous hash.
 * The chain head records the last position and hash, so removing seals from the end shows too.
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

/** Where a row sits in its organization's chain. Legacy seals were chained before sealing existed. */
export interface ChainPlace {
  auditId: number;
  position: number;
  legacy: boolean;
}

/**
 * The hash of a sealed row covers every field of it, its id and position, and the hash before it.
 * Legacy seals (chained when the write itself chained) cover the fields and the previous hash only.
 */
export function chainHash(entry: AuditEntry, place: ChainPlace, prevHash: string): string {
  const fields = [
    entry.organizationId, entry.projectId, entry.actorType, entry.actorId, entry.action, entry.targetType,
    entry.targetId, entry.result, entry.requestId, entry.createdAt,
  ];
  return sha256Hex(JSON.stringify(place.legacy ? [...fields, prevHash] : [...fields, place.auditId, place.position, prevHash]));
}

/**
 * The insert appending entries in the caller's transaction, unchained (the sealer chains them once
 * committed); undefined when there are none.
 */
export function auditInsert(trx: Executor, entries: AuditEntry[]) {
  if (entries.length === 0) return undefined;
  return auditRows(trx, entries.map((e) => ({
    organization_id: e.organizationId, project_id: e.projectId, actor_type: e.actorType, actor_id: e.actorId,
    action: e.action, target_type: e.targetType, target_id: e.targetId, result: e.result,
    request_id: e.requestId, created_at: e.createdAt,
  })));
}

const auditRows = preparedInsert<Insertable<AuditLogTable>>(
  ['organization_id', 'project_id', 'actor_type', 'actor_id', 'action', 'target_type', 'target_id', 'result', 'request_id', 'created_at'],
  (db, rows) => db.insertInto('audit_log').values(rows),
);

/**
 * PostgreSQL: the insert appending one entry per row of the CTE `inserted` of a grouped insert
 * (core/unit-of-work.ts#groupedInsert), whose id is the entry's target; each entry's actor, request
 * and time are its write's, from the CTE `input` (joined on `ord`).
 */
export function auditInsertPerInsertedRow(action: string, targetType: string): string {
  return `INSERT INTO audit_log (organization_id, project_id, actor_type, actor_id, action, target_type, target_id, result, request_id, created_at)
    SELECT input.ctx_organization_id, input.ctx_project_id, input.ctx_actor_type, input.ctx_actor_id, ${sqlLiteral(action)}, ${sqlLiteral(targetType)},
      CAST(inserted.id AS text), 'success', input.ctx_request_id, input.ctx_now
    FROM inserted JOIN input USING (ord) ORDER BY inserted.id`;
}

const SEAL_BATCH = 2000;

/**
 * Chains every committed, unsealed audit row, organization by organization, one batch per
 * transaction. The chain head row is locked (PostgreSQL; SQLite has one writer), so sealers in
 * several processes take turns per organization and never fork a chain; writers never touch it.
 * Rows of a transaction still open are invisible here and sealed by a later pass, at a later
 * position. Returns how many rows it sealed.
 */
export async function sealAuditChains(database: Database, organizationId?: string): Promise<number> {
  const { db } = database;
  let pending = db.selectFrom('audit_unsealed').select('organization_id').distinct();
  if (organizationId) pending = pending.where('organization_id', '=', organizationId);
  let sealed = 0;
  for (const { organization_id } of await pending.execute()) {
    for (;;) {
      const count = await db.transaction().execute((trx) => sealBatch(database, trx, organization_id));
      sealed += count;
      if (count < SEAL_BATCH) break;
    }
  }
  return sealed;
}

async function sealBatch(database: Database, trx: Executor, organizationId: string): Promise<number> {
  // Creating the head, reading it and (on PostgreSQL) row-locking it until commit, in one statement.
  const head = await trx
    .insertInto('audit_chain_heads')
    .values({ organization_id: organizationId, last_hash: GENESIS_HASH, last_position: 0 })
    .onConflict((oc) => oc.column('organization_id').doUpdateSet((eb) => ({ last_hash: eb.ref('audit_chain_heads.last_hash') })))
    .returning(['last_hash', 'last_position'])
    .executeTakeFirstOrThrow();
  const rows = await trx
    .selectFrom('audit_unsealed as u')
    .innerJoin('audit_log as a', 'a.id', 'u.audit_id')
    .selectAll('a')
    .where('u.organization_id', '=', organizationId)
    .orderBy('u.audit_id')
    .limit(SEAL_BATCH)
    .execute();
  if (rows.length === 0) return 0;
  let prev = head.last_hash;
  let position = Number(head.last_position);
  const seals = rows.map((row) => {
    const place = { auditId: row.id, position: ++position, legacy: false };
    const hash = chainHash(entryOf(row), place, prev);
    const seal = { organization_id: organizationId, position, audit_id: row.id, prev_hash: prev, hash, legacy: database.bool(false) };
    prev = hash;
    return seal;
  });
  const ids = rows.map((r) => r.id);
  if (database.dialect === 'postgres') {
    // Each column as one array: one prepared statement for every batch size, and no per-value parameters to bind.
    await sealRows(trx, organizationId, seals.map((s) => s.position), ids, seals.map((s) => s.prev_hash), seals.map((s) => s.hash));
    await unqueueRows(trx, ids);
  } else {
    // Bound parameters per statement stay under SQLite's limit (32766).
    for (let i = 0; i < seals.length; i += 1000) await trx.insertInto('audit_seals').values(seals.slice(i, i + 1000)).execute();
    for (let i = 0; i < ids.length; i += 1000) await trx.deleteFrom('audit_unsealed').where('audit_id', 'in', ids.slice(i, i + 1000)).execute();
  }
  await trx.updateTable('audit_chain_heads').set({ last_hash: prev, last_position: position }).where('organization_id', '=', organizationId).execute();
  return rows.length;
}

const sealRows = prepared(5, (db, organizationId: string, positions: number[], ids: number[], prevHashes: string[], hashes: string[]) =>
  db.insertInto('audit_seals').columns(['organization_id', 'position', 'audit_id', 'prev_hash', 'hash', 'legacy']).expression(sql`
    SELECT ${organizationId}, s.position, s.audit_id, s.prev_hash, s.hash, false
    FROM unnest(${positions}::bigint[], ${ids}::bigint[], ${prevHashes}::text[], ${hashes}::text[]) AS s(position, audit_id, prev_hash, hash)`),
);

const unqueueRows = prepared(1, (db, ids: number[]) => db.deleteFrom('audit_unsealed').where(sql<boolean>`audit_id = any(${ids}::bigint[])`));

/** The chained fields of an audit_log row. */
export function entryOf(row: {
  organization_id: string; project_id: string | null; actor_type: string; actor_id: number | null; action: string;
  target_type: string; target_id: string | null; result: string; request_id: string | null; created_at: string;
}): AuditEntry {
  return {
    organizationId: row.organization_id, projectId: row.project_id, actorType: row.actor_type, actorId: row.actor_id,
    action: row.action, targetType: row.target_type, targetId: row.target_id, result: row.result,
    requestId: row.request_id, createdAt: row.created_at,
  };
}

/** Unsealed rows per organization (all organizations, or one). */
export async function unsealedCounts(db: Executor, organizationId?: string): Promise<Map<string, number>> {
  let query = db.selectFrom('audit_unsealed').select(['organization_id', sql<number>`count(*)`.as('n')]).groupBy('organization_id');
  if (organizationId) query = query.where('organization_id', '=', organizationId);
  return new Map((await query.execute()).map((r) => [r.organization_id, Number(r.n)]));
}
