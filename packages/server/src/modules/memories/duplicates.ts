import { sql, type Transaction } from 'kysely';
import type { Effects, WriteContext } from '../../core/unit-of-work.js';
import { isUniqueViolation, type Database, type Executor } from '../../store/database.js';
import { prepared } from '../../store/prepared.js';
import type { DB } from '../../store/schema.js';
import { owned, revisionOf, type MemoryRow, type Owner } from './feed.js';
import { nextSeq, type RowsSeq, rowsSeq, seqOf } from './revisions.js';
import {
  type Outcome,
  duplicateKey,
  memoryRow,
  insertedMemories,
  insertedUnlessConflict,
  recordCreated,
  type ImportedMemory,
} from './rows.js';
import type { MemoryView, SkipReason } from './schemas.js';

/**
 * Inserting memories that may duplicate the owner's live memories (or one another): the duplicate
 * lookups, the insert that skips conflicts, and the plain insert that a retry with 'skip' backs.
 */

/**
 * How a call whose items repeat none of one another meets the owner's memories they duplicate.
 * 'skip': an INSERT … ON CONFLICT DO NOTHING, then a lookup of the items that did not land.
 * 'abort': a plain INSERT, which fails on the first duplicate (DuplicateFound) and takes the
 * transaction down with it, for a caller that owns its transaction and runs it again with 'skip'
 * (retryingOnDuplicates). What a bulk add or an import brings is mostly new, and ON CONFLICT
 * costs PostgreSQL a probe of every unique index before each row and a logged confirmation after
 * it: a tenth of its time per bulk memory.
 */
type DuplicatePolicy = 'skip' | 'abort';

/** A plain insert met a duplicate (DuplicatePolicy 'abort'). */
export class DuplicateFound extends Error {}

/** Runs a write inserting with 'abort', and again with 'skip' should it meet a duplicate. */
export async function retryingOnDuplicates<T>(run: (duplicates: DuplicatePolicy) => Promise<T>): Promise<T> {
  try {
    return await run('abort');
  } catch (error) {
    if (error instanceof DuplicateFound) return run('skip');
    throw error;
  }
}

/**
 * Inserts the items that are not duplicates of a live memory of the owner (or of an earlier
 * item in the same call), with their history rows and memory.created events. `lockedSeq`: the
 * owner's change sequence, when the caller took it (nextSeqs).
 */
export async function insertMemories(
  database: Database,
  trx: Transaction<DB>,
  ctx: WriteContext,
  effects: Effects,
  owner: Owner,
  items: ImportedMemory[],
  clientRefReason: SkipReason,
  duplicates: DuplicatePolicy = 'skip',
  lockedSeq?: number,
): Promise<Outcome[]> {
  const now = effects.now;
  const hashes = items.map(duplicateKey);
  if (items.length === 1 && lockedSeq === undefined) {
    const outcome = await insertUnlessDuplicate(database, trx, owner, items[0]!, hashes[0]!, now, clientRefReason);
    if (outcome && 'created' in outcome) recordCreated(trx, ctx, effects, owner, [outcome.created]);
    if (outcome) return [outcome];
  }
  // Items repeating one another are looked up before their insert, under the owner's lock: taken first.
  if (repeatsWithin(items, hashes)) {
    return insertAfterLookup(
      database,
      trx,
      ctx,
      effects,
      owner,
      items,
      hashes,
      lockedSeq ?? (await nextSeq(trx, owner, now)),
      clientRefReason,
    );
  }
  const seq = lockedSeq ?? (await rowsSeq(database, trx, owner, now));
  if (duplicates === 'skip')
    return insertSkippingConflicts(database, trx, ctx, effects, owner, items, hashes, seq, clientRefReason);
  let memories: MemoryView[];
  try {
    memories = await insertedMemories(
      database,
      trx,
      items.map((item, i) => memoryRow(database, owner, item, hashes[i]!, seqOf(seq), now)),
      seq,
    );
  } catch (error) {
    throw isUniqueViolation(error) ? new DuplicateFound('a memory duplicates one the owner has') : error;
  }
  recordCreated(trx, ctx, effects, owner, memories);
  return memories.map((created) => ({ created }));
}

/** Whether two items share a client ref or a duplicate key (the later one is then a duplicate of the earlier). */
export function repeatsWithin(items: ImportedMemory[], hashes: string[]): boolean {
  const refs = new Set<string>();
  for (const item of items) {
    if (item.client_ref === undefined) continue;
    if (refs.has(item.client_ref)) return true;
    refs.add(item.client_ref);
  }
  return new Set(hashes).size < hashes.length;
}

