import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { sql, type Transaction } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp, type TestApp } from '../../testing/harness.js';
import { until } from '../../testing/until.js';
import { holdUncommitted, lockWaiters, untilLocked } from '../../testing/locks.js';
import type { DB } from '../../store/schema.js';

const STRONG = 'plum tree in the rain';

/** Audit actions and outbox event types written since `afterId`. */
async function effectsSince(t: TestApp, afterAudit: number, afterEvent: number) {
  const audit = await t.database.db
    .selectFrom('audit_log')
    .select(['action', 'actor_type', 'actor_id', 'target_id'])
    .where('id', '>', afterAudit)
    .orderBy('id')
    .execute();
  const events = await t.database.db
    .selectFrom('outbox_events')
    .select(['type', 'payload'])
    .where('id', '>', afterEvent)
    .orderBy('id')
    .execute();
  return {
    audit,
    events: events.map((e) => ({
      type: e.type,
      payload: typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload,
    })),
  };
}

async function marks(t: TestApp) {
  const a = await t.database.db
    .selectFrom('audit_log')
    .select((eb) => eb.fn.max('id').as('m'))
    .executeTakeFirst();
  const e = await t.database.db
    .selectFrom('outbox_events')
    .select((eb) => eb.fn.max('id').as('m'))
    .executeTakeFirst();
  return [Number(a?.m ?? 0), Number(e?.m ?? 0)] as const;
}

