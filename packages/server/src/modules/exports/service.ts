import { sql, type Selectable } from 'kysely';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError, notFound } from '../../core/errors.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { enqueueJob } from '../../jobs/runner.js';
import type { BlobStore } from '../../store/blobs.js';
import {
  containsText,
  decodeJson,
  encodeJson,
  nowIso,
  type Database,
  type Dialect,
  type Executor,
} from '../../store/database.js';
import { renamedJson } from '../../core/pseudonyms.js';
import type { ExportsTable } from '../../store/schema.js';
import { ownersOfMemories, type ExportFilter } from '../memories/index.js';
import type { CreateExportInput, ExportScopeInput, ExportView } from './schemas.js';

/**
 * Export records: create (queues the job), list, read, cancel, delete; expiry and erasure of
 * artifacts. This module owns the exports and imports tables.
 */

export const EXPORT_JOB = 'exports.run';
type ExportRow = Selectable<ExportsTable>;

export const EXTENSIONS = { jsonl: 'jsonl', json: 'json', csv: 'csv' } as const;
export const filenameOf = (row: Pick<ExportRow, 'id' | 'format' | 'gzip'>) =>
  `engram-export-${row.id}.${EXTENSIONS[row.format as keyof typeof EXTENSIONS]}${row.gzip ? '.gz' : ''}`;

export function toExport(row: ExportRow): ExportView {
  return {
    id: row.id,
    project_id: row.project_id,
    status: row.status as ExportView['status'],
    scope: decodeJson<ExportScopeInput>(row.scope),
    format: row.format as ExportView['format'],
    gzip: Boolean(row.gzip),
    include: decodeJson<string[]>(row.include),
    progress: { rows_done: row.rows_done, rows_total: row.rows_total },
    size: row.size,
    sha256: row.sha256,
    filename: filenameOf(row),
    error: row.error,
    artifact_deleted_at: row.artifact_deleted_at,
    artifact_deleted_reason: row.artifact_deleted_reason,
    created_at: row.created_at,
    started_at: row.started_at,
    completed_at: row.completed_at,
    expires_at: row.expires_at,
  };
}

export function filterOf(projectId: string, scope: ExportScopeInput): ExportFilter {
  return {
    projectId,
    tenantId: scope.tenant_id ?? null,
    endUserId: scope.end_user_id ?? null,
    sessionId: scope.session_id ?? null,
    createdAfter: scope.created_after ? new Date(scope.created_after).toISOString() : null,
    createdBefore: scope.created_before ? new Date(scope.created_before).toISOString() : null,
    tagsAny: scope.tags_any ?? null,
  };
}

