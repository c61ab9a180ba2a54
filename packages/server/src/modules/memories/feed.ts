import { CompiledQuery, sql, type Compilable, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { keysetPages } from '../../core/paging.js';
import { decodeJson, nowIso, type Database, type Dialect, type Executor } from '../../store/database.js';
import { ROWS_AS_ARRAYS, timestamptzToIso } from '../../store/postgres-connections.js';
import { prepared } from '../../store/prepared.js';
import type { DB, MemoriesTable } from '../../store/schema.js';
import type { MemoryView } from './schemas.js';

/**
 * What every read of memories is built from (whose rows, the view of a row, not expired) and the change feed
 * the retrieval indexes follow (each end user's revision and the rows changed since a sequence number). Reads
 * by id are in reads.ts, exports in export.ts, counts in counts.ts, lists in list.ts; writes in a file per
 * operation (add.ts, update.ts, erase.ts, …).
 */

/** Whose memories: every query of this module is built from one. */
export interface Owner {
  projectId: string;
  tenantId: string;
  endUserId: string;
}

export type MemoryRow = Selectable<MemoriesTable>;

/** The columns a memory's view is built from, in the order viewOfValues reads them. */
export const VIEW_COLUMNS = [
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
type ViewColumn = (typeof VIEW_COLUMNS)[number];

/** Where each of VIEW_COLUMNS stands in a row read as an array. */
const at = Object.fromEntries(VIEW_COLUMNS.map((column, i) => [column, i])) as Record<ViewColumn, number>;

/**
 * The view of a stored memory from its VIEW_COLUMNS' values in that order (a row read as an array, as an export
 * page is; values after them are not read): the one mapping of a row to a memory, which every read goes through.
 */
export function viewOfValues(v: readonly unknown[]): MemoryView {
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
  };
}

export function toMemory(row: Pick<MemoryRow, ViewColumn>): MemoryView {
  return viewOf(row, row.id);
}

/** The view of a row stored under `id` (a row built before its insert gave it one). */
export function viewOf(row: Omit<Pick<MemoryRow, ViewColumn>, 'id'>, id: number): MemoryView {
  return viewOfValues(VIEW_COLUMNS.map((column) => (column === 'id' ? id : row[column])));
}

/**
 * Not expired: an expired memory is gone from every read at once, before the expiry sweep erases it
 * (erase.ts#forgetExpired). A condition on `memories` for the queries of this module.
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

/** The columns of liveOwnerPage's rows, in order (a cold index reads every row of its owner: no column it does not use). */
export const LIVE_PAGE_COLUMNS = [
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
  'seq',
  'superseded_by',
] as const;

/** The columns an index reads of changed rows. */
const INDEXED_COLUMNS = [...LIVE_PAGE_COLUMNS, 'end_user_id', 'deleted_at'] as const;

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
  const rows = await ownerMemories(db, owner)
    .select(INDEXED_COLUMNS)
    .where('seq', '>', seq)
    .$if(seq === 0, (qb) => qb.where('deleted_at', 'is', null))
    // Every live row (a cold index, 300,000 of one end user) comes in the index's (seq) order and is put in id
    // order here: SQLite sorted whole rows in a temporary B-tree first, ~0.5 s of 300,000's ~1.6 s read.
    .$if(seq > 0, (qb) => qb.orderBy('id'))
    .execute();
  if (seq === 0) inIdOrder(rows);
  return rows.map(toIndexed);
}

/**
 * The ids of the owner's memories (forgotten ones among them), ascending, from the (owner, seq) index alone: what a
 * cold index reads first, then its rows a page at a time by id (liveOwnerPage), each page indexed and dropped
 * before the next is read (300,000 rows read at once lived through the whole build).
 */
export async function liveOwnerIds(db: Executor, owner: Owner): Promise<Float64Array> {
  const rows = await rowsAsArrays(db, ownerMemories(db, owner).select('id').where('seq', '>', 0));
  const ids = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) ids[i] = rows[i]![0] as number;
  // (numerically: a typed array's sort; 300,000 ids as row objects, mapped and sorted by a comparator took ~3x)
  return ids.sort();
}

/** A statement's rows as arrays of the selected columns in order (ROWS_AS_ARRAYS; else the objects' values in order). */
async function rowsAsArrays(db: Executor, query: Compilable<unknown>): Promise<unknown[][]> {
  const { sql: text, parameters } = query.compile();
  const { rows } = await db.executeQuery(CompiledQuery.raw(`${ROWS_AS_ARRAYS}${text}`, [...parameters]));
  return rows.length > 0 && !Array.isArray(rows[0])
    ? rows.map((row) => Object.values(row as object))
    : (rows as unknown[][]);
}

/**
 * The owner's live memories among `ids` (ascending), in id order, each as the values of LIVE_PAGE_COLUMNS in order
 * (tags and metadata as JSON text: as stored on SQLite, as JSON.stringify gives the decoded value on PostgreSQL;
 * is_summary 0/1 or a boolean), for a cold index's page (retrieval/build-rows.ts): no object a row. Read by id, the
 * owner checked by a column of the select list (SQLite, without statistics, would read them through the owner's
 * index, every row of the owner a page, were it in the WHERE clause; its three strings were read for a check in JS).
 */
