import { sql, type Compilable, type Selectable } from 'kysely';
import { notFound } from '../../core/errors.js';
import { CLOCK_NOW_SQL, clockNow } from '../../core/credentials-clock.js';
import { groupedStatement } from '../../core/unit-of-work.js';
import { keysetPages, paginate, type Page, type PageParams } from '../../core/paging.js';
import { decodeJson, nowIso, type Database, type Executor } from '../../store/database.js';
import { prepared } from '../../store/prepared.js';
import type { MemoriesTable } from '../../store/schema.js';
import type { MemoryView } from './schemas.js';

/**
 * Reading memories: single rows, lists, exports, and the change feed the retrieval indexes follow
 * (each end user's revision and the rows changed since a sequence number). Writes are in writes.ts.
 */

/** Whose memories: every query of this module is built from one. */
export interface Owner {
  projectId: string;
  tenantId: string;
  endUserId: string;
}

export type MemoryRow = Selectable<MemoriesTable>;

/** The columns a memory's view is built from. */
const VIEW_COLUMNS = [
  'id',
  'text',
  'tags',
  'is_summary',
  'source',
  'importance',
  'metadata',
  'client_ref',
  'session_id',
  'end_user_id',
  'created_at',
  'updated_at',
  'superseded_by',
  'expires_at',
] as const;

export function toMemory(row: Pick<MemoryRow, (typeof VIEW_COLUMNS)[number]>): MemoryView {
  return viewOf(row, row.id);
}

/** The view of a row stored under `id` (a row built before its insert gave it one). */
export function viewOf(row: Omit<Pick<MemoryRow, (typeof VIEW_COLUMNS)[number]>, 'id'>, id: number): MemoryView {
  return {
    id,
    text: row.text,
    tags: decodeJson<string[]>(row.tags),
    is_summary: Boolean(row.is_summary),
    source: row.source,
    importance: row.importance,
    metadata: decodeJson<Record<string, unknown>>(row.metadata),
    client_ref: row.client_ref,
    session_id: row.session_id,
    end_user_id: row.end_user_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    superseded_by: row.superseded_by,
    expires_at: row.expires_at === null ? null : new Date(row.expires_at).toISOString(),
  };
}

/**
 * Not expired: an expired memory is gone from every read at once, before the expiry sweep erases it
 * (writes.ts#forgetExpired). A condition on `memories` for the queries of this module.
 */
export const unexpired = () => sql<boolean>`(memories.expires_at IS NULL OR memories.expires_at > ${nowIso()})`;

/** The same, of a memory already read (the reads by id, whose statements are shared and prepared). */
export const isUnexpired = (m: { expires_at: string | null }, now = Date.now()) =>
  m.expires_at === null || Date.parse(m.expires_at) > now;

export const owned = (owner: Owner) => (qb: Executor) =>
  qb
    .selectFrom('memories')
    .selectAll()
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .where('deleted_at', 'is', null)
    .where(unexpired());

export async function getMemory(db: Executor, owner: Owner, id: number): Promise<MemoryView> {
  const row = await owned(owner)(db).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('Memory');
  return toMemory(row);
}

/** The owner's live summary of this set, if one exists (a summary's set key takes the place of its text hash). */
export async function summaryBySetKey(db: Executor, owner: Owner, setKey: string): Promise<MemoryView | undefined> {
  const row = await owned(owner)(db)
    .where('dedupe_hash', 'is not', null)
    .where('dedupe_hash', '=', setKey)
    .executeTakeFirst();
  return row ? toMemory(row) : undefined;
}

export async function memoryHistory(db: Executor, owner: Owner, id: number) {
  await getMemory(db, owner, id);
  const rows = await db.selectFrom('memory_history').selectAll().where('memory_id', '=', id).orderBy('id').execute();
  return {
    memory_id: id,
    items: rows.map((r) => ({
      id: r.id,
      action: r.action,
      changes: r.changes === null ? null : decodeJson<Record<string, { before: unknown; after: unknown }>>(r.changes),
      actor: { type: r.actor_type, id: r.actor_id },
      request_id: r.request_id,
      created_at: r.created_at,
    })),
  };
}

/**
 * Streams the live memories of a project (optionally one tenant, '' being no tenant, or end user) in id order,
 * a page at a time, so memory use stays flat however many there are.
 */
