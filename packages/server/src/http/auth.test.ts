import { beforeAll, expect, it } from 'vitest';
import { SYSTEM_ACTOR } from '../core/context.js';
import { revokeKeyAsOperator } from '../modules/org/index.js';
import { deleteProject } from '../modules/org/projects.js';
import { createProject } from '../modules/org/service.js';
import { forEachDialect, type CallOptions, useTestApp } from '../testing/harness.js';
import { addMemory, expectError, expectNothingWritten, memoryRow } from '../testing/memories.js';

type Operation = [method: string, url: string, body?: unknown];

/** Every user-scoped operation on one memory. */
const onMemory = (id: number): Operation[] => [
  ['GET', `/memory/${id}`],
  ['PATCH', `/memory/${id}`, { importance: 0.01 }],
  ['POST', '/memory/batch-update', { updates: [{ id, importance: 0.01 }] }],
  ['DELETE', '/memory/forget', { ids: [id] }],
  ['GET', `/memory/${id}/history`],
];

/** Every operation that writes. */
const writes = (id: number): Operation[] => [
  ['POST', '/memory/add', { text: 'Write attempt' }],
  ['POST', '/memory/bulk-add', [{ text: 'Bulk write attempt' }]],
  ['PATCH', `/memory/${id}`, { importance: 0.01 }],
  ['POST', '/memory/batch-update', { updates: [{ id, importance: 0.01 }] }],
  ['DELETE', '/memory/forget', { ids: [id] }],
  ['DELETE', '/memory/user/user-1'],
];

