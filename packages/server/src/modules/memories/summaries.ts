import type { Effects, WriteContext } from '../../core/unit-of-work.js';
import { encodeJson, type Database, type Executor } from '../../store/database.js';
import type { Erasure } from './erase.js';
import { owned, toMemory, type Owner } from './feed.js';
import { checkContent, recordHistory, insertOne } from './rows.js';
import type { MemoryView } from './schemas.js';

/** Summaries stored as memories (is_summary), and their rewrite when a source is forgotten. */

/** A summary to store: its text, its metadata (listing its sources), and the key of the set it summarizes. */
export interface SummaryInput {
  text: string;
  metadata: Record<string, unknown>;
  /** Identifies the summarized set and method; an equal key finds the same summary again. */
  setKey: string;
  sessionId: string | null;
}

/**
 * Stores a summary as a memory with is_summary set, with its history and memory.created event.
 * Its set key takes the place of the text hash, so re-summarizing the same set finds it. `seq` is
 * the transaction's (nextSeq), taken before the sources were read again in it, so none of them is
 * forgotten before the summary commits.
 */
export async function insertSummary(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  database: Database,
  owner: Owner,
  seq: number,
  summary: SummaryInput,
): Promise<MemoryView> {
  checkContent(summary);
  return insertOne(trx, ctx, effects, owner, {
    text: summary.text,
    is_summary: database.bool(true),
    source: 'summary',
    metadata: encodeJson(summary.metadata),
    session_id: summary.sessionId,
    speaker: null,
    dedupe_hash: summary.setKey,
    seq,
    created_at: effects.now,
  });
}

/**
 * Replaces a summary's text and metadata after one of its sources was forgotten. Its earlier
 * history rows quoted the forgotten text, so their content is erased, as forgetting does.
 */
export async function rewriteSummary(
  trx: Executor,
  erasure: Erasure,
  owner: Owner,
  id: number,
  summary: Omit<SummaryInput, 'sessionId'>,
): Promise<void> {
  const { ctx, effects, seq } = erasure;
  erasure.rewritten.push(id);
  await trx
    .updateTable('memories')
    .set({
      text: summary.text,
      metadata: encodeJson(summary.metadata),
      dedupe_hash: summary.setKey,
      seq,
      updated_at: effects.now,
    })
    .where('id', '=', id)
    .execute();
  await trx.updateTable('memory_history').set({ changes: null }).where('memory_id', '=', id).execute();
  await recordHistory(
    trx,
    ctx,
    [
      {
        memoryId: id,
        action: 'update',
        changes: { text: { before: null, after: summary.text }, metadata: { before: null, after: summary.metadata } },
      },
    ],
    effects.now,
  );
  effects.emit('memory.updated', {
    memory: toMemory(await owned(owner)(trx).where('id', '=', id).executeTakeFirstOrThrow()),
    fields: ['text', 'metadata'],
  });
}
