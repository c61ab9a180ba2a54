import type { WriteContext } from '../../core/unit-of-work.js';
import { write } from '../../core/unit-of-work.js';
import { notFound } from '../../core/errors.js';
import type { Database, Executor } from '../../store/database.js';
import { getMemory, touchMemories, type Owner } from '../memories/index.js';

/**
 * Feedback on retrieval results: each rating moves that memory's rank for its end user (the
 * `feedback` ranking feature is the net of live ratings) until withdrawn. This module owns the
 * feedback table.
 */

export interface FeedbackView {
  id: number;
  memory_id: number;
  rating: 'positive' | 'negative';
  query: string | null;
  comment: string | null;
  created_at: string;
  withdrawn_at: string | null;
}

const toView = (r: {
  id: number;
  memory_id: number;
  rating: number;
  query: string | null;
  comment: string | null;
  created_at: string;
  withdrawn_at: string | null;
}): FeedbackView => ({
  id: r.id,
  memory_id: r.memory_id,
  rating: r.rating > 0 ? 'positive' : 'negative',
  query: r.query,
  comment: r.comment,
  created_at: r.created_at,
  withdrawn_at: r.withdrawn_at,
});

/** Net live rating per memory. Large sets are summed per owner instead of by an id list. */
export async function feedbackSums(db: Executor, ids: number[], owner?: Owner): Promise<Map<number, number>> {
  const sums = new Map<number, number>();
  if (ids.length === 0) return sums;
  const base = () =>
    db
      .selectFrom('feedback')
      .select(['memory_id', (eb) => eb.fn.sum<number>('rating').as('net')])
      .where('withdrawn_at', 'is', null)
      .groupBy('memory_id');
  if (owner && ids.length > 500) {
    const wanted = new Set(ids);
    const rows = await base()
      .where('project_id', '=', owner.projectId)
      .where('tenant_id', '=', owner.tenantId)
      .where('end_user_id', '=', owner.endUserId)
      .execute();
    for (const r of rows) if (wanted.has(r.memory_id)) sums.set(r.memory_id, Number(r.net));
    return sums;
  }
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await base()
      .where('memory_id', 'in', ids.slice(i, i + 500))
      .execute();
    for (const r of rows) sums.set(r.memory_id, Number(r.net));
  }
  return sums;
}

export async function addFeedback(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  memoryId: number,
  input: { rating: 'positive' | 'negative'; query?: string; comment?: string },
): Promise<FeedbackView> {
  return write(database, ctx, async (trx, effects) => {
    // The owner's lock (taken by touching, as forgetting takes it) before the memory is read: one
    // forgotten meanwhile is not found, and none is forgotten before the rating commits.
    await touchMemories(trx, owner, [memoryId], effects.now);
    await getMemory(trx, owner, memoryId);
    const row = await trx
      .insertInto('feedback')
      .values({
        project_id: owner.projectId,
        tenant_id: owner.tenantId,
        end_user_id: owner.endUserId,
        memory_id: memoryId,
        rating: input.rating === 'positive' ? 1 : -1,
        query: input.query ?? null,
        comment: input.comment ?? null,
        actor_type: ctx.actor.type,
        actor_id: ctx.actor.id,
        created_at: effects.now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    effects.audit('memory.feedback', { type: 'memory', id: memoryId });
    return toView(row);
  });
}

export async function listFeedback(db: Executor, owner: Owner, memoryId: number): Promise<FeedbackView[]> {
  await getMemory(db, owner, memoryId);
  const rows = await db
    .selectFrom('feedback')
    .selectAll()
    .where('memory_id', '=', memoryId)
    .where('end_user_id', '=', owner.endUserId)
    .orderBy('id')
    .execute();
  return rows.map(toView);
}

export async function withdrawFeedback(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  memoryId: number,
  feedbackId: number,
): Promise<FeedbackView> {
  return write(database, ctx, async (trx, effects) => {
    await getMemory(trx, owner, memoryId);
    const row = await trx
      .updateTable('feedback')
      .set({ withdrawn_at: effects.now })
      .where('id', '=', feedbackId)
      .where('memory_id', '=', memoryId)
      .where('project_id', '=', owner.projectId)
      .where('tenant_id', '=', owner.tenantId)
      .where('end_user_id', '=', owner.endUserId)
      .where('withdrawn_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw notFound('Feedback');
    await touchMemories(trx, owner, [memoryId], effects.now);
    effects.audit('memory.feedback_withdraw', { type: 'feedback', id: feedbackId });
    return toView(row);
  });
}

/** Every rating (withdrawn ones too) of these memories, grouped by memory id: what an export includes. */
export async function feedbackOfMemories(db: Executor, ids: number[]): Promise<Map<number, FeedbackView[]>> {
  const byMemory = new Map<number, FeedbackView[]>();
  if (ids.length === 0) return byMemory;
  const rows = await db
    .selectFrom('feedback')
    .select(['id', 'memory_id', 'rating', 'query', 'comment', 'created_at', 'withdrawn_at'])
    .where('memory_id', 'in', ids)
    .orderBy('id')
    .execute();
  for (const r of rows) byMemory.set(r.memory_id, [...(byMemory.get(r.memory_id) ?? []), toView(r)]);
  return byMemory;
}
