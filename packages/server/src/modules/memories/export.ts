import { sql } from 'kysely';
import { keysetPages, readKeysetPage } from '../../core/paging.js';
import { decodeJson, type Database, type Dialect, type Executor } from '../../store/database.js';
import { toMemory, unexpired, VIEW_COLUMNS } from './feed.js';
import type { MemoryView } from './schemas.js';

/** Reading a project's memories out whole (the CLI's export and the export jobs), a keyset page at a time. */

/**
 * Streams the live memories of a project (optionally one tenant, '' being no tenant, or end user) in id order,
 * a page at a time, so memory use stays flat however many there are.
 */
export async function* exportMemories(
  database: Database,
  filter: { projectId: string; tenantId?: string | null; endUserId?: string | null },
  pageSize = 500,
): AsyncGenerator<MemoryView> {
  const scope = { ...filter, endUserId: filter.endUserId || null };
  const pages = keysetPages(
    database.db,
    (executor, after, limit) => exportPageQuery(executor, database.dialect, scope, after, limit),
    pageSize,
    scope.endUserId === null,
  );
  for await (const page of pages) for (const row of page) yield toMemory(row);
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

function exportQuery({ db, dialect }: { db: Executor; dialect: Dialect }, filter: ExportFilter) {
  return db
    .selectFrom('memories')
    .where('project_id', '=', filter.projectId)
    .where('deleted_at', 'is', null)
    .where(unexpired())
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

/** What an exported memory is made of, and no more: each column read is parsed again for every row. */
const PORTABLE_COLUMNS = [...VIEW_COLUMNS, 'tenant_id', 'speaker'] as const;

/** The statement of one keyset page of live memories matching `filter` with ids above `afterId`, in id order. */
export const exportPageQuery = (db: Executor, dialect: Dialect, filter: ExportFilter, afterId: number, limit: number) =>
  exportQuery({ db, dialect }, filter).select(PORTABLE_COLUMNS).where('id', '>', afterId).orderBy('id').limit(limit);

/**
 * One keyset page of live memories matching `filter` with ids above `afterId`, in id order. Each is a new object
 * the caller may extend (the export job adds what it includes). PostgreSQL sends the rows as arrays.
 */
export async function exportPage(
  database: Database,
  filter: ExportFilter,
  afterId: number,
  limit: number,
): Promise<PortableMemory[]> {
  const rows = await readKeysetPage(
    database.db,
    (executor) => exportPageQuery(executor, database.dialect, filter, afterId, limit),
    filter.endUserId == null,
    'arrays',
  );
  return rows.map((r) =>
    Array.isArray(r) ? portableOfValues(r) : { ...toMemory(r), tenant_id: r.tenant_id, speaker: r.speaker },
  );
}

const at = Object.fromEntries(PORTABLE_COLUMNS.map((column, i) => [column, i])) as Record<
  (typeof PORTABLE_COLUMNS)[number],
  number
>;

/**
 * The memory toMemory (feed.ts#viewOf) makes of a row, with its owner, from the row's PORTABLE_COLUMNS values:
 * the same keys in the same order, so the same JSON.
 */
function portableOfValues(v: unknown[]): PortableMemory {
  const expires = v[at.expires_at] as string | null;
  return {
    id: v[at.id] as number,
    text: v[at.text] as string,
    tags: decodeJson<string[]>(v[at.tags]),
    is_summary: Boolean(v[at.is_summary]),
    source: v[at.source] as string,
    importance: v[at.importance] as number,
    metadata: decodeJson<Record<string, unknown>>(v[at.metadata]),
    client_ref: v[at.client_ref] as string | null,
    session_id: v[at.session_id] as string | null,
    end_user_id: v[at.end_user_id] as string,
    created_at: v[at.created_at] as string,
    updated_at: v[at.updated_at] as string,
    superseded_by: v[at.superseded_by] as number | null,
    expires_at: expires === null ? null : new Date(expires).toISOString(),
    tenant_id: v[at.tenant_id] as string,
    speaker: v[at.speaker] as string | null,
  };
}
