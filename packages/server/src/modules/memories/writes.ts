import { sql, type Insertable, type QueryCreator, type Transaction } from 'kysely';
import { sha256Hex } from '../../core/crypto.js';
import { canonicalJson } from '../../core/json.js';
import type { Pseudonymize } from '../../core/pseudonyms.js';
import { normalizeText } from '../../engine/index.js';
import { groupedInsert, write, type Effects, type InputColumn, type WriteContext } from '../../core/unit-of-work.js';
import { invalid, notFound } from '../../core/errors.js';
import { compileBody, validationError } from '../../core/validation.js';
import { eventJson } from '../../core/events.js';
import {
  decodeJson,
  encodeJson,
  isUniqueViolation,
  nowIso,
  sqlLiteral,
  type Database,
  type Executor,
} from '../../store/database.js';
import { prepared, preparedInsert } from '../../store/prepared.js';
import type { DB, MemoriesTable, MemoryHistoryTable } from '../../store/schema.js';
import { countSelected, selectedIds, type Selection } from './list.js';
import { owned, RETIRED_REVISIONS, revisionOf, toMemory, viewOf, type MemoryRow, type Owner } from './feed.js';
import {
  AddMemoryBody,
  LIMITS,
  type AddMemoryInput,
  type BatchUpdateResultView,
  type BulkAddResultView,
  type MemoryPatchInput,
  type MemoryView,
  type SkipReason,
} from './schemas.js';

/**
 * Changing memories: the only writer of memories, memory_history and end_users. Every change
 * bumps the end user's revision and stamps its rows with it, which is what the change feed
 * (feed.ts) and the retrieval indexes follow.
 */

type Outcome = { created: MemoryView } | { skipped: { reason: SkipReason; memory_id: number } };

/**
 * Duplicates compare the engine's normal form: case, width, accents, punctuation and spacing
 * ignored. A text without letters or digits (emoji, symbols) is compared with only its spacing
 * ignored, so that such texts are not all duplicates of one another.
 */
const dedupeHash = (text: string) =>
  sha256Hex(normalizeText(text) || text.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim());

/** Rules beyond the schema (NUL and unpaired surrogates are refused for every request by http/input.ts). */
function checkContent(input: { text?: string; metadata?: Record<string, unknown> }, prefix = ''): void {
  if (input.text !== undefined && input.text.trim() === '') throw invalid(`${prefix}text`, 'text must not be blank');
  if (input.metadata !== undefined && Buffer.byteLength(encodeJson(input.metadata)) > LIMITS.metadataBytes) {
    throw invalid(`${prefix}metadata`, `metadata must serialise to at most ${LIMITS.metadataBytes} bytes`);
  }
}

/**
 * Bumps the end user's revision and returns it as the change sequence of this transaction.
 * On PostgreSQL the row lock also serialises concurrent writes for one end user, which makes
 * the duplicate checks below race-free.
 */
export async function nextSeq(trx: Executor, owner: Owner, now: string): Promise<number> {
  const [row] = await bumpRevision(trx, owner.projectId, owner.tenantId, owner.endUserId, now);
  return row!.revision;
}

/**
 * nextSeq for several owners, in the order given. On PostgreSQL one statement bumps them all,
 * locking their rows in the grouped add's order (ORDER BY 1, 2, 3), so two writes of overlapping
 * owners never each hold one the other waits for (a deadlock); SQLite has one writer.
 */
async function nextSeqs(database: Database, trx: Executor, owners: Owner[], now: string): Promise<number[]> {
  if (database.dialect === 'sqlite') {
    const seqs: number[] = [];
    for (const owner of owners) seqs.push(await nextSeq(trx, owner, now));
    return seqs;
  }
  const rows = owners.map((o) => ({ project_id: o.projectId, tenant_id: o.tenantId, end_user_id: o.endUserId }));
  const { rows: bumped } = await sql<{ project_id: string; tenant_id: string; end_user_id: string; revision: number }>`
    INSERT INTO end_users (project_id, tenant_id, end_user_id, revision, created_at, updated_at)
    SELECT project_id, tenant_id, end_user_id, 1 + ${sql.raw(retiredRevisionsOf('o.project_id', 'o.tenant_id'))}, ${now}::timestamptz, ${now}::timestamptz
    FROM json_to_recordset(${JSON.stringify(rows)}::json) AS o(project_id text, tenant_id text, end_user_id text) ORDER BY 1, 2, 3
    ON CONFLICT (project_id, tenant_id, end_user_id) DO UPDATE SET revision = end_users.revision + 1, updated_at = excluded.updated_at
    RETURNING project_id, tenant_id, end_user_id, revision`.execute(trx);
  const key = (r: { project_id: string; tenant_id: string; end_user_id: string }) =>
    JSON.stringify([r.project_id, r.tenant_id, r.end_user_id]);
  const revisions = new Map(bumped.map((r) => [key(r), r.revision]));
  return rows.map((r) => revisions.get(key(r))!);
}

const bumpRevision = prepared(4, (db, projectId: string, tenantId: string, endUserId: string, now: string) =>
  revisionBump(db, { projectId, tenantId, endUserId }, now),
);

/**
 * The first revision of an owner's row is 1 + this: the revisions of the project's (and tenant's) removed end
 * users (RETIRED_REVISIONS, retireOwner), so an id used again after its removal continues past its earlier life.
 */
const retiredRevisionsOf = (project: string, tenant: string) =>
  `COALESCE((SELECT r.revision FROM end_users r WHERE r.project_id = ${project} AND r.tenant_id = ${tenant} AND r.end_user_id = ${sqlLiteral(RETIRED_REVISIONS)}), 0)`;

