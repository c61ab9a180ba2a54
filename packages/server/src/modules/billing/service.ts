import { sql } from 'kysely';
import { write } from '../../core/unit-of-work.js';
import { invalid, notFound } from '../../http/errors.js';
import type { Database, Executor } from '../../store/database.js';
import { liveMemoryCount } from '../memories/service.js';
import { periodOf, turnsStoredIn } from '../tenant/service.js';

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

/** The calendar month (UTC) containing `at`. */
export function currentPeriod(at = new Date()): { start: string; end: string } {
  const start = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  const end = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
  return { start: start.toISOString(), end: end.toISOString() };
}

export async function planOf(db: Executor, organizationId: string): Promise<PlanName> {
  const row = await db.selectFrom('organization_plans').select('plan').where('organization_id', '=', organizationId).executeTakeFirst();
  return row && isPlan(row.plan) ? row.plan : DEFAULT_PLAN;
}

/** Operator action (CLI): sets the plan, with an audit row by the system actor. */
export async function setPlan(database: Database, organizationId: string, plan: string): Promise<void> {
  if (!isPlan(plan)) throw invalid('plan', `Unknown plan ${plan}; one of ${Object.keys(PLANS).join(', ')}`);
  const org = await database.db.selectFrom('organizations').select('id').where('id', '=', organizationId).executeTakeFirst();
  if (!org) throw notFound('Organization');
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

async function projectIds(db: Executor, organizationId: string, liveOnly: boolean): Promise<string[]> {
  let query = db.selectFrom('projects').select('id').where('organization_id', '=', organizationId);
  if (liveOnly) query = query.where('deleted_at', 'is', null);
  return (await query.execute()).map((p) => p.id);
}

export async function currentPlan(db: Executor, organizationId: string, at = new Date()) {
  const period = currentPeriod(at);
  const plan = await planOf(db, organizationId);
  // Live memories count in live projects; turns stored this month count even if since deleted.
  const [live, all] = await Promise.all([projectIds(db, organizationId, true), projectIds(db, organizationId, false)]);
  const [memories, turns, requests] = await Promise.all([
    liveMemoryCount(db, live),
    turnsStoredIn(db, all, periodOf(at)),
    requestsIn(db, organizationId, period.start),
  ]);
  return {
    organization_id: organizationId,
    plan,
    allowances: PLANS[plan],
    usage: { memories, monthly_turns: turns, requests },
    period_start: period.start,
    period_end: period.end,
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
  constructor(private readonly db: Executor, intervalMs = 5_000) {
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
    const periodStart = currentPeriod(at).start;
    for (const [organizationId, n] of batch) {
      await this.db
        .insertInto('usage_counters')
        .values({ organization_id: organizationId, period_start: periodStart, requests: n })
        .onConflict((oc) => oc.columns(['organization_id', 'period_start']).doUpdateSet({ requests: sql`usage_counters.requests + ${n}` }))
        .execute();
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
