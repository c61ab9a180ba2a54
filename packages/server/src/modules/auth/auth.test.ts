import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { forEachDialect, startTestApp, useTestApp, type TestApp } from '../../testing/harness.js';
import { CAPABILITIES, ROLES, SCOPES } from '../../core/access.js';
import { addMembership, createOrganization } from '../org/service.js';

forEachDialect('sign-in and sessions', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(dialect);
  });
  afterAll(() => t.close());

  const anonymous = { key: null, project: null, endUser: null } as const;

  it('signs in, and the token works until its session is revoked', async () => {
    const res = await t.call('POST', '/auth/login', {
      ...anonymous,
      body: { email: t.email.toUpperCase(), password: t.password },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer', expires_in: 900 });
    expect(res.body.access_token.split('.')).toHaveLength(3);
    expect(res.body.refresh_token).toMatch(/^egr_/);
    const token = res.body.access_token;
    const sessions = await t.call('GET', '/auth/sessions', { token });
    expect(sessions.status).toBe(200);
    expect(sessions.body.items.find((s: { id: number }) => s.id === res.body.session_id)).toMatchObject({
      current: true,
      user_id: t.userId,
    });

    const revoked = await t.call('POST', `/auth/sessions/${res.body.session_id}/revoke`, { token });
    expect(revoked.status).toBe(200);
    const after = await t.call('GET', '/auth/sessions', { token });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('unauthenticated');
    expect(after.headers['www-authenticate']).toBeDefined();
  });

  it('answers a wrong e-mail and a wrong password alike', async () => {
    const wrongPassword = await t.call('POST', '/auth/login', {
      ...anonymous,
      body: { email: t.email, password: 'not the password' },
    });
    const wrongEmail = await t.call('POST', '/auth/login', {
      ...anonymous,
      body: { email: 'nobody@example.com', password: t.password },
    });
    expect(wrongPassword.status).toBe(401);
    expect(wrongEmail.status).toBe(401);
    const strip = (body: { error: Record<string, unknown> }) => ({ ...body.error, request_id: undefined });
    expect(strip(wrongEmail.body)).toEqual(strip(wrongPassword.body));
  });

  it('rotates refresh tokens, and reuse of a spent one ends the session', async () => {
    const first = await t.login();
    const rotated = await t.call('POST', '/auth/refresh', {
      ...anonymous,
      body: { refresh_token: first.refreshToken },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.session_id).toBe(first.sessionId);
    expect(rotated.body.refresh_token).not.toBe(first.refreshToken);
    expect((await t.call('GET', '/auth/sessions', { token: rotated.body.access_token })).status).toBe(200);

    const reused = await t.call('POST', '/auth/refresh', { ...anonymous, body: { refresh_token: first.refreshToken } });
    expect(reused.status).toBe(401);
    // The whole session is gone: its newest access and refresh tokens stop working.
    expect((await t.call('GET', '/auth/sessions', { token: rotated.body.access_token })).status).toBe(401);
    const next = await t.call('POST', '/auth/refresh', {
      ...anonymous,
      body: { refresh_token: rotated.body.refresh_token },
    });
    expect(next.status).toBe(401);
    const row = await t.database.db
      .selectFrom('sessions')
      .select('revoked_reason')
      .where('id', '=', first.sessionId)
      .executeTakeFirstOrThrow();
    expect(row.revoked_reason).toBe('refresh_token_reuse');
  });

  it('logs out', async () => {
    const session = await t.login();
    const res = await t.call('POST', '/auth/logout', { token: session.token });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(session.sessionId);
    expect((await t.call('POST', '/auth/logout', { token: session.token })).status).toBe(401);
    const refreshed = await t.call('POST', '/auth/refresh', {
      ...anonymous,
      body: { refresh_token: session.refreshToken },
    });
    expect(refreshed.status).toBe(401);
  });

  it("shows admins their members' sessions, and members only their own", async () => {
    const admin = await t.login();
    const member = await t.member('member');
    const adminView = await t.call('GET', '/auth/sessions?limit=100', { token: admin.token });
    expect(adminView.body.items.map((s: { id: number }) => s.id)).toContain(member.sessionId);
    const memberView = await t.call('GET', '/auth/sessions', { token: member.token });
    expect(memberView.body.items.map((s: { user_id: number }) => s.user_id)).toEqual([member.userId]);
    // A member cannot see, so cannot revoke, the owner's session.
    const denied = await t.call('POST', `/auth/sessions/${admin.sessionId}/revoke`, { token: member.token });
    expect(denied.status).toBe(404);
    expect((await t.call('GET', '/auth/sessions', { token: admin.token })).status).toBe(200);
    // The owner can end the member's session.
    expect((await t.call('POST', `/auth/sessions/${member.sessionId}/revoke`, { token: admin.token })).status).toBe(
      200,
    );
    expect((await t.call('GET', '/auth/sessions', { token: member.token })).status).toBe(401);
  });

  it("keeps a person's sessions to them and to the organization they were opened for", async () => {
    // A person in two organizations signs in for their first (A, the test organization); B's owner is someone else.
    const person = await t.member('member');
    const orgB = await createOrganization(t.database.db, 'Organization B');
    await addMembership(t.database.db, orgB.id, person.userId, 'member');
    const ownerB = await t.member('owner', { organizationId: orgB.id });
    const ownerA = await t.login();

    const seenByB = await t.call('GET', '/auth/sessions?limit=100', { token: ownerB.token });
    expect(seenByB.status, seenByB.text).toBe(200);
    expect(seenByB.body.items.map((s: { id: number }) => s.id)).toEqual([ownerB.sessionId]);
    expect((await t.call('POST', `/auth/sessions/${person.sessionId}/revoke`, { token: ownerB.token })).status).toBe(
      404,
    );
    expect((await t.call('GET', '/auth/sessions', { token: person.token })).status).toBe(200);

    const seenByA = await t.call('GET', '/auth/sessions?limit=100', { token: ownerA.token });
    expect(seenByA.body.items.map((s: { id: number }) => s.id)).toContain(person.sessionId);
    // The person ends their own session while acting in B: audited in A, where the session was opened.
    const second = await t.login({ email: person.email, password: person.password });
    const revoked = await t.call('POST', `/auth/sessions/${second.sessionId}/revoke`, {
      token: person.token,
      headers: { 'X-Organization-ID': orgB.id },
    });
    expect(revoked.status, revoked.text).toBe(200);
    const rows = await t.database.db
      .selectFrom('audit_log')
      .select(['organization_id', 'actor_id'])
      .where('action', '=', 'session.revoke')
      .where('target_id', '=', String(second.sessionId))
      .execute();
    expect(rows).toEqual([{ organization_id: t.organizationId, actor_id: person.userId }]);
    // An admin of A ends it too.
    expect((await t.call('POST', `/auth/sessions/${person.sessionId}/revoke`, { token: ownerA.token })).status).toBe(
      200,
    );
    expect((await t.call('GET', '/auth/sessions', { token: person.token })).status).toBe(401);
  });

  it('narrows a token to the scopes asked for', async () => {
    const narrow = await t.login({ scopes: ['projects:read'] });
    expect((await t.call('GET', '/org/projects', { token: narrow.token })).status).toBe(200);
    const denied = await t.call('GET', '/auth/sessions', { token: narrow.token });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('forbidden');
    const unknown = await t.call('POST', '/auth/login', {
      ...anonymous,
      body: { email: t.email, password: t.password, scopes: ['root'] },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.field).toBe('scopes/0');
  });

  it('refuses malformed and mixed credentials', async () => {
    const session = await t.login();
    expect((await t.call('GET', '/auth/sessions', { token: 'not-a-jwt' })).status).toBe(401);
    expect((await t.call('GET', '/auth/sessions', { token: `${session.token.slice(0, -2)}xx` })).status).toBe(401);
    const both = await t.call('GET', '/auth/sessions', { token: session.token, key: t.key });
    expect(both.status).toBe(400);
    // A bearer-only route does not take an API key.
    expect((await t.call('GET', '/auth/sessions', { key: t.key })).status).toBe(401);
    // And a data-plane route does not take a bearer token.
    expect(
      (await t.call('GET', '/memory/1', { token: session.token, endUser: 'user-1', project: t.projectId })).status,
    ).toBe(401);
  });

  it('serves the catalogue', async () => {
    const res = await t.call('GET', '/auth/catalogue', anonymous);
    expect(res.status).toBe(200);
    expect(res.body.roles.map((r: { name: string }) => r.name)).toEqual(['owner', 'admin', 'member', 'viewer']);
    expect(res.body.scopes.map((s: { name: string }) => s.name)).toContain('audit:read');
    expect(res.body.operations).toContainEqual({
      method: 'PATCH',
      path: '/org/projects/:project_id',
      accepts: ['bearer', 'api_key'],
      scope: 'projects:write',
      capability: 'projects.manage',
    });
  });
});

forEachDialect('login throttling', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(dialect, {
      auth: {
        accessTokenTtlSeconds: 900,
        sessionTtlSeconds: 86_400,
        loginMaxFailures: 3,
        loginIpMaxFailures: 1_000,
        loginWindowSeconds: 600,
      },
    });
  });
  afterAll(() => t.close());

  const attempt = (email: string, password: string) =>
    t.call('POST', '/auth/login', { key: null, project: null, endUser: null, body: { email, password } });

  it('locks an account after repeated failures, known or not, even for the right password', async () => {
    for (const email of [t.email, 'ghost@example.com']) {
      for (let i = 0; i < 3; i++) expect((await attempt(email, 'wrong password')).status).toBe(401);
      const locked = await attempt(email, t.password);
      expect(locked.status).toBe(429);
      expect(locked.body.error.code).toBe('rate_limited');
      expect(Number(locked.headers['retry-after'])).toBeGreaterThan(500);
    }
  });

  it('locks an IP after repeated failures across accounts', async () => {
    const strict = await startTestApp(dialect, {
      auth: {
        accessTokenTtlSeconds: 900,
        sessionTtlSeconds: 86_400,
        loginMaxFailures: 100,
        loginIpMaxFailures: 4,
        loginWindowSeconds: 600,
      },
    });
    try {
      for (let i = 0; i < 4; i++) {
        const res = await strict.call('POST', '/auth/login', {
          key: null,
          body: { email: `guess-${i}@example.com`, password: 'x' },
        });
        expect(res.status).toBe(401);
      }
      const res = await strict.call('POST', '/auth/login', {
        key: null,
        body: { email: strict.email, password: strict.password },
      });
      expect(res.status).toBe(429);
    } finally {
      await strict.close();
    }
  });
});

