import { CompiledQuery, type Transaction } from 'kysely';
import type { InputColumn } from '../../core/grouped-statements.js';
import { write, type Effects, type WriteContext } from '../../core/unit-of-work.js';
import { encodeJson, isUniqueViolation, nowIso, postgresArray, type Database } from '../../store/database.js';
import type { DB } from '../../store/schema.js';
import { DuplicateFound, retryingOnDuplicates, insertMemories, repeatsWithin } from './duplicates.js';
import { viewOf, type MemoryRow, type Owner } from './feed.js';
import { nextSeqs, REVISION_STEP } from './revisions.js';
import {
  checkContent,
  createdChanges,
  duplicateKey,
  emitCreated,
  memoryColumnList,
  memoryRow,
  insertedMemories,
  NEW_MEMORY_COLUMNS,
  recordCreated,
  type ImportedMemory,
} from './rows.js';
import type { MemoryView } from './schemas.js';

/** Importing memories of many end users in one transaction (POST /memory/import and the transfer CLI). */

type OwnerItems = { owner: Owner; items: ImportedMemory[]; hashes: string[] };

/**
 * A batch made ready for its transaction: its items by owner with their duplicate keys, and on PostgreSQL, when they
 * repeat none of one another, the one statement's column arrays and the memories as they will be (ids to come). The
 * import job prepares a batch while the batch before it is written, so this JavaScript (a third of a PostgreSQL
 * batch's time, the database idle meanwhile) runs beside the database's work instead of before it.
 */
export interface PreparedImport {
  readonly size: number;
  readonly owners: OwnerItems[];
  /** Items repeat one another: each owner's are then inserted after a lookup. */
  readonly repeats: boolean;
  readonly acrossOwners?: { arrays: string[]; views: MemoryView[]; ownerOfRow: Owner[] };
}

/**
 * Checks and prepares a batch (AppError on content the memories module refuses). `now`: the time of an item that
 * brings none of its own, on PostgreSQL the time it was prepared (SQLite's rows are built in the transaction).
 */
export function prepareImport(
  database: Database,
  batch: Array<{ owner: Owner; item: ImportedMemory }>,
  now = nowIso(),
): PreparedImport {
  const groups = new Map<string, OwnerItems>();
  for (const { owner, item } of batch) {
    checkContent(item);
    const key = JSON.stringify([owner.tenantId, owner.endUserId]);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { owner, items: [], hashes: [] }));
    group.items.push(item);
    // Each item's duplicate key once (its text's normal form and hash were a tenth of an import's JavaScript, twice over).
    group.hashes.push(duplicateKey(item));
  }
  const owners = [...groups.values()];
  const repeats = owners.some(({ items, hashes }) => repeatsWithin(items, hashes));
  if (database.dialect !== 'postgres' || repeats) return { size: batch.length, owners, repeats };
  const columns = IMPORT_COLUMNS.map(() => new Array<unknown>(batch.length));
  const views: MemoryView[] = [];
  const ownerOfRow: Owner[] = [];
  for (const { owner, items, hashes } of owners) {
    for (const [j, item] of items.entries()) {
      const row = memoryRow(database, owner, item, hashes[j]!, 0, now);
      const r = views.length;
      NEW_MEMORY_COLUMNS.forEach(([column], c) => {
        columns[c]![r] = row[column];
      });
      const view = viewOf(row, 0);
      columns[NEW_MEMORY_COLUMNS.length]![r] = encodeJson(createdChanges(view));
      views.push(view);
      ownerOfRow.push(owner);
    }
  }
  return {
    size: batch.length,
    owners,
    repeats,
    acrossOwners: { arrays: columns.map(postgresArray), views, ownerOfRow },
  };
}

/**
 * The items of many owners in one INSERT, and their history in one more, for an import whose items
 * repeat none of one another: an import interleaves end users, so per owner it was one row a
 * statement (1,000 statements for a 1,000-row batch of 1,000 end users, Node and the database taking
 * turns). Each row carries its owner's sequence. A duplicate of a memory an owner has fails the
 * insert (DuplicateFound), and the batch runs again owner by owner with 'skip'.
 */
async function insertAcrossOwners(
  database: Database,
  trx: Transaction<DB>,
  ctx: WriteContext,
  effects: Effects,
  { owners, acrossOwners }: PreparedImport,
): Promise<number> {
  try {
    if (acrossOwners) {
      const { views, ownerOfRow } = acrossOwners;
      emitCreated(effects, ownerOfRow, await insertedInOneStatement(trx, ctx, effects.now, acrossOwners));
      return views.length;
    }
    const seqs = await nextSeqs(
      database,
      trx,
      owners.map((g) => g.owner),
      effects.now,
    );
    const rows: Array<Omit<MemoryRow, 'id'>> = [];
    const ownerOfRow: Owner[] = [];
    owners.forEach(({ owner, items, hashes }, i) => {
      for (const [j, item] of items.entries()) {
        rows.push(memoryRow(database, owner, item, hashes[j]!, seqs[i]!, effects.now));
        ownerOfRow.push(owner);
      }
    });
    // SQLite binds at most 32,766 values a statement: a batch's rows go in statements of SQLITE_ROWS.
    for (let start = 0; start < rows.length; start += SQLITE_ROWS) {
      const end = Math.min(start + SQLITE_ROWS, rows.length);
      const memories = await insertedMemories(database, trx, rows.slice(start, end), seqs[0]!);
      recordCreated(trx, ctx, effects, ownerOfRow.slice(start, end), memories);
    }
    return rows.length;
  } catch (error) {
    throw isUniqueViolation(error) ? new DuplicateFound('a memory duplicates one its owner has') : error;
  }
}

