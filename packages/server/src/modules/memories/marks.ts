import { notFound } from '../../core/errors.js';
import type { Effects, WriteContext } from '../../core/unit-of-work.js';
import type { Executor } from '../../store/database.js';
import { liveMemoryIds } from './erase.js';
import { owned, toMemory, type Owner } from './feed.js';
import { nextSeq } from './revisions.js';
import { recordHistory } from './rows.js';

/** Changes that mark memories without touching their content: superseded, touched for a reload, tombstoned with their project. */

/**
 * Marks a memory as superseded by another of the same owner (a resolved conflict), or clears the
 * mark (successor null). Its history records why; its change sequence moves so every index reloads it.
 */
export async function markSuperseded(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  owner: Owner,
  id: number,
  successor: number | null,
  reason: string,
): Promise<void> {
  // The owner's lock first, as forgetting takes it: neither memory is forgotten before this commits.
  const seq = await nextSeq(trx, owner, effects.now);
  const row = await owned(owner)(trx).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('Memory');
  if (successor !== null && (await liveMemoryIds(trx, owner, [successor])).length === 0) throw notFound('Memory');
  await trx
    .updateTable('memories')
    .set({ superseded_by: successor, seq, updated_at: effects.now })
    .where('id', '=', id)
    .execute();
  await recordHistory(
    trx,
    ctx,
    [
      {
        memoryId: id,
        action: 'supersede',
        changes: {
          superseded_by: { before: row.superseded_by, after: successor },
          reason: { before: null, after: reason },
        },
      },
    ],
    effects.now,
  );
  effects.emit('memory.updated', {
    memory: toMemory(await owned(owner)(trx).where('id', '=', id).executeTakeFirstOrThrow()),
    fields: ['superseded_by'],
  });
}

/** Marks memories as changed (for a ranking signal kept elsewhere, such as feedback) so indexes reload them. */
export async function touchMemories(trx: Executor, owner: Owner, ids: number[], now: string): Promise<void> {
  const seq = await nextSeq(trx, owner, now);
  await trx
    .updateTable('memories')
    .set({ seq })
    .where('id', 'in', ids)
    .where('end_user_id', '=', owner.endUserId)
    .execute();
}

/**
 * Tombstones every live memory of a project (called when the project is soft-deleted). The rows
 * keep their content, like the project row, but are gone for every read from then on.
 */
export async function tombstoneProjectMemories(trx: Executor, projectId: string, now: string): Promise<number> {
  const result = await trx
    .updateTable('memories')
    .set({ deleted_at: now, updated_at: now })
    .where('project_id', '=', projectId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
