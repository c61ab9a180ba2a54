import type { Transaction } from 'kysely';
import { write, type Effects, type WriteContext } from '../../core/unit-of-work.js';
import { isUniqueViolation, type Database } from '../../store/database.js';
import type { DB } from '../../store/schema.js';
import { DuplicateFound, retryingOnDuplicates, insertMemories, repeatsWithin } from './duplicates.js';
import type { MemoryRow, Owner } from './feed.js';
import { nextSeqs } from './revisions.js';
import { checkContent, duplicateKey, memoryRow, insertedMemories, recordCreated, type ImportedMemory } from './rows.js';
import type { MemoryView } from './schemas.js';

/** Importing memories of many end users in one transaction (POST /memory/import and the transfer CLI). */

/**
 * The items of many owners in one INSERT, and their history in one more, for an import whose items
 * repeat none of one another: an import interleaves end users, so per owner it was one row a
 * statement (1,000 statements for a 1,000-row batch of 1,000 end users, Node and the database taking
 * turns). Each row carries its owner's sequence (nextSeqs). A duplicate of a memory an owner has
 * fails the insert (DuplicateFound), and the batch runs again owner by owner with 'skip'.
 */
async function insertAcrossOwners(
  database: Database,
  trx: Transaction<DB>,
  ctx: WriteContext,
  effects: Effects,
  owners: Array<{ owner: Owner; items: ImportedMemory[] }>,
  seqs: number[],
): Promise<number> {
  const rows: Array<Omit<MemoryRow, 'id'>> = [];
  const ownerOfRow: Owner[] = [];
  owners.forEach(({ owner, items }, i) => {
    for (const item of items) {
      rows.push(memoryRow(database, owner, item, duplicateKey(item), seqs[i]!, effects.now));
      ownerOfRow.push(owner);
    }
  });
  let memories: MemoryView[];
  try {
    // (A taken sequence: the plain insert, each row with the sequence it carries.)
    memories = await insertedMemories(database, trx, rows, seqs[0]!);
  } catch (error) {
    throw isUniqueViolation(error) ? new DuplicateFound('a memory duplicates one its owner has') : error;
  }
  recordCreated(trx, ctx, effects, ownerOfRow, memories);
  return memories.length;
}

/**
 * Imports memories of several end users in one transaction. An item whose client_ref already
 * landed is skipped (`already_migrated`), so a re-run of an interrupted import skips what landed.
 */
export async function importMemories(
  database: Database,
  ctx: WriteContext,
  batch: Array<{ owner: Owner; item: ImportedMemory }>,
): Promise<{ created: number; skipped: number }> {
  const groups = new Map<string, { owner: Owner; items: ImportedMemory[] }>();
  for (const { owner, item } of batch) {
    checkContent(item);
    const key = JSON.stringify([owner.tenantId, owner.endUserId]);
    const group = groups.get(key) ?? { owner, items: [] };
    group.items.push(item);
    groups.set(key, group);
  }
  const owners = [...groups.values()];
  const repeats = owners.some(({ items }) => repeatsWithin(items, items.map(duplicateKey)));
  return retryingOnDuplicates((duplicates) =>
    write(database, ctx, async (trx, effects) => {
      const seqs = await nextSeqs(
        database,
        trx,
        owners.map((g) => g.owner),
        effects.now,
      );
      let created = 0;
      if (duplicates === 'abort' && !repeats) {
        created = await insertAcrossOwners(database, trx, ctx, effects, owners, seqs);
      } else {
        for (const [i, { owner, items }] of owners.entries()) {
          const outcomes = await insertMemories(
            database,
            trx,
            ctx,
            effects,
            owner,
            items,
            'already_migrated',
            duplicates,
            seqs[i],
          );
          created += outcomes.filter((o) => 'created' in o).length;
        }
      }
      effects.audit('memory.import', { type: 'memory', id: null }, created === batch.length ? 'success' : 'partial');
      return { created, skipped: batch.length - created };
    }),
  );
}
