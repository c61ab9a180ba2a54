import { afterAll, beforeAll, expect, it } from 'vitest';
import { sealAuditChains } from '../../core/audit-log.js';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { columnsHolding } from '../../testing/erasure.js';
import { addMemory, expectError } from '../../testing/memories.js';
import { retrievalConfig, setColumns } from '../../testing/retrieval.js';
import { loadConfig } from '../../config.js';
import type { IndexCache } from '../retrieval/index-cache.js';
import { Receiver } from '../../testing/receiver.js';
import { until } from '../../testing/until.js';
import { verifyAuditChains } from '../audit/index.js';

/**
 * Issue 47.5: after DELETE /memory/user/{end_user_id} no row names the end user (tombstones, end_users, events,
 * deliveries, jobs, exports): what must outlive them names their pseudonym. The same id used again starts a new
 * life whose revisions continue past the earlier one, so indexes kept of the earlier life start over.
 */
forEachDialect('a purged end user’s id is gone from every row', (dialect) => {
  // The engine in process, where a test can look at the index it keeps.
  const t = useTestApp(dialect, () => ({
    webhooks: { allowHosts: ['127.0.0.1'], allowHttp: true, timeoutMs: 2000, retentionDays: 30 },
    ...retrievalConfig({ ...loadConfig({}).retrieval, searchThread: false }),
  }));
  const owner = useOwner(t);
  const receiver = new Receiver();
  beforeAll(() => receiver.start());
  afterAll(() => receiver.stop());
  const purge = (endUser: string) => t.call('DELETE', `/memory/user/${encodeURIComponent(endUser)}`, { endUser: null });

  it('tombstones, end_users, outbox events, deliveries, jobs and export scopes name the pseudonym; the audit chain verifies', async () => {
    const endUser = `zq-person-${dialect}`;
    const res = await t.call('POST', '/org/webhooks', {
      token: owner.token,
      headers: { 'x-project-id': t.projectId },
      body: {
        name: 'all',
        url: `${receiver.url}/all`,
        events: ['memory.created', 'memory.deleted', 'relation.created', 'decision.resolved', 'end_user.purged'],
      },
    });
    expect(res.status, res.text).toBe(201);
    const [lisbon, madrid] = [
      await addMemory(t, 'I live in Lisbon.', { endUser }),
      await addMemory(t, 'I moved to Madrid.', { endUser }),
    ];
    await setColumns(t, lisbon.id, { created_at: '2024-01-01T00:00:00.000Z' });
    await setColumns(t, madrid.id, { created_at: '2024-02-01T00:00:00.000Z' });
    const forgotten = await addMemory(t, 'A note forgotten before the purge', { endUser });
    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [forgotten.id] } })).status).toBe(200);
    const related = await t.call('POST', '/memory/relations', {
      endUser,
      body: { source_id: lisbon.id, target_id: madrid.id, type: 'related' },
    });
    expect(related.status, related.text).toBe(201);
    const decision = (await t.call('GET', '/memory/decisions', { endUser })).body.items[0];
    expect(decision).toBeDefined();
    const resolved = await t.call('POST', `/memory/decision/${decision.id}/resolve`, {
      endUser,
      body: { resolution: 'keep_both' },
    });
    expect(resolved.status, resolved.text).toBe(200);
    expect((await t.call('POST', '/memory/refresh', { endUser })).status).toBe(202);
    const exported = await t.call('POST', '/exports', {
      token: owner.token,
      headers: { 'x-project-id': t.projectId },
      body: { scope: { end_user_id: endUser } },
    });
    expect(exported.status, exported.text).toBe(202);
    await until(
      async () =>
        (
          await t.call('GET', `/exports/${exported.body.id}`, {
            token: owner.token,
            headers: { 'x-project-id': t.projectId },
          })
        ).body.status === 'completed',
      'the export',
    );
    await until(async () => receiver.at('/all').length >= 5, 'the deliveries before the purge');
    expect(await columnsHolding(t.database, endUser)).not.toEqual([]);

    expect((await purge(endUser)).status).toBe(200);
    const pseudonym = t.services.pseudonymize(t.projectId, endUser);
    // The withdrawn export's bytes (blob_chunks on PostgreSQL) go right after the purge commits.
    await until(async () => (await columnsHolding(t.database, endUser)).length === 0, 'no row naming the end user');
    const tombstones = await t.database.db
      .selectFrom('memories')
      .select(['id', 'end_user_id'])
      .where('id', 'in', [lisbon.id, madrid.id, forgotten.id])
      .execute();
    expect(tombstones.map((r) => r.end_user_id)).toEqual([pseudonym, pseudonym, pseudonym]);
    const purged = await until(
      () => receiver.at('/all').find((r) => JSON.parse(r.body).type === 'end_user.purged'),
      'the end_user.purged delivery',
    );
    expect(JSON.parse(purged.body).data).toEqual({ end_user_id: pseudonym, deleted: 2 });
    await sealAuditChains(t.database);
    expect((await verifyAuditChains(t.database, t.organizationId))[0]).toMatchObject({ ok: true, unsealed: 0 });
    expect(await columnsHolding(t.database, endUser)).toEqual([]);
  });

  it('the same id used again after its purge: revisions continue, and a kept index starts over', async () => {
    const endUser = `zq-returning-${dialect}`;
    const query = async (text: string) => {
      const res = await t.call('POST', '/memory/query', { endUser, body: { query: text } });
      expect(res.status, res.text).toBe(200);
      return res.body.memories as Array<{ id: number; text: string }>;
    };
    const revision = async () =>
      (
        await t.database.db
          .selectFrom('end_users')
          .select('revision')
          .where('project_id', '=', t.projectId)
          .where('end_user_id', '=', endUser)
          .executeTakeFirst()
      )?.revision;
    const earlier = [];
    for (let i = 0; i < 5; i++) earlier.push(await addMemory(t, `Earlier life note ${i} about gardening`, { endUser }));
    // This process's indexes (retrieval, intelligence) hold the earlier life.
    expect((await query('gardening')).length).toBe(5);
    expect((await t.call('GET', '/memory/graph', { endUser })).status).toBe(200);
    const before = Number(await revision());
    expect((await purge(endUser)).status).toBe(200);
    expect(await revision()).toBeUndefined();

    const again = await addMemory(t, 'Later life note about gardening', { endUser });
    expect(Number(await revision())).toBeGreaterThan(before);
    const found = await query('gardening');
    expect(found.map((m) => m.id)).toEqual([again.id]);
    for (let i = 0; i < before + 2; i++)
      await t.call('PATCH', `/memory/${again.id}`, { endUser, body: { metadata: { n: i } } });
    expect((await query('gardening')).map((m) => m.id)).toEqual([again.id]);
    // The indexes kept of the earlier life started over: they hold the new life's one memory, not six.
    const cache = t.services.retrieval.cache as IndexCache;
    const held = await cache.forOwner({ projectId: t.projectId, tenantId: '', endUserId: endUser });
    expect(held.index.size).toBe(1);
    const stats = await t.call('GET', '/memory/knowledge/stats', { endUser });
    expect(stats.body.memories).toBe(1);
    // The tombstones of the earlier life stay the pseudonym's; the new life is the id's.
    const list = await t.call('GET', '/memory/export', { endUser });
    expect(list.text).toContain(`${again.id}`);
    expect(list.text).not.toContain('Earlier life');
    expect(await purge(endUser)).toMatchObject({ status: 200, body: { end_user_id: endUser, deleted: 1 } });
    expect(await columnsHolding(t.database, endUser)).toEqual([]);
  });

  it('an end-user id beginning eu~ is refused: the prefix marks pseudonyms', async () => {
    const res = await t.call('POST', '/memory/add', { endUser: 'eu~someone', body: { text: 'x' } });
    expectError(res, 400, 'validation_error', 'X-End-User-ID');
  });
});