export async function createExport(
  database: Database,
  ctx: WriteContext & { projectId: string },
  input: CreateExportInput,
  ttlSeconds: number,
): Promise<ExportView> {
  const scope = input.scope ?? {};
  if (
    scope.created_after &&
    scope.created_before &&
    Date.parse(scope.created_after) >= Date.parse(scope.created_before)
  ) {
    throw new AppError('validation_error', 'created_after must be before created_before', 'scope/created_after');
  }
  return write(database, ctx, async (trx, effects) => {
    await exportsOfProjectLock(trx, database.dialect, ctx.projectId, 'create');
    const row = await trx
      .insertInto('exports')
      .values({
        organization_id: ctx.organizationId,
        project_id: ctx.projectId,
        created_by: ctx.actor.id,
        created_by_type: ctx.actor.type === 'api_key' ? 'api_key' : 'user',
        status: 'queued',
        scope: encodeJson(scope),
        format: input.format ?? 'jsonl',
        gzip: database.bool(input.gzip ?? false),
        include: encodeJson(input.include ?? []),
        created_at: effects.now,
        updated_at: effects.now,
        expires_at: new Date(Date.parse(effects.now) + ttlSeconds * 1000).toISOString(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await enqueueJob(trx, { kind: EXPORT_JOB, projectId: ctx.projectId, payload: { exportId: row.id } });
    effects.audit('export.create', { type: 'export', id: row.id });
    return toExport(row);
  });
}

/**
 * PostgreSQL: a forget's erase hook reads a project's exports, and its transaction may commit long after. An export
 * created in between would not be seen by the hook, yet its job could read the memory before the forget commits and
 * complete holding it. So forgetting holds this lock shared (from before it reads the exports until it commits) and
 * creating an export holds it exclusively: a creation waits for the forgets under way, whose memories its job then
 * no longer reads, and a forget waits for a creation under way, whose export it then sees. A statement of its own,
 * taken before the read: a statement's snapshot is taken as it starts, before a lock it waits for inside.
 * (SQLite has one writer at a time.)
 */
async function exportsOfProjectLock(
  trx: Executor,
  dialect: Dialect,
  projectId: string,
  as: 'create' | 'erase',
): Promise<void> {
  if (dialect !== 'postgres') return;
  if (as === 'create')
    await sql`SELECT pg_advisory_xact_lock(${EXPORTS_LOCK_CLASS}, hashtext(${projectId}))`.execute(trx);
  else await sql`SELECT pg_advisory_xact_lock_shared(${EXPORTS_LOCK_CLASS}, hashtext(${projectId}))`.execute(trx);
}
/** The first key of the exports module's advisory locks (the second is the project's hash). */
const EXPORTS_LOCK_CLASS = 724_992;

const liveExports = (db: Executor, projectId: string) =>
  db.selectFrom('exports').selectAll().where('project_id', '=', projectId).where('deleted_at', 'is', null);

export function listExports(db: Executor, projectId: string, page: PageParams) {
  return paginate(liveExports(db, projectId).orderBy('id', 'desc'), page, toExport);
}

export async function exportRow(db: Executor, projectId: string, id: number): Promise<ExportRow> {
  const row = await liveExports(db, projectId).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('Export');
  return row;
}

export async function cancelExport(
  database: Database,
  ctx: WriteContext & { projectId: string },
  id: number,
): Promise<ExportView> {
  return write(database, ctx, async (trx, effects) => {
    // The status is decided as the update finds the row: an export completing meanwhile keeps its
    // artifact (its client was told so) and the cancel is refused. The job sees a cancel at its
    // next page and stops, removing what it wrote.
    const updated = await trx
      .updateTable('exports')
      .set({ status: 'cancelled', updated_at: effects.now, completed_at: effects.now })
      .where('id', '=', id)
      .where('project_id', '=', ctx.projectId)
      .where('deleted_at', 'is', null)
      .where('status', 'in', ['queued', 'running'])
      .returningAll()
      .executeTakeFirst();
    if (!updated)
      throw new AppError('conflict', `The export is already ${(await exportRow(trx, ctx.projectId, id)).status}`);
    effects.audit('export.cancel', { type: 'export', id });
    return toExport(updated);
  });
}

/** Deletes the record (it answers 404 from then on) and its artifact. */
export async function deleteExport(
  database: Database,
  blobs: BlobStore,
  ctx: WriteContext & { projectId: string },
  id: number,
): Promise<ExportView> {
  const row = await write(database, ctx, async (trx, effects) => {
    // One statement deciding from the row as it finds it: an export completing meanwhile is recorded as completed
    // (not cancelled), and its artifact goes all the same.
    const updated = await trx
      .updateTable('exports')
      .set((eb) => ({
        status: eb.case().when('status', 'in', ['queued', 'running']).then('cancelled').else(eb.ref('status')).end(),
        deleted_at: effects.now,
        updated_at: effects.now,
        artifact_deleted_at: eb.fn.coalesce('artifact_deleted_at', eb.val(effects.now)),
        artifact_deleted_reason: eb.fn.coalesce('artifact_deleted_reason', eb.val('deleted')),
      }))
      .where('id', '=', id)
      .where('project_id', '=', ctx.projectId)
      .where('deleted_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!updated) throw notFound('Export');
    effects.audit('export.delete', { type: 'export', id });
    return updated;
  });
  await purgeDeletedArtifacts(database, blobs);
  return toExport(row);
}

/**
 * Removing an end user: exports of the project scoped to them name their pseudonym in their scope instead
 * (their artifacts were withdrawn with the memories, withdrawArtifactsHolding).
 */
export async function renameEndUserInExports(
  trx: Executor,
  projectId: string,
  endUserId: string,
  pseudonym: string,
): Promise<void> {
  const rows = await trx
    .selectFrom('exports')
    .select(['id', 'scope'])
    .where('project_id', '=', projectId)
    .where(containsText(trx, 'scope', JSON.stringify(endUserId)))
    .execute();
  for (const row of rows) {
    const scope = renamedJson(row.scope, endUserId, pseudonym);
    if (scope !== undefined) await trx.updateTable('exports').set({ scope }).where('id', '=', row.id).execute();
  }
}

/**
 * Erase hook: forgetting memories (or purging an end user) withdraws every artifact that holds
 * one of them, in the same transaction; the record stays, naming the reason. Exports still
 * running restart, since what they wrote so far may hold them. Session and tag filters are not
 * checked (erasure blanks them first), so such exports are withdrawn conservatively; nor are times
 * for an export with relations, whose links reach memories outside its own.
 */
export async function withdrawArtifactsHolding(trx: Executor, dialect: Dialect, ids: number[]): Promise<boolean> {
  const owners = await ownersOfMemories(trx, ids);
  const byProject = new Map<string, typeof owners>();
  for (const o of owners) byProject.set(o.project_id, [...(byProject.get(o.project_id) ?? []), o]);
  let withdrew = false;
  const now = nowIso();
  for (const [projectId, erased] of [...byProject].sort(([a], [b]) => (a < b ? -1 : 1))) {
    await exportsOfProjectLock(trx, dialect, projectId, 'erase');
    const withdrawable = () =>
      liveExports(trx, projectId)
        .where('artifact_deleted_at', 'is', null)
        .where('status', 'in', ['queued', 'running', 'completed']);
    const inScope = new Map<number, typeof erased>();
    // An export with relations also holds what links its memories to others of their end users, whatever their time.
    const withRelations = new Set<number>();
    for (const row of await withdrawable().execute()) {
      const filter = filterOf(projectId, decodeJson<ExportScopeInput>(row.scope));
      const linked = decodeJson<string[]>(row.include).includes('relations');
      if (linked) withRelations.add(row.id);
      const held = erased.filter(
        (m) =>
          (filter.tenantId == null || filter.tenantId === m.tenant_id) &&
          (filter.endUserId == null || filter.endUserId === m.end_user_id) &&
          (linked ||
            ((filter.createdAfter == null || m.created_at > filter.createdAfter) &&
              (filter.createdBefore == null || m.created_at < filter.createdBefore))),
      );
      if (held.length) inScope.set(row.id, held);
    }
    if (inScope.size === 0) continue;
    // Their status is read again under a lock, as their job may complete meanwhile: a completion
    // committed first is withdrawn here; one committing after finds `erasures` moved and starts
    // over. Only exports in scope (a scope never changes) are locked, in id order (no deadlock).
    const locked = await withdrawable()
      .where('id', 'in', [...inScope.keys()])
      .orderBy('id')
      .$if(dialect === 'postgres', (qb) => qb.forUpdate())
      .execute();
    for (const row of locked) {
      if (row.status === 'completed') {
        if (!withRelations.has(row.id) && !inScope.get(row.id)!.some((m) => m.id <= row.last_memory_id)) continue;
        await trx
          .updateTable('exports')
          .set({ artifact_deleted_at: now, artifact_deleted_reason: 'memories_erased', updated_at: now })
          .where('id', '=', row.id)
          .execute();
        withdrew = true;
      } else {
        await trx
          .updateTable('exports')
          .set((eb) => ({ erasures: eb('erasures', '+', 1) }))
          .where('id', '=', row.id)
          .execute();
      }
    }
  }
  return withdrew;
}

/** Removes the bytes of withdrawn artifacts (expired, erased, deleted); the records stay. */
export async function purgeDeletedArtifacts(database: Database, blobs: BlobStore): Promise<number> {
  const rows = await database.db
    .selectFrom('exports')
    .select(['id', 'blob_key'])
    .where('artifact_deleted_at', 'is not', null)
    .where('blob_key', 'is not', null)
    .execute();
  for (const row of rows) {
    await blobs.delete(row.blob_key!);
    await database.db.updateTable('exports').set({ blob_key: null }).where('id', '=', row.id).execute();
  }
  return rows.length;
}

/** The periodic sweep: completed exports past expires_at become `expired` and lose their artifact. */
export async function sweepExports(
  database: Database,
  blobs: BlobStore,
  now = nowIso(),
): Promise<{ expired: number; purged: number }> {
  const expired = await database.db
    .updateTable('exports')
    .set({ status: 'expired', artifact_deleted_at: now, artifact_deleted_reason: 'expired', updated_at: now })
    .where('expires_at', '<=', now)
    .where('artifact_deleted_at', 'is', null)
    .where('status', '=', 'completed')
    .executeTakeFirst();
  return { expired: Number(expired.numUpdatedRows), purged: await purgeDeletedArtifacts(database, blobs) };
}
