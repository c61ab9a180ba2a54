import { expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../testing/harness.js';
import { expectError, expectNothingWritten } from '../testing/memories.js';

/** Node merges a repeated header into "a, b" (or keeps the first Authorization): each repeat of a credential or scope header is refused. */
forEachDialect('repeated credential and scope headers', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);

  it('answers 400 naming the header, and stores nothing', async () => {
    const add = (headers: Record<string, string[]>) =>
      expectNothingWritten(t, () => t.call('POST', '/memory/add', { body: { text: 'who am I' }, headers }));
    expectError(await add({ 'X-End-User-ID': ['alice', 'bob'] }), 400, 'validation_error', 'X-End-User-ID');
    expectError(await add({ 'X-End-User-ID': ['alice', 'alice'] }), 400, 'validation_error', 'X-End-User-ID');
    expectError(await add({ 'X-API-Key': [t.key, t.key] }), 400, 'validation_error', 'X-API-Key');
    expectError(await add({ 'X-Project-ID': [t.projectId, t.projectId] }), 400, 'validation_error', 'X-Project-ID');
    expectError(await add({ 'X-Tenant-ID': ['acme', 'globex'] }), 400, 'validation_error', 'X-Tenant-ID');
    expectError(await add({ 'Idempotency-Key': ['k1', 'k2'] }), 400, 'validation_error', 'Idempotency-Key');
    const bearer = await t.call('GET', '/org/projects', {
      headers: { Authorization: [`Bearer ${owner.token}`, 'Bearer forged'] },
      key: null,
      project: null,
      endUser: null,
    });
    expectError(bearer, 400, 'validation_error', 'Authorization');
    const org = await t.call('GET', '/org/projects', {
      token: owner.token,
      headers: { 'X-Organization-ID': [t.organizationId, t.organizationId] },
    });
    expectError(org, 400, 'validation_error', 'X-Organization-ID');
    // Sent once, the same headers work.
    expect(
      (await t.call('POST', '/memory/add', { body: { text: 'who am I' }, headers: { 'X-End-User-ID': 'alice' } }))
        .status,
    ).toBe(201);
  });
});
