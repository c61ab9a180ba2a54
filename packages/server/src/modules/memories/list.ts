import { invalid } from '../../core/errors.js';
import { paginate, type Page, type PageParams } from '../../core/paging.js';
import type { Database, Dialect, Executor } from '../../store/database.js';
import { filterConditions } from './filter-sql.js';
import { matchesFilters } from './filter-match.js';
import type { FilterSubject, FiltersInput } from './filters.js';
import { owned, toMemory, unexpired, type MemoryRow, type Owner } from './feed.js';
import type { MemoryView } from './schemas.js';

/** The orders an end user's memories are listed in. */
export type ListOrderBy = 'created_at' | 'updated_at';
export type ListDirection = 'asc' | 'desc';

export interface ListRequest {
  filters?: FiltersInput;
  sessionId?: string;
  orderBy: ListOrderBy;
  direction: ListDirection;
  limit: number;
  /** Where the page starts (the previous page's next_cursor). */
  cursor?: string;
  /** Count every memory the filters select (one more query, over all of them). */
  total: boolean;
}

export interface ListPage {
  items: MemoryView[];
  next_cursor: string | null;
  has_next: boolean;
  limit: number;
  total?: number;
}

/** A position in one order: the last listed row's time and id, bound to the order it was made in. */
interface Cursor {
  orderBy: ListOrderBy;
  direction: ListDirection;
  at: string;
  id: number;
}

const encodeCursor = (c: Cursor) =>
  Buffer.from(JSON.stringify([c.orderBy, c.direction, c.at, c.id])).toString('base64url');

function decodeCursor(text: string, orderBy: ListOrderBy, direction: ListDirection): Cursor {
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parts = undefined;
  }
  if (
    !Array.isArray(parts) ||
    parts.length !== 4 ||
    typeof parts[2] !== 'string' ||
    Number.isNaN(Date.parse(parts[2])) ||
    !Number.isSafeInteger(parts[3]) ||
    parts[3] < 1
  ) {
    throw invalid('cursor', 'cursor is not a next_cursor this list answered');
  }
  if (parts[0] !== orderBy || parts[1] !== direction) {
    throw invalid(
      'cursor',
      `cursor continues the order ${String(parts[0])} ${String(parts[1])}; send the same order_by and order`,
    );
  }
  return { orderBy, direction, at: new Date(parts[2]).toISOString(), id: parts[3] as number };
}

/** A listed memory as the filters read it. */
export const subjectOf = (m: MemoryView): FilterSubject => ({
  tags: m.tags,
  source: m.source,
  createdAt: Date.parse(m.created_at),
  metadata: m.metadata,
  isSummary: m.is_summary,
  sessionId: m.session_id,
  importance: m.importance,
  updatedAt: Date.parse(m.updated_at),
  text: m.text,
});

/**
 * One page of an end user's live memories in the requested order, after the cursor: a range of the
 * (owner, time, id) index, so a page costs the same at the first and the last of any number of memories
 * (with filters, what it reads past the rows they drop). Rows are checked against the filters' exact rule
 * where the SQL only narrows.
 */
export async function listPage(database: Database, owner: Owner, request: ListRequest): Promise<ListPage> {
  const { orderBy, direction, limit } = request;
  const selected = selectedRows(database.db, database.dialect, owner, request);
  const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor, orderBy, direction);
  const items: MemoryView[] = [];
  let from = after;
  for (;;) {
    const rows: MemoryRow[] = await selected.query
      // The predicate of the (owner, time, id) indexes (migration 0059): the list's own, so only it uses them.
      .where('id', '>', 0)
      .$if(from !== undefined, (qb) =>
        qb.where((eb) =>
          eb(eb.refTuple(orderBy, 'id'), direction === 'desc' ? '<' : '>', eb.tuple(from!.at, from!.id)),
        ),
      )
      .orderBy(orderBy, direction)
      .orderBy('id', direction)
      .limit(limit + 1)
      .execute();
    for (const row of rows) {
      const memory = toMemory(row);
      if (selected.exact || matchesFilters(subjectOf(memory), request.filters)) items.push(memory);
    }
    if (items.length > limit || rows.length <= limit) break;
    const last = rows[rows.length - 1]!;
    from = { orderBy, direction, at: toMemory(last)[orderBy], id: last.id };
  }
  const page = items.slice(0, limit);
  const hasNext = items.length > limit;
  const last = page[page.length - 1];
  return {
    items: page,
    next_cursor: hasNext && last ? encodeCursor({ orderBy, direction, at: last[orderBy], id: last.id }) : null,
    has_next: hasNext,
    limit,
    ...(request.total ? { total: await countSelected(database.db, database.dialect, owner, request) } : {}),
  };
}

/** What a request selects of an end user's live memories: the filters of query and a session. */
export type Selection = Pick<ListRequest, 'filters' | 'sessionId'>;

const selectedRows = (db: Executor, dialect: Dialect, owner: Owner, selection: Selection) => {
  const conditions = filterConditions(dialect, selection.filters);
  const query = owned(owner)(db)
    .where(conditions.where)
    .$if(selection.sessionId !== undefined, (qb) => qb.where('session_id', '=', selection.sessionId!));
  return { query, exact: conditions.exact };
};

/** How many live memories of the owner the selection matches. */
export async function countSelected(
  db: Executor,
  dialect: Dialect,
  owner: Owner,
  selection: Selection,
): Promise<number> {
  const { query, exact } = selectedRows(db, dialect, owner, selection);
  if (exact) {
    const row = await query
      .clearSelect()
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
  const rows = await query.execute();
  return rows.filter((row) => matchesFilters(subjectOf(toMemory(row)), selection.filters)).length;
}

/** The ids of the first `limit` live memories of the owner the selection matches, oldest (lowest id) first. */
export async function selectedIds(
  db: Executor,
  dialect: Dialect,
  owner: Owner,
  selection: Selection,
  limit: number,
): Promise<number[]> {
  const { query, exact } = selectedRows(db, dialect, owner, selection);
  const ids: number[] = [];
  let after = 0;
  for (;;) {
    const rows = await query.where('id', '>', after).orderBy('id').limit(limit).execute();
    for (const row of rows) if (exact || matchesFilters(subjectOf(toMemory(row)), selection.filters)) ids.push(row.id);
    if (ids.length >= limit || rows.length < limit) return ids.slice(0, limit);
    after = rows[rows.length - 1]!.id;
  }
}

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
