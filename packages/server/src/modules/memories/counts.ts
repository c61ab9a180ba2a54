import { sql } from 'kysely';
import type { Executor } from '../../store/database.js';
import { unexpired, type Owner } from './feed.js';

/** How many memories: for the status page, turn usage and billing. */

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

/**
 * How many live memories one end user has, counted up to `upTo`: a caller that asks whether there
 * are more than N stops reading there (counting all 300,000 of a large end user took 110-220 ms).
 */
export async function liveMemoryCountOf(db: Executor, owner: Owner, upTo: number): Promise<number> {
  const row = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('memories')
        .select(sql.lit(1).as('live'))
        .where('project_id', '=', owner.projectId)
        .where('tenant_id', '=', owner.tenantId)
        .where('end_user_id', '=', owner.endUserId)
        .where('deleted_at', 'is', null)
        .where(unexpired())
        .limit(upTo)
        .as('m'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n'))
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