/**
 * Items that repeat none of one another: all are inserted at once, the insert skipping those that
 * conflict with a live memory of the owner (the partial unique indexes on client_ref and
 * dedupe_hash are exactly the duplicate rule), and only the skipped ones are looked up, so new
 * memories cost no lookup. A connector's re-sync, mostly memories the owner has, and a bulk add
 * run again after a duplicate come this way (DuplicatePolicy 'skip'). The transaction holds the
 * owner's revision lock (nextSeq), so a conflicting memory cannot be forgotten before it is looked
 * up; should one be missing all the same, its item goes through the lookup first.
 */
async function insertSkippingConflicts(
  database: Database,
  trx: Transaction<DB>,
  ctx: WriteContext,
  effects: Effects,
  owner: Owner,
  items: ImportedMemory[],
  hashes: string[],
  seq: RowsSeq,
  clientRefReason: SkipReason,
): Promise<Outcome[]> {
  const landed = await insertedUnlessConflict(
    database,
    trx,
    items.map((item, i) => memoryRow(database, owner, item, hashes[i]!, seqOf(seq), effects.now)),
    seq,
  );
  const skipped = items.flatMap((item, i) => (landed.has(hashes[i]!) ? [] : [{ item, hash: hashes[i]!, index: i }]));
  recordCreated(trx, ctx, effects, owner, [...landed.values()]);
  const outcomes: Array<Outcome | undefined> = hashes.map((hash) => {
    const created = landed.get(hash);
    return created && { created };
  });
  if (skipped.length > 0) {
    const duplicateOf = await existingDuplicates(
      database,
      trx,
      owner,
      skipped.map((s) => s.item),
      skipped.map((s) => s.hash),
      clientRefReason,
    );
    const missing: typeof skipped = [];
    for (const s of skipped) {
      const outcome = duplicateOf(s.item, s.hash);
      if (outcome) outcomes[s.index] = outcome;
      else missing.push(s);
    }
    if (missing.length > 0) {
      // (The revision the insert bumped, read back in its transaction.)
      const taken = typeof seq === 'number' ? seq : await revisionOf(trx, owner);
      const again = await insertAfterLookup(
        database,
        trx,
        ctx,
        effects,
        owner,
        missing.map((s) => s.item),
        missing.map((s) => s.hash),
        taken,
        clientRefReason,
      );
      missing.forEach((s, i) => (outcomes[s.index] = again[i]));
    }
  }
  return outcomes as Outcome[];
}

/** Looks up the owner's memories that the items duplicate, then inserts the rest; outcomes in item order. */
async function insertAfterLookup(
  database: Database,
  trx: Transaction<DB>,
  ctx: WriteContext,
  effects: Effects,
  owner: Owner,
  items: ImportedMemory[],
  hashes: string[],
  seq: number,
  clientRefReason: SkipReason,
): Promise<Outcome[]> {
  const duplicateOf = await existingDuplicates(database, trx, owner, items, hashes, clientRefReason);

  const outcomes: Array<Outcome | { pending: number; reason?: SkipReason }> = [];
  const rows: Array<Omit<MemoryRow, 'id'>> = [];
  const pendingRef = new Map<string, number>();
  const pendingHash = new Map<string, number>();
  items.forEach((item, index) => {
    const hash = hashes[index]!;
    const ref = item.client_ref;
    const existing = duplicateOf(item, hash);
    if (existing) return outcomes.push(existing);
    // A duplicate of an earlier item of this call: resolved to that item's id once inserted.
    const earlierRef = ref !== undefined ? pendingRef.get(ref) : undefined;
    if (earlierRef !== undefined) return outcomes.push({ pending: -1 - earlierRef, reason: clientRefReason });
    const earlierText = pendingHash.get(hash);
    if (earlierText !== undefined) return outcomes.push({ pending: -1 - earlierText, reason: 'duplicate_text' });
    if (ref !== undefined) pendingRef.set(ref, rows.length);
    pendingHash.set(hash, rows.length);
    outcomes.push({ pending: rows.length });
    rows.push(memoryRow(database, owner, item, hash, seq, effects.now));
  });

  const memories = rows.length ? await insertedMemories(database, trx, rows, seq) : [];
  recordCreated(trx, ctx, effects, owner, memories);
  return outcomes.map((o) => {
    if (!('pending' in o)) return o;
    if (o.pending >= 0) return { created: memories[o.pending]! };
    const first = memories[-1 - o.pending]!;
    return { skipped: { reason: o.reason!, memory_id: first.id } };
  });
}

/**
 * The owner's live memories that the items duplicate, as a function from an item to its skip
 * (undefined: none). One statement, a lookup in each partial unique index (their IS NOT NULL terms
 * let SQLite's planner use them) per value, compiled once per dialect. Each list is bound as one
 * value, so its length leaves the text as it is (on PostgreSQL one named statement for every call,
 * prepared once per connection).
 */
