import { sql } from 'kysely';
import { keysetPages, readKeysetPage } from '../../core/paging.js';
import type { Database, Dialect, Executor } from '../../store/database.js';
import { toMemory, unexpired, VIEW_COLUMNS, viewOfValues } from './feed.js';
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
const TENANT_ID = PORTABLE_COLUMNS.indexOf('tenant_id');
const SPEAKER = PORTABLE_COLUMNS.indexOf('speaker');

/** The statement of one keyset page of live memories matching `filter` with ids above `afterId`, in id order. */
export const exportPageQuery = (db: Executor, dialect: Dialect, filter: ExportFilter, afterId: number, limit: number) =>
  exportQuery({ db, dialect }, filter).select(PORTABLE_COLUMNS).where('id', '>', afterId).orderBy('id').limit(limit);

/**
 * One keyset page of live memories matching `filter` with ids above `afterId`, in id order. Each is a new object
 * the caller may extend (the export job adds what it includes).
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
  return rows.map((r) => portableOfValues(Array.isArray(r) ? r : PORTABLE_COLUMNS.map((column) => r[column])));
}

/** The view of a memory with its owner, from its PORTABLE_COLUMNS' values (feed.ts#viewOfValues). */
function portableOfValues(v: readonly unknown[]): PortableMemory {
  const memory = viewOfValues(v) as PortableMemory;
  memory.tenant_id = v[TENANT_ID] as string;
  memory.speaker = v[SPEAKER] as string | null;
  return memory;
}
