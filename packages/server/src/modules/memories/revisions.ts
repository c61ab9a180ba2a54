import { sql, type QueryCreator } from 'kysely';
import { jsonRows, sqlLiteral, type Database, type Executor } from '../../store/database.js';
import { prepared } from '../../store/prepared.js';
import type { DB } from '../../store/schema.js';
import { RETIRED_REVISIONS, type Owner } from './feed.js';

/**
 * The end user's revision: every change to memories bumps it and stamps its rows with it, which is what
 * the change feed (feed.ts) and the retrieval indexes follow; its row lock serialises one end user's writes.
 */

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
 * nextSeq for several owners, in the order given, in one statement (an import's batch of 1,000 end
 * users was 1,000 upserts on SQLite), locking their rows in the grouped add's order (ORDER BY 1, 2, 3),
 * so two writes of overlapping owners never each hold one the other waits for (a deadlock).
 */
export async function nextSeqs(database: Database, trx: Executor, owners: Owner[], now: string): Promise<number[]> {
  const rows = owners.map((o) => ({ project_id: o.projectId, tenant_id: o.tenantId, end_user_id: o.endUserId }));
  const at = database.dialect === 'postgres' ? sql`${now}::timestamptz` : sql`${now}`;
  const { rows: bumped } = await sql<{ project_id: string; tenant_id: string; end_user_id: string; revision: number }>`
    INSERT INTO end_users (project_id, tenant_id, end_user_id, revision, created_at, updated_at)
    SELECT o.project_id, o.tenant_id, o.end_user_id, 1 + ${sql.raw(retiredRevisionsOf('o.project_id', 'o.tenant_id'))}, ${at}, ${at}
    FROM ${jsonRows(database.dialect, 'o', OWNER_COLUMNS, rows)} WHERE true ORDER BY 1, 2, 3
    ON CONFLICT (project_id, tenant_id, end_user_id) DO UPDATE SET revision = end_users.revision + 1, updated_at = excluded.updated_at
    RETURNING project_id, tenant_id, end_user_id, revision`.execute(trx);
  const key = (r: { project_id: string; tenant_id: string; end_user_id: string }) =>
    JSON.stringify([r.project_id, r.tenant_id, r.end_user_id]);
  const revisions = new Map(bumped.map((r) => [key(r), Number(r.revision)]));
  return rows.map((r) => revisions.get(key(r))!);
}

const OWNER_COLUMNS = [
  ['project_id', 'text'],
  ['tenant_id', 'text'],
  ['end_user_id', 'text'],
] as const;

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
export function revisionBump(
  trx: QueryCreator<DB>,
  owner: Pick<Owner, 'projectId' | 'tenantId' | 'endUserId'>,
  now: string,
) {
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

/**
 * The change sequence of the rows an insert writes: one taken before it (nextSeq), or, on PostgreSQL,
 * `bump`: the insert bumps the owner's revision in a CTE and its rows take the new one, the round
 * trip of a statement of its own saved (the lock on the owner's revision row is taken before any row
 * is inserted, as nextSeq takes it).
 */
export type RowsSeq = number | { bump: Owner; now: string };
/** The change sequence for an insert that looks nothing up first: bumped by the insert itself on PostgreSQL. */
export const rowsSeq = async (database: Database, trx: Executor, owner: Owner, now: string): Promise<RowsSeq> =>
  database.dialect === 'postgres' ? { bump: owner, now } : nextSeq(trx, owner, now);
/** The seq a row is built with: the one taken, or a stand-in the bumping insert does not send. */
export const seqOf = (seq: RowsSeq) => (typeof seq === 'number' ? seq : 0);

/** A grouped statement's bump of each owner's revision, once per statement, owners in one order (both locks and deadlocks follow it). */
export const REVISION_STEP = `INSERT INTO end_users (project_id, tenant_id, end_user_id, revision, created_at, updated_at)
  SELECT project_id, tenant_id, end_user_id, 1 + ${retiredRevisionsOf('o.project_id', 'o.tenant_id')}, max(ctx_now), max(ctx_now)
  FROM input o GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (project_id, tenant_id, end_user_id) DO UPDATE SET revision = end_users.revision + 1, updated_at = excluded.updated_at
  RETURNING project_id, tenant_id, end_user_id, revision`;
