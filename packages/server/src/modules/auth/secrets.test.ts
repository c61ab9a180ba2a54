import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, startTestApp, type TestApp } from '../../testing/harness.js';

forEachDialect('secrets stay out of logs and answers', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(dialect);
  });
  afterAll(() => t.close());

  it('logs none of the passwords, tokens and keys of a run that creates, uses and revokes them', async () => {
    const secrets: string[] = [t.password, t.key];
    const anonymous = { key: null, project: null, endUser: null } as const;
    const failed = await t.call('POST', '/auth/login', {
      ...anonymous,
      body: { email: t.email, password: 'hunter2-wrong-password' },
    });
    expect(failed.status).toBe(401);
    expect(failed.text).not.toContain('hunter2');
    secrets.push('hunter2-wrong-password');

    const session = await t.login();
    secrets.push(session.token, session.refreshToken);
    const refreshed = await t.call('POST', '/auth/refresh', {
      ...anonymous,
      body: { refresh_token: session.refreshToken },
    });
    expect(refreshed.status).toBe(200);
    secrets.push(refreshed.body.access_token, refreshed.body.refresh_token);
    const token = refreshed.body.access_token;
    // A spent refresh token presented again: refused, and not echoed.
    const reuse = await t.call('POST', '/auth/refresh', {
      ...anonymous,
      body: { refresh_token: session.refreshToken },
    });
    expect(reuse.status).toBe(401);
    expect(reuse.text).not.toContain(session.refreshToken);

    const other = await t.login();
    secrets.push(other.token, other.refreshToken);
    const created = await t.call('POST', '/org/api-keys', {
      token: other.token,
      headers: { 'idempotency-key': 'mint-1' },
      body: { name: 'logged?', project_id: t.projectId },
    });
    const replayed = await t.call('POST', '/org/api-keys', {
      token: other.token,
      headers: { 'idempotency-key': 'mint-1' },
      body: { name: 'logged?', project_id: t.projectId },
    });
    expect(created.status).toBe(201);
    expect(replayed.status).toBe(201);
    expect(replayed.body.key).toBe(created.body.key);
    secrets.push(created.body.key);
    expect(
      (await t.call('POST', '/memory/add', { key: created.body.key, project: null, body: { text: 'Uses the key' } }))
        .status,
    ).toBe(201);
    const tested = await t.call('POST', `/org/api-keys/${created.body.id}/test`, { token: other.token });
    expect(tested.status).toBe(200);
    expect(tested.text).not.toContain(created.body.key);
    expect((await t.call('DELETE', `/org/api-keys/${created.body.id}`, { token: other.token })).status).toBe(200);
    const revokedUse = await t.call('POST', '/memory/add', {
      key: created.body.key,
      project: null,
      body: { text: 'Refused' },
    });
    expect(revokedUse.status).toBe(401);
    expect(revokedUse.text).not.toContain(created.body.key);
    expect((await t.call('POST', '/auth/logout', { token: other.token })).status).toBe(200);
    const afterLogout = await t.call('GET', '/auth/sessions', { token: other.token });
    expect(afterLogout.status).toBe(401);
    expect(afterLogout.text).not.toContain(other.token);
    // The reuse of a spent refresh token above ended that whole session.
    const ended = await t.call('GET', '/auth/sessions', { token });
    expect(ended.status).toBe(401);
    expect(ended.text).not.toContain(token);

    const log = t.logs.join('');
    expect(log.length).toBeGreaterThan(1000); // requests were logged at all
    expect(log).toContain('/org/api-keys');
    for (const secret of secrets) expect(log, 'a secret reached the log').not.toContain(secret);
    // Nor do the stored copies hold them in clear.
    const stored =
      JSON.stringify(await t.database.db.selectFrom('idempotency_keys').selectAll().execute()) +
      JSON.stringify(await t.database.db.selectFrom('refresh_tokens').selectAll().execute()) +
      JSON.stringify(await t.database.db.selectFrom('api_keys').selectAll().execute());
    for (const secret of secrets) expect(stored).not.toContain(secret);
  });
});

forEachDialect('OpenAPI document', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(dialect);
  });
  afterAll(() => t.close());

  it('documents every control-plane route with its credentials', async () => {
    const doc = (await t.call('GET', '/openapi.json', { key: null })).body;
    const expected: Array<[string, string]> = [
      ['post', '/auth/login'],
      ['post', '/auth/refresh'],
      ['post', '/auth/logout'],
      ['get', '/auth/sessions'],
      ['post', '/auth/sessions/{session_id}/revoke'],
      ['get', '/auth/catalogue'],
      ['post', '/organizations'],
      ['get', '/organizations'],
      ['get', '/org/projects'],
      ['post', '/org/projects'],
      ['get', '/org/projects/{project_id}'],
      ['patch', '/org/projects/{project_id}'],
      ['delete', '/org/projects/{project_id}'],
      ['post', '/org/api-keys'],
      ['get', '/org/api-keys'],
      ['get', '/org/api-keys/{key_id}'],
      ['delete', '/org/api-keys/{key_id}'],
      ['post', '/org/api-keys/{key_id}/test'],
      ['post', '/org/api-keys/bulk-revoke'],
      ['get', '/admin/team/audit-logs'],
      ['get', '/org/billing/current-plan'],
    ];
    for (const [method, path] of expected) expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    expect(doc.paths['/org/projects/{project_id}'].patch.security).toEqual([{ bearer: [] }, { apiKey: [] }]);
    expect(doc.paths['/org/projects'].post.security).toEqual([{ bearer: [] }]);
    expect(doc.paths['/auth/login'].post.security).toEqual([]);
    const audit = doc.paths['/admin/team/audit-logs'].get;
    expect(audit.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['actor_id', 'action', 'created_after', 'created_before', 'offset', 'limit']),
    );
    expect(audit.description).toContain('audit:read');
  });
});
