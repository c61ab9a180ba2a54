import { notFound } from '../../core/errors.js';
import { canonicalJson } from '../../core/json.js';
import { write, type Effects, type WriteContext } from '../../core/unit-of-work.js';
import { encodeJson, type Database, type Executor } from '../../store/database.js';
import { owned, toMemory, type Owner } from './feed.js';
import { nextSeq } from './revisions.js';
import { checkContent, recordHistory, withExpiry } from './rows.js';
import type { BatchUpdateResultView, MemoryPatchInput, MemoryView } from './schemas.js';

/** Patching memories: one (PATCH /memory/:id) or a batch, under the owner's lock taken only when something changes. */

const PATCHABLE = ['tags', 'importance', 'metadata', 'source', 'expires_at'] as const;

const sameJson = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);

/**
 * Applies a patch inside a transaction, taking the owner's lock (`seq`) before it changes anything;
 * returns undefined when the memory is not a live one of the owner's.
 */
async function applyPatch(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  owner: Owner,
  id: number,
  patch: MemoryPatchInput,
  seq: () => Promise<number>,
): Promise<MemoryView | undefined> {
  const read = async () => {
    const row = await owned(owner)(trx).where('id', '=', id).executeTakeFirst();
    return row && toMemory(row);
  };
  const changesFrom = (current: MemoryView) => {
    const changes: Record<string, { before: unknown; after: unknown }> = {};
    for (const field of PATCHABLE) {
      const after = patch[field];
      if (after !== undefined && !sameJson(after, current[field])) changes[field] = { before: current[field], after };
    }
    return changes;
  };
  let current = await read();
  if (!current || Object.keys(changesFrom(current)).length === 0) return current;
  // Something changes: the owner's lock, which forgetting takes too, then the memory read again under
  // it (a memory forgotten meanwhile is gone, one changed meanwhile is patched as it now is). Taken
  // only then, so a patch that changes nothing (or is refused) writes nothing.
  const changeSeq = await seq();
  current = await read();
  if (!current) return undefined;
  const changes = changesFrom(current);
  if (Object.keys(changes).length === 0) return current;
  const updated = await trx
    .updateTable('memories')
    .set({
      ...(changes.tags ? { tags: encodeJson(patch.tags) } : {}),
      ...(changes.importance ? { importance: patch.importance } : {}),
      ...(changes.metadata ? { metadata: encodeJson(patch.metadata) } : {}),
      ...(changes.source ? { source: patch.source } : {}),
      ...(changes.expires_at ? { expires_at: patch.expires_at ?? null } : {}),
      seq: changeSeq,
      updated_at: effects.now,
    })
    .where('id', '=', id)
    // Tombstoning a deleted project's memories takes no owner lock.
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!updated) return undefined;
  await recordHistory(trx, ctx, [{ memoryId: id, action: 'update', changes }], effects.now);
  const memory = toMemory(updated);
  effects.emit('memory.updated', { memory, fields: Object.keys(changes) });
  return memory;
}

/** Memoises the transaction's change sequence: taken once, and only if something changes. */
function lazySeq(trx: Executor, owner: Owner, now: string): () => Promise<number> {
  let seq: Promise<number> | undefined;
  return () => (seq ??= nextSeq(trx, owner, now));
}

export async function updateMemory(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  id: number,
  patch: MemoryPatchInput,
): Promise<MemoryView> {
  checkContent(patch);
  const change = withExpiry(patch);
  return write(database, ctx, async (trx, effects) => {
    const memory = await applyPatch(trx, ctx, effects, owner, id, change, lazySeq(trx, owner, effects.now));
    if (!memory) throw notFound('Memory');
    effects.audit('memory.update', { type: 'memory', id });
    return memory;
  });
}

export async function batchUpdate(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  updates: Array<MemoryPatchInput & { id: number }>,
): Promise<BatchUpdateResultView> {
  updates.forEach((u, i) => checkContent(u, `updates/${i}/`));
  const changes = updates.map((u, i) => withExpiry(u, `updates/${i}/`));
  return write(database, ctx, async (trx, effects) => {
    const seq = lazySeq(trx, owner, effects.now);
    const results: BatchUpdateResultView['results'] = [];
    for (const [index, { id, ...patch }] of changes.entries()) {
      const memory = await applyPatch(trx, ctx, effects, owner, id, patch, seq);
      results.push(
        memory
          ? { index, id, status: 'updated', memory }
          : { index, id, status: 'failed', error: { code: 'not_found', message: 'Memory not found' } },
      );
    }
    const updated = results.filter((r) => r.status === 'updated');
    effects.audit('memory.batch_update', { type: 'memory', id: updated.map((r) => r.id).join(',') || null });
    return { totals: { updated: updated.length, failed: results.length - updated.length }, results };
  });
}
