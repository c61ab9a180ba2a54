import { expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { monthOf } from '../../core/period.js';
import { monthlyTurnLimit, setPlan } from './service.js';

forEachDialect('billing', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);

  it('reports the plan, allowances and this month’s usage', async () => {
    await t.call('POST', '/memory/add', { body: { text: 'Counts as a memory' } });
    const turn = { tenant_id: 'acme', user_id: 'u-1', text: 'Counts as a turn', speaker: 'user' };
    expect((await t.call('POST', '/v1/memory/add_turn', { body: turn, headers: { 'x-tenant-id': 'acme' }, endUser: null })).status).toBe(201);
    // A redelivery of the same turn is not a new turn.
    expect((await t.call('POST', '/v1/memory/add_turn', { body: turn, headers: { 'x-tenant-id': 'acme' }, endUser: null })).status).toBe(200);
    const res = await t.call('GET', '/org/billing/current-plan', { token: owner.token });
    expect(res.status).toBe(200);
    const period = monthOf(new Date());
    expect(res.body).toMatchObject({
      organization_id: t.organizationId, plan: 'self_hosted',
      allowances: { memories: null, monthly_turns: null, requests: null },
      usage: { memories: 2, monthly_turns: 1 },
      period_start: period.start.toISOString(), period_end: period.end.toISOString(),
    });
    // The key's add and two turns; sign-in is not an authenticated request, and this one is counted once answered.
    expect(res.body.usage.requests).toBe(3);
  });

  it('takes a plan set by the operator through the CLI, and gives the /v1 plane its turn allowance', async () => {
    const run = await t.cli('org', 'set-plan', t.organizationId, 'pro');
    expect(run).toMatchObject({ code: 0, stdout: expect.stringContaining('plan set to pro') });
    expect((await t.cli('org', 'set-plan', t.organizationId, 'platinum')).code).toBe(1);
    const res = await t.call('GET', '/org/billing/current-plan', { token: owner.token });
    expect(res.body).toMatchObject({ plan: 'pro', allowances: { memories: 1_000_000, monthly_turns: 500_000, requests: 10_000_000 } });
    expect(res.body.usage.requests).toBeGreaterThan(0);
    expect(await monthlyTurnLimit(t.database.db, t.organizationId)).toBe(500_000);
    await expect(setPlan(t.database, t.organizationId, 'platinum')).rejects.toThrow(/Unknown plan/);
    const audit = await t.database.db.selectFrom('audit_log').selectAll().where('action', '=', 'billing.plan_set').executeTakeFirstOrThrow();
    expect(audit).toMatchObject({ actor_type: 'system', result: 'pro', target_id: t.organizationId });
  });
});