forEachDialect('members', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);

  const invite = (email: string, role: string, token = owner.token) =>
    t.call('POST', '/org/invitations', { token, body: { email, role } });
  const accept = (token: string, password: string) =>
    t.call('POST', '/invitations/accept', { key: null, project: null, endUser: null, body: { token, password } });
  const roleOf = async (userId: number) =>
    (
      await t.database.db
        .selectFrom('memberships')
        .select('role')
        .where('organization_id', '=', t.organizationId)
        .where('user_id', '=', userId)
        .executeTakeFirst()
    )?.role;

  it('invites with a role; the single-use link creates the account, audited, with member.* events', async () => {
    const [a, e] = await marks(t);
    const email = `Ada-${dialect}@Example.com`;
    const res = await invite(email, 'admin');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      email: email.toLowerCase(),
      role: 'admin',
      invited_by: owner.userId,
      mailed: false,
    });
    expect(res.body.token).toMatch(/^egi_/);
    expect(res.body.url).toBe(`http://127.0.0.1:8080/invitations/accept#token=${res.body.token}`);
    const stored = await t.database.db
      .selectFrom('invitations')
      .selectAll()
      .where('id', '=', res.body.id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(res.body.token);

    const weak = await accept(res.body.token, 'short');
    expect(weak.status).toBe(400);
    expect(weak.body.error.field).toBe('password');
    const common = await accept(res.body.token, 'Password123');
    expect(common.status).toBe(400);
    expect(common.body.error.message).toMatch(/common passwords/);

    const joined = await accept(res.body.token, STRONG);
    expect(joined.status).toBe(200);
    expect(joined.body).toMatchObject({
      organization_id: t.organizationId,
      role: 'admin',
      created_account: true,
      email: email.toLowerCase(),
    });
    expect((await accept(res.body.token, STRONG)).status).toBe(404);

    const admin = await t.login({ email: email.toLowerCase(), password: STRONG });
    const list = await t.call('GET', '/org/members', { token: admin.token });
    expect(list.status).toBe(200);
    const me = list.body.items.find((m: { user_id: number }) => m.user_id === joined.body.user_id);
    expect(me).toMatchObject({ role: 'admin', email: email.toLowerCase() });
    expect(me.last_sign_in_at).toMatch(/^\d{4}-.*Z$/);
    expect(list.body.items.find((m: { user_id: number }) => m.user_id === owner.userId).role).toBe('owner');

    const { audit, events } = await effectsSince(t, a, e);
    expect(audit.filter((r) => r.action.startsWith('member.')).map((r) => [r.action, r.actor_id])).toEqual([
      ['member.invite', owner.userId],
      ['member.join', joined.body.user_id],
    ]);
    expect(events.filter((ev) => ev.type.startsWith('member.'))).toEqual([
      { type: 'member.invited', payload: { invitation_id: res.body.id, role: 'admin' } },
      { type: 'member.joined', payload: { user_id: joined.body.user_id, role: 'admin' } },
    ]);
  });

  it('links work as long as configured: 7 days and 1 hour by default', async () => {
    const invited = await invite(`lifetime-${dialect}@example.com`, 'viewer');
    expect(Date.parse(invited.body.expires_at) - Date.parse(invited.body.created_at)).toBe(7 * 86_400_000);
    const member = await t.member('viewer');
    const sent = Date.now();
    const reset = await t.call('POST', `/org/members/${member.userId}/password-reset`, { token: owner.token });
    const answered = Date.now();
    expect(reset.status).toBe(201);
    // An hour from the server's clock while it answered, however long that took.
    expect(Date.parse(reset.body.expires_at) - 3_600_000).toBeGreaterThanOrEqual(sent);
    expect(Date.parse(reset.body.expires_at) - 3_600_000).toBeLessThanOrEqual(answered);
  });

  it('joins with an existing account only with its password; expired links and members already in are refused', async () => {
    const other = await t.member('viewer');
    const otherOrg = await t.call('POST', '/organizations', { token: owner.token, body: { name: 'Second' } });
    const res = await invite(other.email, 'member', owner.token);
    expect(res.status).toBe(409);
    expect(res.body.error.field).toBe('email');

    const inSecond = await t.call('POST', '/org/invitations', {
      token: owner.token,
      headers: { 'x-organization-id': otherOrg.body.id },
      body: { email: other.email, role: 'member' },
    });
    expect(inSecond.status).toBe(201);
    const wrong = await accept(inSecond.body.token, 'not the password at all');
    expect(wrong.status).toBe(401);
    const ok = await accept(inSecond.body.token, other.password);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      user_id: other.userId,
      created_account: false,
      organization_id: otherOrg.body.id,
      role: 'member',
    });

    const late = await invite(`late-${dialect}@example.com`, 'viewer');
    await t.database.db
      .updateTable('invitations')
      .set({ expires_at: '2020-01-01T00:00:00.000Z' })
      .where('id', '=', late.body.id)
      .execute();
    expect((await accept(late.body.token, STRONG)).status).toBe(404);
    expect(
      await t.database.db
        .selectFrom('users')
        .select('id')
        .where('email', '=', `late-${dialect}@example.com`)
        .executeTakeFirst(),
    ).toBeUndefined();
  });

  it('lists invitations with their status; revoking a pending one stops its link, audited; only owners revoke owner invitations', async () => {
    const list = async (query = '', token = owner.token) => t.call('GET', `/org/invitations${query}`, { token });
    const revoke = (id: number, token = owner.token) => t.call('DELETE', `/org/invitations/${id}`, { token });
    const pending = await invite(`pending-${dialect}@example.com`, 'member');
    const accepted = await invite(`accepted-${dialect}@example.com`, 'viewer');
    expect((await accept(accepted.body.token, STRONG)).status).toBe(200);
    const expired = await invite(`expired-${dialect}@example.com`, 'viewer');
    await t.database.db
      .updateTable('invitations')
      .set({ expires_at: '2020-01-01T00:00:00.000Z' })
      .where('id', '=', expired.body.id)
      .execute();
    const toOwner = await invite(`owner-${dialect}@example.com`, 'owner');

    const all = await list();
    expect(all.status).toBe(200);
    const statusOf = (items: Array<{ id: number; status: string }>) => new Map(items.map((i) => [i.id, i.status]));
    const statuses = statusOf(all.body.items);
    expect([pending, accepted, expired, toOwner].map((i) => statuses.get(i.body.id))).toEqual([
      'pending',
      'accepted',
      'expired',
      'pending',
    ]);
    expect(all.body.items.map((i: { id: number }) => i.id)).toEqual(
      [...all.body.items.map((i: { id: number }) => i.id)].sort((a, b) => b - a),
    );
    expect(JSON.stringify(all.body)).not.toContain('egi_');
    const acceptedItem = all.body.items.find((i: { id: number }) => i.id === accepted.body.id);
    expect(acceptedItem).toMatchObject({
      email: `accepted-${dialect}@example.com`,
      role: 'viewer',
      invited_by: owner.userId,
      accepted_by: expect.any(Number),
      revoked_at: null,
    });
    expect((await list('?status=expired')).body.items.map((i: { id: number }) => i.id)).toContain(expired.body.id);
    expect((await list('?status=pending')).body.items.every((i: { status: string }) => i.status === 'pending')).toBe(
      true,
    );
    const bad = await list('?status=lost');
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('status');

    // An admin may revoke a member's invitation, not an owner's.
    const admin = await t.member('admin');
    const [a, e] = await marks(t);
    const refused = await revoke(toOwner.body.id, admin.token);
    expect(refused.status).toBe(403);
    const revoked = await revoke(pending.body.id, admin.token);
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body).toMatchObject({
      id: pending.body.id,
      status: 'revoked',
      revoked_by: admin.userId,
      revoked_at: expect.any(String),
    });
    expect((await accept(pending.body.token, STRONG)).status).toBe(404);
    expect(
      await t.database.db
        .selectFrom('users')
        .select('id')
        .where('email', '=', `pending-${dialect}@example.com`)
        .executeTakeFirst(),
    ).toBeUndefined();
    const { audit, events } = await effectsSince(t, a, e);
    expect(audit.filter((r) => r.action.startsWith('member.')).map((r) => [r.action, r.actor_id, r.target_id])).toEqual(
      [['member.invite_revoke', admin.userId, String(pending.body.id)]],
    );
    expect(events.filter((ev) => ev.type.startsWith('member.'))).toEqual([
      { type: 'member.invitation_revoked', payload: { invitation_id: pending.body.id, role: 'member' } },
    ]);
    expect((await list('?status=revoked')).body.items.map((i: { id: number }) => i.id)).toContain(pending.body.id);

    // Only a pending one: the others are 409, naming what they are, and stay as they were.
    for (const [id, status] of [
      [pending.body.id, 'revoked'],
      [accepted.body.id, 'accepted'],
      [expired.body.id, 'expired'],
    ] as const) {
      const again = await revoke(id);
      expect(again.status).toBe(409);
      expect(again.body.error.message).toContain(`is ${status}`);
    }
    const rows = await t.database.db
      .selectFrom('invitations')
      .select(['id', 'revoked_at'])
      .where('id', 'in', [accepted.body.id, expired.body.id])
      .execute();
    expect(rows.map((r) => r.revoked_at)).toEqual([null, null]);
    // Another organization's invitation does not exist for this one; a viewer may list but not revoke.
    const other = await t.otherTenant();
    const stranger = await t.member('admin', { organizationId: other.organizationId });
    expect((await revoke(toOwner.body.id, stranger.token)).status).toBe(404);
    expect((await list('', stranger.token)).body.items.map((i: { id: number }) => i.id)).not.toContain(toOwner.body.id);
    const viewer = await t.member('viewer');
    expect((await list('', viewer.token)).status).toBe(200);
    expect((await revoke(toOwner.body.id, viewer.token)).status).toBe(403);
    expect((await revoke(toOwner.body.id)).status).toBe(200);
  });

  it.runIf(dialect === 'postgres')(
    'an acceptance that read the invitation before a revocation committed is refused (404), and the reverse (409)',
    async () => {
      for (const first of ['revoke', 'accept'] as const) {
        const invited = await invite(`race-${first}-${dialect}@example.com`, 'viewer');
        // Both read it pending; the row is held, so they queue for it in the order started.
        const held = await holdUncommitted(t, (trx) =>
          sql`SELECT id FROM invitations WHERE id = ${invited.body.id} FOR UPDATE`.execute(trx),
        );
        const revoking = () => t.call('DELETE', `/org/invitations/${invited.body.id}`, { token: owner.token });
        const accepting = () => accept(invited.body.token, STRONG);
        const winner = first === 'revoke' ? revoking() : accepting();
        await lockWaiters(t, 1, `the ${first} to wait for the invitation's row`);
        const loser = first === 'revoke' ? accepting() : revoking();
        await lockWaiters(t, 2, 'the other to wait behind it');
        await held.release();
        expect((await winner).status).toBe(200);
        expect((await loser).status).toBe(first === 'revoke' ? 404 : 409);
        const row = await t.database.db
          .selectFrom('invitations')
          .select(['accepted_at', 'revoked_at'])
          .where('id', '=', invited.body.id)
          .executeTakeFirstOrThrow();
        expect([row.accepted_at !== null, row.revoked_at !== null]).toEqual([first === 'accept', first === 'revoke']);
        const account = await t.database.db
          .selectFrom('users')
          .select('id')
          .where('email', '=', `race-${first}-${dialect}@example.com`)
          .executeTakeFirst();
        expect(account !== undefined).toBe(first === 'accept');
      }
    },
  );

  it('changes roles; only owners touch owners; the last owner cannot be demoted or removed (409)', async () => {
    const admin = await t.member('admin');
    const viewer = await t.member('viewer');
    const promoted = await t.call('PATCH', `/org/members/${viewer.userId}`, {
      token: admin.token,
      body: { role: 'member' },
    });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ user_id: viewer.userId, role: 'member' });
    expect(
      (await t.call('PATCH', `/org/members/${viewer.userId}`, { token: admin.token, body: { role: 'owner' } })).status,
    ).toBe(403);
    expect(
      (await t.call('PATCH', `/org/members/${owner.userId}`, { token: admin.token, body: { role: 'viewer' } })).status,
    ).toBe(403);
    expect(
      (await t.call('PATCH', `/org/members/${viewer.userId}`, { token: owner.token, body: { role: 'superuser' } })).body
        .error.field,
    ).toBe('role');

    const demote = await t.call('PATCH', `/org/members/${owner.userId}`, {
      token: owner.token,
      body: { role: 'admin' },
    });
    expect(demote.status).toBe(409);
    const remove = await t.call('DELETE', `/org/members/${owner.userId}`, { token: owner.token });
    expect(remove.status).toBe(409);
    const row = await t.database.db
      .selectFrom('memberships')
      .select('role')
      .where('organization_id', '=', t.organizationId)
      .where('user_id', '=', owner.userId)
      .executeTakeFirst();
    expect(row?.role).toBe('owner');

    // With a second owner, the first may step down.
    const second = await t.member('owner');
    expect(
      (await t.call('PATCH', `/org/members/${second.userId}`, { token: owner.token, body: { role: 'admin' } })).status,
    ).toBe(200);
    expect(
      (await t.call('PATCH', `/org/members/${second.userId}`, { token: owner.token, body: { role: 'owner' } })).status,
    ).toBe(200);
  });

  it.runIf(dialect === 'postgres')(
    "an admin's change or removal of members made owners meanwhile is refused with 409, changing nothing",
    async () => {
      const admin = await t.member('admin');
      const [changed, removed] = [await t.member('member'), await t.member('member')];
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let promoted!: () => void;
      const promotion = new Promise<void>((resolve) => (promoted = resolve));
      // An owner makes both owners; not yet committed when the admin's requests read their roles.
      const owners = t.database.db.transaction().execute(async (trx) => {
        await trx
          .updateTable('memberships')
          .set({ role: 'owner' })
          .where('organization_id', '=', t.organizationId)
          .where('user_id', 'in', [changed.userId, removed.userId])
          .execute();
        promoted();
        await released;
      });
      await promotion;
      const change = t.call('PATCH', `/org/members/${changed.userId}`, {
        token: admin.token,
        body: { role: 'viewer' },
      });
      const removal = t.call('DELETE', `/org/members/${removed.userId}`, { token: admin.token });
      await until(
        async () =>
          (
            await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%memberships%'`.execute(
              t.database.db,
            )
          ).rows[0]!.n === 2,
        'both requests to wait for the promotion',
        10_000,
      );
      release();
      await owners;
      for (const res of [await change, await removal]) {
        expect(res.status, res.text).toBe(409);
        expect(res.body.error.code).toBe('conflict');
      }
      expect([await roleOf(changed.userId), await roleOf(removed.userId)]).toEqual(['owner', 'owner']);
    },
  );

  it.runIf(dialect === 'postgres')(
    'an owner demoted after authenticating is refused an owner-level change as an admin would be (403, nothing changed)',
    async () => {
      const acting = await t.member('owner');
      const target = await t.member('member');
      // The request reads the acting owner's role as it authenticates, then stops at the session's last use (due), whose
      // row the test holds; the demotion commits meanwhile.
      await t.database.db
        .updateTable('sessions')
        .set({ last_used_at: '2000-01-01T00:00:00.000Z' })
        .where('user_id', '=', acting.userId)
        .execute();
      const session = await holdUncommitted(t, (trx) =>
        trx.selectFrom('sessions').select('id').where('user_id', '=', acting.userId).forUpdate().execute(),
      );
      const promotion = t.call('PATCH', `/org/members/${target.userId}`, {
        token: acting.token,
        body: { role: 'owner' },
      });
      await untilLocked(
        t,
        async () =>
          (
            await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'update "sessions"%'`.execute(
              t.database.db,
            )
          ).rows[0]!.n === 1,
        'the request, authenticated as an owner, to wait at its session',
      );
      await t.database.db
        .updateTable('memberships')
        .set({ role: 'admin' })
        .where('organization_id', '=', t.organizationId)
        .where('user_id', '=', acting.userId)
        .execute();
      const [a, e] = await marks(t);
      await session.release();
      const res = await promotion;
      expect(res.status, res.text).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'forbidden', message: 'Only an owner can make someone an owner' });
      expect(await roleOf(target.userId)).toBe('member');
      expect(await effectsSince(t, a, e)).toEqual({ audit: [], events: [] });
    },
  );

  // A concurrent demotion or removal of the acting owner, written and not yet committed as their request runs: the
  // request waits for the acting owner's membership row, then is answered as authorization would answer now.
  const underWay =
    dialect === 'postgres'
      ? ([
          { change: 'demotion to admin', status: 403, code: 'forbidden', actingAfter: 'admin' },
          { change: 'removal', status: 404, code: 'not_found', actingAfter: undefined },
        ] as const)
      : [];
  for (const { change, status, code, actingAfter } of underWay) {
    it(`an owner's ${change} under way when their owner-level change runs is waited for, then refuses it (${status}, nothing changed)`, async () => {
      const acting = await t.member('owner');
      const [target, other] = [await t.member('member'), await t.member('owner')];
      const [a, e] = await marks(t);
      const actingRow = (trx: Transaction<DB>) =>
        change === 'removal'
          ? trx
              .deleteFrom('memberships')
              .where('organization_id', '=', t.organizationId)
              .where('user_id', '=', acting.userId)
              .execute()
          : trx
              .updateTable('memberships')
              .set({ role: 'admin' })
              .where('organization_id', '=', t.organizationId)
              .where('user_id', '=', acting.userId)
              .execute();
      const held = await holdUncommitted(t, actingRow, { commit: true });
      const requests = [
        t.call('PATCH', `/org/members/${target.userId}`, { token: acting.token, body: { role: 'owner' } }),
        t.call('DELETE', `/org/members/${other.userId}`, { token: acting.token }),
      ];
      await untilLocked(
        t,
        async () =>
          (
            await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%from "memberships"%for update'`.execute(
              t.database.db,
            )
          ).rows[0]!.n === 2,
        "both requests to wait for the acting owner's membership row",
      );
      await held.release();
      for (const res of await Promise.all(requests)) {
        expect(res.status, res.text).toBe(status);
        expect(res.body.error.code).toBe(code);
      }
      expect([await roleOf(acting.userId), await roleOf(target.userId), await roleOf(other.userId)]).toEqual([
        actingAfter,
        'member',
        'owner',
      ]);
      expect(await effectsSince(t, a, e)).toEqual({ audit: [], events: [] });
    });
  }

  it.runIf(dialect === 'postgres')(
    'a member being made an owner as an admin asks for their reset link is waited for, then refused (403, no link)',
    async () => {
      const admin = await t.member('admin');
      const person = await t.member('member');
      const [a, e] = await marks(t);
      const promotion = await holdUncommitted(
        t,
        (trx) =>
          trx
            .updateTable('memberships')
            .set({ role: 'owner' })
            .where('organization_id', '=', t.organizationId)
            .where('user_id', '=', person.userId)
            .execute(),
        { commit: true },
      );
      const issuing = t.call('POST', `/org/members/${person.userId}/password-reset`, { token: admin.token });
      await untilLocked(
        t,
        async () =>
          (
            await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%from "memberships"%for update'`.execute(
              t.database.db,
            )
          ).rows[0]!.n === 1,
        "the reset link to wait for the member's row",
      );
      await promotion.release();
      const res = await issuing;
      expect(res.status, res.text).toBe(403);
      expect(res.body.error).toMatchObject({
        code: 'forbidden',
        message: 'Only an owner can reset the password of an owner',
      });
      expect(
        await t.database.db
          .selectFrom('password_resets')
          .select('user_id')
          .where('user_id', '=', person.userId)
          .execute(),
      ).toEqual([]);
      expect(await effectsSince(t, a, e)).toEqual({ audit: [], events: [] });
    },
  );

  it('removes a member: their sessions end at once, audited, member.removed emitted', async () => {
    const gone = await t.member('member');
    const extra = await t.login({ email: gone.email });
    expect((await t.call('GET', '/org/projects', { token: gone.token })).status).toBe(200);
    const [a, e] = await marks(t);
    const res = await t.call('DELETE', `/org/members/${gone.userId}`, { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ user_id: gone.userId, sessions_ended: 2 });
    for (const token of [gone.token, extra.token])
      expect((await t.call('GET', '/org/projects', { token })).status).toBe(401);
    expect((await t.call('DELETE', `/org/members/${gone.userId}`, { token: owner.token })).status).toBe(404);
    const { audit, events } = await effectsSince(t, a, e);
    expect(audit.map((r) => [r.action, r.target_id])).toEqual([['member.remove', String(gone.userId)]]);
    expect(events).toEqual([{ type: 'member.removed', payload: { user_id: gone.userId, previous_role: 'member' } }]);
  });

  it('a viewer cannot invite (403) and an admin of another organization gets 404, changing nothing', async () => {
    const viewer = await t.member('viewer');
    const before = await t.database.db
      .selectFrom('invitations')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const refused = await invite(`x-${dialect}@example.com`, 'member', viewer.token);
    expect(refused.status).toBe(403);
    const other = await t.otherTenant();
    const stranger = await t.member('admin', { organizationId: other.organizationId });
    const target = await t.member('member');
    for (const [method, url, body] of [
      ['PATCH', `/org/members/${target.userId}`, { role: 'viewer' }],
      ['DELETE', `/org/members/${target.userId}`, undefined],
      ['POST', `/org/members/${target.userId}/password-reset`, undefined],
      ['GET', `/org/members/${target.userId}`, undefined],
    ] as const) {
      const res = await t.call(method, url, { token: stranger.token, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${url}`).toBe(404);
    }
    const asOurs = await t.call('POST', '/org/invitations', {
      token: stranger.token,
      headers: { 'x-organization-id': t.organizationId },
      body: { email: 'y@example.com', role: 'member' },
    });
    expect(asOurs.status).toBe(404);
    const after = await t.database.db
      .selectFrom('invitations')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    expect((await t.call('GET', '/org/projects', { token: target.token })).status).toBe(200);
  });
});

forEachDialect('passwords', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);

  it('changing your own needs the current password and ends your other sessions', async () => {
    const person = await t.member('member');
    const other = await t.login({ email: person.email });
    const wrong = await t.call('POST', '/auth/password', {
      token: person.token,
      body: { current_password: 'wrong guess here', new_password: STRONG },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.field).toBe('current_password');
    const common = await t.call('POST', '/auth/password', {
      token: person.token,
      body: { current_password: person.password, new_password: 'qwertyuiop' },
    });
    expect(common.body.error.field).toBe('new_password');
    const asEmail = await t.call('POST', '/auth/password', {
      token: person.token,
      body: { current_password: person.password, new_password: person.email.toUpperCase() },
    });
    expect(asEmail.body.error.field).toBe('new_password');

    const changed = await t.call('POST', '/auth/password', {
      token: person.token,
      body: { current_password: person.password, new_password: STRONG },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ sessions_ended: 1 });
    expect((await t.call('GET', '/auth/sessions', { token: other.token })).status).toBe(401);
    expect((await t.call('GET', '/auth/sessions', { token: person.token })).status).toBe(200);
    await expect(t.login({ email: person.email })).rejects.toThrow(/401/);
    await t.login({ email: person.email, password: STRONG });
    const audit = await t.database.db
      .selectFrom('audit_log')
      .select(['action', 'actor_id'])
      .where('action', '=', 'password.change')
      .execute();
    expect(audit).toEqual([{ action: 'password.change', actor_id: person.userId }]);
  });

  it('an admin issues a single-use reset link; spending it sets the password and ends every session', async () => {
    const person = await t.member('viewer');
    const admin = await t.member('admin');
    const issued = await t.call('POST', `/org/members/${person.userId}/password-reset`, { token: admin.token });
    expect(issued.status).toBe(201);
    expect(issued.body.token).toMatch(/^egp_/);
    expect(issued.body.url).toContain('/auth/password/reset#token=egp_');
    expect((await t.call('POST', `/org/members/${owner.userId}/password-reset`, { token: admin.token })).status).toBe(
      403,
    );

    const reset = (token: string, new_password: string) =>
      t.call('POST', '/auth/password/reset', {
        key: null,
        project: null,
        endUser: null,
        body: { token, new_password },
      });
    expect((await reset(issued.body.token, 'abcdefghij')).status).toBe(400);
    const done = await reset(issued.body.token, STRONG);
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ user_id: person.userId, sessions_ended: 1 });
    expect((await t.call('GET', '/auth/sessions', { token: person.token })).status).toBe(401);
    expect((await reset(issued.body.token, 'another fine password')).status).toBe(404);
    await t.login({ email: person.email, password: STRONG });
    expect((await reset('egp_unknown', STRONG)).status).toBe(404);
  });
});

describe('mail (a local SMTP server receives what Engram sends)', () => {
  const received: Array<{ to: string[]; data: string }> = [];
  let smtp: SMTPServer;
  let port = 0;
  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, done) {
        let data = '';
        stream.on('data', (chunk) => (data += chunk));
        stream.on('end', () => {
          received.push({ to: session.envelope.rcptTo.map((r) => r.address), data });
          done();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', () => resolve()));
    port = (smtp.server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => smtp.close(() => resolve())));

  const t = useTestApp('sqlite', () => ({
    mail: { url: `smtp://127.0.0.1:${port}`, from: 'Engram <engram@test.local>' },
    publicUrl: 'https://engram.example.com',
    links: { invitationTtlMs: 86_400_000, resetTtlMs: 900_000 },
  }));
  const owner = useOwner(t);

  it('mails the invitation link and the reset link to the person, valid as long as configured', async () => {
    const res = await t.call('POST', '/org/invitations', {
      token: owner.token,
      body: { email: 'mailed@example.com', role: 'member' },
    });
    expect(res.status).toBe(201);
    expect(Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)).toBe(86_400_000);
    expect(res.body.mailed).toBe(true);
    expect(res.body.url).toBe(`https://engram.example.com/invitations/accept#token=${res.body.token}`);
    expect(received).toHaveLength(1);
    expect(received[0]!.to).toEqual(['mailed@example.com']);
    expect(received[0]!.data.replace(/=\r?\n/g, '')).toContain(res.body.token);

    const person = await t.member('member');
    const sent = Date.now();
    const reset = await t.call('POST', `/org/members/${person.userId}/password-reset`, { token: owner.token });
    const answered = Date.now();
    expect(reset.body.mailed).toBe(true);
    expect(Date.parse(reset.body.expires_at) - 900_000).toBeGreaterThanOrEqual(sent);
    expect(Date.parse(reset.body.expires_at) - 900_000).toBeLessThanOrEqual(answered);
    expect(received[1]!.to).toEqual([person.email]);
    expect(received[1]!.data.replace(/=\r?\n/g, '')).toContain(reset.body.token);
    expect(t.logs.join('')).not.toContain(reset.body.token);
  });
});
