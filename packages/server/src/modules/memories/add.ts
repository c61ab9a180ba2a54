import type { Transaction } from 'kysely';
import { eventJson } from '../../core/events.js';
import { groupedInsert } from '../../core/grouped-statements.js';
import { write, type Effects, type WriteContext } from '../../core/unit-of-work.js';
import { compileBody, validationError } from '../../core/validation.js';
import { encodeJson, nowIso, type Database } from '../../store/database.js';
import type { DB } from '../../store/schema.js';
import { retryingOnDuplicates, insertMemories } from './duplicates.js';
import { viewOf, type Owner } from './feed.js';
import { REVISION_STEP } from './revisions.js';
import {
  type Outcome,
  checkContent,
  duplicateKey,
  createdChanges,
  memoryRow,
  withExpiry,
  type Landed,
  LANDED_COLUMNS,
  landedView,
  NEW_MEMORY_COLUMNS,
  PROJECT,
  TENANT,
  END_USER,
  HASH,
  CLIENT_REF,
  memoryColumnList,
  type ImportedMemory,
} from './rows.js';
import { AddMemoryBody, type AddMemoryInput, type BulkAddResultView, type MemoryView } from './schemas.js';

/** Adding memories: POST /memory/add (with its PostgreSQL one-statement path), bulk add, and adds within a caller's transaction. */

export async function addMemory(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  sent: AddMemoryInput,
): Promise<Outcome> {
  checkContent(sent);
  const input: AddMemoryInput = withExpiry(sent);
  let general = ctx;
  if (database.dialect === 'postgres') {
    // A retry of a request whose add committed is handed its result (write() would do the same).
    const earlier = ctx.journal?.replay();
    if (earlier) return earlier.value as Outcome;
    const created = await addInOneStatement(database, ctx, owner, input);
    if (created) return { created };
    // Its statement found the credentials clock where the request's held key was read: verified.
    const { heldAt: _, ...verified } = ctx;
    general = verified;
  }
  // A duplicate, a write whose claim a retry took over (write() fails it), or SQLite (group commit).
  return write(database, general, async (trx, effects) => {
    const [outcome] = await insertMemories(database, trx, ctx, effects, owner, [input], 'duplicate_client_ref');
    const target = 'created' in outcome! ? outcome.created.id : outcome!.skipped.memory_id;
    effects.audit('memory.add', { type: 'memory', id: target }, 'created' in outcome! ? 'success' : 'skipped');
    return outcome!;
  });
}

/**
 * PostgreSQL: a new memory with its revision bump, history row, memory.created event and audit
 * row, grouped with the adds submitted at the same time into one statement
 * (core/grouped-statements.ts#groupedInsert). Undefined for a duplicate, of which nothing but the revision
 * bump was written: addMemory then takes the general path, which finds it.
 */
async function addInOneStatement(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  input: AddMemoryInput,
): Promise<MemoryView | undefined> {
  const now = nowIso();
  const row = memoryRow(database, owner, input, duplicateKey(input), 0, now);
  // The memory as its row will read; its id is the row's (set in SQL).
  const expected = viewOf(row, 1);
  const inserted = await addStatement<Landed>(
    database,
    ctx,
    now,
    [...NEW_MEMORY_COLUMNS.map(([column]) => row[column]), encodeJson(createdChanges(expected))],
    () => eventJson('memory.created', { memory: expected, tenant_id: owner.tenantId || null }),
    ctx.journal?.recordInserted({ created: { ...expected } } satisfies Outcome, ['created', 'id']),
  );
  return inserted && landedView(row, inserted);
}

/**
 * The revision of each owner is bumped once per statement (its rows share the new revision as their
 * seq, as a bulk-add's do), owners locked in one order so that two statements never deadlock; rows
 * are inserted in their writes' order, and each landed row is matched to its write by owner and
 * dedupe hash (unique among a statement's writes: `exclusive`).
 */