/** The upsert behind nextSeq, returning the new revision (on PostgreSQL also a CTE of a single add's insert). */
function revisionBump(trx: QueryCreator<DB>, owner: Pick<Owner, 'projectId' | 'tenantId' | 'endUserId'>, now: string) {
  return trx
    .insertInto('end_users')
    .values({
      project_id: owner.projectId,
      tenant_id: owner.tenantId,
      end_user_id: owner.endUserId,
      revision: sql<number>`1 + COALESCE((${trx
        .selectFrom('end_users as r')
        .select('r.revision')
        .where('r.project_id', '=', owner.projectId)
        .where('r.tenant_id', '=', owner.tenantId)
        .where('r.end_user_id', '=', RETIRED_REVISIONS)}), 0)`,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.columns(['project_id', 'tenant_id', 'end_user_id']).doUpdateSet((eb) => ({
        revision: eb('end_users.revision', '+', 1),
        updated_at: now,
      })),
    )
    .returning('revision');
}

type HistoryEntry = {
  memoryId: number;
  action: string;
  changes: Record<string, { before: unknown; after: unknown }> | null;
};

/** History rows for a transaction's changes (other modules record theirs on memories through this). */
export async function recordHistory(
  trx: Executor,
  ctx: WriteContext,
  entries: HistoryEntry[],
  now: string,
): Promise<void> {
  const statement = historyInsert(trx, ctx, entries, now);
  if (statement) await trx.executeQuery(statement.compile());
}

/** The insert of history rows, for a write to hand to its unit of work (Effects.later); undefined when there are none. */
function historyInsert(trx: Executor, ctx: WriteContext, entries: HistoryEntry[], now: string) {
  if (entries.length === 0) return undefined;
  return historyRows(
    trx,
    entries.map((e) => ({
      project_id: ctx.projectId!,
      memory_id: e.memoryId,
      action: e.action,
      changes: e.changes === null ? null : encodeJson(e.changes),
      actor_type: ctx.actor.type,
      actor_id: ctx.actor.id,
      request_id: ctx.requestId,
      created_at: now,
    })),
  );
}

const historyRows = preparedInsert<Insertable<MemoryHistoryTable>>(
  ['project_id', 'memory_id', 'action', 'changes', 'actor_type', 'actor_id', 'request_id', 'created_at'],
  (db, rows) => db.insertInto('memory_history').values(rows),
);

const CREATED_FIELDS = ['text', 'tags', 'source', 'importance', 'metadata', 'client_ref', 'session_id'] as const;

/** The dedupe_hash of an item: a conversation turn (with a speaker) is a duplicate only of the same turn, as on /v1. */
const duplicateKey = (i: ImportedMemory) =>
  i.speaker ? turnHash(i.session_id ?? null, i.speaker, i.text, i.created_at ?? null) : dedupeHash(i.text);

/**
 * The history changes of a new memory: each field from null. Built by assignment: Object.fromEntries
 * over mapped pairs took four times as long (0.75 against 0.17 µs for the seven fields of an add).
 */
const createdChanges = (m: MemoryView, fields: ReadonlyArray<keyof MemoryView> = CREATED_FIELDS) => {
  const changes: Record<string, { before: null; after: unknown }> = {};
  for (const field of fields) changes[field] = { before: null, after: m[field] };
  return changes;
};

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
class DuplicateFound extends Error {}

/** Runs a write inserting with 'abort', and again with 'skip' should it meet a duplicate. */
async function retryingOnDuplicates<T>(run: (duplicates: DuplicatePolicy) => Promise<T>): Promise<T> {
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
async function insertMemories(
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
function repeatsWithin(items: ImportedMemory[], hashes: string[]): boolean {
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

function memoryRow(
  database: Database,
  owner: Owner,
  item: ImportedMemory,
  hash: string,
  seq: number,
  now: string,
): Omit<MemoryRow, 'id'> {
  return {
    project_id: owner.projectId,
    tenant_id: owner.tenantId,
    end_user_id: owner.endUserId,
    text: item.text,
    tags: encodeJson(item.tags ?? []),
    is_summary: database.bool(item.is_summary ?? false),
    source: item.source ?? null,
    importance: item.importance ?? 0.5,
    metadata: encodeJson(item.metadata ?? {}),
    client_ref: item.client_ref ?? null,
    session_id: item.session_id ?? null,
    speaker: item.speaker ?? null,
    dedupe_hash: hash,
    seq,
    created_at: item.created_at ?? now,
    updated_at: item.updated_at ?? item.created_at ?? now,
    deleted_at: null,
    superseded_by: null,
    expires_at: item.expires_at ?? null,
  };
}

/**
 * An input's expiry as stored: `expires_at` (normalized, in the future) or `ttl_seconds` after now, never both;
 * null clears it (a patch). `ttl_seconds` is taken out, so what is left is what the row stores.
 */
export function withExpiry<T extends { expires_at?: string | null; ttl_seconds?: number }>(
  input: T,
  prefix = '',
  now = Date.now(),
): Omit<T, 'ttl_seconds'> {
  const { ttl_seconds: ttl, ...rest } = input;
  if (ttl !== undefined && input.expires_at !== undefined)
    throw invalid(`${prefix}ttl_seconds`, `${prefix}ttl_seconds and ${prefix}expires_at cannot both be given`);
  if (ttl !== undefined) return { ...rest, expires_at: new Date(now + ttl * 1000).toISOString() };
  if (input.expires_at === undefined || input.expires_at === null) return rest;
  const at = Date.parse(input.expires_at);
  if (!(at > now)) throw invalid(`${prefix}expires_at`, `${prefix}expires_at must be in the future`);
  return { ...rest, expires_at: new Date(at).toISOString() };
}

const MEMORY_COLUMNS = [
  'project_id',
  'tenant_id',
  'end_user_id',
  'text',
  'tags',
  'is_summary',
  'source',
  'importance',
  'metadata',
  'client_ref',
  'session_id',
  'speaker',
  'dedupe_hash',
  'seq',
  'created_at',
  'updated_at',
  'deleted_at',
  'superseded_by',
  'expires_at',
] as const satisfies ReadonlyArray<keyof Omit<MemoryRow, 'id'>>;

/**
 * What an insert of memory rows returns, to build their views from the values sent: the id (and the
 * dedupe_hash, which names the row among those sent), and on PostgreSQL the columns it stores in a
 * form of its own (jsonb: its key order and spacing; timestamptz: UTC), which SQLite keeps as given.
 * Returning every column was a sixth of SQLite's insert, and on PostgreSQL formatting and parsing
 * 18 columns a row where 4 can differ from what was sent.
 */
type Landed = Pick<MemoryRow, 'id' | 'dedupe_hash'> &
  Partial<Pick<MemoryRow, 'tags' | 'metadata' | 'created_at' | 'updated_at'>>;
const LANDED_COLUMNS = {
  sqlite: ['id', 'dedupe_hash'],
  postgres: ['id', 'dedupe_hash', 'tags', 'metadata', 'created_at', 'updated_at'],
} as const;
const landedInsert = (dialect: Database['dialect'], unlessConflict: boolean) =>
  preparedInsert<Omit<MemoryRow, 'id'>, Landed>(MEMORY_COLUMNS, (db, rows) => {
    const insert = db.insertInto('memories').values(rows as Insertable<MemoriesTable>[]);
    return (unlessConflict ? insert.onConflict((oc) => oc.doNothing()) : insert).returning(LANDED_COLUMNS[dialect]);
  });
const landedInserts = {
  sqlite: { all: landedInsert('sqlite', false), unlessConflict: landedInsert('sqlite', true) },
  postgres: { all: landedInsert('postgres', false), unlessConflict: landedInsert('postgres', true) },
};

/**
 * The change sequence of the rows an insert writes: one taken before it (nextSeq), or, on PostgreSQL,
 * `bump`: the insert bumps the owner's revision in a CTE and its rows take the new one, the round
 * trip of a statement of its own saved (the lock on the owner's revision row is taken before any row
 * is inserted, as nextSeq takes it).
 */
type RowsSeq = number | { bump: Owner; now: string };
/** The change sequence for an insert that looks nothing up first: bumped by the insert itself on PostgreSQL. */
const rowsSeq = async (database: Database, trx: Executor, owner: Owner, now: string): Promise<RowsSeq> =>
  database.dialect === 'postgres' ? { bump: owner, now } : nextSeq(trx, owner, now);
/** The seq a row is built with: the one taken, or a stand-in the bumping insert does not send. */
const seqOf = (seq: RowsSeq) => (typeof seq === 'number' ? seq : 0);

const MEMORY_COLUMNS_BUT_SEQ = MEMORY_COLUMNS.filter((column) => column !== 'seq');
const bumpingInsert = (unlessConflict: boolean) =>
  preparedInsert<Omit<MemoryRow, 'id'>, Landed, [string, string, string, string]>(
    MEMORY_COLUMNS_BUT_SEQ,
    (db, rows, projectId, tenantId, endUserId, now) => {
      const insert = db
        .with('revision', (qc) => revisionBump(qc, { projectId, tenantId, endUserId }, now))
        .insertInto('memories')
        .values(
          rows.map((row) => ({
            ...row,
            seq: sql<number>`(SELECT revision FROM revision)`,
          })) as Insertable<MemoriesTable>[],
        );
      return (unlessConflict ? insert.onConflict((oc) => oc.doNothing()) : insert).returning(LANDED_COLUMNS.postgres);
    },
    4,
  );
const bumpingInserts = { all: bumpingInsert(false), unlessConflict: bumpingInsert(true) };

/** The statement inserting memory rows of this change sequence. */
function landedStatement(
  database: Database,
  trx: Executor,
  rows: Array<Omit<MemoryRow, 'id'>>,
  seq: RowsSeq,
  unlessConflict: boolean,
) {
  const kind = unlessConflict ? 'unlessConflict' : 'all';
  if (typeof seq === 'number') return landedInserts[database.dialect][kind](trx, rows);
  const { bump: owner, now } = seq;
  return bumpingInserts[kind](trx, rows, owner.projectId, owner.tenantId, owner.endUserId, now);
}

/** The view of a row sent, as the row stored (Landed). */
function landedView(row: Omit<MemoryRow, 'id'>, landed: Landed): MemoryView {
  const view = viewOf(row, landed.id);
  if (landed.metadata !== undefined) {
    view.tags = decodeJson<string[]>(landed.tags);
    view.metadata = decodeJson<Record<string, unknown>>(landed.metadata);
    view.created_at = landed.created_at!;
    view.updated_at = landed.updated_at!;
  }
  return view;
}

/** Inserts memory rows and returns them as the memories they now are, in order. */
async function insertedMemories(
  database: Database,
  trx: Executor,
  rows: Array<Omit<MemoryRow, 'id'>>,
  seq: RowsSeq,
): Promise<MemoryView[]> {
  const inserted = (await trx.executeQuery(landedStatement(database, trx, rows, seq, false).compile())).rows;
  return inserted.map((landed, i) => landedView(rows[i]!, landed));
}

/**
 * Inserts memory rows, skipping those that conflict with a live memory of the owner, and returns
 * the memories that landed by their dedupe_hash (unique among the rows given), in row order.
 */
async function insertedUnlessConflict(
  database: Database,
  trx: Executor,
  rows: Array<Omit<MemoryRow, 'id'>>,
  seq: RowsSeq,
): Promise<Map<string, MemoryView>> {
  const inserted = (await trx.executeQuery(landedStatement(database, trx, rows, seq, true).compile())).rows;
  const byHash = new Map(inserted.map((landed) => [landed.dedupe_hash!, landed]));
  const views = new Map<string, MemoryView>();
  for (const row of rows) {
    const landed = byHash.get(row.dedupe_hash!);
    if (landed) views.set(row.dedupe_hash!, landedView(row, landed));
  }
  return views;
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

/** The history rows and memory.created events of new memories. */
function recordCreated(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  owner: Owner | Owner[],
  created: MemoryView[],
): void {
  effects.later(
    historyInsert(
      trx,
      ctx,
      created.map((m) => ({ memoryId: m.id, action: 'create', changes: createdChanges(m) })),
      effects.now,
    ),
  );
  // One owner for all, or each memory's own (insertAcrossOwners).
  created.forEach((m, i) =>
    effects.emit('memory.created', {
      memory: m,
      tenant_id: (Array.isArray(owner) ? owner[i]! : owner).tenantId || null,
    }),
  );
}

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
 * (core/unit-of-work.ts#groupedInsert). Undefined for a duplicate, of which nothing but the revision
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

/** A memory row's columns but its seq (the revision the statement bumps), with their PostgreSQL types. */
const NEW_MEMORY_COLUMNS = [
  ['project_id', 'text'],
  ['tenant_id', 'text'],
  ['end_user_id', 'text'],
  ['text', 'text'],
  ['tags', 'jsonb'],
  ['is_summary', 'boolean'],
  ['source', 'text'],
  ['importance', 'double precision'],
  ['metadata', 'jsonb'],
  ['client_ref', 'text'],
  ['session_id', 'text'],
  ['speaker', 'text'],
  ['dedupe_hash', 'text'],
  ['created_at', 'timestamptz'],
  ['updated_at', 'timestamptz'],
  ['deleted_at', 'timestamptz'],
  ['superseded_by', 'bigint'],
  ['expires_at', 'timestamptz'],
] as const satisfies ReadonlyArray<readonly [Exclude<(typeof MEMORY_COLUMNS)[number], 'seq'>, string]>;

if (NEW_MEMORY_COLUMNS.length !== MEMORY_COLUMNS.length - 1)
  throw new Error('NEW_MEMORY_COLUMNS must list every memory column but seq');
const columnIndex = (name: string) => NEW_MEMORY_COLUMNS.findIndex(([column]) => column === name);
const [PROJECT, TENANT, END_USER, HASH, CLIENT_REF] = [
  'project_id',
  'tenant_id',
  'end_user_id',
  'dedupe_hash',
  'client_ref',
].map(columnIndex) as [number, number, number, number, number];
const memoryColumnList = NEW_MEMORY_COLUMNS.map(([column]) => column).join(', ');

/** A grouped statement's bump of each owner's revision, once per statement, owners in one order (both locks and deadlocks follow it). */
const REVISION_STEP = `INSERT INTO end_users (project_id, tenant_id, end_user_id, revision, created_at, updated_at)
  SELECT project_id, tenant_id, end_user_id, 1 + ${retiredRevisionsOf('o.project_id', 'o.tenant_id')}, max(ctx_now), max(ctx_now)
  FROM input o GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (project_id, tenant_id, end_user_id) DO UPDATE SET revision = end_users.revision + 1, updated_at = excluded.updated_at
  RETURNING project_id, tenant_id, end_user_id, revision`;

/**
 * The revision of each owner is bumped once per statement (its rows share the new revision as their
 * seq, as a bulk-add's do), owners locked in one order so that two statements never deadlock; rows
 * are inserted in their writes' order, and each landed row is matched to its write by owner and
 * dedupe hash (unique among a statement's writes: `exclusive`).
 */
const addStatement = groupedInsert({
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

/** The forgetting transaction, for hooks that must change memories themselves (summaries of a forgotten source). */
export interface Erasure {
  ctx: WriteContext;
  effects: Effects;
  /** The change sequence of the forgetting transaction. */
  seq: number;
  /** The hooks this erasure runs, for a hook that forgets further memories (forgetWithin). */
  hooks: EraseHooks;
  /**
   * Memories that live on with their content replaced because of this erasure (a summary rewritten
   * without a forgotten source): the hooks after the one that rewrote them erase their earlier
   * copies (events, deliveries, export artifacts) too. Filled by rewriteSummary.
   */
  rewritten: number[];
}

/**
 * Erases what a module keeps of an end user beyond their memories (file names, stored answers) in the purging
 * transaction, and renames to `pseudonym` (core/pseudonyms.ts) what must outlive them but named them by id.
 */
export type EndUserEraseHook = (trx: Executor, owner: Owner, pseudonym: string, now: string) => Promise<void>;

/** Erases what a module derived from memories (vectors, feedback, relations, summaries) in the transaction that forgets them. */
export type EraseHook = (trx: Executor, ids: number[], erasure: Erasure) => Promise<void>;

/**
 * The erase hooks of modules that keep data derived from memories, registered explicitly by the
 * composition root (services.ts), so forgetting removes every copy without this module knowing
 * their tables.
 */
export class EraseHooks {
  private readonly hooks: EraseHook[] = [];
  private readonly endUserHooks: EndUserEraseHook[] = [];

  /** `pseudonymize`: how what outlives a removed end user names them (core/pseudonyms.ts). */
  constructor(readonly pseudonymize: Pseudonymize) {}

  register(hook: EraseHook): void {
    this.hooks.push(hook);
  }

  /** A hook run once when an end user is purged, after their memories' hooks: what names the end user rather than a memory. */
  registerEndUser(hook: EndUserEraseHook): void {
    this.endUserHooks.push(hook);
  }

  /** Runs every end-user hook in the order registered. */
  async runEndUser(trx: Executor, owner: Owner, pseudonym: string, now: string): Promise<void> {
    for (const hook of this.endUserHooks) await hook(trx, owner, pseudonym, now);
  }

  /** Runs every hook in the order registered, sharing one Erasure (so a later hook sees what an earlier one rewrote). */
  async run(trx: Executor, ids: number[], erasure: Omit<Erasure, 'hooks' | 'rewritten'>): Promise<void> {
    const shared: Erasure = { ...erasure, hooks: this, rewritten: [] };
    for (const hook of this.hooks) await hook(trx, ids, shared);
  }
}

/**
 * Erases memories down to an id-and-time tombstone: text, tags, metadata and references are
 * blanked in the row and in every history row, so nothing of the content survives.
 */
async function eraseMemories(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  ids: number[],
  seq: number,
  erase: EraseHooks,
): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable('memories')
    .set({
      text: '',
      tags: '[]',
      metadata: '{}',
      source: null,
      client_ref: null,
      session_id: null,
      speaker: null,
      dedupe_hash: null,
      seq,
      updated_at: effects.now,
      deleted_at: effects.now,
    })
    .where('id', 'in', ids)
    .execute();
  // A memory its forgotten successor was kept over is superseded by nothing now: an update of it, recorded as the
  // resolution that set the mark was (its history entry and memory.updated; docs/api.md, "Resolve").
  const unmarked = await trx
    .selectFrom('memories')
    .select(['id', 'superseded_by'])
    .where('superseded_by', 'in', ids)
    .where('deleted_at', 'is', null)
    .execute();
  if (unmarked.length > 0) {
    await trx
      .updateTable('memories')
      .set({ superseded_by: null, seq, updated_at: effects.now })
      .where(
        'id',
        'in',
        unmarked.map((m) => m.id),
      )
      .execute();
  }
  await trx.updateTable('memory_history').set({ changes: null }).where('memory_id', 'in', ids).execute();
  await recordHistory(
    trx,
    ctx,
    [
      ...unmarked.map((m) => ({
        memoryId: m.id,
        action: 'supersede',
        changes: {
          superseded_by: { before: m.superseded_by, after: null },
          reason: { before: null, after: `Memory ${m.superseded_by} forgotten` },
        },
      })),
      ...ids.map((memoryId) => ({ memoryId, action: 'forget', changes: null })),
    ],
    effects.now,
  );
  for (const row of unmarked.length > 0
    ? await trx
        .selectFrom('memories')
        .selectAll()
        .where(
          'id',
          'in',
          unmarked.map((m) => m.id),
        )
        .execute()
    : []) {
    effects.emit('memory.updated', { memory: toMemory(row), fields: ['superseded_by'] });
  }
  await erase.run(trx, ids, { ctx, effects, seq });
}

/**
 * Forgets the owner's live memories among `ids` inside a transaction already under way: a hook
 * forgetting further memories (a summary whose every source was forgotten) passes its erasure's
 * `seq`; a module replacing memories (a new version of a file) leaves it out, and a change
 * sequence is taken when something is forgotten. Returns the ids forgotten.
 */
export async function forgetWithin(
  trx: Executor,
  erasure: Omit<Erasure, 'seq' | 'rewritten'> & { seq?: number },
  owner: Owner,
  ids: number[],
): Promise<number[]> {
  let found = (await liveMemoryIds(trx, owner, [...new Set(ids)])).sort((a, b) => a - b);
  if (found.length === 0) return found;
  let seq = erasure.seq;
  if (seq === undefined) {
    // Read again under the owner lock: a forget of the same memories that committed meanwhile forgot them
    // (and said so); forgetting them again would announce memory.deleted twice.
    seq = await nextSeq(trx, owner, erasure.effects.now);
    found = await liveMemoryIds(trx, owner, found);
    if (found.length === 0) return found;
  }
  for (let i = 0; i < found.length; i += 500)
    await eraseMemories(trx, erasure.ctx, erasure.effects, found.slice(i, i + 500), seq, erasure.hooks);
  for (const id of found) erasure.effects.emit('memory.deleted', { memory_id: id, end_user_id: owner.endUserId });
  return found;
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

/** Those of `ids` that are live memories of the owner. */
export async function liveMemoryIds(db: Executor, owner: Owner, ids: number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const live: number[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    live.push(
      ...(
        await owned(owner)(db)
          .clearSelect()
          .select('id')
          .where('id', 'in', ids.slice(i, i + 500))
          .execute()
      ).map((r) => r.id),
    );
  }
  return live;
}

export async function forget(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  ids: number[],
  erase: EraseHooks,
): Promise<number[]> {
  return write(database, ctx, async (trx, effects) => {
    const found = await forgetWithin(trx, { ctx, effects, hooks: erase }, owner, ids);
    effects.audit('memory.forget', { type: 'memory', id: found.join(',') || null });
    return found;
  });
}

/** What forgetting by scope answers (DELETE /memory/forget with filters or session_id). */
export interface ScopeForgotten {
  dry_run: boolean;
  ids: number[];
  matched: number;
  has_more: boolean;
}

/**
 * Forgets up to `limit` of the owner's live memories the selection matches, oldest first, as forgetting by id
 * does (the same erasure, events and history). Selected under the owner's lock, so a memory added or forgotten
 * meanwhile is seen. A dry run only reads: what would be forgotten now.
 */
export async function forgetSelected(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  selection: Selection,
  options: { limit: number; dryRun: boolean },
  erase: EraseHooks,
): Promise<ScopeForgotten> {
  const answer = async (db: Executor, forgotten: (ids: number[]) => Promise<number[]>): Promise<ScopeForgotten> => {
    const matched = await countSelected(db, database.dialect, owner, selection);
    const ids = await forgotten(await selectedIds(db, database.dialect, owner, selection, options.limit));
    return { dry_run: options.dryRun, ids, matched, has_more: matched > ids.length };
  };
  if (options.dryRun) return answer(database.db, async (ids) => ids);
  return write(database, ctx, async (trx, effects) => {
    const seq = await nextSeq(trx, owner, effects.now);
    const result = await answer(trx, (ids) => forgetWithin(trx, { ctx, effects, hooks: erase, seq }, owner, ids));
    effects.audit('memory.forget', { type: 'memory', id: result.ids.join(',') || null });
    return result;
  });
}

/**
 * The expiry sweep (a chore, services.ts): erases up to `batch` expired memories, oldest expiry first, as
 * forgetting does (the same erasure and hooks, memory.deleted, history), one owner's in one transaction under
 * their lock, audited as `memory.expire` by the system. `organizationOf` names a live project's organization
 * (a deleted project's memories are tombstoned with it). A database error ends the run; the schedule logs it
 * and runs again at the next interval. Returns how many were erased.
 */
export async function forgetExpired(
  database: Database,
  erase: EraseHooks,
  organizationOf: (projectId: string) => Promise<string | undefined>,
  batch = 500,
): Promise<number> {
  const due = await database.db
    .selectFrom('memories')
    .select(['id', 'project_id', 'tenant_id', 'end_user_id'])
    .where('expires_at', 'is not', null)
    .where('deleted_at', 'is', null)
    .where('expires_at', '<=', nowIso())
    .orderBy('expires_at')
    .limit(batch)
    .execute();
  const byOwner = new Map<string, { owner: Owner; ids: number[] }>();
  for (const row of due) {
    const key = JSON.stringify([row.project_id, row.tenant_id, row.end_user_id]);
    const entry = byOwner.get(key) ?? {
      owner: { projectId: row.project_id, tenantId: row.tenant_id, endUserId: row.end_user_id },
      ids: [],
    };
    entry.ids.push(row.id);
    byOwner.set(key, entry);
  }
  let erased = 0;
  for (const { owner, ids } of byOwner.values()) {
    const organizationId = await organizationOf(owner.projectId);
    if (organizationId === undefined) continue;
    const ctx: WriteContext = {
      actor: { type: 'system', id: null },
      organizationId,
      projectId: owner.projectId,
      requestId: null,
    };
    erased += await write(database, ctx, async (trx, effects) => {
      const seq = await nextSeq(trx, owner, effects.now);
      // Read again under the owner's lock: one forgotten or given a later expiry meanwhile is left as it now is.
      const still = (
        await trx
          .selectFrom('memories')
          .select('id')
          .where('id', 'in', ids)
          .where('deleted_at', 'is', null)
          .where('expires_at', '<=', effects.now)
          .orderBy('id')
          .execute()
      ).map((r) => r.id);
      for (let i = 0; i < still.length; i += 500)
        await eraseMemories(trx, ctx, effects, still.slice(i, i + 500), seq, erase);
      for (const id of still) effects.emit('memory.deleted', { memory_id: id, end_user_id: owner.endUserId });
      if (still.length > 0) effects.audit('memory.expire', { type: 'memory', id: still.join(',') });
      return still.length;
    });
  }
  return erased;
}

export async function purgeEndUser(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  erase: EraseHooks,
): Promise<number> {
  return write(database, ctx, async (trx, effects) => {
    // The owner's lock before the read: a memory committed meanwhile is seen, and purged.
    const seq = await nextSeq(trx, owner, effects.now);
    const live = await owned(owner)(trx).clearSelect().select('id').execute();
    const ids = live.map((r) => r.id);
    for (let i = 0; i < ids.length; i += 500) await eraseMemories(trx, ctx, effects, ids.slice(i, i + 500), seq, erase);
    const pseudonym = erase.pseudonymize(owner.projectId, owner.endUserId);
    await erase.runEndUser(trx, owner, pseudonym, effects.now);
    await retireOwner(trx, owner, pseudonym);
    // What outlives the end user names them by pseudonym only: the event (stored in the outbox and in deliveries)
    // and the hash-chained audit row.
    effects.emit('end_user.purged', { end_user_id: pseudonym, deleted: ids.length });
    effects.audit('memory.purge_end_user', { type: 'end_user', id: pseudonym });
    return ids.length;
  });
}

/**
 * The last of a purge: the end user's tombstones are filed under their pseudonym, and their end_users row goes, its
 * revision added to the row of retired revisions (RETIRED_REVISIONS), from which the revisions of an end user
 * written to later start. So the id is in neither table, the project's revision (their sum) still only grows, and
 * an index kept of the earlier life finds no row of the owner at or before its revision and starts over
 * (ownerChangesSince). The owner's row is locked (nextSeq) by the purge, so no write of theirs runs meanwhile;
 * one waiting on the lock inserts a new row when the purge commits.
 */
async function retireOwner(trx: Executor, owner: Owner, pseudonym: string): Promise<void> {
  await trx
    .updateTable('memories')
    .set({ end_user_id: pseudonym })
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .execute();
  const retired = await trx
    .deleteFrom('end_users')
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .returning('revision')
    .executeTakeFirst();
  if (!retired) return;
  await trx
    .insertInto('end_users')
    .values({
      project_id: owner.projectId,
      tenant_id: owner.tenantId,
      end_user_id: RETIRED_REVISIONS,
      revision: retired.revision,
      created_at: nowIso(),
      updated_at: nowIso(),
    })
    .onConflict((oc) =>
      oc.columns(['project_id', 'tenant_id', 'end_user_id']).doUpdateSet((eb) => ({
        revision: eb('end_users.revision', '+', retired.revision),
        updated_at: nowIso(),
      })),
    )
    .execute();
}

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
 * A turn is who said what, in which session, when: the same words said again later are another
 * turn. A stored turn without a time of its own (a bulk item) is keyed by its words alone.
 */
const turnHash = (sessionId: string | null, speaker: string, text: string, at: string | null) =>
  sha256Hex(
    JSON.stringify(
      at === null ? ['turn', sessionId, speaker, text] : ['turn', sessionId, speaker, text, new Date(at).toISOString()],
    ),
  );

/**
 * A turn sent without a timestamp is dated on arrival; the same turn arriving again within this
 * window is taken as a redelivery of it (docs/api.md, "Turns").
 */
export const TURN_REDELIVERY_WINDOW_MS = 60_000;

/**
 * Keys under which an undated turn arriving at `now` may already be stored: arrivals are keyed by
 * window-sized slot, so the current slot and the one before cover every arrival within the window.
 */
function arrivalHashes(sessionId: string | null, speaker: string, text: string, now: string): [string, string] {
  const slot = Math.floor(Date.parse(now) / TURN_REDELIVERY_WINDOW_MS);
  const key = (n: number) => sha256Hex(JSON.stringify(['turn-arrival', sessionId, speaker, text, n]));
  return [key(slot), key(slot - 1)];
}

/**
 * A speaker built from a content hash (`sha256:` and hex digits) names one turn, so its redelivery converges at any
 * distance in time (spec: add_turn). Another speaker may say the same words again later: a turn of its own.
 */
export const CONTENT_HASH_SPEAKER = /^sha256:[0-9a-f]{8,128}$/i;

/**
 * How a turn is recognised when delivered again: by its words alone for a content-hash speaker (the key an undated
 * bulk item has), by its timestamp when it has one, else by its arrival within the redelivery window.
 */
function turnKeys(turn: TurnInput, now: string): { hashes: [string] | [string, string]; windowStart: string | null } {
  if (CONTENT_HASH_SPEAKER.test(turn.speaker))
    return { hashes: [turnHash(turn.sessionId, turn.speaker, turn.text, null)], windowStart: null };
  if (turn.occurredAt !== undefined)
    return { hashes: [turnHash(turn.sessionId, turn.speaker, turn.text, turn.occurredAt)], windowStart: null };
  return {
    hashes: arrivalHashes(turn.sessionId, turn.speaker, turn.text, now),
    windowStart: new Date(Date.parse(now) - TURN_REDELIVERY_WINDOW_MS).toISOString(),
  };
}

export interface TurnInput {
  text: string;
  speaker: string;
  source: string;
  sessionId: string | null;
  metadata: Record<string, unknown>;
  /** When it expires (normalized, in the future); never when absent. */
  expiresAt?: string;
  /** When the turn was said; defaults to now. */
  occurredAt?: string;
}

/** The fields the history row of a turn or a summary records (insertOne, insertTurnInOneStatement). */
const INSERTED_HISTORY_FIELDS = ['text', 'source', 'metadata', 'session_id'] as const;

/** One memory row (a turn or a summary) with its create history and memory.created event. */
async function insertOne(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  owner: Owner,
  values: Pick<
    Insertable<MemoriesTable>,
    | 'text'
    | 'is_summary'
    | 'source'
    | 'metadata'
    | 'session_id'
    | 'speaker'
    | 'dedupe_hash'
    | 'seq'
    | 'created_at'
    | 'expires_at'
  >,
  historyLast = false,
): Promise<MemoryView> {
  const row = await trx
    .insertInto('memories')
    .values({
      project_id: owner.projectId,
      tenant_id: owner.tenantId,
      end_user_id: owner.endUserId,
      tags: '[]',
      importance: 0.5,
      client_ref: null,
      updated_at: effects.now,
      deleted_at: null,
      ...values,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const memory = toMemory(row);
  const history: HistoryEntry[] = [
    {
      memoryId: memory.id,
      action: 'create',
      changes: createdChanges(memory, INSERTED_HISTORY_FIELDS),
    },
  ];
  // With the write's last statement, one round trip fewer, when no history row of the write is to follow it.
  if (historyLast) effects.later(historyInsert(trx, ctx, history, effects.now));
  else await recordHistory(trx, ctx, history, effects.now);
  effects.emit('memory.created', { memory, tenant_id: owner.tenantId || null });
  return memory;
}

/**
 * Stores a conversation turn verbatim for a tenant's user. The same turn delivered again (same
 * session, speaker and text, and the same timestamp, or none within the redelivery window; a
 * content-hash speaker's at any time) converges on the stored row; the same words at another time
 * are another turn. Runs inside the caller's transaction.
 */
export async function insertTurn(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  database: Database,
  owner: Owner,
  turn: TurnInput,
): Promise<{ memory: MemoryView; created: boolean }> {
  // The same content rules as /memory/add: text not blank, metadata within its size limit.
  checkContent({ text: turn.text, metadata: turn.metadata });
  const at = turn.occurredAt ?? effects.now;
  // Taken first even for a redelivery: on PostgreSQL its row lock is what makes the duplicate check race-free.
  const seq = await nextSeq(trx, owner, effects.now);
  const { hashes, windowStart } = turnKeys(turn, effects.now);
  const existing = await owned(owner)(trx)
    .where('dedupe_hash', 'is not', null)
    .where('dedupe_hash', 'in', hashes)
    .$if(windowStart !== null, (qb) => qb.where('created_at', '>', windowStart!))
    .orderBy('id', 'desc')
    .executeTakeFirst();
  if (existing) return { memory: toMemory(existing), created: false };
  const memory = await insertOne(
    trx,
    ctx,
    effects,
    owner,
    {
      text: turn.text,
      is_summary: database.bool(false),
      source: turn.source,
      metadata: encodeJson(turn.metadata),
      session_id: turn.sessionId,
      speaker: turn.speaker,
      dedupe_hash: hashes[0],
      seq,
      created_at: at,
      expires_at: turn.expiresAt ?? null,
    },
    true,
  );
  return { memory, created: true };
}

/**
 * The relations of insertTurnInOneStatement's statement a TurnCount reads, by the names the statement gives them:
 * `input` (one row per turn: the memory's columns, `dedupe_hash` and the count's own input columns), `landed` (the
 * memories rows inserted) and `counted` (the count's own statement's result).
 */
export interface TurnRelations {
  readonly input: string;
  readonly landed: string;
  readonly counted: string;
}

const TURN_RELATIONS: TurnRelations = { input: 'input', landed: 'landed', counted: 'counted' };

/**
 * What the caller of insertTurnInOneStatement counts per turn that lands, in the same statement (PostgreSQL): its
 * own input columns; `statement`, a data-modifying statement (its result is `counted`) that reads `landed` joined
 * with `input` on owner and dedupe hash; and `refusedWhen`, a condition over `counted` and `input` under which the
 * whole statement is refused, so that nothing of it is written (the caller's general path then decides, exactly).
 * Both are written against the relation names they are handed, never names of their own.
 */
export interface TurnCount {
  columns: readonly InputColumn[];
  statement: (relations: TurnRelations) => string;
  refusedWhen: (relations: TurnRelations) => string;
}

/** Why a turn did not land in its statement (insertTurnInOneStatement). */
export type TurnNotLanded = 'refused' | 'left out';

/**
 * PostgreSQL: a new turn with its revision bump, history row, memory.created event, audit row and the caller's
 * count, grouped with the turns submitted at the same time into one statement (core/unit-of-work.ts#groupedInsert).
 * Only a turn that is certainly new lands: its redelivery lookup reads the statement's snapshot, so a turn is left
 * out when the lookup finds an earlier delivery, when its insert meets one (the dedupe index), and when its end
 * user's revision moved after the snapshot was taken (the statement waited for another transaction's row lock:
 * that transaction may have stored the same turn, which the snapshot does not show). Each owner has at most one
 * turn in a statement. 'left out' means nothing but the revision bump was written and the request's held key was
 * verified by the statement; 'refused' means nothing was written (the count's `refusedWhen`). Either way
 * insertTurn then decides, under the end user's row lock.
 */
export async function insertTurnInOneStatement(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  turn: TurnInput,
  count: TurnCount,
  countValues: readonly unknown[],
): Promise<MemoryView | TurnNotLanded> {
  checkContent({ text: turn.text, metadata: turn.metadata });
  const now = nowIso();
  const at = turn.occurredAt ?? now;
  const {
    hashes: [hash, earlierHash = null],
    windowStart,
  } = turnKeys(turn, now);
  const row: Omit<MemoryRow, 'id'> = {
    project_id: owner.projectId,
    tenant_id: owner.tenantId,
    end_user_id: owner.endUserId,
    text: turn.text,
    tags: '[]',
    is_summary: database.bool(false),
    source: turn.source,
    importance: 0.5,
    metadata: encodeJson(turn.metadata),
    client_ref: null,
    session_id: turn.sessionId,
    speaker: turn.speaker,
    dedupe_hash: hash,
    seq: 0,
    created_at: at,
    updated_at: now,
    deleted_at: null,
    superseded_by: null,
    expires_at: turn.expiresAt ?? null,
  };
  // The memory as its row will read; its id is the row's (set in SQL).
  const expected = viewOf(row, 1);
  const changes = createdChanges(expected, INSERTED_HISTORY_FIELDS);
  let inserted: MemoryRow | undefined;
  try {
    inserted = await turnStatementFor(count)<MemoryRow>(
      database,
      ctx,
      now,
      [
        ...NEW_MEMORY_COLUMNS.map(([column]) => row[column]),
        encodeJson(changes),
        earlierHash,
        windowStart,
        ...countValues,
      ],
      () => eventJson('memory.created', { memory: expected, tenant_id: owner.tenantId || null }),
      ctx.journal?.recordInserted({ memory: { ...expected }, created: true }, ['memory', 'id']),
    );
  } catch (error) {
    if ((error as { code?: string }).code === TURN_REFUSED) return 'refused';
    throw error;
  }
  return inserted ? toMemory(inserted) : 'left out';
}

/** SQLSTATE division_by_zero: raised by a turn statement whose count refused it, and by nothing else in it. */
const TURN_REFUSED = '22012';

const turnStatements = new Map<TurnCount, ReturnType<typeof groupedInsert>>();
const turnStatementFor = (count: TurnCount) => {
  let statement = turnStatements.get(count);
  if (!statement) turnStatements.set(count, (statement = turnStatement(count)));
  return statement;
};

function turnStatement(count: TurnCount) {
  const owner = 'project_id, tenant_id, end_user_id';
  const { input, landed, counted } = TURN_RELATIONS;
  return groupedInsert({
    columns: [
      ...NEW_MEMORY_COLUMNS,
      ['history_changes', 'json'],
      ['earlier_hash', 'text'],
      ['window_start', 'timestamptz'],
      ...count.columns,
    ],
    steps: [
      // The revisions as the statement's snapshot has them, before its own bump waits for any row lock.
      [
        'known',
        `SELECT e.project_id, e.tenant_id, e.end_user_id, e.revision FROM end_users e JOIN input USING (${owner})`,
      ],
      ['revision', REVISION_STEP],
      [
        'fresh',
        `SELECT input.* FROM input JOIN revision USING (${owner}) LEFT JOIN known USING (${owner})
        WHERE revision.revision = COALESCE(known.revision, 0) + 1
        AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.project_id = input.project_id AND m.tenant_id = input.tenant_id
          AND m.end_user_id = input.end_user_id AND m.dedupe_hash IN (input.dedupe_hash, input.earlier_hash) AND m.deleted_at IS NULL
          AND (input.window_start IS NULL OR m.created_at > input.window_start))`,
      ],
      [
        landed,
        `INSERT INTO memories (${memoryColumnList}, seq)
        SELECT ${NEW_MEMORY_COLUMNS.map(([column]) => `fresh.${column}`).join(', ')}, revision.revision
        FROM fresh JOIN revision USING (${owner}) ORDER BY fresh.ord
        ON CONFLICT DO NOTHING RETURNING *`,
      ],
      [counted, count.statement(TURN_RELATIONS)],
      // Division by zero (TURN_REFUSED) when the count refuses the statement: an error, so nothing of it is written.
      [
        'inserted',
        `SELECT ${landed}.*, ${input}.ord FROM ${landed} JOIN ${input} USING (${owner}, dedupe_hash)
        WHERE (SELECT 1 / (CASE WHEN ${count.refusedWhen(TURN_RELATIONS)} THEN 0 ELSE 1 END)) = 1`,
      ],
    ],
    rows: [
      `INSERT INTO memory_history (project_id, memory_id, action, changes, actor_type, actor_id, request_id, created_at)
      SELECT input.ctx_project_id, inserted.id, 'create', input.history_changes, input.ctx_actor_type, input.ctx_actor_id, input.ctx_request_id, input.ctx_now
      FROM inserted JOIN input USING (ord) ORDER BY inserted.id`,
    ],
    audit: { action: 'memory.add_turn', targetType: 'memory' },
    event: 'memory.created',
    // One turn per owner: the revision check above holds for one bump per owner and statement.
    exclusive: (values) => [`${values[PROJECT]}\u0000${values[TENANT]}\u0000${values[END_USER]}`],
  });
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

/** A memory arriving from an export (Engram's or another service's), keeping its own timestamps. */
export interface ImportedMemory extends AddMemoryInput {
  is_summary?: boolean;
  speaker?: string | null;
  created_at?: string;
  updated_at?: string;
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
