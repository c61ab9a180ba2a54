import { expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';

forEachDialect('API keys', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);

  it('creates a key whose secret is shown once, and which works at once', async () => {
    const created = await t.call('POST', '/org/api-keys', {
      token: owner.token,
      body: { name: 'ingest', project_id: t.projectId },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'ingest',
      project_id: t.projectId,
      scopes: ['memories:read', 'memories:write'],
      status: 'active',
    });
    expect(created.body.key).toMatch(/^egm_/);
    expect(created.body.prefix).toBe(created.body.key.slice(0, 12));

    const listed = await t.call('GET', '/org/api-keys', { token: owner.token });
    expect(listed.status).toBe(200);
    expect(listed.body.items[0]).toMatchObject({ id: created.body.id, last_used_at: null });
    expect(listed.text).not.toContain(created.body.key);
    const one = await t.call('GET', `/org/api-keys/${created.body.id}`, { token: owner.token });
    expect(one.body).not.toHaveProperty('key');

    const used = await t.call('POST', '/memory/add', {
      key: created.body.key,
      project: null,
      body: { text: 'Uses the new key' },
    });
    expect(used.status).toBe(201);
    const after = await t.call('GET', `/org/api-keys/${created.body.id}`, { token: owner.token });
    expect(after.body.last_used_at).not.toBeNull();
  });

  it('binds keys to a tenant or end user, expires them, and refuses what the caller cannot grant', async () => {
    const bound = await t.call('POST', '/org/api-keys', {
      token: owner.token,
      body: {
        name: 'one user',
        project_id: t.projectId,
        end_user_id: 'alice',
        tenant_id: 'acme',
        expires_at: '2999-01-01T00:00:00Z',
      },
    });
    expect(bound.body).toMatchObject({
      end_user_id: 'alice',
      tenant_id: 'acme',
      expires_at: '2999-01-01T00:00:00.000Z',
    });
    const asBob = await t.call('POST', '/memory/add', {
      key: bound.body.key,
      project: null,
      endUser: 'bob',
      body: { text: 'x' },
    });
    expect(asBob.status).toBe(404);

    const cases: Array<[unknown, number, string | undefined]> = [
      [{ name: 'x', expires_at: '2001-01-01T00:00:00Z' }, 400, 'expires_at'],
      [{ name: 'x', scopes: ['memories:read', 'root'] }, 400, 'scopes/1'],
      [{ name: 'x', end_user_id: 'alice@example.com' }, 400, 'end_user_id'],
      [{ name: 'x', project_id: 'proj_nope' }, 404, undefined],
      [{ name: '' }, 400, 'name'],
    ];
    for (const [body, status, field] of cases) {
      const res = await t.call('POST', '/org/api-keys', { token: owner.token, body });
      expect(res.status, JSON.stringify(body)).toBe(status);
      if (field) expect(res.body.error.field).toBe(field);
    }
    const narrow = await t.login({ scopes: ['keys:write'] });
    const beyond = await t.call('POST', '/org/api-keys', {
      token: narrow.token,
      body: { name: 'x', scopes: ['audit:read'] },
    });
    expect(beyond.status).toBe(403);
  });

  it('tests a key without revealing it, and revokes it', async () => {
    const created = (
      await t.call('POST', '/org/api-keys', { token: owner.token, body: { name: 'tested', scopes: ['memories:read'] } })
    ).body;
    const tested = await t.call('POST', `/org/api-keys/${created.id}/test`, { token: owner.token });
    expect(tested.status).toBe(200);
    expect(tested.body).toMatchObject({
      id: created.id,
      valid: true,
      status: 'active',
      reason: null,
      project_status: 'none',
    });
    expect(tested.body.operations).toContain('GET /memory/:memory_id');
    expect(tested.body.operations).not.toContain('POST /memory/add');
    expect(tested.text).not.toContain(created.key);

    const revoked = await t.call('DELETE', `/org/api-keys/${created.id}`, { token: owner.token });
    expect(revoked.status).toBe(200);
    expect(revoked.body.status).toBe('revoked');
    expect((await t.call('GET', '/memory/1', { key: created.key })).status).toBe(401);
    const retested = await t.call('POST', `/org/api-keys/${created.id}/test`, { token: owner.token });
    expect(retested.body).toMatchObject({ valid: false, status: 'revoked', operations: [] });
    expect((await t.call('DELETE', `/org/api-keys/${created.id}`, { token: owner.token })).status).toBe(200);
    expect((await t.call('DELETE', '/org/api-keys/999999', { token: owner.token })).status).toBe(404);
    const audits = await t.database.db
      .selectFrom('audit_log')
      .select('action')
      .where('target_id', '=', String(created.id))
      .orderBy('id')
      .execute();
    expect(audits.map((a) => a.action)).toEqual(['api_key.create', 'api_key.revoke']);
  });

  it('bulk-revokes with one result per id', async () => {
    const a = (await t.call('POST', '/org/api-keys', { token: owner.token, body: { name: 'a' } })).body;
    const b = (await t.call('POST', '/org/api-keys', { token: owner.token, body: { name: 'b' } })).body;
    await t.call('DELETE', `/org/api-keys/${b.id}`, { token: owner.token });
    const foreign = await t.otherTenant();
    const foreignKey = await t.database.db
      .selectFrom('api_keys')
      .select('id')
      .where('organization_id', '=', foreign.organizationId)
      .executeTakeFirstOrThrow();
    const res = await t.call('POST', '/org/api-keys/bulk-revoke', {
      token: owner.token,
      body: { ids: [a.id, b.id, foreignKey.id] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      totals: { revoked: 1, already_revoked: 1, not_found: 1 },
      results: [
        { id: a.id, status: 'revoked' },
        { id: b.id, status: 'already_revoked' },
        { id: foreignKey.id, status: 'not_found' },
      ],
    });
    // The other organization's key still works.
    expect(
      (
        await t.call('POST', '/memory/add', {
          key: foreign.key,
          project: foreign.projectId,
          body: { text: 'still here' },
        })
      ).status,
    ).toBe(201);
  });
});