forEachDialect('sessions and access tokens expire', (dialect) => {
  // Access tokens that are already past their expiry when issued (TTL 0): no sleeping needed.
  const t = useTestApp(dialect, () => ({ auth: { ...loadConfig({}).auth, accessTokenTtlSeconds: 0 } }));
  const anonymous = { key: null, project: null, endUser: null } as const;

  it('refuses an expired access token while its session lives, and a token and refresh token of an expired session', async () => {
    const session = await t.login();
    const expired = await t.call('GET', '/auth/sessions', { token: session.token });
    expect(expired.status).toBe(401);
    expect(expired.body.error.code).toBe('unauthenticated');
    const refreshed = await t.call('POST', '/auth/refresh', {
      ...anonymous,
      body: { refresh_token: session.refreshToken },
    });
    expect(refreshed.status, refreshed.text).toBe(200);

    // The session's own end: its expiry moved into the past (the server compares with its clock).
    await t.database.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1_000).toISOString() })
      .where('id', '=', session.sessionId)
      .execute();
    const ended = await t.call('POST', '/auth/refresh', {
      ...anonymous,
      body: { refresh_token: refreshed.body.refresh_token },
    });
    expect(ended.status).toBe(401);
  });
});

forEachDialect('an expired session', (dialect) => {
  const t = useTestApp(dialect);
  it('ends its access tokens at once and leaves the session list', async () => {
    const owner = await t.login();
    const other = await t.login();
    expect((await t.call('GET', '/auth/sessions', { token: other.token })).status).toBe(200);
    await t.database.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1_000).toISOString() })
      .where('id', '=', other.sessionId)
      .execute();
    expect((await t.call('GET', '/auth/sessions', { token: other.token })).status).toBe(401);
    const listed = await t.call('GET', '/auth/sessions?limit=100', { token: owner.token });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((s: { id: number }) => s.id)).toContain(owner.sessionId);
    expect(listed.body.items.map((s: { id: number }) => s.id)).not.toContain(other.sessionId);
  });
});