const SQLITE_ROWS = 1000;

const HISTORY_CHANGES: InputColumn = ['history_changes', 'json'];
const IMPORT_COLUMNS: readonly InputColumn[] = [...NEW_MEMORY_COLUMNS, HISTORY_CHANGES];
const [NOW, ACTOR_TYPE, ACTOR_ID, REQUEST_ID] = [1, 2, 3, 4].map((n) => n + IMPORT_COLUMNS.length);

/**
 * PostgreSQL: a batch in one statement, whatever its owners. Its rows come as one array a column
 * (unnest: a statement of 23 parameters, parsed once, where a VALUES list bound 19,000); every owner's
 * revision is bumped once (REVISION_STEP, owners locked in one order), the memories take it as
 * their seq, and their history rows are inserted from the rows that landed, in the same statement.
 */
const IMPORT_STATEMENT = `WITH input AS (
  SELECT i.*, $${NOW}::timestamptz AS ctx_now
  FROM unnest(${IMPORT_COLUMNS.map(([, type], n) => `$${n + 1}::${type}[]`).join(', ')})
    WITH ORDINALITY AS i(${IMPORT_COLUMNS.map(([column]) => column).join(', ')}, ord)
), revision AS (${REVISION_STEP}
), landed AS (
  INSERT INTO memories (${memoryColumnList}, seq)
  SELECT ${NEW_MEMORY_COLUMNS.map(([column]) => `input.${column}`).join(', ')}, revision.revision
  FROM input JOIN revision USING (project_id, tenant_id, end_user_id) ORDER BY input.ord
  RETURNING id, project_id, tenant_id, end_user_id, dedupe_hash
), inserted AS (
  SELECT landed.id, landed.project_id, input.ord, input.history_changes
  FROM landed JOIN input USING (project_id, tenant_id, end_user_id, dedupe_hash)
), history AS (
  INSERT INTO memory_history (project_id, memory_id, action, changes, actor_type, actor_id, request_id, created_at)
  SELECT project_id, id, 'create', history_changes, $${ACTOR_TYPE}, $${ACTOR_ID}::bigint, $${REQUEST_ID}, $${NOW}::timestamptz
  FROM inserted ORDER BY id
)
SELECT id, ord FROM inserted`;

async function insertedInOneStatement(
  trx: Transaction<DB>,
  ctx: WriteContext,
  now: string,
  { arrays, views }: NonNullable<PreparedImport['acrossOwners']>,
): Promise<MemoryView[]> {
  const { rows: landed } = await trx.executeQuery<{ id: number; ord: number }>(
    CompiledQuery.raw(IMPORT_STATEMENT, [...arrays, now, ctx.actor.type, ctx.actor.id, ctx.requestId]),
  );
  for (const { id, ord } of landed) views[Number(ord) - 1]!.id = Number(id);
  return views;
}

/** How many of a batch's items landed, and how many were skipped as already there. */
export interface ImportOutcome {
  created: number;
  skipped: number;
}

/**
 * Imports memories of several end users in one transaction. An item whose client_ref already
 * landed is skipped (`already_migrated`), so a re-run of an interrupted import skips what landed.
 * `alongside` runs last in the same transaction, told the outcome (the caller's record of its
 * progress: committed with the rows it counts, and no commit of its own); its answer is `recorded`.
 */
export async function importMemories<T = undefined>(
  database: Database,
  ctx: WriteContext,
  batch: PreparedImport | Array<{ owner: Owner; item: ImportedMemory }>,
  alongside?: (trx: Transaction<DB>, outcome: ImportOutcome) => Promise<T>,
): Promise<ImportOutcome & { recorded: T | undefined }> {
  const prepared = Array.isArray(batch) ? prepareImport(database, batch) : batch;
  const { owners, repeats } = prepared;
  return retryingOnDuplicates((duplicates) =>
    write(database, ctx, async (trx, effects) => {
      let created = 0;
      if (duplicates === 'abort' && !repeats) {
        created = await insertAcrossOwners(database, trx, ctx, effects, prepared);
      } else {
        const seqs = await nextSeqs(
          database,
          trx,
          owners.map((g) => g.owner),
          effects.now,
        );
        for (const [i, { owner, items }] of owners.entries()) {
          // An owner's items in statements of at most SQLITE_ROWS, each seeing the ones before as the owner's memories.
          for (let start = 0; start < items.length; start += SQLITE_ROWS) {
            const outcomes = await insertMemories(
              database,
              trx,
              ctx,
              effects,
              owner,
              items.slice(start, start + SQLITE_ROWS),
              'already_migrated',
              duplicates,
              seqs[i],
            );
            created += outcomes.filter((o) => 'created' in o).length;
          }
        }
      }
      effects.audit('memory.import', { type: 'memory', id: null }, created === prepared.size ? 'success' : 'partial');
      const outcome = { created, skipped: prepared.size - created };
      return { ...outcome, recorded: await alongside?.(trx, outcome) };
    }),
  );
}
