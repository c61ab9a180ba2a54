import { expect, it } from 'vitest';
import { subscribe } from '../../core/event-subscriptions.js';
import { decodeJson } from '../../store/database.js';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';

forEachDialect('projects', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);

  it('creates, lists, reads and paginates projects', async () => {
    const created = await t.call('POST', '/org/projects', {
      token: owner.token,
      body: { name: 'Support Bot', description: 'Tier 1' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Support Bot', slug: 'support-bot', description: 'Tier 1' });
    expect(created.body.id).toMatch(/^proj_/);
    const again = await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Support bot!' } });
    expect(again.body.slug).toBe('support-bot-2');
    const clash = await t.call('POST', '/org/projects', {
      token: owner.token,
      body: { name: 'X', slug: 'support-bot' },
    });
    expect(clash.status).toBe(409);
    expect(clash.body.error).toMatchObject({ code: 'conflict', field: 'slug' });
    const badSlug = await t.call('POST', '/org/projects', {
      token: owner.token,
      body: { name: 'X', slug: 'Not A Slug' },
    });
    expect(badSlug.status).toBe(400);
    expect(badSlug.body.error.field).toBe('slug');

    const got = await t.call('GET', `/org/projects/${created.body.id}`, { token: owner.token });
    expect(got.body).toEqual(created.body);
    const page = await t.call('GET', '/org/projects?offset=1&limit=1', { token: owner.token });
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ total: 3, offset: 1, limit: 1, has_next: true });
    expect(page.body.items).toHaveLength(1);
    const all = await t.call('GET', '/org/projects', { token: owner.token });
    expect(all.body).toMatchObject({ total: 3, offset: 0, limit: 50, has_next: false });
    expect((await t.call('GET', '/org/projects?limit=101', { token: owner.token })).body.error.field).toBe('limit');
  });

  it('changes a project by bearer token or API key, with an audit row and a project.updated event', async () => {
    const project = (await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Renamed later' } }))
      .body;
    // The outbox keeps the events someone receives: here, the new project's updates.
    await subscribe(t.database.db, 'projects-test', {
      organizationId: t.organizationId,
      projectId: project.id,
      types: ['project.updated'],
    });
    const res = await t.call('PATCH', `/org/projects/${project.id}`, {
      token: owner.token,
      body: { name: 'Renamed', slug: 'renamed', description: 'now' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: project.id,
      name: 'Renamed',
      slug: 'renamed',
      description: 'now',
      updated_at: expect.any(String),
    });

    const key = await t.newKey({ scopes: ['projects:write'] });
    const byKey = await t.call('PATCH', `/org/projects/${project.id}`, {
      key: key.key,
      project: null,
      endUser: null,
      body: { description: 'by key' },
    });
    expect(byKey.status).toBe(200);
    expect(byKey.body).toMatchObject({ id: project.id, description: 'by key' });
    // A key locked to another project does not see this one.
    const locked = await t.newKey({ scopes: ['projects:write'], projectId: t.projectId });
    const other = await t.call('PATCH', `/org/projects/${project.id}`, {
      key: locked.key,
      project: null,
      endUser: null,
      body: { name: 'no' },
    });
    expect(other.status).toBe(404);
    // A key without the scope is refused.
    const readOnly = await t.call('PATCH', `/org/projects/${project.id}`, {
      key: t.key,
      project: null,
      endUser: null,
      body: { name: 'no' },
    });
    expect(readOnly.status).toBe(403);

    const audit = await t.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'project.update')
      .where('target_id', '=', project.id)
      .orderBy('id')
      .execute();
    expect(audit.map((a) => [a.actor_type, a.actor_id, a.result])).toEqual([
      ['user', owner.userId, 'success'],
      ['api_key', key.id, 'success'],
    ]);
    expect(audit[0]!.request_id).toBe(res.headers['x-request-id']);
    const events = await t.database.db
      .selectFrom('outbox_events')
      .selectAll()
      .where('type', '=', 'project.updated')
      .where('project_id', '=', project.id)
      .orderBy('id')
      .execute();
    expect(events).toHaveLength(2);
    expect(decodeJson<{ changed: string[] }>(events[0]!.payload).changed).toEqual(['name', 'slug', 'description']);
    const slugTaken = await t.call('PATCH', `/org/projects/${project.id}`, {
      token: owner.token,
      body: { slug: 'test' },
    });
    expect(slugTaken.status).toBe(409);
    expect(
      (await t.call('PATCH', `/org/projects/${project.id}`, { token: owner.token, body: { nme: 'typo' } })).body.error
        .field,
    ).toBe('nme');
  });

  it('soft-deletes a project and tombstones its memories', async () => {
    const project = (await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Doomed' } })).body;
    const added = await t.call('POST', '/memory/add', { project: project.id, body: { text: 'Likes tea' } });
    expect(added.status).toBe(201);
    const deleted = await t.call('DELETE', `/org/projects/${project.id}`, { token: owner.token });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ id: project.id, memories_tombstoned: 1 });
    expect((await t.call('GET', `/org/projects/${project.id}`, { token: owner.token })).status).toBe(404);
    expect((await t.call('GET', `/memory/${added.body.id}`, { project: project.id })).status).toBe(404);
    expect((await t.call('DELETE', `/org/projects/${project.id}`, { token: owner.token })).status).toBe(404);
    const row = await t.database.db
      .selectFrom('memories')
      .select('deleted_at')
      .where('id', '=', added.body.id)
      .executeTakeFirstOrThrow();
    expect(row.deleted_at).toBe(deleted.body.deleted_at);
    // Its slug is free again.
    expect((await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Doomed' } })).body.slug).toBe(
      'doomed',
    );
  });

  it('creates organizations and acts in the one X-Organization-ID names', async () => {
    const created = await t.call('POST', '/organizations', { token: owner.token, body: { name: 'Second' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Second', role: 'owner' });
    const list = await t.call('GET', '/organizations', { token: owner.token });
    expect(list.body.items.map((o: { id: string; current: boolean }) => [o.id, o.current])).toEqual([
      [t.organizationId, true],
      [created.body.id, false],
    ]);
    const inSecond = { token: owner.token, headers: { 'x-organization-id': created.body.id } };
    expect((await t.call('GET', '/org/projects', inSecond)).body.total).toBe(0);
    expect((await t.call('POST', '/org/projects', { ...inSecond, body: { name: 'There' } })).status).toBe(201);
    expect((await t.call('GET', '/org/projects', inSecond)).body.total).toBe(1);
    const elsewhere = await t.otherTenant();
    const notMine = await t.call('GET', '/org/projects', {
      token: owner.token,
      headers: { 'x-organization-id': elsewhere.organizationId },
    });
    expect(notMine.status).toBe(404);
    const audit = await t.database.db
      .selectFrom('audit_log')
      .select('action')
      .where('organization_id', '=', created.body.id)
      .orderBy('id')
      .execute();
    expect(audit.map((a) => a.action)).toEqual(['organization.create', 'project.create']);
  });
});