forEachDialect('the auth routes as declared', (dialect) => {
  // The app starts inside the test, so that the routes' declarations (limits, access, handlers)
  // are made under it: a mutation test of routes.ts sees what each declaration is for.
  it('limits sign-in and refresh, records the client, serves each operation and lists every declared access', async () => {
    const t = await startTestApp(dialect, { rateLimit: { max: 1_000, windowSeconds: 60, loginMax: 2 } });
    try {
      const anonymous = { key: null, project: null, endUser: null } as const;
      const login = () =>
        t.call('POST', '/auth/login', {
          ...anonymous,
          headers: { 'user-agent': 'probe/1.0' },
          body: { email: t.email, password: t.password },
        });
      const first = await login();
      expect(first.status).toBe(200);
      const token = first.body.access_token;
      const sessions = await t.call('GET', '/auth/sessions', { token });
      expect(sessions.status).toBe(200);
      expect(sessions.body.items.find((s: { id: number }) => s.id === first.body.session_id)).toMatchObject({
        user_agent: 'probe/1.0',
        current: true,
      });
      const second = await login();
      expect(second.status).toBe(200);
      const limited = await login();
      expect(limited.status).toBe(429);
      expect(limited.headers['ratelimit-limit']).toBe('2');

      const refresh = (refreshToken: string) =>
        t.call('POST', '/auth/refresh', { ...anonymous, body: { refresh_token: refreshToken } });
      const refreshed = await refresh(first.body.refresh_token);
      expect(refreshed.status).toBe(200);
      expect((await refresh(refreshed.body.refresh_token)).status).toBe(200);
      const tooMany = await refresh('egr_anything');
      expect(tooMany.status).toBe(429);
      expect(tooMany.headers['ratelimit-limit']).toBe('2');

      const revoked = await t.call('POST', `/auth/sessions/${second.body.session_id}/revoke`, { token });
      expect(revoked.status).toBe(200);
      expect(revoked.body).toMatchObject({ id: second.body.session_id, revoked_at: expect.any(String) });
      const loggedOut = await t.call('POST', '/auth/logout', { token });
      expect(loggedOut.status).toBe(200);
      expect(loggedOut.body).toMatchObject({ id: first.body.session_id, revoked_at: expect.any(String) });

      const catalogue = await t.call('GET', '/auth/catalogue', anonymous);
      expect(catalogue.status).toBe(200);
      expect(catalogue.body.scopes).toEqual(
        Object.entries(SCOPES).map(([name, description]) => ({ name, description })),
      );
      expect(catalogue.body.capabilities).toEqual(
        Object.entries(CAPABILITIES).map(([name, description]) => ({ name, description })),
      );
      expect(catalogue.body.roles).toEqual(
        Object.entries(ROLES).map(([name, capabilities]) => ({ name, capabilities: [...capabilities] })),
      );
      const operations = catalogue.body.operations as Array<{ method: string; path: string }>;
      expect(operations).toContainEqual({
        method: 'POST',
        path: '/auth/logout',
        accepts: ['bearer'],
        scope: null,
        capability: null,
      });
      expect(operations).toContainEqual({
        method: 'GET',
        path: '/auth/sessions',
        accepts: ['bearer'],
        scope: 'sessions:read',
        capability: null,
      });
      // Undeclared accepts means an API key.
      expect(operations).toContainEqual({
        method: 'GET',
        path: '/memory/:memory_id',
        accepts: ['api_key'],
        scope: 'memories:read',
        capability: null,
      });
      // Public routes declare no access and are not listed; HEAD answers as its GET does.
      expect(operations.some((o) => o.path === '/auth/login' || o.path === '/auth/catalogue')).toBe(false);
      expect(operations.some((o) => o.method === 'HEAD')).toBe(false);
      expect(new Set(operations.map((o) => `${o.method} ${o.path}`)).size).toBe(operations.length);
    } finally {
      await t.close();
    }
  });
});