export async function* exportMemories(
  db: Executor,
  filter: { projectId: string; tenantId?: string | null; endUserId?: string | null },
  pageSize = 500,
): AsyncGenerator<MemoryView> {
  const pages = keysetPages(
    (after, limit) =>
      db
        .selectFrom('memories')
        .selectAll()
        .where('project_id', '=', filter.projectId)
        .where('deleted_at', 'is', null)
        .where(unexpired())
        .where('id', '>', after)
        .$if(filter.tenantId != null, (qb) => qb.where('tenant_id', '=', filter.tenantId!))
        .$if(Boolean(filter.endUserId), (qb) => qb.where('end_user_id', '=', filter.endUserId!))
        .orderBy('id')
        .limit(limit)
        .execute(),
    pageSize,
  );
  for await (const page of pages) for (const row of page) yield toMemory(row);
}

/**
 * The end_users row of a project and tenant whose revision adds up those of its removed end users (purgeEndUser):
 * '' is no end user's id. A new end user's revisions start after it, so an id used again after its removal never
 * repeats a revision of its earlier life, and the project's revision (the sum) never moves back.
 */
export const RETIRED_REVISIONS = '';

/** The owner's change sequence: bumped by every change to their memories (0 before the first). */
const revisionRow = prepared(3, (db, projectId: string, tenantId: string, endUserId: string) =>
  db
    .selectFrom('end_users')
    .select('revision')
    .where('project_id', '=', projectId)
    .where('tenant_id', '=', tenantId)
    .where('end_user_id', '=', endUserId),
);

export async function revisionOf(db: Executor, owner: Owner): Promise<number> {
  const [row] = await revisionRow(db, owner.projectId, owner.tenantId, owner.endUserId);
  return row?.revision ?? 0;
}

/**
 * Whether any of the owner's memories was forgotten after change `seq`, for a module about to store
 * a copy derived from the memories as of `seq` (retrieval's index snapshots), which forgetting
 * erases in its own transaction. Call it in the transaction that stores the copy: the owner's
 * revision row is read under a share lock (PostgreSQL), so a forgetting transaction under way is
 * waited for and then seen here, and one that starts later waits for the copy to commit and then
 * erases it; on SQLite write transactions run one at a time.
 */
export async function forgottenSince(database: Database, trx: Executor, owner: Owner, seq: number): Promise<boolean> {
  await trx
    .selectFrom('end_users')
    .select('revision')
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .$if(database.dialect === 'postgres', (qb) => qb.forShare())
    .execute();
  const forgotten = await trx
    .selectFrom('memories')
    .select('id')
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .where('seq', '>', seq)
    .where('deleted_at', 'is not', null)
    .limit(1)
    .execute();
  return forgotten.length > 0;
}

/**
 * End users whose memories changed after `after` (by their revision's time) and who hold at least
 * `minMemories` live memories, with their current revision: one statement, for background upkeep
 * of large end users (retrieval's index snapshots).
 */
export async function largeOwnersChangedAfter(
  db: Executor,
  after: string,
  minMemories: number,
): Promise<Array<{ owner: Owner; revision: number }>> {
  const rows = await db
    .selectFrom('end_users as e')
    .innerJoin('memories as m', (j) =>
      j
        .onRef('m.project_id', '=', 'e.project_id')
        .onRef('m.tenant_id', '=', 'e.tenant_id')
        .onRef('m.end_user_id', '=', 'e.end_user_id'),
    )
    .select(['e.project_id', 'e.tenant_id', 'e.end_user_id', 'e.revision'])
    .where('e.updated_at', '>', after)
    .where('m.deleted_at', 'is', null)
    .groupBy(['e.project_id', 'e.tenant_id', 'e.end_user_id', 'e.revision'])
    .having((eb) => eb.fn.countAll(), '>=', minMemories)
    .orderBy('e.project_id')
    .orderBy('e.tenant_id')
    .orderBy('e.end_user_id')
    .execute();
  return rows.map((r) => ({
    owner: { projectId: r.project_id, tenantId: r.tenant_id, endUserId: r.end_user_id },
    revision: Number(r.revision),
  }));
}