export const addStatement = groupedInsert({
  columns: [...NEW_MEMORY_COLUMNS, ['history_changes', 'json']],
  steps: [
    ['revision', REVISION_STEP],
    [
      'landed',
      `INSERT INTO memories (${memoryColumnList}, seq)
      SELECT ${NEW_MEMORY_COLUMNS.map(([column]) => `input.${column}`).join(', ')}, revision.revision
      FROM input JOIN revision USING (project_id, tenant_id, end_user_id) ORDER BY input.ord
      ON CONFLICT DO NOTHING RETURNING ${LANDED_COLUMNS.postgres.join(', ')}, project_id, tenant_id, end_user_id`,
    ],
    [
      'inserted',
      `SELECT landed.*, input.ord FROM landed JOIN input USING (project_id, tenant_id, end_user_id, dedupe_hash)`,
    ],
  ],
  rows: [
    `INSERT INTO memory_history (project_id, memory_id, action, changes, actor_type, actor_id, request_id, created_at)
    SELECT input.ctx_project_id, inserted.id, 'create', input.history_changes, input.ctx_actor_type, input.ctx_actor_id, input.ctx_request_id, input.ctx_now
    FROM inserted JOIN input USING (ord) ORDER BY inserted.id`,
  ],
  audit: { action: 'memory.add', targetType: 'memory' },
  event: 'memory.created',
  exclusive: (values) => {
    const owner = `${values[PROJECT]}\u0000${values[TENANT]}\u0000${values[END_USER]}\u0000`;
    return values[CLIENT_REF] === null
      ? [`${owner}h${values[HASH]}`]
      : [`${owner}h${values[HASH]}`, `${owner}r${values[CLIENT_REF]}`];
  },
});

const validateItem = compileBody<AddMemoryInput>(AddMemoryBody);

/** Every valid item lands or is skipped in one transaction; invalid items are reported, not fatal. */
export async function bulkAdd(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  items: unknown[],
): Promise<BulkAddResultView> {
  const results: BulkAddResultView['results'] = [];
  const valid: Array<{ index: number; item: AddMemoryInput }> = [];
  items.forEach((item, index) => {
    try {
      if (!validateItem(item)) throw validationError(validateItem.errors);
      checkContent(item);
      valid.push({ index, item: withExpiry(item) });
    } catch (error) {
      const e = error as { code: string; message: string; field?: string };
      results[index] = {
        index,
        status: 'failed',
        error: { code: e.code, message: e.message, ...(e.field ? { field: e.field } : {}) },
      };
    }
  });
  if (valid.length > 0) {
    // The outcomes are the write's result (not filled in from inside it), so a replayed write yields them too.
    const outcomes = await retryingOnDuplicates((duplicates) =>
      write(database, ctx, async (trx, effects) => {
        const stored = await insertMemories(
          database,
          trx,
          ctx,
          effects,
          owner,
          valid.map((v) => v.item),
          'already_migrated',
          duplicates,
        );
        const created = stored.flatMap((o) => ('created' in o ? [o.created.id] : []));
        effects.audit('memory.bulk_add', { type: 'memory', id: created.length ? created.join(',') : null });
        return stored;
      }),
    );
    outcomes.forEach((outcome, i) => {
      const index = valid[i]!.index;
      results[index] =
        'created' in outcome
          ? { index, status: 'created', memory: outcome.created }
          : { index, status: 'skipped', reason: outcome.skipped.reason, memory_id: outcome.skipped.memory_id };
    });
  }
  const count = (status: string) => results.filter((r) => r.status === status).length;
  return { totals: { created: count('created'), skipped: count('skipped'), failed: count('failed') }, results };
}

/**
 * Adds memories inside the caller's transaction, skipping duplicates of the owner's live memories
 * (and of earlier items) as POST /memory/add does; outcomes in item order. An item may carry its
 * own time and speaker (a connector's chat message or transcript turn).
 */
export async function addWithin(
  database: Database,
  trx: Transaction<DB>,
  ctx: WriteContext,
  effects: Effects,
  owner: Owner,
  items: ImportedMemory[],
): Promise<Outcome[]> {
  items.forEach((item, i) => checkContent(item, `items/${i}/`));
  const outcomes: Outcome[] = [];
  for (let i = 0; i < items.length; i += 500) {
    outcomes.push(
      ...(await insertMemories(database, trx, ctx, effects, owner, items.slice(i, i + 500), 'duplicate_client_ref')),
    );
  }
  return outcomes;
}