async function existingDuplicates(
  database: Database,
  trx: Executor,
  owner: Owner,
  items: ImportedMemory[],
  hashes: string[],
  clientRefReason: SkipReason,
): Promise<(item: ImportedMemory, hash: string) => Outcome | undefined> {
  const refs = items.flatMap((item) => (item.client_ref === undefined ? [] : [item.client_ref]));
  const lookup = duplicateLookups[database.dialect];
  const rows = await lookup.statement(
    trx,
    owner.projectId,
    owner.tenantId,
    owner.endUserId,
    lookup.list(hashes),
    lookup.list(refs),
  );
  const byHash = new Map<string, number>();
  const byRef = new Map<string, number>();
  for (const row of rows) (row.kind === 'hash' ? byHash : byRef).set(row.key, row.id);
  // The skip of an item that duplicates a memory the owner has: a client_ref match before a text match.
  return (item, hash) => {
    const refId = item.client_ref === undefined ? undefined : byRef.get(item.client_ref);
    if (refId !== undefined) return { skipped: { reason: clientRefReason, memory_id: refId } };
    const hashId = byHash.get(hash);
    return hashId === undefined ? undefined : { skipped: { reason: 'duplicate_text', memory_id: hashId } };
  };
}

type DuplicateColumn = 'dedupe_hash' | 'client_ref';

/** SQLite: each list a json_each (its planner searches the partial unique index on all four columns per value). */
const sqliteDuplicateLookup = prepared(
  5,
  (db, projectId: string, tenantId: string, endUserId: string, hashes: unknown, refs: unknown) => {
    const live = (column: DuplicateColumn, list: unknown) =>
      owned({ projectId, tenantId, endUserId })(db)
        .clearSelect()
        .select(['id', sql<string>`${sql.ref(column)}`.as('key')])
        .where(column, 'is not', null)
        .where(sql<boolean>`${sql.ref(column)} in (select value from json_each(${list}))`);
    return live('dedupe_hash', hashes)
      .select(sql.lit('hash').as('kind'))
      .unionAll(live('client_ref', refs).select(sql.lit('ref').as('kind')));
  },
);

/**
 * PostgreSQL: each value probes its partial unique index in a LATERAL subquery (its LIMIT keeps the
 * planner from flattening it into a join), so the lookup reads one index entry per value whatever
 * the statistics say. With `column = any(list)`, a planner without statistics for the owner's rows
 * (a new database, an end user grown since the last ANALYZE) read all of them and filtered.
 */
const postgresDuplicateLookup = prepared(
  5,
  (db, projectId: string, tenantId: string, endUserId: string, hashes: unknown, refs: unknown) => {
    const probe = (column: DuplicateColumn, list: unknown, kind: 'hash' | 'ref') =>
      db
        .selectFrom(sql<{ wanted: string }>`unnest(${list}::text[])`.as('wanted'))
        .innerJoinLateral(
          (eb) =>
            eb
              .selectFrom('memories')
              .select(['id', sql<string>`${sql.ref(column)}`.as('key')])
              .where('project_id', '=', projectId)
              .where('tenant_id', '=', tenantId)
              .where('end_user_id', '=', endUserId)
              .where('deleted_at', 'is', null)
              .where(sql.ref(column), '=', eb.ref('wanted.wanted'))
              .limit(1)
              .as('found'),
          (join) => join.onTrue(),
        )
        .select(['found.id', 'found.key', sql.lit(kind).as('kind')]);
    return probe('dedupe_hash', hashes, 'hash').unionAll(probe('client_ref', refs, 'ref'));
  },
);

const duplicateLookups = {
  sqlite: { statement: sqliteDuplicateLookup, list: (values: string[]): unknown => JSON.stringify(values) },
  postgres: { statement: postgresDuplicateLookup, list: (values: string[]): unknown => values },
};

/**
 * One item, without looking for a duplicate first: the insert skips itself on a conflict with the
 * partial unique indexes (client_ref, dedupe_hash among the owner's live memories, which is
 * exactly the duplicate rule), and only then is the existing memory looked up. On PostgreSQL the
 * revision bump travels in the same statement (a data-modifying CTE, run to completion whether or
 * not the row lands): the add is one round trip where it was three. Its row lock is taken before
 * the insert checks the indexes, and the check sees rows committed meanwhile, so it stays
 * race-free. Undefined when the conflicting memory is gone by the time it is looked up (forgotten
 * in between): the caller then takes the general path.
 */
async function insertUnlessDuplicate(
  database: Database,
  trx: Transaction<DB>,
  owner: Owner,
  item: ImportedMemory,
  hash: string,
  now: string,
  clientRefReason: SkipReason,
): Promise<Outcome | undefined> {
  const seq = await rowsSeq(database, trx, owner, now);
  const created = (
    await insertedUnlessConflict(database, trx, [memoryRow(database, owner, item, hash, seqOf(seq), now)], seq)
  ).get(hash);
  if (created) return { created };
  return (await existingDuplicates(database, trx, owner, [item], [hash], clientRefReason))(item, hash);
}