/** What an index needs of a memory; `deleted` rows tell it to drop the id. */
export interface IndexedMemory {
  id: number;
  text: string;
  tags: string[];
  source: string | null;
  importance: number;
  metadata: Record<string, unknown>;
  session_id: string | null;
  speaker: string | null;
  is_summary: boolean;
  created_at: string;
  updated_at: string;
  end_user_id: string;
  deleted: boolean;
  seq: number;
  superseded_by: number | null;
}

/** The columns an index reads (a cold index reads every row of its owner: no column it does not use). */
const INDEXED_COLUMNS = [
  'id',
  'text',
  'tags',
  'source',
  'importance',
  'metadata',
  'session_id',
  'speaker',
  'is_summary',
  'created_at',
  'updated_at',
  'end_user_id',
  'deleted_at',
  'seq',
  'superseded_by',
] as const;

function toIndexed(row: Pick<MemoryRow, (typeof INDEXED_COLUMNS)[number]>): IndexedMemory {
  return {
    id: row.id,
    text: row.text,
    tags: decodeJson<string[]>(row.tags),
    source: row.source,
    importance: row.importance,
    metadata: decodeJson<Record<string, unknown>>(row.metadata),
    session_id: row.session_id,
    speaker: row.speaker,
    is_summary: Boolean(row.is_summary),
    created_at: row.created_at,
    updated_at: row.updated_at,
    end_user_id: row.end_user_id,
    deleted: row.deleted_at !== null,
    seq: row.seq,
    superseded_by: row.superseded_by,
  };
}

/**
 * What a copy of the owner's memories as of `seq` (an index) must apply to be current: the rows changed
 * since, or, when `restart`, every live row, the copy being dropped first. Restart when no row of the owner
 * has a sequence at or below `seq`: the end user was removed since (their tombstones moved to a pseudonym,
 * purgeEndUser) and perhaps written to again under the same id, whose revisions continue past every earlier
 * one (retireOwner), so the rows of the new life are all after `seq`; or every row changed since, when the
 * changes are the whole owner anyway.
 */
export async function ownerChangesSince(
  db: Executor,
  owner: Owner,
  seq: number,
): Promise<{ restart: boolean; rows: IndexedMemory[] }> {
  if (seq > 0) {
    const kept = await db
      .selectFrom('memories')
      .select('id')
      .where('project_id', '=', owner.projectId)
      .where('tenant_id', '=', owner.tenantId)
      .where('end_user_id', '=', owner.endUserId)
      .where('seq', '<=', seq)
      .limit(1)
      .execute();
    if (kept.length === 0) return { restart: true, rows: await changesSince(db, owner, 0) };
  }
  return { restart: false, rows: await changesSince(db, owner, seq) };
}

/**
 * The owner's memories changed after `seq` (all of them from 0), forgotten ones included, in id
 * order. Served by the (owner, seq) index. A copy kept across calls follows ownerChangesSince.
 */
export async function changesSince(db: Executor, owner: Owner, seq: number): Promise<IndexedMemory[]> {
  const rows = await db
    .selectFrom('memories')
    .select(INDEXED_COLUMNS)
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .where('seq', '>', seq)
    .$if(seq === 0, (qb) => qb.where('deleted_at', 'is', null))
    .orderBy('id')
    .execute();
  return rows.map(toIndexed);
}

/** Every end user of a project who has ever had a memory. */
export async function endUsersOf(db: Executor, projectId: string): Promise<Owner[]> {
  const rows = await db
    .selectFrom('end_users')
    .select(['tenant_id', 'end_user_id'])
    .where('project_id', '=', projectId)
    // The row of retired revisions (RETIRED_REVISIONS) is no end user.
    .where('end_user_id', '!=', RETIRED_REVISIONS)
    .orderBy('tenant_id')
    .orderBy('end_user_id')
    .execute();
  return rows.map((r) => ({ projectId, tenantId: r.tenant_id, endUserId: r.end_user_id }));
}

