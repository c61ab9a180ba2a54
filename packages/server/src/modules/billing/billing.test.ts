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
    expect(
      (await t.call('POST', '/v1/memory/add_turn', { body: turn, headers: { 'x-tenant-id': 'acme' }, endUser: null }))
        .status,
    ).toBe(201);
    // A redelivery of the same turn is not a new turn.
    expect(
      (await t.call('POST', '/v1/memory/add_turn', { body: turn, headers: { 'x-tenant-id': 'acme' }, endUser: null }))
        .status,
    ).toBe(200);
    const res = await t.call('GET', '/org/billing/current-plan', { token: owner.token });
    expect(res.status).toBe(200);
    // The server's month (its clock at the request), not the test's: a run may cross a month boundary.
    const period = monthOf(new Date(res.body.period_start));
    expect(period.start.getTime()).toBeLessThanOrEqual(Date.now());
    expect(res.body).toMatchObject({
      organization_id: t.organizationId,
      plan: 'self_hosted',
      allowances: { memories: null, monthly_turns: null, requests: null },
      usage: { memories: 2, monthly_turns: 1 },
      period_start: period.start.toISOString(),
      period_end: period.end.toISOString(),
    });
    // The key's add and two turns; sign-in is not an authenticated request, and this one is counted once answered.
    expect(res.body.usage.requests).toBe(3);
  });

  it('takes a plan set by the operator through the CLI, and gives the /v1 plane its turn allowance', async () => {
    const run = await t.cli('org', 'set-plan', t.organizationId, 'pro');
    expect(run).toMatchObject({ code: 0, stdout: expect.stringContaining('plan set to pro') });
    expect((await t.cli('org', 'set-plan', t.organizationId, 'platinum')).code).toBe(1);
    const res = await t.call('GET', '/org/billing/current-plan', { token: owner.token });
    expect(res.body).toMatchObject({
      plan: 'pro',
      allowances: { memories: 1_000_000, monthly_turns: 500_000, requests: 10_000_000 },
    });
    expect(res.body.usage.requests).toBeGreaterThan(0);
    expect(await monthlyTurnLimit(t.database.db, t.organizationId)).toBe(500_000);
    await expect(setPlan(t.database, t.organizationId, 'platinum')).rejects.toThrow(/Unknown plan/);
    const audit = await t.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'billing.plan_set')
      .executeTakeFirstOrThrow();
    expect(audit).toMatchObject({ actor_type: 'system', result: 'pro', target_id: t.organizationId });
  });

  it("bounds /v1 turns by the monthly allowance of the organization's plan, end to end", async () => {
    await setPlan(t.database, t.organizationId, 'free');
    const v1 = { endUser: null, headers: { 'x-tenant-id': 'quota-t' } } as const;
    const status = await t.call('GET', '/v1/memory/status', v1);
    expect(status.status, status.text).toBe(200);
    expect(status.body.quota).toMatchObject({ monthly_turns: 5_000, used: 0, remaining: 5_000 });
    // The period as the server sees it; all but one turn of it already used.
    const period = String(status.body.quota.period_start).slice(0, 7);
    await t.database.db
      .insertInto('tenant_usage')
      .values({ project_id: t.projectId, tenant_id: 'quota-t', period, turns: 4_999 })
      .execute();
    const turn = (text: string) =>
      t.call('POST', '/v1/memory/add_turn', {
        ...v1,
        body: { tenant_id: 'quota-t', user_id: 'u-1', text, speaker: 'user' },
      });
    expect((await turn('the last turn of the month')).status).toBe(201);
    const refused = await turn('one too many');
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.error.code).toBe('quota_exceeded');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const stored = await t.database.db.selectFrom('memories').select('id').where('text', '=', 'one too many').execute();
    expect(stored).toEqual([]);
    expect((await t.call('GET', '/v1/memory/status', v1)).body.quota).toMatchObject({
      monthly_turns: 5_000,
      used: 5_000,
      remaining: 0,
    });
    // Another plan, another allowance, at once.
    await setPlan(t.database, t.organizationId, 'starter');
    expect((await turn('one too many')).status).toBe(201);
  });
});
