import { sql, type Insertable } from 'kysely';
import { sha256Hex } from '../../core/crypto.js';
import { invalid } from '../../core/errors.js';
import type { Effects, WriteContext } from '../../core/unit-of-work.js';
import { normalizeText } from '../../engine/index.js';
import { decodeJson, encodeJson, type Database, type Executor } from '../../store/database.js';
import { preparedInsert } from '../../store/prepared.js';
import type { MemoriesTable, MemoryHistoryTable } from '../../store/schema.js';
import { toMemory, viewOf, type MemoryRow, type Owner } from './feed.js';
import { revisionBump, type RowsSeq } from './revisions.js';
import { LIMITS, type AddMemoryInput, type MemoryView, type SkipReason } from './schemas.js';

/**
 * The rows every write of memories builds: duplicate keys, content rules, the memory row and its
 * insert statements, history rows and the memory.created record. This module is the only writer of
 * memories, memory_history and end_users; each operation has a file of its own (add.ts, update.ts,
 * erase.ts, turns.ts, summaries.ts, marks.ts, import.ts).
 */

export type Outcome = { created: MemoryView } | { skipped: { reason: SkipReason; memory_id: number } };

/**
 * Duplicates compare the engine's normal form: case, width, accents, punctuation and spacing
 * ignored. A text without letters or digits (emoji, symbols) is compared with only its spacing
 * ignored, so that such texts are not all duplicates of one another.
 */
const dedupeHash = (text: string) =>
  sha256Hex(normalizeText(text) || text.normalize('NFKC').toLowerCase().replace(/\s+/gu, ' ').trim());

