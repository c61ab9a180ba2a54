import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError } from '../../core/errors.js';
import { monthOf, type Month } from '../../core/period.js';
import type { Database, Executor } from '../../store/database.js';
import { insertTurn, insertTurnInOneStatement, type Owner, type TurnCount, type TurnInput } from '../memories/index.js';

/** Monthly turn usage per tenant, counted in the transaction that stores the turn. This module owns tenant_usage. */

export async function turnsUsed(
  db: Executor,
  projectId: string,
  tenantId: string | null,
  period: Month,
): Promise<number> {
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

type StoredTurn = Awaited<ReturnType<typeof insertTurn>>;

/**
 * Stores a turn and counts it against its tenant's monthly allowance (quota_exceeded past it). On PostgreSQL a new
 * turn goes out in one statement shared with the turns sent at the same time; a redelivery, a turn that statement
 * could not rule out as one, and a turn past the allowance take the general path, which decides under the end
 * user's row lock.
 */
export async function addTurn(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  turn: TurnInput,
  allowance: number,
  now = new Date(),
): Promise<StoredTurn> {
  const period = monthOf(now);
  let general = ctx;
  if (database.dialect === 'postgres') {
    // A retry of a request whose turn committed is handed its result (write() would do the same).
    const earlier = ctx.journal?.replay();
    if (earlier) return earlier.value as StoredTurn;
    const landed = await insertTurnInOneStatement(database, ctx, owner, turn, TURN_USAGE, [period.key, allowance]);
    if (typeof landed !== 'string') return { memory: landed, created: true };
    // Left out (a redelivery, or one it could not rule out), its statement found the credentials clock where the
    // request's held key was read: verified. Refused (the quota), it wrote nothing: write() decides, and answers 429.
    if (landed === 'left out') {
      const { heldAt: _, ...verified } = ctx;
      general = verified;
    }
  }
  return write(database, general, async (trx, effects) => {
    const result = await insertTurn(trx, ctx, effects, database, owner, turn);
    if (!result.created) return result;
    const usage = await trx
      .insertInto('tenant_usage')
      .values({ project_id: owner.projectId, tenant_id: owner.tenantId, period: period.key, turns: 1 })
      .onConflict((oc) =>
        oc
          .columns(['project_id', 'tenant_id', 'period'])
          .doUpdateSet((eb) => ({ turns: eb('tenant_usage.turns', '+', 1) })),
      )
      .returning('turns')
      .executeTakeFirstOrThrow();
    if (usage.turns > allowance) {
      // Throwing rolls the turn and the count back together.
      const retryAfter = Math.max(1, Math.ceil((period.end.getTime() - now.getTime()) / 1000));
      throw new AppError(
        'quota_exceeded',
        `The tenant's monthly turn quota (${allowance}) is used up until ${period.end.toISOString()}`,
        undefined,
        {
          'Retry-After': String(retryAfter),
        },
      );
    }
    effects.audit('memory.add_turn', { type: 'memory', id: result.memory.id });
    return result;
  });
}

/**
 * PostgreSQL: the tenant's turn count of a turn stored in one statement (memories' insertTurnInOneStatement), as the
 * general path above counts it: the statement is refused when a tenant's count passes its allowance.
 */
const TURN_USAGE: TurnCount = {
  columns: [
    ['turn_period', 'text'],
    ['turn_allowance', 'bigint'],
  ],
  statement: ({ input, landed }) => `INSERT INTO tenant_usage (project_id, tenant_id, period, turns)
    SELECT ${landed}.project_id, ${landed}.tenant_id, ${input}.turn_period, count(*) FROM ${landed} JOIN ${input} USING (project_id, tenant_id, end_user_id, dedupe_hash)
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (project_id, tenant_id, period) DO UPDATE SET turns = tenant_usage.turns + excluded.turns
    RETURNING project_id, tenant_id, turns`,
  refusedWhen: ({ input, counted }) =>
    `EXISTS (SELECT 1 FROM ${counted} JOIN ${input} USING (project_id, tenant_id) WHERE ${counted}.turns > ${input}.turn_allowance)`,
};