forEachDialect('API-key authentication and scoping of the memory data plane', (dialect) => {
  const t = useTestApp(dialect);
  let memoryId: number;
  beforeAll(async () => {
    memoryId = (await addMemory(t, 'Protected memory')).id;
  });

  const send = ([method, url, body]: Operation, options: CallOptions = {}) =>
    t.call(method, url, { ...(body !== undefined ? { body } : {}), ...options });

  /** Each operation must fail with this error and write nothing. */
  async function expectRefused(
    operations: Operation[],
    options: CallOptions,
    status: number,
    code: string,
    field?: string,
  ) {
    for (const operation of operations) {
      const res = await expectNothingWritten(t, () => send(operation, options));
      expectError(res, status, code, field);
    }
  }

  /**
   * Every operation on a memory the caller may not see reports it as absent (batch update and
   * forget report it per item) and changes nothing of it.
   */
  async function expectHidden(id: number, options: CallOptions) {
    const before = await memoryRow(t, id);
    for (const operation of onMemory(id)) {
      const res = await expectNothingWritten(t, () => send(operation, options), true);
      if (operation[1] === '/memory/batch-update') {
        expect(res.status).toBe(207);
        expect(res.body.results).toEqual([
          { index: 0, id, status: 'failed', error: { code: 'not_found', message: expect.any(String) } },
        ]);
      } else if (operation[1] === '/memory/forget') {
        expect(res.status).toBe(200);
        expect(res.body).toEqual([]);
      } else {
        expectError(res, 404, 'not_found');
      }
    }
    expect(await memoryRow(t, id)).toEqual(before);
  }

  const everything = () => [...onMemory(memoryId), ...writes(memoryId), ['GET', '/memory/export'] as Operation];

  it('answers 401 with WWW-Authenticate without a key, or with an unknown one', async () => {
    const unknown = `egm_${'A'.repeat(43)}`;
    const nearMiss = t.key.slice(0, -2) + (t.key.endsWith('AA') ? 'BB' : 'AA');
    for (const key of [null, '', 'short', unknown, nearMiss, 'x'.repeat(500)]) {
      for (const operation of everything()) {
        const res = await expectNothingWritten(t, () => send(operation, { key }));
        expectError(res, 401, 'unauthenticated');
        expect(res.headers['www-authenticate']).toMatch(/X-API-Key/);
      }
    }
    const bearerOnly = await t.call('GET', `/memory/${memoryId}`, {
      key: null,
      headers: { authorization: 'Bearer abc' },
    });
    expectError(bearerOnly, 401, 'unauthenticated');
  });

  it('answers 401 for a revoked key and an expired key, and accepts a key that has not yet expired', async () => {
    const revoked = await t.newKey();
    expect((await t.call('GET', `/memory/${memoryId}`, { key: revoked.key })).status).toBe(200);
    // Used just above: on PostgreSQL the key is held in memory when it is revoked.
    expect(await revokeKeyAsOperator(t.database, revoked.id)).toBe('revoked');
    const expired = await t.newKey({ expiresAt: new Date(Date.now() - 1_000).toISOString() });
    for (const key of [revoked.key, expired.key]) await expectRefused(everything(), { key }, 401, 'unauthenticated');
    const future = await t.newKey({ expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    expect((await t.call('GET', `/memory/${memoryId}`, { key: future.key })).status).toBe(200);
  });

  it('answers 403 forbidden to a key without the scope an operation needs', async () => {
    const reader = await t.newKey({ scopes: ['memories:read'] });
    await expectRefused(writes(memoryId), { key: reader.key }, 403, 'forbidden');
    for (const operation of [
      ...onMemory(memoryId).filter(([m]) => m === 'GET'),
      ['GET', '/memory/export'] as Operation,
    ]) {
      expect((await send(operation, { key: reader.key })).status).toBe(200);
    }
    const none = await t.newKey({ scopes: [] });
    await expectRefused(everything(), { key: none.key }, 403, 'forbidden');
    const writer = await t.newKey({ scopes: ['memories:write'] });
    expectError(await t.call('GET', `/memory/${memoryId}`, { key: writer.key }), 403, 'forbidden');
  });

  it('needs X-Project-ID for a key not locked to a project', async () => {
    await expectRefused(everything(), { project: null }, 400, 'validation_error', 'X-Project-ID');
  });

  it('answers 404 for a project of another organization, a deleted or unknown project, or one a locked key is not locked to', async () => {
    const other = await t.otherTenant();
    const doomed = await createProject(t.database.db, {
      organizationId: t.organizationId,
      name: 'Doomed',
      slug: 'doomed',
    });
    await addMemory(t, 'In a project about to be deleted', { project: doomed.id });
    await deleteProject(
      t.database,
      { actor: SYSTEM_ACTOR, organizationId: t.organizationId, projectId: null, requestId: null },
      doomed.id,
    );
    for (const project of [other.projectId, doomed.id, 'proj_doesnotexist']) {
      await expectRefused(everything(), { project }, 404, 'not_found');
    }
    const sibling = await createProject(t.database.db, {
      organizationId: t.organizationId,
      name: 'Sibling',
      slug: 'sibling',
    });
    const locked = await t.newKey({ projectId: t.projectId });
    await expectRefused(everything(), { key: locked.key, project: sibling.id }, 404, 'not_found');
    // A locked key needs no X-Project-ID, and may repeat its own.
    for (const project of [null, t.projectId]) {
      expect((await t.call('GET', `/memory/${memoryId}`, { key: locked.key, project })).status).toBe(200);
    }
    // Another organization's key cannot name this organization's project.
    await expectRefused(everything(), { key: other.key, project: t.projectId }, 404, 'not_found');
  });

  it('needs a valid X-End-User-ID on user-scoped operations', async () => {
    const userScoped = [...onMemory(memoryId), ...writes(memoryId).slice(0, 5)];
    await expectRefused(userScoped, { endUser: null }, 400, 'validation_error', 'X-End-User-ID');
    for (const endUser of ['alice@example.com', 'Bob.Smith@mail.example.org', '', '   ', 'x'.repeat(257)]) {
      await expectRefused(userScoped, { endUser }, 400, 'validation_error', 'X-End-User-ID');
    }
  });

  it('hides another end user’s and another project’s memories behind 404, changing nothing', async () => {
    const theirs = await addMemory(t, 'Belongs to user-2', { endUser: 'user-2' });
    const sibling = await createProject(t.database.db, {
      organizationId: t.organizationId,
      name: 'Elsewhere',
      slug: 'elsewhere',
    });
    const elsewhere = await addMemory(t, 'Same end user, other project', { project: sibling.id });
    const other = await t.otherTenant();
    await expectHidden(theirs.id, {});
    await expectHidden(elsewhere.id, {});
    await expectHidden(memoryId, { key: other.key, project: other.projectId });
  });

  it('binds a key bound to an end user to that end user only', async () => {
    const bound = await t.newKey({ endUserId: 'bound-user' });
    const as = (options: CallOptions = {}): CallOptions => ({ key: bound.key, endUser: null, ...options });
    const own = await t.call('POST', '/memory/add', { body: { text: 'Bound memory' }, ...as() });
    expect(own.status).toBe(201);
    expect(own.body.end_user_id).toBe('bound-user');
    expect((await t.call('GET', `/memory/${own.body.id}`, as({ endUser: 'bound-user' }))).status).toBe(200);
    // Naming another end user, or reaching another end user's memory, is 404.
    await expectRefused(
      [...onMemory(own.body.id), ...writes(own.body.id).slice(0, 2)],
      as({ endUser: 'user-1' }),
      404,
      'not_found',
    );
    await expectHidden(memoryId, as());
    expectError(await expectNothingWritten(t, () => t.call('DELETE', '/memory/user/user-1', as())), 404, 'not_found');
    expect((await t.call('DELETE', '/memory/user/bound-user', as())).body).toEqual({
      end_user_id: 'bound-user',
      deleted: 1,
    });
  });

  it('refuses two credentials at once', async () => {
    const res = await expectNothingWritten(t, () =>
      t.call('POST', '/memory/add', { body: { text: 'Two credentials' }, headers: { authorization: 'Bearer token' } }),
    );
    expectError(res, 400, 'validation_error', 'Authorization');
  });
});
