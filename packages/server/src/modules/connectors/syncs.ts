/** Syncs on request and on schedule: trigger, read, list, cancel, retention, the synced objects. */
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError, forbidden, notFound } from '../../core/errors.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { decodeJson, type Executor } from '../../store/database.js';
import { queueSync, type SyncDeps } from './sync.js';
import { deleteInBatches } from '../../core/batches.js';

import { connectionRow, syncView, type SyncView, integrationEnabled, nextRun } from './service.js';

export async function triggerSync(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
): Promise<SyncView> {
  const row = await connectionRow(deps.database.db, ctx.projectId, id);
  if (!(await integrationEnabled(deps.database.db, ctx.organizationId, row.provider)))
    throw forbidden(`${row.provider} is disabled for this organization`);
  const syncId = await write(deps.database, ctx, async (trx, effects) => {
    const queued = await queueSync(deps.database, trx, row, 'manual', ctx, effects.now);
    effects.audit('connector.sync_trigger', { type: 'connection', id });
    return queued;
  });
  deps.jobs.enqueued();
  return getSync(deps.database.db, ctx.projectId, syncId);
}

export async function getSync(db: Executor, projectId: string, syncId: number): Promise<SyncView> {
  const row = await db
    .selectFrom('connector_syncs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', syncId)
    .executeTakeFirst();
  if (!row) throw notFound('Sync');
  return syncView(row);
}

/**
 * Retention: deletes syncs that finished before `before`, a batch a statement, except each
 * connection's newest (its last sync, which the connection shows); answers how many.
 */
export async function purgeFinishedSyncs(db: Executor, before: string, batch = 1_000): Promise<number> {
  return deleteInBatches(batch, async () => {
    const finished = db
      .selectFrom('connector_syncs as s')
      .select('s.id')
      .where('s.status', 'not in', ['queued', 'running'])
      .where('s.finished_at', '<', before)
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('connector_syncs as n')
            .select('n.id')
            .whereRef('n.connection_id', '=', 's.connection_id')
            .whereRef('n.id', '>', 's.id'),
        ),
      )
      .limit(batch);
    return Number(
      (await db.deleteFrom('connector_syncs').where('id', 'in', finished).executeTakeFirst()).numDeletedRows,
    );
  });
}

export async function listSyncs(db: Executor, projectId: string, connectionId: number, page: PageParams) {
  await connectionRow(db, projectId, connectionId);
  return paginate(
    db.selectFrom('connector_syncs').selectAll().where('connection_id', '=', connectionId).orderBy('id', 'desc'),
    page,
    syncView,
  );
}

/** Asks a queued or running sync to stop; it stops before its next object. A finished sync is 409. */
export async function cancelSync(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  syncId: number,
): Promise<SyncView> {
  const sync = await getSync(deps.database.db, ctx.projectId, syncId);
  if (!['queued', 'running'].includes(sync.status))
    throw new AppError('conflict', `The sync has already ${sync.status}`);
  await write(deps.database, ctx, async (trx, effects) => {
    // A queued sync is cancelled outright; a running one at its next object.
    await trx
      .updateTable('connector_syncs')
      .set({ cancel_requested: deps.database.bool(true), updated_at: effects.now })
      .where('id', '=', syncId)
      .execute();
    await trx
      .updateTable('connector_syncs')
      .set({ status: 'cancelled', finished_at: effects.now })
      .where('id', '=', syncId)
      .where('status', '=', 'queued')
      .execute();
    effects.audit('connector.sync_cancel', { type: 'sync', id: syncId });
  });
  return getSync(deps.database.db, ctx.projectId, syncId);
}

export async function listObjects(
  db: Executor,
  projectId: string,
  connectionId: number,
  page: PageParams & { status?: string },
) {
  await connectionRow(db, projectId, connectionId);
  return paginate(
    db
      .selectFrom('connector_objects')
      .selectAll()
      .where('connection_id', '=', connectionId)
      .$if(page.status !== undefined, (qb) => qb.where('status', '=', page.status!))
      .orderBy('source_id'),
    page,
    (o) => ({
      source_id: o.source_id,
      title: o.title,
      url: o.url,
      version: o.version,
      content_hash: o.content_hash,
      memory_ids: decodeJson<number[]>(o.memory_ids),
      status: o.status,
      error: o.error,
      created_at: o.created_at,
      updated_at: o.updated_at,
    }),
  );
}

/**
 * Queues the syncs whose schedule is due. Each connection's next_sync_at is moved forward with a
 * conditional update first, so of several processes only one queues it.
 */
export async function queueDueSyncs(deps: SyncDeps, now = new Date()): Promise<number[]> {
  const due = await deps.database.db
    .selectFrom('connector_connections')
    .selectAll()
    .where('next_sync_at', 'is not', null)
    .where('next_sync_at', '<=', now.toISOString())
    .where('state', '=', 'active')
    .where('purging_since', 'is', null)
    .limit(100)
    .execute();
  const queued: number[] = [];
  for (const row of due) {
    const claimed = await deps.database.db
      .updateTable('connector_connections')
      .set({ next_sync_at: nextRun(row.schedule_minutes, now.getTime()) })
      .where('id', '=', row.id)
      .where('next_sync_at', '=', row.next_sync_at)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) === 0) continue;
    const ctx: WriteContext = {
      actor: { type: 'system', id: null },
      organizationId: row.organization_id,
      projectId: row.project_id,
      requestId: null,
    };
    const id = await write(deps.database, ctx, async (trx, effects) => {
      const syncId = await queueSync(deps.database, trx, row, 'schedule', ctx, effects.now);
      effects.audit('connector.sync_trigger', { type: 'connection', id: row.id }, 'scheduled');
      return syncId;
    }).catch((error: unknown) => {
      // A sync already under way, or the connection changed since it was found due (a purge began, consent was lost): skipped this time.
      if (error instanceof AppError && error.code === 'conflict') return undefined;
      throw error;
    });
    if (id !== undefined) queued.push(id);
  }
  if (queued.length) deps.jobs.enqueued();
  return queued;
}
