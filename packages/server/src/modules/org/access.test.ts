import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, startTestApp, type Login, type TestApp } from '../../testing/harness.js';
import { ALL_SCOPES } from '../../core/access.js';
import { createApiKey } from './service.js';

/**
 * The access matrix over every control-plane route: no credential -> 401, a credential of another
 * organization -> 404 (or, for lists, only its own rows), insufficient role or scope -> 403, and in
 * every refused case nothing in the database changed.
 */

interface Case {
  method: string;
  url: string;
  body?: unknown;
  scope: string;
  /** A role that lacks the capability the route needs, when some role does. */
  weakRole?: 'viewer' | 'member';
  /**
   * item: names a resource of ours (404); org: acts in an organization (X-Organization-ID of ours -> 404);
   * user: the caller's own; ids: a list of ids, each answered not_found.
   */
  foreign: 'item' | 'org' | 'user' | 'ids';
  /** Routes that also take an API key. */
  apiKey?: boolean;
}

forEachDialect('control-plane access matrix', (dialect) => {
  let t: TestApp;
  let owner: Login;
  let stranger: Login;
  let strangerKey: string;
  let keyId: number;
  const cases: Case[] = [];

  beforeAll(async () => {
    t = await startTestApp(dialect);
    owner = await t.login();
    const other = await t.otherTenant();
    // A key of the other organization that carries every scope, so that only the organization differs.
    strangerKey = (
      await createApiKey(t.database.db, { organizationId: other.organizationId, name: 'stranger', scopes: ALL_SCOPES })
    ).key;
    stranger = await t.member('owner', { organizationId: other.organizationId });
    keyId = (
      await t.call('POST', '/org/api-keys', { token: owner.token, body: { name: 'target', scopes: ['memories:read'] } })
    ).body.id;
    const p = `/org/projects/${t.projectId}`;
    cases.push(
      { method: 'GET', url: '/auth/sessions', scope: 'sessions:read', foreign: 'user' },
      { method: 'POST', url: `/auth/sessions/${owner.sessionId}/revoke`, scope: 'sessions:write', foreign: 'item' },
      { method: 'GET', url: '/organizations', scope: 'organizations:read', foreign: 'user' },
      { method: 'POST', url: '/organizations', body: { name: 'New' }, scope: 'organizations:write', foreign: 'user' },
      { method: 'GET', url: '/org/projects', scope: 'projects:read', foreign: 'org' },
      {
        method: 'POST',
        url: '/org/projects',
        body: { name: 'New' },
        scope: 'projects:write',
        weakRole: 'viewer',
        foreign: 'org',
      },
      { method: 'GET', url: p, scope: 'projects:read', foreign: 'item' },
      {
        method: 'PATCH',
        url: p,
        body: { name: 'Changed' },
        scope: 'projects:write',
        weakRole: 'member',
        foreign: 'item',
        apiKey: true,
      },
      { method: 'DELETE', url: p, scope: 'projects:write', weakRole: 'member', foreign: 'item' },
      {
        method: 'POST',
        url: '/org/api-keys',
        body: { name: 'New' },
        scope: 'keys:write',
        weakRole: 'viewer',
        foreign: 'org',
      },
      { method: 'GET', url: '/org/api-keys', scope: 'keys:read', foreign: 'org' },
      { method: 'GET', url: `/org/api-keys/${keyId}`, scope: 'keys:read', foreign: 'item' },
      { method: 'DELETE', url: `/org/api-keys/${keyId}`, scope: 'keys:write', weakRole: 'member', foreign: 'item' },
      { method: 'POST', url: `/org/api-keys/${keyId}/test`, scope: 'keys:read', foreign: 'item' },
      {
        method: 'POST',
        url: '/org/api-keys/bulk-revoke',
        body: { ids: [keyId] },
        scope: 'keys:write',
        weakRole: 'viewer',
        foreign: 'ids',
      },
      {
        method: 'GET',
        url: '/admin/team/audit-logs',
        scope: 'audit:read',
        weakRole: 'member',
        foreign: 'org',
        apiKey: true,
      },
      { method: 'GET', url: '/org/billing/current-plan', scope: 'billing:read', foreign: 'org' },
      {
        method: 'POST',
        url: '/org/invitations',
        body: { email: 'new@example.com', role: 'member' },
        scope: 'members:write',
        weakRole: 'viewer',
        foreign: 'org',
      },
      { method: 'GET', url: '/org/members', scope: 'members:read', foreign: 'org' },
      { method: 'GET', url: `/org/members/${owner.userId}`, scope: 'members:read', foreign: 'item' },
      {
        method: 'PATCH',
        url: `/org/members/${owner.userId}`,
        body: { role: 'admin' },
        scope: 'members:write',
        weakRole: 'member',
        foreign: 'item',
      },
      {
        method: 'DELETE',
        url: `/org/members/${owner.userId}`,
        scope: 'members:write',
        weakRole: 'viewer',
        foreign: 'item',
      },
      {
        method: 'POST',
        url: `/org/members/${owner.userId}/password-reset`,
        scope: 'members:write',
        weakRole: 'member',
        foreign: 'item',
      },
      {
        method: 'POST',
        url: '/auth/password',
        body: { current_password: 'x', new_password: 'y' },
        scope: 'account:write',
        foreign: 'user',
      },
    );
  });
  afterAll(() => t.close());

  /** Everything a refused request must leave as it was (last-use times aside). */
  const snapshot = async () => {
    const db = t.database.db;
    return JSON.stringify(
      await Promise.all([
        db.selectFrom('organizations').selectAll().orderBy('id').execute(),
        db.selectFrom('memberships').selectAll().orderBy('organization_id').orderBy('user_id').execute(),
        db.selectFrom('projects').selectAll().orderBy('id').execute(),
        db.selectFrom('api_keys').select(['id', 'name', 'revoked_at', 'scopes']).orderBy('id').execute(),
        db.selectFrom('sessions').select(['id', 'revoked_at']).orderBy('id').execute(),
        db.selectFrom('users').select(['id', 'password_hash']).orderBy('id').execute(),
        db.selectFrom('invitations').selectAll().orderBy('id').execute(),
        db.selectFrom('password_resets').selectAll().orderBy('token_hash').execute(),
        db
          .selectFrom('audit_log')
          .select((eb) => eb.fn.countAll().as('n'))
          .execute(),
        db
          .selectFrom('outbox_events')
          .select((eb) => eb.fn.countAll().as('n'))
          .execute(),
      ]),
    );
  };

  const refused = async (c: Case, expected: number, options: Parameters<TestApp['call']>[2], what: string) => {
    const before = await snapshot();
    const res = await t.call(c.method, c.url, { ...options, ...(c.body ? { body: c.body } : {}) });
    expect(res.status, `${c.method} ${c.url}: ${what}`).toBe(expected);
    expect(res.body.error.code).toBe({ 401: 'unauthenticated', 403: 'forbidden', 404: 'not_found' }[expected]);
    expect(await snapshot(), `${c.method} ${c.url}: ${what} changed the database`).toBe(before);
    return res;
  };

  it('answers 401 without a credential, or with a bad one', async () => {
    for (const c of cases) {
      const res = await refused(c, 401, { key: null }, 'no credential');
      expect(res.headers['www-authenticate']).toBeDefined();
      await refused(c, 401, { token: 'eyJhbGciOiJIUzI1NiJ9.e30.forged' }, 'forged token');
      if (c.apiKey)
        await refused(c, 401, { key: `egm_${'x'.repeat(43)}`, project: null, endUser: null }, 'unknown key');
    }
  });

  it('answers 404 to a credential of another organization, and never shows ours', async () => {
    for (const c of cases) {
      if (c.foreign === 'item') await refused(c, 404, { token: stranger.token }, 'foreign token');
      if (c.foreign === 'org')
        await refused(
          c,
          404,
          { token: stranger.token, headers: { 'x-organization-id': t.organizationId } },
          'foreign token naming our organization',
        );
      if (c.foreign === 'ids') {
        const before = await snapshot();
        const res = await t.call(c.method, c.url, { token: stranger.token, body: c.body });
        expect(res.status).toBe(200);
        expect(res.body.results).toEqual([{ id: keyId, status: 'not_found' }]);
        expect(await snapshot()).toBe(before);
      }
      if (c.apiKey && c.foreign === 'item')
        await refused(c, 404, { key: strangerKey, project: null, endUser: null }, 'foreign key');
      if (c.method === 'GET' && c.foreign !== 'item') {
        const own = await t.call(c.method, c.url, { token: stranger.token });
        expect(own.status).toBe(200);
        expect(own.text).not.toContain(t.organizationId);
        expect(own.text).not.toContain(t.projectId);
        expect(own.text).not.toContain(`"user_id":${owner.userId},`);
      }
    }
    const foreignAudit = await t.call('GET', '/admin/team/audit-logs', {
      key: strangerKey,
      project: null,
      endUser: null,
    });
    expect(foreignAudit.status).toBe(200);
    expect(foreignAudit.text).not.toContain(t.projectId);
    expect(foreignAudit.body.items.every((e: { actor_id: number }) => e.actor_id !== owner.userId)).toBe(true);
  });

  it('answers 403 to a role without the capability or a credential without the scope', async () => {
    const weak = { viewer: await t.member('viewer'), member: await t.member('member') };
    for (const c of cases) {
      if (c.weakRole) await refused(c, 403, { token: weak[c.weakRole].token }, `role ${c.weakRole}`);
      const narrow = await t.login({ scopes: ALL_SCOPES.filter((s) => s !== c.scope) });
      await refused(c, 403, { token: narrow.token }, `token without ${c.scope}`);
      if (c.apiKey) {
        const key = await t.newKey({ scopes: ALL_SCOPES.filter((s) => s !== c.scope) });
        await refused(c, 403, { key: key.key, project: null, endUser: null }, `key without ${c.scope}`);
      }
    }
  });

  it('lets the owner through on every route (the matrix is not refusing everything)', async () => {
    for (const c of cases.filter((c) => c.method === 'GET')) {
      expect((await t.call(c.method, c.url, { token: owner.token })).status, c.url).toBe(200);
    }
  });
});
