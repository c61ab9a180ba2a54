import type { Compilable } from 'kysely';
import { notFound } from '../../core/errors.js';
import { CLOCK_NOW_SQL, clockNow } from '../../core/credentials-clock.js';
import { groupedStatement } from '../../core/grouped-statements.js';
import { decodeJson, type Database, type Executor } from '../../store/database.js';
import { prepared } from '../../store/prepared.js';
import { isUnexpired, owned, toMemory, VIEW_COLUMNS, type MemoryRow, type Owner } from './feed.js';
import type { MemoryView } from './schemas.js';

/** Reading memories back by id (one, a list of them as ranked, their history, by client_ref), and whose they are. */

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
 * ownerMemoriesAt's statement on PostgreSQL, for many owners at once (core/grouped-statements.ts#groupedStatement):
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

/** The text of each of the owner's live memories (a copy kept beside a retrieval index: IndexTexts). */
export async function liveTextsOf(db: Executor, owner: Owner): Promise<Array<{ id: number; text: string }>> {
  return owned(owner)(db).clearSelect().select(['id', 'text']).execute();
}