/** A project-wide revision: the sum of its end users' revisions, which grows with every change. */
export async function projectRevision(db: Executor, projectId: string, tenantId: string | null): Promise<number> {
  const row = await db
    .selectFrom('end_users')
    .select((eb) => [eb.fn.coalesce(eb.fn.sum<number>('revision'), eb.lit(0)).as('total')])
    .where('project_id', '=', projectId)
    .$if(tenantId !== null, (qb) => qb.where('tenant_id', '=', tenantId!))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/** Every live memory of a project (optionally one tenant), a page at a time. */
export async function* liveProjectMemories(
  db: Executor,
  projectId: string,
  tenantId: string | null,
): AsyncGenerator<IndexedMemory> {
  const pages = keysetPages(
    (after, limit) =>
      db
        .selectFrom('memories')
        .select(INDEXED_COLUMNS)
        .where('project_id', '=', projectId)
        .$if(tenantId !== null, (qb) => qb.where('tenant_id', '=', tenantId!))
        .where('deleted_at', 'is', null)
        .where('id', '>', after)
        .orderBy('id')
        .limit(limit)
        .execute(),
    1000,
  );
  for await (const page of pages) for (const row of page) yield toIndexed(row);
}

/**
 * One compiled query per id-list length (retrieval asks for k rows, so few lengths occur), kept for
 * the first 500 lengths seen.
 */
function perIdCount<A extends unknown[], R>(
  fixed: number,
  build: (db: Executor, ...args: [...A, ...number[]]) => Compilable<R>,
) {
  const queries = new Map<number, (db: Executor, ...args: [...A, ...number[]]) => Promise<R[]>>();
  return (count: number) => {
    let query = queries.get(count);
    if (!query) {
      query = prepared(fixed + count, build);
      if (queries.size < 500) queries.set(count, query);
    }
    return query;
  };
}

/** What reading memories back by id selects: the view, the speaker, and what the scope is checked against. */
const READ_COLUMNS = [...VIEW_COLUMNS, 'speaker', 'project_id', 'tenant_id'] as const;
type ReadRow = Pick<MemoryRow, (typeof READ_COLUMNS)[number]>;

/** A memory read back by id: its view, its speaker and its tenant. */
export type ScopedMemory = MemoryView & { speaker: string | null; tenant_id: string };

/**
 * The rows within the project, tenant and end user given, as views, in the order of `ids`. The
 * statements select by id only and the scope is checked here: given equality on the owner,
 * SQLite (which has no statistics) walks the owner's whole (owner, seq) index instead of looking
 * up the ids, and PostgreSQL does the same on a table it has not analysed yet, which costs a
 * query time proportional to the owner's memories.
 */
function viewsInOrder(
  rows: ReadRow[],
  scope: { projectId: string; tenantId?: string | null; endUserId?: string | null },
  ids: number[],
): ScopedMemory[] {
  const byId = new Map<number, ScopedMemory>();
  const now = Date.now();
  for (const row of rows) {
    if (row.project_id !== scope.projectId || !isUnexpired(row, now)) continue;
    if (
      (scope.tenantId != null && row.tenant_id !== scope.tenantId) ||
      (scope.endUserId != null && row.end_user_id !== scope.endUserId)
    )
      continue;
    // Extended in place: spreading a view into a new object costs a few microseconds a row.
    const view = toMemory(row) as ScopedMemory;
    view.speaker = row.speaker;
    view.tenant_id = row.tenant_id;
    byId.set(row.id, view);
  }
  const inOrder: ScopedMemory[] = [];
  for (const id of ids) {
    const view = byId.get(id);
    if (view) inOrder.push(view);
  }
  return inOrder;
}

const liveRowsByIds = perIdCount<[], ReadRow>(0, (db, ...ids) =>
  db
    .selectFrom('memories')
    .select(READ_COLUMNS)
    .where('deleted_at', 'is', null)
    .where('id', 'in', ids as number[]),
);

/** Live memories by id within a project (and tenant/end user when given), in the order asked. */
export async function memoriesByIds(
  db: Executor,
  scope: { projectId: string; tenantId?: string | null; endUserId?: string | null },
  ids: number[],
): Promise<ScopedMemory[]> {
  if (ids.length === 0) return [];
  return viewsInOrder(await liveRowsByIds(ids.length)(db, ...ids), scope, ids);
}

/**
 * Live memories by id, as memoriesByIds, that stay live and as read until the transaction ends:
 * for a write keeping something of them (a relation, a vector of the text) which forgetting
 * erases, or a summary's rewrite replaces, in its own transaction. Their owners' revision rows are
 * read under a share lock first (PostgreSQL), as forgottenSince does: a forgetting under way holds
 * its owner's row (nextSeq), so it is waited for and then seen; one that starts later waits for
 * this transaction and then erases what it wrote. Owners are locked in the grouped add's order, so
 * neither waits for the other in turn. SQLite runs write transactions one at a time.
 */
export async function memoriesHeld(
  database: Database,
  trx: Executor,
  scope: { projectId: string; tenantId?: string | null; endUserId?: string | null },
  ids: number[],
): Promise<ScopedMemory[]> {
  if (ids.length === 0) return [];
  if (database.dialect === 'postgres') {
    await trx
      .selectFrom('end_users as e')
      .innerJoin('memories as m', (j) =>
        j
          .onRef('m.project_id', '=', 'e.project_id')
          .onRef('m.tenant_id', '=', 'e.tenant_id')
          .onRef('m.end_user_id', '=', 'e.end_user_id'),
      )
      .select('e.revision')
      .where('m.id', 'in', ids)
      .orderBy('e.project_id')
      .orderBy('e.tenant_id')
      .orderBy('e.end_user_id')
      .forShare('e')
      .execute();
  }
  return memoriesByIds(trx, scope, ids);
}

/**
 * The owner's revision and, read in the same statement (so as of the same commit), its live
 * memories among these ids in the order asked: for a caller that ranked on an index it holds and
 * keeps the answer only if that index was of this revision (retrieval's query: one round trip).
 * Ids must be non-empty. Revision 0 for an owner with nothing written yet; with it, the credentials
 * clock (core/credentials-clock.ts), undefined then. On PostgreSQL the reads of queries arriving
 * together go out as one statement (`rowsAtRevisionTogether`): under concurrent queries a statement's
 * round trip, socket writes and the backend's work per statement cost more than its ten rows.
 */
export async function ownerMemoriesAt(
  database: Database,
  owner: Owner,
  ids: number[],
): Promise<{ revision: number; memories: ScopedMemory[]; clock: number | undefined }> {
  const rows =
    database.dialect === 'postgres'
      ? await rowsAtRevisionTogether<RowAtRevision>(database, [owner.projectId, owner.tenantId, owner.endUserId, ids])
      : ((await rowsAtRevision(ids.length)(
          database.db,
          owner.projectId,
          owner.tenantId,
          owner.endUserId,
          ...ids,
        )) as RowAtRevision[]);
  // The left join gives one row without a memory when none of the ids is live.
  const found = rows.filter((r): r is RowAtRevision & ReadRow => r.id !== null);
  return {
    revision: rows[0]?.owner_revision ?? 0,
    memories: viewsInOrder(found, owner, ids),
    clock: rows[0] && Number(rows[0].clock),
  };
}

/**
 * ownerMemoriesAt's statement on PostgreSQL, for many owners at once (core/unit-of-work.ts#groupedStatement):
 * each owner's row by its key and its rows by id, through LATERAL subqueries the planner cannot turn into a
 * scan of either table when it has no statistics for them (a new database, autovacuum off). Each request
 * gets its own rows: one row with its revision and the clock, the memory's columns null, when none is live.
 */
export const rowsAtRevisionTogether = groupedStatement(
  [
    ['project_id', 'text'],
    ['tenant_id', 'text'],
    ['end_user_id', 'text'],
    ['ids', 'bigint[]'],
  ],
  `SELECT given.ord, e.revision AS owner_revision, ${CLOCK_NOW_SQL} AS clock, ${READ_COLUMNS.map((c) => `m.${c}`).join(', ')}
   FROM given
   CROSS JOIN LATERAL (SELECT revision FROM end_users
     WHERE project_id = given.project_id AND tenant_id = given.tenant_id AND end_user_id = given.end_user_id LIMIT 1) e
   LEFT JOIN LATERAL (SELECT * FROM memories WHERE deleted_at IS NULL AND id = ANY(given.ids) OFFSET 0) m ON true`,
  // A query alone takes the statement of its id count, whose values need no JSON read (25 % less of the backend's time).
  (database, [projectId, tenantId, endUserId, ids]) =>
    rowsAtRevision((ids as number[]).length)(
      database.db,
      projectId as string,
      tenantId as string,
      endUserId as string,
      ...(ids as number[]),
    ) as Promise<RowAtRevision[]>,
);
type RowAtRevision = { owner_revision: number; clock: number } & { [K in keyof ReadRow]: ReadRow[K] | null };
const rowsAtRevision = perIdCount<[projectId: string, tenantId: string, endUserId: string], unknown>(
  3,
  (db, projectId, tenantId, endUserId, ...ids) =>
    db
      .selectFrom('end_users as e')
      .leftJoin('memories as m', (join) => join.on('m.deleted_at', 'is', null).on('m.id', 'in', ids as number[]))
      .select('e.revision as owner_revision')
      .select(clockNow.as('clock'))
      .select(READ_COLUMNS.map((column) => `m.${column}` as const))
      .where('e.project_id', '=', projectId as string)
      .where('e.tenant_id', '=', tenantId as string)
      .where('e.end_user_id', '=', endUserId as string),
);

/** A page of live /v1 memories (those of a tenant) of a project, filtered by tenant, end user and session, newest first. */
export async function listMemories(
  db: Executor,
  filter: { projectId: string; tenantId?: string | null; endUserId?: string | null; sessionId?: string | null },
  page: PageParams,
): Promise<Page<MemoryView & { speaker: string | null; tenant_id: string }>> {
  const query = db
    .selectFrom('memories')
    .selectAll()
    .where('project_id', '=', filter.projectId)
    .where('deleted_at', 'is', null)
    .where(unexpired())
    .where('tenant_id', '!=', '')
    .$if(filter.tenantId != null, (qb) => qb.where('tenant_id', '=', filter.tenantId!))
    .$if(filter.endUserId != null, (qb) => qb.where('end_user_id', '=', filter.endUserId!))
    .$if(filter.sessionId != null, (qb) => qb.where('session_id', '=', filter.sessionId!))
    .orderBy('id', 'desc');
  return paginate(query, page, (r) => ({ ...toMemory(r), speaker: r.speaker, tenant_id: r.tenant_id }));
}

/** Counts for a status page: distinct tenants and users, and live memories (of one tenant or end user when given). */
export async function memoryCounts(
  db: Executor,
  { projectId, tenantId, endUserId }: { projectId: string; tenantId: string | null; endUserId: string | null },
) {
  const row = await db
    .selectFrom('memories')
    .select((eb) => [
      eb.fn.countAll<number>().as('memories'),
      eb.fn.count<number>('tenant_id').distinct().as('tenants'),
      eb.fn.count<number>('end_user_id').distinct().as('users'),
    ])
    .where('project_id', '=', projectId)
    .where('deleted_at', 'is', null)
    .where(unexpired())
    .$if(tenantId !== null, (qb) => qb.where('tenant_id', '=', tenantId!))
    .$if(endUserId !== null, (qb) => qb.where('end_user_id', '=', endUserId!))
    .where('tenant_id', '!=', '')
    .executeTakeFirstOrThrow();
  return { tenants: Number(row.tenants), users: Number(row.users), memories: Number(row.memories) };
}

/**
 * How many of one end user's turns (memories with a speaker) were stored within [from, to), by their create history
 * (a turn's created_at is when it was said): the end user's share of the tenant's turn usage, as it stands (a
 * forgotten turn is gone from it, as erasure asks).
 */
export async function turnsStoredBy(
  db: Executor,
  owner: { projectId: string; tenantId: string | null; endUserId: string },
  from: Date,
  to: Date,
): Promise<number> {
  const row = await db
    .selectFrom('memories')
    .innerJoin('memory_history', 'memory_history.memory_id', 'memories.id')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('memories.project_id', '=', owner.projectId)
    .$if(owner.tenantId !== null, (qb) => qb.where('memories.tenant_id', '=', owner.tenantId!))
    .where('memories.end_user_id', '=', owner.endUserId)
    .where('memories.deleted_at', 'is', null)
    .where(unexpired())
    .where('memories.speaker', 'is not', null)
    .where('memory_history.action', '=', 'create')
    .where('memory_history.created_at', '>=', from.toISOString())
    .where('memory_history.created_at', '<', to.toISOString())
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** How many live memories one end user has. */
export async function liveMemoryCountOf(db: Executor, owner: Owner): Promise<number> {
  const row = await db
    .selectFrom('memories')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .where('deleted_at', 'is', null)
    .where(unexpired())
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Live memories of these projects, for billing. */
export async function liveMemoryCount(db: Executor, projectIds: string[]): Promise<number> {
  if (projectIds.length === 0) return 0;
  const row = await db
    .selectFrom('memories')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', 'in', projectIds)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** What an export may narrow to, beyond the project. */
export interface ExportFilter {
  projectId: string;
  tenantId?: string | null;
  endUserId?: string | null;
  sessionId?: string | null;
  /** Exclusive bounds, RFC 3339. */
  createdAfter?: string | null;
  createdBefore?: string | null;
  /** Any of these tags. */
  tagsAny?: string[] | null;
}

/** A memory as exported and imported: the wire Memory plus who it belongs to and the /v1 speaker. */
export type PortableMemory = MemoryView & { tenant_id: string; speaker: string | null };

function exportQuery({ db, dialect }: Database, filter: ExportFilter) {
  return db
    .selectFrom('memories')
    .where('project_id', '=', filter.projectId)
    .where('deleted_at', 'is', null)
    .$if(filter.tenantId != null, (qb) => qb.where('tenant_id', '=', filter.tenantId!))
    .$if(filter.endUserId != null, (qb) => qb.where('end_user_id', '=', filter.endUserId!))
    .$if(filter.sessionId != null, (qb) => qb.where('session_id', '=', filter.sessionId!))
    .$if(filter.createdAfter != null, (qb) => qb.where('created_at', '>', filter.createdAfter!))
    .$if(filter.createdBefore != null, (qb) => qb.where('created_at', '<', filter.createdBefore!))
    .$if(!!filter.tagsAny?.length, (qb) =>
      qb.where(({ exists, selectFrom }) =>
        dialect === 'postgres'
          ? sql<boolean>`jsonb_exists_any(memories.tags, ${sql.val(filter.tagsAny!)}::text[])`
          : exists(
              selectFrom(sql`json_each(memories.tags)`.as('t'))
                .select(sql`1`.as('one'))
                .where(sql.ref('t.value'), 'in', filter.tagsAny!),
            ),
      ),
    );
}

/** How many live memories an export of `filter` holds right now. */
export async function countForExport(database: Database, filter: ExportFilter): Promise<number> {
  const row = await exportQuery(database, filter)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** One keyset page of live memories matching `filter` with ids above `afterId`, in id order. */
export async function exportPage(
  database: Database,
  filter: ExportFilter,
  afterId: number,
  limit: number,
): Promise<PortableMemory[]> {
  const rows = await exportQuery(database, filter)
    .selectAll()
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...toMemory(r), tenant_id: r.tenant_id, speaker: r.speaker }));
}

/** The client_ref of each of these memories of one project (null where it has none): how an import finds them again. */
export async function clientRefsOf(
  db: Executor,
  projectId: string,
  ids: number[],
): Promise<Map<number, string | null>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('memories')
    .select(['id', 'client_ref'])
    .where('project_id', '=', projectId)
    .where('id', 'in', ids)
    .execute();
  return new Map(rows.map((r) => [r.id, r.client_ref]));
}

/** The owner's live memories with these client_refs, by client_ref (unique per owner). */
export async function liveIdsByClientRef(db: Executor, owner: Owner, refs: string[]): Promise<Map<string, number>> {
  if (refs.length === 0) return new Map();
  const rows = await owned(owner)(db)
    .clearSelect()
    .select(['id', 'client_ref'])
    .where('client_ref', 'in', refs)
    .execute();
  return new Map(rows.map((r) => [r.client_ref!, r.id]));
}

/** The history of these memories (of one project), grouped by memory id, oldest first. */
export async function historyOfMemories(db: Executor, projectId: string, ids: number[]) {
  const byMemory = new Map<
    number,
    Array<{ action: string; changes: unknown; actor: { type: string; id: number | null }; created_at: string }>
  >();
  if (ids.length === 0) return byMemory;
  const rows = await db
    .selectFrom('memory_history')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('memory_id', 'in', ids)
    .orderBy('id')
    .execute();
  for (const r of rows) {
    const list = byMemory.get(r.memory_id) ?? [];
    list.push({
      action: r.action,
      changes: r.changes === null ? null : decodeJson(r.changes),
      actor: { type: r.actor_type, id: r.actor_id },
      created_at: r.created_at,
    });
    byMemory.set(r.memory_id, list);
  }
  return byMemory;
}

/** Whose memories these are (forgotten ones included): what an erase hook needs to know what held them. */
export async function ownersOfMemories(db: Executor, ids: number[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('memories')
    .select(['id', 'project_id', 'tenant_id', 'end_user_id', 'created_at'])
    .where('id', 'in', ids)
    .execute();
}
