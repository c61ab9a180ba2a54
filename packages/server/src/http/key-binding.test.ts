import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../testing/harness.js';
import { addMemory, countRows, expectError } from '../testing/memories.js';
import { waitForJob } from '../testing/retrieval.js';

/** Any narrowing an API key carries (tenant, end user) bounds every operation the key can call. */
forEachDialect('an API key bound to an end user or a tenant', (dialect) => {
  const t = useTestApp(dialect);

  const v1 = (key: string, method: string, url: string, body?: unknown) =>
    t.call(method, url, {
      key,
      endUser: null,
      headers: { 'X-Tenant-ID': 'acme' },
      ...(body !== undefined ? { body } : {}),
    });
  const turn = (user: string, text: string) =>
    t.call('POST', '/v1/memory/add_turn', {
      endUser: null,
      headers: { 'X-Tenant-ID': 'acme' },
      body: { tenant_id: 'acme', user_id: user, text, speaker: 'user' },
    });

  it('keeps an end-user-bound key to its end user on every /v1 operation', async () => {
    expect((await turn('alice', 'alice likes tea')).status).toBe(201);
    expect((await turn('bob', 'bob likes coffee')).status).toBe(201);
    await addMemory(t, 'a memory of no tenant', { endUser: 'alice' });
    const alice = await t.newKey({ endUserId: 'alice' });

    expectError(await v1(alice.key, 'GET', '/v1/memory/memories?user_id=bob'), 404, 'not_found');
    const own = await v1(alice.key, 'GET', '/v1/memory/memories');
    expect(own.status, own.text).toBe(200);
    expect(own.body.items.length).toBeGreaterThan(0);
    expect(own.body.items.map((m: { text: string }) => m.text)).toEqual(['alice likes tea']);
    expect(own.body.total).toBe(1);

    expectError(
      await v1(alice.key, 'POST', '/v1/memory/recall', { tenant_id: 'acme', user_id: 'bob', query: 'coffee' }),
      404,
      'not_found',
    );
    const recalled = await v1(alice.key, 'POST', '/v1/memory/recall', {
      tenant_id: 'acme',
      user_id: 'alice',
      query: 'tea',
    });
    expect(recalled.status, recalled.text).toBe(200);
    expect(recalled.body.memories.map((m: { text: string }) => m.text)).toEqual(['alice likes tea']);

    const before = await countRows(t, 'memories');
    expectError(
      await v1(alice.key, 'POST', '/v1/memory/add_turn', {
        tenant_id: 'acme',
        user_id: 'bob',
        text: 'x',
        speaker: 'u',
      }),
      404,
      'not_found',
    );
    expect(await countRows(t, 'memories')).toBe(before);

    const status = await v1(alice.key, 'GET', '/v1/memory/status');
    expect(status.status, status.text).toBe(200);
    expect(status.body.counts).toMatchObject({ tenants: 1, users: 1, memories: 1, turns_this_period: 1 });

    // Its turns this period are the end user's own (a redelivery stores none); the quota stays the tenant's.
    expect((await turn('alice', 'alice likes green tea')).status).toBe(201);
    expect((await turn('bob', 'bob likes espresso')).status).toBe(201);
    const tenantWide = await v1((await t.newKey({ tenantId: 'acme' })).key, 'GET', '/v1/memory/status');
    const again = await v1(alice.key, 'GET', '/v1/memory/status');
    expect(again.body.counts).toMatchObject({ users: 1, memories: 2, turns_this_period: 2 });
    expect(again.body.quota.used).toBe(tenantWide.body.quota.used);
    expect(tenantWide.body.counts.turns_this_period).toBe(tenantWide.body.quota.used);
    expect(tenantWide.body.counts.turns_this_period).toBeGreaterThanOrEqual(4);
  });

  it("answers 404 for another end user's refresh job and shows a bound key only its own audit rows", async () => {
    const bobJob = await t.call('POST', '/memory/refresh', { endUser: 'bob' });
    expect(bobJob.status, bobJob.text).toBe(202);
    await waitForJob(t, bobJob.body.id, { endUser: 'bob' });
    const alice = await t.newKey({ endUserId: 'alice', scopes: ['memories:read', 'memories:write', 'audit:read'] });
    expectError(
      await t.call('GET', `/memory/refresh/${bobJob.body.id}`, { key: alice.key, endUser: null }),
      404,
      'not_found',
    );
    const own = await t.call('POST', '/memory/refresh', { key: alice.key, endUser: null });
    expect(own.status, own.text).toBe(202);
    expect((await t.call('GET', `/memory/refresh/${own.body.id}`, { key: alice.key, endUser: null })).status).toBe(200);
    // A project-wide job is no more alice's than bob's.
    const project = await t.call('POST', '/memory/refresh', { endUser: null });
    expectError(
      await t.call('GET', `/memory/refresh/${project.body.id}`, { key: alice.key, endUser: null }),
      404,
      'not_found',
    );
    const tenantKey = await t.newKey({ tenantId: 'acme' });
    expectError(
      await t.call('GET', `/memory/refresh/${bobJob.body.id}`, { key: tenantKey.key, endUser: null }),
      404,
      'not_found',
    );

    const audit = await t.call('GET', '/admin/team/audit-logs?limit=100', { key: alice.key, endUser: null });
    expect(audit.status, audit.text).toBe(200);
    expect(audit.body.items.length).toBeGreaterThan(0);
    expect(
      audit.body.items.every(
        (row: { actor_type: string; actor_id: number }) => row.actor_type === 'api_key' && row.actor_id === alice.id,
      ),
    ).toBe(true);
    // The unbound key sees the other rows, so the narrowing above was not an empty log.
    const all = await t.call('GET', '/admin/team/audit-logs?limit=100', {
      key: (await t.newKey({ scopes: ['audit:read'] })).key,
      endUser: null,
    });
    expect(all.body.items.some((row: { actor_id: number }) => row.actor_id !== alice.id)).toBe(true);
  });
});
