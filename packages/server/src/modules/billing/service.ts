import { sql } from 'kysely';
import { write } from '../../core/unit-of-work.js';
import { invalid, notFound } from '../../core/errors.js';
import type { Database, Executor } from '../../store/database.js';
import { liveMemoryCount } from '../memories/index.js';
import { organizationExists, projectIdsOf } from '../org/index.js';
import { turnsStoredIn } from '../v1/index.js';
import { monthOf } from '../../core/period.js';

/**
 * Read-only billing: the plan an operator set for an organization (`engram org set-plan`), its
 * allowances, and usage in the current calendar month (UTC). This module owns organization_plans
 * and usage_counters.
 */

export interface Allowances {
  /** Live memories across the organization; null: unlimited. */
  memories: number | null;
  /** /v1 conversation turns stored per calendar month; the quota the tenant plane enforces. */
  monthly_turns: number | null;
  /** Authenticated API requests per calendar month. */
  requests: number | null;
}

export const PLANS = {
  self_hosted: { memories: null, monthly_turns: null, requests: null },
  free: { memories: 10_000, monthly_turns: 5_000, requests: 100_000 },
  starter: { memories: 100_000, monthly_turns: 50_000, requests: 1_000_000 },
  pro: { memories: 1_000_000, monthly_turns: 500_000, requests: 10_000_000 },
  enterprise: { memories: null, monthly_turns: null, requests: null },
} as const satisfies Record<string, Allowances>;
export type PlanName = keyof typeof PLANS;
/** Without an operator's choice, nothing is limited: the service runs for its own operator. */
export const DEFAULT_PLAN: PlanName = 'self_hosted';

export const isPlan = (name: string): name is PlanName => Object.hasOwn(PLANS, name);

export async function planOf(db: Executor, organizationId: string): Promise<PlanName> {
  const row = await db
    .selectFrom('organization_plans')
    .select('plan')
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return row && isPlan(row.plan) ? row.plan : DEFAULT_PLAN;
}

/** Operator action (CLI): sets the plan, with an audit row by the system actor. */
export async function setPlan(database: Database, organizationId: string, plan: string): Promise<void> {
  if (!isPlan(plan)) throw invalid('plan', `Unknown plan ${plan}; one of ${Object.keys(PLANS).join(', ')}`);
  if (!(await organizationExists(database.db, organizationId))) throw notFound('Organization');
  const ctx = { actor: { type: 'system' as const, id: null }, organizationId, projectId: null, requestId: null };
  await write(database, ctx, async (trx, effects) => {
    await trx
      .insertInto('organization_plans')
      .values({ organization_id: organizationId, plan, updated_at: effects.now })
      .onConflict((oc) => oc.column('organization_id').doUpdateSet({ plan, updated_at: effects.now }))
      .execute();
    effects.audit('billing.plan_set', { type: 'organization', id: organizationId }, plan);
  });
}

async function requestsIn(db: Executor, organizationId: string, periodStart: string): Promise<number> {
  const row = await db
    .selectFrom('usage_counters')
    .select('requests')
    .where('organization_id', '=', organizationId)
    .where('period_start', '=', periodStart)
    .executeTakeFirst();
  return row ? Number(row.requests) : 0;
}

export async function currentPlan(db: Executor, organizationId: string, at = new Date()) {
  const period = monthOf(at);
  const plan = await planOf(db, organizationId);
  // Live memories count in live projects; turns stored this month count even if since deleted.
  const [live, all] = await Promise.all([
    projectIdsOf(db, organizationId, 'live'),
    projectIdsOf(db, organizationId, 'all'),
  ]);
  const [memories, turns, requests] = await Promise.all([
    liveMemoryCount(db, live),
    turnsStoredIn(db, all, period),
    requestsIn(db, organizationId, period.start.toISOString()),
  ]);
  return {
    organization_id: organizationId,
    plan,
    allowances: PLANS[plan],
    usage: { memories, monthly_turns: turns, requests },
    period_start: period.start.toISOString(),
    period_end: period.end.toISOString(),
  };
}

/** The per-tenant monthly turn limit of the organization's plan (null: the plan sets none). */
export async function monthlyTurnLimit(db: Executor, organizationId: string): Promise<number | null> {
  return PLANS[await planOf(db, organizationId)].monthly_turns;
}

/**
 * Counts authenticated requests per organization in memory and adds them to usage_counters in
 * batches, so that counting costs no write on the request path.
 */
export class RequestCounter {
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout;
  constructor(
    private readonly db: Executor,
    intervalMs = 5_000,
  ) {
    this.timer = setInterval(() => void this.flush().catch(() => {}), intervalMs);
    this.timer.unref();
  }

  count(organizationId: string): void {
    this.pending.set(organizationId, (this.pending.get(organizationId) ?? 0) + 1);
  }

  async flush(at = new Date()): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const periodStart = monthOf(at).start.toISOString();
    for (const [organizationId, n] of batch) {
      await this.db
        .insertInto('usage_counters')
        .values({ organization_id: organizationId, period_start: periodStart, requests: n })
        .onConflict((oc) =>
          oc
            .columns(['organization_id', 'period_start'])
            .doUpdateSet({ requests: sql`usage_counters.requests + ${n}` }),
        )
        .execute();
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