export async function liveOwnerPage(
  db: Executor,
  dialect: Dialect,
  owner: Owner,
  ids: readonly number[],
): Promise<unknown[][]> {
  const { projectId, tenantId, endUserId } = owner;
  const mine = sql<boolean>`(project_id = ${projectId} AND tenant_id = ${tenantId} AND end_user_id = ${endUserId})`;
  const rows =
    dialect === 'postgres'
      ? await postgresPageRows(db, mine, ids)
      : await rowsAsArrays(
          db,
          db
            .selectFrom('memories')
            .select([...LIVE_PAGE_COLUMNS, mine.as('mine')])
            .where('id', 'in', ids)
            .where('deleted_at', 'is', null),
        );
  const [MINE, SEQ] = [LIVE_PAGE_COLUMNS.length, LIVE_PAGE_COLUMNS.indexOf('seq')];
  const live = rows.filter((values) => values[MINE] && (values[SEQ] as number) > 0);
  for (let i = 1; i < live.length; i++)
    if ((live[i - 1]![0] as number) > (live[i]![0] as number))
      return live.sort((a, b) => (a[0] as number) - (b[0] as number));
  return live;
}

/**
 * liveOwnerPage's rows on PostgreSQL, with its `mine` column, each as one JSON text the database builds (a value a
 * column, the text escaped) that JSON.parse reads: node-pg decoded the 14 columns of a page's 2,000 rows value by
 * value (~1.8 s of a 300,000-row build, bench/README.md, session 18). A row a text, not a page: a string over 128 KB
 * (V8's large objects) took ~20 times as long a byte to decode. The values are those node-pg gives (postgresTypes):
 * numbers, booleans, timestamps as ISO text; tags and metadata as JSON.stringify writes them.
 */
async function postgresPageRows(db: Executor, mine: RawBuilder<boolean>, ids: readonly number[]): Promise<unknown[][]> {
  const query = sql`SELECT json_build_array(
      id, text, tags::text, source, importance, metadata::text, session_id, speaker, is_summary,
      created_at::text, updated_at::text, seq, superseded_by, ${mine})::text
    FROM memories WHERE id = ANY(${ids}::bigint[]) AND deleted_at IS NULL`.compile(db);
  const { rows } = await db.executeQuery(CompiledQuery.raw(`${ROWS_AS_ARRAYS}${query.sql}`, [...query.parameters]));
  const json = new Map<string, string>();
  // jsonb's text (its own spacing) as the decoded value's JSON.stringify; empty ones (most) are the same text.
  const asStringified = (text: string) => {
    if (text === '[]' || text === '{}') return text;
    let same = json.get(text);
    if (same === undefined) json.set(text, (same = JSON.stringify(JSON.parse(text))));
    return same;
  };
  // Rows written together share their times: each distinct one rearranged once.
  let [lastTime, lastIso] = ['', ''];
  const iso = (text: string) => (text === lastTime ? lastIso : (lastIso = timestamptzToIso((lastTime = text))));
  const values = new Array<unknown[]>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const read = rows[i] as unknown[] | Record<string, unknown>;
    const row = JSON.parse((Array.isArray(read) ? read[0] : Object.values(read)[0]) as string) as unknown[];
    row[AT.tags] = asStringified(row[AT.tags] as string);
    row[AT.metadata] = asStringified(row[AT.metadata] as string);
    // JSON has no NaN or infinities: json_build_array writes them as strings, which node-pg's parseFloat reads.
    if (typeof row[AT.importance] !== 'number') row[AT.importance] = Number(row[AT.importance]);
    row[AT.created_at] = iso(row[AT.created_at] as string);
    row[AT.updated_at] = iso(row[AT.updated_at] as string);
    values[i] = row;
  }
  return values;
}
/** Where each of LIVE_PAGE_COLUMNS stands in a page's row. */
const AT = Object.fromEntries(LIVE_PAGE_COLUMNS.map((column, i) => [column, i])) as Record<
  (typeof LIVE_PAGE_COLUMNS)[number],
  number
>;

/** The owner's rows of the memories table, to select from. */
const ownerMemories = (db: Executor, owner: Owner) =>
  db
    .selectFrom('memories')
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId);

/** Rows sorted by id, in place; rows written in id order (as most are: seq grows with id) are left as they are. */
function inIdOrder<T extends { id: number }>(rows: T[]): void {
  for (let i = 1; i < rows.length; i++) {
    if (rows[i - 1]!.id > rows[i]!.id) {
      rows.sort((a, b) => a.id - b.id);
      return;
    }
  }
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
  db: Kysely<DB>,
  projectId: string,
  tenantId: string | null,
): AsyncGenerator<IndexedMemory> {
  const pages = keysetPages(
    db,
    (executor, after, limit) => liveProjectPageQuery(executor, projectId, tenantId, after, limit),
    1000,
    true,
  );
  for await (const page of pages) for (const row of page) yield toIndexed(row);
}

/** The statement of one page of liveProjectMemories: live memories with ids above `afterId`, in id order. */
export const liveProjectPageQuery = (
  db: Executor,
  projectId: string,
  tenantId: string | null,
  afterId: number,
  limit: number,
) =>
  db
    .selectFrom('memories')
    .select(INDEXED_COLUMNS)
    .where('project_id', '=', projectId)
    .$if(tenantId !== null, (qb) => qb.where('tenant_id', '=', tenantId!))
    .where('deleted_at', 'is', null)
    .where('id', '>', afterId)
    .orderBy('id')
    .limit(limit);
