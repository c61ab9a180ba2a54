/** Purging a connection's memories and removing a connection: a lease-marked purge that another takes over if it stalls. */
import { write, type Effects, type WriteContext } from '../../core/unit-of-work.js';
import { AppError, notFound } from '../../core/errors.js';
import { decodeJson, type Executor } from '../../store/database.js';
import { forgetWithin } from '../memories/index.js';
import { lockedConnection, PURGE_STOPPED, purgeUnderWay, type ConnectionRow } from './store.js';
import type { SyncDeps } from './sync.js';

/** The mark (purging_since) this purge or removal set and last renewed: only it clears or renews the mark. */
interface PurgeMark {
  since: string;
}

const takenOver = () =>
  new AppError(
    'conflict',
    'The purge stalled and another purge or removal of the connection took over; it finishes the work',
  );

/**
 * Marks the connection as being purged, its row locked, unless a sync is queued or running or another
 * purge or removal is under way (409). From then on no sync is queued (queueSync) until the purge ends,
 * so none adds back what it forgets. A purge or removal that died or failed half way (its mark lapsed:
 * PURGE_LEASE_MS) is taken over and finished by the next one.
 */
async function startPurge(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
): Promise<{ row: ConnectionRow; mark: PurgeMark }> {
  return write(deps.database, ctx, async (trx, effects) => {
    const row = await lockedConnection(deps.database, trx, ctx.projectId, id);
    if (!row) throw notFound('Connection');
    // One at a time: a second purge would keep going after the first's end cleared the mark, with syncs queued again.
    if (purgeUnderWay(row, Date.parse(effects.now))) {
      throw new AppError(
        'conflict',
        "The connection's memories are already being purged (a purge or removal is under way); wait for it to end",
      );
    }
    const active = await trx
      .selectFrom('connector_syncs')
      .select('id')
      .where('connection_id', '=', id)
      .where('status', 'in', ['queued', 'running'])
      .executeTakeFirst();
    if (active)
      throw new AppError('conflict', `Sync ${active.id} of this connection is in progress; cancel it or wait`);
    await trx.updateTable('connector_connections').set({ purging_since: effects.now }).where('id', '=', id).execute();
    return { row, mark: { since: effects.now } };
  });
}

/** Renews the purge's mark in the caller's transaction, compare-and-swap on the value it set: a purge taken over commits nothing more. */
async function renewMark(trx: Executor, id: number, mark: PurgeMark, now: string): Promise<void> {
  const renewed = await trx
    .updateTable('connector_connections')
    .set({ purging_since: now })
    .where('id', '=', id)
    .where('purging_since', '=', mark.since)
    .executeTakeFirst();
  if (Number(renewed.numUpdatedRows) === 0) throw takenOver();
}

/** Forgets every memory the connection brought in; its objects are forgotten too, so the next sync starts afresh. */
async function purgeWithin(deps: SyncDeps, ctx: WriteContext, row: ConnectionRow, mark: PurgeMark): Promise<number> {
  let forgotten = 0;
  for (;;) {
    const objects = await deps.database.db
      .selectFrom('connector_objects')
      .select(['source_id', 'memory_ids'])
      .where('connection_id', '=', row.id)
      .limit(200)
      .execute();
    if (objects.length === 0) return forgotten;
    const batch = await write(deps.database, ctx, async (trx, effects) => {
      const ids = objects.flatMap((o) => decodeJson<number[]>(o.memory_ids));
      const n = (
        await forgetWithin(
          trx,
          { ctx, effects, hooks: deps.erase },
          { projectId: row.project_id, tenantId: '', endUserId: row.end_user_id },
          ids,
        )
      ).length;
      await trx
        .deleteFrom('connector_objects')
        .where('connection_id', '=', row.id)
        .where(
          'source_id',
          'in',
          objects.map((o) => o.source_id),
        )
        .execute();
      // Last, after the owner's lock: the connection's row is not held while the batch waits for that (a sync asked for meanwhile is answered at once).
      await renewMark(trx, row.id, mark, effects.now);
      return { n, now: effects.now };
    });
    forgotten += batch.n;
    mark.since = batch.now;
  }
}

/**
 * Runs a purge or removal: marks the connection, forgets in batches, then `end` in one transaction
 * while the mark is still this purge's. One that fails half way lets its mark lapse at once.
 */
async function purging<T>(
  deps: SyncDeps,
  ctx: WriteContext & { projectId: string },
  id: number,
  end: (trx: Executor, effects: Effects, mark: PurgeMark, forgotten: number) => Promise<T>,
): Promise<T> {
  const { row, mark } = await startPurge(deps, ctx, id);
  try {
    const forgotten = await purgeWithin(deps, ctx, row, mark);
    return await write(deps.database, ctx, (trx, effects) => end(trx, effects, mark, forgotten));
  } catch (error) {
    // Only while the mark is still ours; syncs keep waiting for the next purge or removal to finish the work. Should
    // this fail too, the mark lapses after PURGE_LEASE_MS all the same.
    await deps.database.db
      .updateTable('connector_connections')
      .set({ purging_since: PURGE_STOPPED })
      .where('id', '=', id)
      .where('purging_since', '=', mark.since)
      .execute()
      .catch(() => undefined);
    throw error;
  }
}

export async function purgeConnection(deps: SyncDeps, ctx: WriteContext & { projectId: string }, id: number) {
  return purging(deps, ctx, id, async (trx, effects, mark, forgotten) => {
    // Cleared only by the purge that holds the mark: syncs may be queued again once it is done.
    const ended = await trx
      .updateTable('connector_connections')
      .set({ cursor: null, purging_since: null, updated_at: effects.now })
      .where('id', '=', id)
      .where('purging_since', '=', mark.since)
      .executeTakeFirst();
    if (Number(ended.numUpdatedRows) === 0) throw takenOver();
    effects.audit('connection.purge', { type: 'connection', id });
    return { id, memories_forgotten: forgotten };
  });
}

export async function removeConnection(deps: SyncDeps, ctx: WriteContext & { projectId: string }, id: number) {
  return purging(deps, ctx, id, async (trx, effects, mark, forgotten) => {
    await renewMark(trx, id, mark, effects.now);
    await trx.deleteFrom('connector_syncs').where('connection_id', '=', id).execute();
    await trx.deleteFrom('connector_oauth_states').where('connection_id', '=', id).execute();
    await trx.deleteFrom('connector_connections').where('id', '=', id).execute();
    effects.audit('connection.remove', { type: 'connection', id });
    return { id, removed: true, memories_forgotten: forgotten };
  });
}
