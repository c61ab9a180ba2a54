import { expect, it } from 'vitest';
import { createUser } from '../modules/org/index.js';
import { forEachDialect, useOwner, useTestApp } from '../testing/harness.js';
import { addMemory, countRows, expectError } from '../testing/memories.js';

/**
 * The credential resolution of http/auth.ts, decision by decision: which credential a route takes, what a
 * malformed one gets, how X-Organization-ID, X-Project-ID, X-Tenant-ID and X-End-User-ID narrow a request.
 * Each case names the decision it pins (found by mutation testing: `npm run mutation`).
 */
forEachDialect('credential resolution', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);

  it('names the credential a route takes when none is sent', async () => {
    const keyOnly = await t.call('POST', '/memory/query', { key: null, body: { query: 'x' } });
    expectError(keyOnly, 401, 'unauthenticated');
    expect(keyOnly.body.error.message).toMatch(/API key is required in the X-API-Key header/);

    const bearerOnly = await t.call('GET', '/auth/sessions', { key: null });
    expectError(bearerOnly, 401, 'unauthenticated');
    expect(bearerOnly.body.error.message).toMatch(/bearer token is required in the Authorization header/);

    const either = await t.call('PATCH', `/org/projects/${t.projectId}`, { key: null, body: { name: 'x' } });
    expectError(either, 401, 'unauthenticated');
    expect(either.body.error.message).toMatch(/bearer token \(Authorization\) or an API key \(X-API-Key\)/);
  });

  it('refuses an Authorization header that is not a well-formed bearer token with 401, never 500', async () => {
    for (const authorization of [
      'Basic dXNlcjpwYXNz',
      'Bearer',
      'Bearer a b',
      'Bearer <script>',
      `Bearer ${owner.token}x`,
    ]) {
      const res = await t.call('GET', '/auth/sessions', { key: null, headers: { authorization } });
      expectError(res, 401, 'unauthenticated');
    }
    expect((await t.call('GET', '/auth/sessions', { token: owner.token })).status).toBe(200);
  });

  it('checks X-Organization-ID: malformed is 400, not a membership of the caller is 404', async () => {
    expectError(
      await t.call('GET', '/org/projects', { token: owner.token, headers: { 'X-Organization-ID': 'acme' } }),
      400,
      'validation_error',
      'X-Organization-ID',
    );
    expectError(
      await t.call('GET', '/org/projects', { token: owner.token, headers: { 'X-Organization-ID': 'org_0000' } }),
      404,
      'not_found',
    );
    const other = await t.otherTenant();
    expectError(
      await t.call('GET', '/org/projects', {
        token: owner.token,
        headers: { 'X-Organization-ID': other.organizationId },
      }),
      404,
      'not_found',
    );
    const own = await t.call('GET', '/org/projects', {
      token: owner.token,
      headers: { 'X-Organization-ID': t.organizationId },
    });
    expect(own.status, own.text).toBe(200);
    expect(own.body.items.map((p: { id: string }) => p.id)).toContain(t.projectId);
  });

  it('lets an account without any membership reach what needs none, and refuses what needs one with 403', async () => {
    const email = `loner-${Math.random().toString(36).slice(2)}@example.com`;
    await createUser(t.database.db, email, 'correct horse battery');
    const loner = await t.login({ email, password: 'correct horse battery' });
    const organizations = await t.call('GET', '/organizations', { token: loner.token });
    expect(organizations.status, organizations.text).toBe(200);
    expect(organizations.body.items).toEqual([]);
    const sessions = await t.call('GET', '/auth/sessions', { token: loner.token });
    expect(sessions.status, sessions.text).toBe(200);
    expect(sessions.body.items.length).toBe(1);
    expectError(await t.call('GET', '/org/projects', { token: loner.token }), 403, 'forbidden');
  });

  it('refuses a role without the capability and a token without the scope, and changes nothing', async () => {
    const member = await t.member('member');
    const keysBefore = await countRows(t, 'api_keys');
    expectError(
      await t.call('POST', '/org/api-keys', { token: member.token, body: { name: 'nope' } }),
      403,
      'forbidden',
    );
    expect(await countRows(t, 'api_keys')).toBe(keysBefore);

    const narrow = await t.login({ scopes: ['sessions:read'] });
    expectError(
      await t.call('POST', '/org/api-keys', { token: narrow.token, body: { name: 'nope' } }),
      403,
      'forbidden',
    );
    expect(await countRows(t, 'api_keys')).toBe(keysBefore);
    const created = await t.call('POST', '/org/api-keys', { token: owner.token, body: { name: 'yes' } });
    expect(created.status, created.text).toBe(201);
    expect(await countRows(t, 'api_keys')).toBe(keysBefore + 1);
  });

  it('requires X-Project-ID on bearer routes bound to a project, and finds only projects of the acting organization', async () => {
    expectError(
      await t.call('GET', '/connectors/connections', { token: owner.token }),
      400,
      'validation_error',
      'X-Project-ID',
    );
    const other = await t.otherTenant();
    expectError(
      await t.call('GET', '/connectors/connections', { token: owner.token, project: other.projectId }),
      404,
      'not_found',
    );
    const own = await t.call('GET', '/connectors/connections', { token: owner.token, project: t.projectId });
    expect(own.status, own.text).toBe(200);
  });

  it('takes X-Tenant-ID from an unbound key and refuses another tenant to a tenant-bound key', async () => {
    const created = await addMemory(t, 'tenant scoped memory', { headers: { 'X-Tenant-ID': 'acme' } });
    const read = await t.call('GET', `/memory/${created.id}`, { headers: { 'X-Tenant-ID': 'acme' } });
    expect(read.status, read.text).toBe(200);
    expect(read.body.id).toBe(created.id);

    const bound = await t.newKey({ tenantId: 'acme' });
    const before = await countRows(t, 'memories');
    expectError(
      await t.call('POST', '/memory/add', {
        key: bound.key,
        headers: { 'X-Tenant-ID': 'globex' },
        body: { text: 'x' },
      }),
      404,
      'not_found',
    );
    expect(await countRows(t, 'memories')).toBe(before);
    const same = await t.call('POST', '/memory/add', {
      key: bound.key,
      headers: { 'X-Tenant-ID': 'acme' },
      body: { text: 'ok' },
    });
    expect(same.status, same.text).toBe(201);
  });

  it('requires X-End-User-ID where the operation is about one end user', async () => {
    expectError(
      await t.call('POST', '/memory/query', { endUser: null, body: { query: 'tea' } }),
      400,
      'validation_error',
      'X-End-User-ID',
    );
    const ok = await t.call('POST', '/memory/query', { body: { query: 'tea' } });
    expect(ok.status, ok.text).toBe(200);
  });
});