/** Rules beyond the schema (NUL and unpaired surrogates are refused for every request by http/input.ts). */
export function checkContent(input: { text?: string; metadata?: Record<string, unknown> }, prefix = ''): void {
  if (input.text !== undefined && input.text.trim() === '') throw invalid(`${prefix}text`, 'text must not be blank');
  if (input.metadata !== undefined && Buffer.byteLength(encodeJson(input.metadata)) > LIMITS.metadataBytes) {
    throw invalid(`${prefix}metadata`, `metadata must serialise to at most ${LIMITS.metadataBytes} bytes`);
  }
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
export const duplicateKey = (i: ImportedMemory) =>
  i.speaker ? turnHash(i.session_id ?? null, i.speaker, i.text, i.created_at ?? null) : dedupeHash(i.text);

/**
 * The history changes of a new memory: each field from null. Built by assignment: Object.fromEntries
 * over mapped pairs took four times as long (0.75 against 0.17 µs for the seven fields of an add).
 */
export const createdChanges = (m: MemoryView, fields: ReadonlyArray<keyof MemoryView> = CREATED_FIELDS) => {
  const changes: Record<string, { before: null; after: unknown }> = {};
  for (const field of fields) changes[field] = { before: null, after: m[field] };
  return changes;
};

export function memoryRow(
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
export type Landed = Pick<MemoryRow, 'id' | 'dedupe_hash'> &
  Partial<Pick<MemoryRow, 'tags' | 'metadata' | 'created_at' | 'updated_at'>>;
export const LANDED_COLUMNS = {
  sqlite: ['id', 'dedupe_hash'],
  postgres: ['id', 'dedupe_hash', 'tags', 'metadata', 'created_at', 'updated_at'],
} as const;
const landedInsert = (dialect: Database['dialect'], unlessConflict: boolean) =>
  preparedInsert<Omit<MemoryRow, 'id'>, Landed>(MEMORY_COLUMNS, (db, rows) => {
    const insert = db.insertInto('memories').values(rows as Insertable<MemoriesTable>[]);
    return (unlessConflict ? insert.onConflict((oc) => oc.doNothing()) : insert).returning(LANDED_COLUMNS[dialect]);
  });
const landedUnlessConflict = { sqlite: landedInsert('sqlite', true), postgres: landedInsert('postgres', true) };
/** PostgreSQL's plain insert (SQLite's returns nothing: sqliteRowsInsert). */
const postgresLanded = landedInsert('postgres', false);

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
  if (typeof seq === 'number') {
    if (unlessConflict) return landedUnlessConflict[database.dialect](trx, rows);
    if (database.dialect === 'sqlite') throw new Error('landedStatement: SQLite inserts through sqliteRowsInsert');
    return postgresLanded(trx, rows);
  }
  const kind = unlessConflict ? 'unlessConflict' : 'all';
  const { bump: owner, now } = seq;
  return bumpingInserts[kind](trx, rows, owner.projectId, owner.tenantId, owner.endUserId, now);
}

/** The view of a row sent, as the row stored (Landed). */
export function landedView(row: Omit<MemoryRow, 'id'>, landed: Landed): MemoryView {
  const view = viewOf(row, landed.id);
  if (landed.metadata !== undefined) {
    view.tags = decodeJson<string[]>(landed.tags);
    view.metadata = decodeJson<Record<string, unknown>>(landed.metadata);
    view.created_at = landed.created_at!;
    view.updated_at = landed.updated_at!;
  }
  return view;
}

/**
 * SQLite: an insert of memory rows that returns nothing. Every row lands (no ON CONFLICT), and a
 * table with AUTOINCREMENT numbers the rows of one INSERT one after another in VALUES order (each
 * past the largest rowid ever used, and the one connection writes alone), so their ids follow from
 * the last one. RETURNING collected and handed back two values a row: ~15 % of the insert.
 */
const sqliteRowsInsert = preparedInsert<Omit<MemoryRow, 'id'>>(MEMORY_COLUMNS, (db, rows) =>
  db.insertInto('memories').values(rows as Insertable<MemoriesTable>[]),
);

/** Inserts memory rows and returns them as the memories they now are, in order. */
export async function insertedMemories(
  database: Database,
  trx: Executor,
  rows: Array<Omit<MemoryRow, 'id'>>,
  seq: RowsSeq,
): Promise<MemoryView[]> {
  if (database.dialect === 'sqlite' && typeof seq === 'number') {
    const { insertId, numAffectedRows } = await trx.executeQuery(sqliteRowsInsert(trx, rows).compile());
    if (Number(numAffectedRows) !== rows.length) throw new Error('insertedMemories: a row did not land');
    const first = Number(insertId) - rows.length + 1;
    return rows.map((row, i) => viewOf(row, first + i));
  }
  const inserted = (await trx.executeQuery(landedStatement(database, trx, rows, seq, false).compile())).rows;
  return inserted.map((landed, i) => landedView(rows[i]!, landed));
}

/**
 * Inserts memory rows, skipping those that conflict with a live memory of the owner, and returns
 * the memories that landed by their dedupe_hash (unique among the rows given), in row order.
 */
export async function insertedUnlessConflict(
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

/** The history rows and memory.created events of new memories. */
export function recordCreated(
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
  emitCreated(effects, owner, created);
}

/** The memory.created events of new memories: of one owner for all, or each memory's own (an import). */
export function emitCreated(effects: Effects, owner: Owner | Owner[], created: MemoryView[]): void {
  created.forEach((m, i) =>
    effects.emit('memory.created', {
      memory: m,
      tenant_id: (Array.isArray(owner) ? owner[i]! : owner).tenantId || null,
    }),
  );
}

/** A memory row's columns but its seq (the revision the statement bumps), with their PostgreSQL types. */
export const NEW_MEMORY_COLUMNS = [
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
export const [PROJECT, TENANT, END_USER, HASH, CLIENT_REF] = [
  'project_id',
  'tenant_id',
  'end_user_id',
  'dedupe_hash',
  'client_ref',
].map(columnIndex) as [number, number, number, number, number];
export const memoryColumnList = NEW_MEMORY_COLUMNS.map(([column]) => column).join(', ');

/**
 * A turn is who said what, in which session, when: the same words said again later are another
 * turn. A stored turn without a time of its own (a bulk item) is keyed by its words alone.
 */
export const turnHash = (sessionId: string | null, speaker: string, text: string, at: string | null) =>
  sha256Hex(
    JSON.stringify(
      at === null ? ['turn', sessionId, speaker, text] : ['turn', sessionId, speaker, text, new Date(at).toISOString()],
    ),
  );

/** The fields the history row of a turn or a summary records (insertOne, insertTurnInOneStatement). */
export const INSERTED_HISTORY_FIELDS = ['text', 'source', 'metadata', 'session_id'] as const;

/** One memory row (a turn or a summary) with its create history and memory.created event. */
export async function insertOne(
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

/** A memory arriving from an export (Engram's or another service's), keeping its own timestamps. */
export interface ImportedMemory extends AddMemoryInput {
  is_summary?: boolean;
  speaker?: string | null;
  created_at?: string;
  updated_at?: string;
}
