import { expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../testing/harness.js';
import { expectError } from '../testing/memories.js';
import { waitFor } from '../testing/jobs.js';

// Scoped API keys for the control plane (core/access.ts#KEY_CONTROL_SCOPES): made through the key-creation
// operation, used by automation without a person's session. The authorization matrix covers every cell.
forEachDialect('control-plane API keys', (dialect) => {
  const t = useTestApp(dialect, {
    webhooks: { allowHosts: ['127.0.0.1'], allowHttp: true, timeoutMs: 2000, retentionDays: 30 },
  });
  const owner = useOwner(t);

  const issue = async (body: Record<string, unknown>) => {
    const res = await t.call('POST', '/org/api-keys', { token: owner.token, body: { name: 'automation', ...body } });
    expect(res.status, res.text).toBe(201);
    return res.body as { key: string; scopes: string[] };
  };
  const hook = { name: 'deploy hook', url: 'http://127.0.0.1:9/hook', events: ['memory.created'] };
  const endpoints = async () =>
    Number(
      (
        await t.database.db
          .selectFrom('webhook_endpoints')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('a key with webhooks:write creates a webhook in its project; the endpoint is listed with webhooks:read', async () => {
    const { key } = await issue({ project_id: t.projectId, scopes: ['webhooks:read', 'webhooks:write'] });
    const created = await t.call('POST', '/org/webhooks', { key, project: null, body: hook });
    expect(created.status, created.text).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_/);
    const listed = await t.call('GET', '/org/webhooks', { key, project: null });
    expect(listed.body.items.map((e: { id: number }) => e.id)).toContain(created.body.id);
    // The audit log names the key, not a person.
    const audit = await t.database.db
      .selectFrom('audit_log')
      .select(['actor_type'])
      .where('action', '=', 'webhook.create')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(audit.actor_type).toBe('api_key');
  });

  it('a key made with the default scopes, or with webhooks:read only, is refused (403) and nothing is created', async () => {
    const dataPlane = await issue({});
    expect(dataPlane.scopes).toEqual(['memories:read', 'memories:write']);
    const readOnly = await issue({ scopes: ['webhooks:read'] });
    const before = await endpoints();
    for (const { key } of [dataPlane, readOnly]) {
      const res = await t.call('POST', '/org/webhooks', { key, body: hook });
      expectError(res, 403, 'forbidden');
      expect(res.body.error.message).toContain('webhooks:write');
    }
    expectError(await t.call('GET', '/exports', { key: dataPlane.key }), 403, 'forbidden');
    expectError(await t.call('GET', '/org/members', { key: dataPlane.key }), 403, 'forbidden');
    expect(await endpoints()).toBe(before);
  });

  it('a key locked to one project is 404 for another project, and for a project of another organization', async () => {
    const { key } = await issue({ project_id: t.projectId, scopes: ['webhooks:write'] });
    const other = await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'second' } });
    const foreign = await t.otherTenant();
    const before = await endpoints();
    for (const project of [other.body.id as string, foreign.projectId]) {
      expectError(await t.call('POST', '/org/webhooks', { key, project, body: hook }), 404, 'not_found');
    }
    expect(await endpoints()).toBe(before);
  });

  it('an unlocked key names its project with X-Project-ID, which is required (400 naming it)', async () => {
    const { key } = await issue({ scopes: ['webhooks:write'] });
    const res = await t.call('POST', '/org/webhooks', { key, project: null, body: hook });
    expectError(res, 400, 'validation_error');
    expect(res.text).toContain('X-Project-ID');
    expect((await t.call('POST', '/org/webhooks', { key, project: t.projectId, body: hook })).status).toBe(201);
  });

  it('a key bound to a tenant or end user cannot carry control-plane scopes (400 naming the scope)', async () => {
    for (const bound of [{ tenant_id: 'acme' }, { end_user_id: 'alice' }]) {
      const res = await t.call('POST', '/org/api-keys', {
        token: owner.token,
        body: { name: 'bound', ...bound, scopes: ['memories:read', 'webhooks:write'] },
      });
      expectError(res, 400, 'validation_error');
      expect(res.body.error.field).toBe('scopes/1');
    }
  });

  it('members:read lists the members; an import made by a key runs as that key', async () => {
    const { key } = await issue({ project_id: t.projectId, scopes: ['members:read', 'exports:read', 'exports:write'] });
    const members = await t.call('GET', '/org/members', { key, project: null });
    expect(members.status, members.text).toBe(200);
    expect(members.body.items.length).toBeGreaterThan(0);
    const imported = await t.call('POST', '/imports', {
      key,
      project: null,
      body: { results: [{ id: 'mem0-1', memory: 'imported by a key', user_id: 'key-import' }] },
    });
    expect(imported.status, imported.text).toBe(202);
    const done = await waitFor(t, owner.token, `/imports/${imported.body.id}`, t.projectId);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    // Its memories' history names the key, not a user who happens to share its id.
    const history = await t.database.db
      .selectFrom('memory_history')
      .select(['actor_type'])
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(history.actor_type).toBe('api_key');
  });
});
