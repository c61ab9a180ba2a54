import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { deriveKey } from '../../core/crypto.js';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { TokenIssuer } from './tokens.js';

const SECRET = new Uint8Array(32).fill(7);

describe('access tokens', () => {
  /** A token signed with the issuer's key but claims of our choosing. */
  const forged = (claims: Record<string, unknown>, edit: (jwt: SignJWT) => SignJWT = (jwt) => jwt) =>
    edit(
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer('engram')
        .setAudience('engram')
        .setExpirationTime('5m'),
    ).sign(deriveKey(SECRET, 'access-token'));

  it('verifies what it issued, and nothing signed with another secret', async () => {
    const issuer = new TokenIssuer(SECRET, 60);
    expect(await issuer.verify(await issuer.issue(12, 34))).toEqual({ userId: 12, sessionId: 34 });
    expect(await issuer.verify(await forged({ sub: '12', sid: 34 }))).toEqual({ userId: 12, sessionId: 34 });
    const other = new TokenIssuer(new Uint8Array(32).fill(8), 60);
    expect(await issuer.verify(await other.issue(12, 34))).toBeUndefined();
    expect(await issuer.verify('not.a.token')).toBeUndefined();
  });

  it('refuses a token whose user or session is not a whole number, or that expired', async () => {
    const issuer = new TokenIssuer(SECRET, 60);
    expect(await issuer.verify(await forged({ sub: 'alice', sid: 34 }))).toBeUndefined();
    expect(await issuer.verify(await forged({ sub: '12', sid: '34' }))).toBeUndefined();
    expect(await issuer.verify(await forged({ sub: '12', sid: 3.5 }))).toBeUndefined();
    expect(await issuer.verify(await forged({ sub: '12' }))).toBeUndefined();
    expect(await issuer.verify(await forged({ sub: '1.5', sid: 34 }))).toBeUndefined();
    expect(
      await issuer.verify(
        await forged({ sub: '12', sid: 34 }, (jwt) => jwt.setExpirationTime(Math.floor(Date.now() / 1000) - 120)),
      ),
    ).toBeUndefined();
    expect(
      await issuer.verify(await forged({ sub: '12', sid: 34 }, (jwt) => jwt.setIssuer('someone-else'))),
    ).toBeUndefined();
  });
});

forEachDialect('sessions as people see them', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);
  const sessionRow = (id: number) =>
    t.database.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('records a use at most once a minute', async () => {
    const login = await t.login();
    const longAgo = new Date(Date.now() - 120_000).toISOString();
    await t.database.db
      .updateTable('sessions')
      .set({ last_used_at: longAgo })
      .where('id', '=', login.sessionId)
      .execute();
    expect((await t.call('GET', '/auth/sessions', { token: login.token })).status).toBe(200);
    const touched = (await sessionRow(login.sessionId)).last_used_at!;
    expect(Date.parse(touched)).toBeGreaterThan(Date.parse(longAgo) + 60_000);

    const recently = new Date(Date.now() - 10_000).toISOString();
    await t.database.db
      .updateTable('sessions')
      .set({ last_used_at: recently })
      .where('id', '=', login.sessionId)
      .execute();
    expect((await t.call('GET', '/auth/sessions', { token: login.token })).status).toBe(200);
    expect((await sessionRow(login.sessionId)).last_used_at).toBe(recently);
  });

  it("shows a member's newest sign-in", async () => {
    const member = await t.member('member');
    const earlier = await t.login({ email: member.email, password: member.password });
    await t.database.db
      .updateTable('sessions')
      .set({ created_at: '2020-01-01T00:00:00.000Z' })
      .where('id', '=', earlier.sessionId)
      .execute();
    const newest = (await sessionRow(member.sessionId)).created_at;
    const one = await t.call('GET', `/org/members/${member.userId}`, { token: owner.token });
    expect(one.status, one.text).toBe(200);
    expect(one.body.last_sign_in_at).toBe(newest);
    const all = await t.call('GET', '/org/members?limit=100', { token: owner.token });
    expect(all.body.items.find((m: { user_id: number }) => m.user_id === member.userId).last_sign_in_at).toBe(newest);
  });

  it("ends a person's other sessions when they change their password, keeping the one that changed it", async () => {
    const member = await t.member('member');
    const second = await t.login({ email: member.email, password: member.password });
    const third = await t.login({ email: member.email, password: member.password });
    const changed = await t.call('POST', '/auth/password', {
      token: member.token,
      body: { current_password: member.password, new_password: 'a brand new passphrase' },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.sessions_ended).toBe(2);
    expect((await t.call('GET', '/auth/sessions', { token: member.token })).status).toBe(200);
    for (const ended of [second, third]) {
      expect((await t.call('GET', '/auth/sessions', { token: ended.token })).status).toBe(401);
      expect((await sessionRow(ended.sessionId)).revoked_at).not.toBeNull();
    }
    expect((await sessionRow(member.sessionId)).revoked_at).toBeNull();
  });
});
