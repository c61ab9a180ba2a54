import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { connectorsClient, startSite, type LocalSite } from '../../testing/connectors.js';
import { expectError } from '../../testing/memories.js';
import { JobHandlers } from '../../jobs/runner.js';
import { EraseHooks } from '../memories/index.js';
import { endUserPseudonyms } from '../../core/pseudonyms.js';
import { purgeFinishedSyncs, queueDueSyncs } from './syncs.js';

const HTML = 'text/html';

forEachDialect('connector framework: connections, configuration, catalog, integrations', (dialect) => {
  let site: LocalSite;
  beforeAll(async () => {
    site = await startSite({
      '/': [
        200,
        HTML,
        '<html><body><h1>Docs</h1><p>The API rate limit is one hundred requests a minute.</p><a href="/faq">FAQ</a></body></html>',
      ],
      '/faq': [200, HTML, '<html><body><h1>FAQ</h1><p>Refunds take five working days.</p></body></html>'],
    });
  });
  afterAll(() => site?.close());
  const t = useTestApp(dialect, { outbound: { allow: ['127.0.0.1'] } });
  const owner = useOwner(t);
  const config = () => ({ start_urls: [`${site.base}/`], delay_ms: 0 });

  it('serves the provider catalog with JSON Schemas and capabilities', async () => {
    const c = connectorsClient(t, owner);
    const res = await c.call('GET', '/connectors/providers');
    expect(res.status).toBe(200);
    expect(res.body.items.map((p: any) => [p.name, p.auth_kind])).toEqual([
      ['web_crawler', 'none'],
      ['object_storage', 'access_keys'],
      ['slack', 'oauth2'],
      ['google_drive', 'oauth2'],
      ['granola', 'api_key'],
    ]);
    for (const provider of res.body.items)
      expect(provider.config_schema, provider.name).toMatchObject({ type: 'object', properties: expect.any(Object) });
    expect(res.body.items[2].config_schema.required).toContain('channels');
    expect(res.body.items[3].config_schema.required).toContain('folder_ids');
    expect(res.body.items[4].credentials_schema.required).toEqual(['api_key']);
    expect(res.body.items[1].credentials_schema.required).toEqual(['access_key_id', 'secret_access_key']);
    expect(res.body.items[0].config_schema.properties.max_depth).toMatchObject({ type: 'integer', default: 3 });
    expect((await c.call('GET', '/connectors/providers/object_storage')).body.capabilities).toContain('resumable');
    expectError(await c.call('GET', '/connectors/providers/nope'), 404, 'not_found');
  });

  it('creates, reads, lists, updates, configures, repairs, purges and removes a connection', async () => {
    const c = connectorsClient(t, owner);
    const created = await c.call('POST', '/connectors/connections', {
      body: { provider: 'web_crawler', name: 'Docs', config: config(), schedule_minutes: 60 },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      provider: 'web_crawler',
      name: 'Docs',
      end_user_id: 'connector-web_crawler',
      state: 'active',
      has_credentials: false,
      schedule_minutes: 60,
      last_sync: null,
    });
    const id = created.body.id;
    expect((await c.call('GET', `/connectors/connections/${id}`)).body).toEqual(created.body);
    expect((await c.call('GET', '/connectors/connections')).body).toMatchObject({ total: 1, items: [{ id }] });

    const renamed = await c.call('PATCH', `/connectors/connections/${id}`, {
      body: { name: 'Docs site', schedule_minutes: null },
    });
    expect(renamed.body).toMatchObject({ name: 'Docs site', schedule_minutes: null, next_sync_at: null });
    expectError(await c.call('PATCH', `/connectors/connections/${id}`, { body: {} }), 400, 'validation_error');
    expectError(
      await c.call('PATCH', `/connectors/connections/${id}`, { body: { credentials: { token: 'x' } } }),
      400,
      'validation_error',
      'credentials',
    );

    const page = await c.call('GET', `/connectors/connections/${id}/configuration`);
    expect(page.body).toMatchObject({
      connection_id: id,
      provider: 'web_crawler',
      schema: { type: 'object' },
      values: config(),
    });
    const bad = await c.call('PUT', `/connectors/connections/${id}/configuration`, {
      body: { values: { ...config(), max_depth: 'deep' } },
    });
    expectError(bad, 400, 'validation_error', 'config/max_depth');
    const saved = await c.call('PUT', `/connectors/connections/${id}/configuration`, {
      body: { values: { ...config(), max_depth: 0 } },
    });
    expect(saved.body.values.max_depth).toBe(0);

    // max_depth 0: only the start page.
    const sync = await c.waitForSync((await c.sync(id)).id);
    expect(sync).toMatchObject({ status: 'succeeded', progress: { created: 1 } });
    const insight = await c.call('GET', '/connectors/insights');
    expect(insight.body).toMatchObject({
      connections: { total: 1, by_state: { active: 1 } },
      objects: { by_status: { synced: 1 } },
      memories: 1,
      last_runs: [{ id: sync.id }],
    });
    const overview = await c.call('GET', '/integrations/overview');
    expect(overview.body).toMatchObject({
      project_id: t.projectId,
      connections: [{ id, state: 'active', last_sync: { id: sync.id, status: 'succeeded' } }],
    });
    expect(overview.body.integrations).toContainEqual({
      provider: 'web_crawler',
      title: 'Web crawler',
      enabled: true,
      connections: 1,
    });
    const history = await c.call('GET', `/connectors/connections/${id}/syncs`);
    expect(history.body).toMatchObject({ total: 1, items: [{ id: sync.id }] });

    // Repair re-validates against the source: the site going away puts the connection in error.
    const gone = site.pages.get('/')!;
    await site.close();
    const broken = await c.call('POST', `/connectors/connections/${id}/repair`);
    expect(broken.body).toMatchObject({ state: 'error', state_reason: expect.stringContaining('cannot be fetched') });
    site = await startSite({ '/': gone });
    await c.call('PUT', `/connectors/connections/${id}/configuration`, {
      body: { values: { start_urls: [`${site.base}/`], delay_ms: 0, max_depth: 0 } },
    });
    expect((await c.call('POST', `/connectors/connections/${id}/repair`)).body).toMatchObject({
      state: 'active',
      state_reason: null,
    });

    const objects = await c.objects(id);
    const memoryIds = objects.flatMap((o) => o.memory_ids);
    const purged = await c.call('POST', `/connectors/connections/${id}/purge`);
    expect(purged.body).toEqual({ id, memories_forgotten: memoryIds.length });
    expect(await c.objects(id)).toEqual([]);
    const rows = await t.database.db
      .selectFrom('memories')
      .select(['text', 'deleted_at'])
      .where('id', 'in', memoryIds)
      .execute();
    expect(rows.every((r) => r.text === '' && r.deleted_at !== null)).toBe(true);

    await c.waitForSync((await c.sync(id)).id);
    const removed = await c.call('DELETE', `/connectors/connections/${id}`);
    expect(removed.body).toEqual({ id, removed: true, memories_forgotten: 1 });
    expectError(await c.call('GET', `/connectors/connections/${id}`), 404, 'not_found');
    const audit = await t.database.db
      .selectFrom('audit_log')
      .select('action')
      .where('target_type', '=', 'connection')
      .where('target_id', '=', String(id))
      .execute();
    expect(new Set(audit.map((a) => a.action))).toEqual(
      new Set([
        'connection.create',
        'connection.update',
        'connection.configure',
        'connector.sync_trigger',
        'connector.sync',
        'connection.repair',
        'connection.purge',
        'connection.remove',
      ]),
    );
  });

  it('stores credentials encrypted, never returns or logs them', async () => {
    const c = connectorsClient(t, owner);
    const secret = 'wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY';
    // Refused by the source (nothing listens there), but the body must not echo the secret either.
    const res = await c.call('POST', '/connectors/connections', {
      body: {
        provider: 'object_storage',
        name: 'b',
        config: { bucket: 'docs', endpoint: 'http://127.0.0.1:9' },
        credentials: { access_key_id: 'AKIDEXAMPLE', secret_access_key: secret },
      },
    });
    expectError(res, 400, 'validation_error', 'config');
    expect(res.text).not.toContain(secret);
    expect(t.logs.join('\n')).not.toContain(secret);
  });

  it('queues scheduled syncs when due, once', async () => {
    const c = connectorsClient(t, owner);
    const connection = await c.create({
      provider: 'web_crawler',
      name: 'Scheduled',
      end_user_id: 'scheduled',
      config: { ...config(), max_depth: 0 },
      schedule_minutes: 5,
    });
    const deps = {
      database: t.database,
      jobs: new JobHandlers(),
      secret: new Uint8Array(32),
      outbound: { allow: [] },
      erase: new EraseHooks(endUserPseudonyms(new Uint8Array(32))),
      connectors: { redirectUrl: 'http://127.0.0.1/callback', vendors: {} },
      reader: t.services.reader,
    };
    expect(await queueDueSyncs(deps, new Date())).toEqual([]);
    const later = new Date(Date.now() + 6 * 60_000);
    const queued = await queueDueSyncs(deps, later);
    expect(queued).toHaveLength(1);
    expect(await queueDueSyncs(deps, later)).toEqual([]);
    const sync = await c.waitForSync(queued[0]!);
    expect(sync).toMatchObject({ connection_id: connection.id, trigger: 'schedule', status: 'succeeded' });
    const row = await c.call('GET', `/connectors/connections/${connection.id}`);
    expect(Date.parse(row.body.next_sync_at)).toBeGreaterThan(later.getTime());
  });

  it("retention deletes syncs that finished before the cutoff, but never a connection's last one", async () => {
    const c = connectorsClient(t, owner);
    const connection = await c.create({
      provider: 'web_crawler',
      name: 'Retained',
      end_user_id: 'retained',
      config: { ...config(), max_depth: 0 },
    });
    const other = await c.create({
      provider: 'web_crawler',
      name: 'Retained too',
      end_user_id: 'retained',
      config: { ...config(), max_depth: 0 },
    });
    const runs = [] as number[];
    for (const id of [connection.id, connection.id, connection.id, other.id]) {
      const sync = await c.sync(id);
      expect((await c.waitForSync(sync.id)).status).toBe('succeeded');
      runs.push(sync.id);
    }
    // All four ended 40 days ago.
    const longAgo = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await t.database.db.updateTable('connector_syncs').set({ finished_at: longAgo }).where('id', 'in', runs).execute();
    expect(await purgeFinishedSyncs(t.database.db, new Date(Date.now() - 30 * 86_400_000).toISOString(), 1)).toBe(2);
    const listed = await c.call('GET', `/connectors/connections/${connection.id}/syncs`);
    expect(listed.body.items.map((s: { id: number }) => s.id)).toEqual([runs[2]]);
    expect((await c.call('GET', `/connectors/syncs/${runs[0]}`)).status).toBe(404);
    expect((await c.call('GET', `/connectors/syncs/${runs[3]}`)).status).toBe(200);
    const shown = await c.call('GET', `/connectors/connections/${connection.id}`);
    expect(shown.body.last_sync).toMatchObject({ id: runs[2] });
  });

  it('enables and disables integrations for the organization', async () => {
    const c = connectorsClient(t, owner);
    expect((await c.call('GET', '/integrations')).body.items.map((i: any) => [i.name, i.enabled])).toEqual([
      ['web_crawler', true],
      ['object_storage', true],
      ['slack', true],
      ['google_drive', true],
      ['granola', true],
    ]);
    const disabled = await c.call('POST', '/integrations/web_crawler/disable', {
      headers: { 'x-project-id': undefined },
    });
    expect(disabled.body).toMatchObject({ name: 'web_crawler', enabled: false });
    expectError(
      await c.call('POST', '/connectors/connections', {
        body: { provider: 'web_crawler', name: 'x', config: config() },
      }),
      403,
      'forbidden',
    );
    expect((await c.call('POST', '/integrations/web_crawler/enable')).body.enabled).toBe(true);
    expectError(await c.call('POST', '/integrations/nope/enable'), 404, 'not_found');
  });

  it('scopes everything to the project and the roles', async () => {
    const c = connectorsClient(t, owner);
    expectError(
      await c.call('GET', '/connectors/connections', { headers: { 'x-project-id': undefined } }),
      400,
      'validation_error',
      'X-Project-ID',
    );
    const other = await t.otherTenant();
    expectError(
      await c.call('GET', '/connectors/connections', { headers: { 'x-project-id': other.projectId } }),
      404,
      'not_found',
    );
    // The test's data-plane key reaches the route (keys may carry connectors scopes) but not this scope.
    expectError(await t.call('GET', '/connectors/connections'), 403, 'forbidden');
    const viewer = await t.member('viewer');
    expect(
      (
        await t.call('GET', '/connectors/connections', {
          token: viewer.token,
          headers: { 'x-project-id': t.projectId },
        })
      ).status,
    ).toBe(200);
    expectError(
      await t.call('POST', '/connectors/connections', {
        token: viewer.token,
        headers: { 'x-project-id': t.projectId },
        body: { provider: 'web_crawler', name: 'x', config: config() },
      }),
      403,
      'forbidden',
    );
    expectError(await c.call('GET', '/connectors/syncs/999999'), 404, 'not_found');
    expectError(
      await c.call('POST', '/connectors/connections', { body: { provider: 'nope', name: 'x', config: {} } }),
      400,
      'validation_error',
      'provider',
    );
    expectError(
      await c.call('POST', '/connectors/connections', {
        body: { provider: 'web_crawler', name: 'x', config: { start_urls: ['ftp://x'] } },
      }),
      400,
      'validation_error',
      'config/start_urls/0',
    );
  });
});
