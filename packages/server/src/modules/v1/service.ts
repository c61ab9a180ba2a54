import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError } from '../../core/errors.js';
import { monthOf, type Month } from '../../core/period.js';
import type { Database, Executor } from '../../store/database.js';
import { insertTurn, type Owner, type TurnInput } from '../memories/index.js';

/** Monthly turn usage per tenant, counted in the transaction that stores the turn. This module owns tenant_usage. */

export async function turnsUsed(db: Executor, projectId: string, tenantId: string | null, period: Month): Promise<number> {
  const row = await db
    .selectFrom('tenant_usage')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('turns'), eb.lit(0)).as('turns'))
    .where('project_id', '=', projectId)
    .where('period', '=', period.key)
    .$if(tenantId !== null, (qb) => qb.where('tenant_id', '=', tenantId!))
    .executeTakeFirstOrThrow();
  return Number(row.turns);
}

/** Turns stored by all tenants of these projects in a period (billing usage). */
export async function turnsStoredIn(db: Executor, projectIds: string[], period: Month): Promise<number> {
  if (projectIds.length === 0) return 0;
  const row = await db
    .selectFrom('tenant_usage')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('turns'), eb.lit(0)).as('turns'))
    .where('project_id', 'in', projectIds)
    .where('period', '=', period.key)
    .executeTakeFirstOrThrow();
  return Number(row.turns);
}

export async function addTurn(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  turn: TurnInput,
  allowance: number,
  now = new Date(),
): Promise<{ memory: Awaited<ReturnType<typeof insertTurn>>['memory']; created: boolean }> {
  const period = monthOf(now);
  return write(database, ctx, async (trx, effects) => {
    const result = await insertTurn(trx, ctx, effects, database, owner, turn);
    if (!result.created) return result;
    const usage = await trx
      .insertInto('tenant_usage')
      .values({ project_id: owner.projectId, tenant_id: owner.tenantId, period: period.key, turns: 1 })
      .onConflict((oc) => oc.columns(['project_id', 'tenant_id', 'period']).doUpdateSet((eb) => ({ turns: eb('tenant_usage.turns', '+', 1) })))
      .returning('turns')
      .executeTakeFirstOrThrow();
    if (usage.turns > allowance) {
      // Throwing rolls the turn and the count back together.
      const retryAfter = Math.max(1, Math.ceil((period.end.getTime() - now.getTime()) / 1000));
      throw new AppError('quota_exceeded', `The tenant's monthly turn quota (${allowance}) is used up until ${period.end.toISOString()}`, undefined, {
        'Retry-After': String(retryAfter),
      });
    }
    effects.audit('memory.add_turn', { type: 'memory', id: result.memory.id });
    return result;
  });
}
