import { CompiledQuery, sql } from 'kysely';
import { beforeAll, expect, it } from 'vitest';
import { forEachDialect, freshDatabaseConfig, useOwner, useTestApp } from '../../testing/harness.js';
import { chainHash, entryOf, GENESIS_HASH, sealAuditChains, unsealedRows } from '../../core/audit-log.js';
import { openDatabase } from '../../store/database.js';
import { migrate } from '../../store/migrate.js';
import { holdUncommitted } from '../../testing/locks.js';
import { verifyAuditChains } from './service.js';

forEachDialect('audit log', (dialect) => {
  // No background sealer: the tests seal when they mean to.
  const t = useTestApp(dialect, { runJobs: false });
  const owner = useOwner(t);
  beforeAll(async () => {
    for (const text of ['one', 'two', 'three']) await t.call('POST', '/memory/add', { body: { text } });
    await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Audited' } });
  });

  it('lists events newest first with the spec fields, filters and pagination', async () => {
    const res = await t.call('GET', '/admin/team/audit-logs', { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ offset: 0, limit: 50, has_next: false });
    expect(res.body.items[0]).toMatchObject({
      action: 'project.create',
      actor_type: 'user',
      actor_id: owner.userId,
      target_type: 'project',
      result: 'success',
    });
    expect(Object.keys(res.body.items[0]).sort()).toEqual([
      'action',
      'actor_id',
      'actor_type',
      'created_at',
      'id',
      'project_id',
      'request_id',
      'result',
      'sealed',
      'target_id',
      'target_type',
    ]);
    const adds = await t.call('GET', `/admin/team/audit-logs?action=memory.add&actor_id=${t.keyId}&limit=2`, {
      token: owner.token,
    });
    expect(adds.body).toMatchObject({ total: 3, offset: 0, limit: 2, has_next: true });
    expect(adds.body.items).toHaveLength(2);
    expect(
      adds.body.items.every(
        (e: { action: string; actor_type: string }) => e.action === 'memory.add' && e.actor_type === 'api_key',
      ),
    ).toBe(true);
    const next = await t.call('GET', '/admin/team/audit-logs?action=memory.add&offset=2&limit=2', {
      token: owner.token,
    });
    expect(next.body).toMatchObject({ total: 3, offset: 2, has_next: false });
    expect(next.body.items).toHaveLength(1);

    const oldest = res.body.items[res.body.items.length - 1];
    const after = await t.call('GET', `/admin/team/audit-logs?created_after=${encodeURIComponent(oldest.created_at)}`, {
      token: owner.token,
    });
    expect(after.body.items.length).toBe(res.body.items.length - 1);
    expect(after.body.items.every((e: { created_at: string }) => e.created_at > oldest.created_at)).toBe(true);
    const before = await t.call('GET', `/admin/team/audit-logs?created_before=2000-01-01T00:00:00Z`, {
      token: owner.token,
    });
    expect(before.body).toMatchObject({ total: 0, items: [] });
    const offsetZone = await t.call(
      'GET',
      `/admin/team/audit-logs?created_after=${encodeURIComponent('2000-01-01T02:00:00+02:00')}`,
      { token: owner.token },
    );
    expect(offsetZone.body.total).toBe(res.body.total);
  });

  it('refuses bad queries naming the parameter', async () => {
    for (const [query, field] of [
      ['limit=101', 'limit'],
      ['limit=0', 'limit'],
      ['offset=-1', 'offset'],
      ['actor_id=abc', 'actor_id'],
      ['created_after=yesterday', 'created_after'],
      ['sort=asc', 'sort'],
    ]) {
      const res = await t.call('GET', `/admin/team/audit-logs?${query}`, { token: owner.token });
      expect(res.status, query).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'validation_error', field });
    }
  });

  it('is readable by an API key with audit:read, narrowed to its project', async () => {
    const key = await t.newKey({ scopes: ['audit:read'], projectId: t.projectId });
    const res = await t.call('GET', '/admin/team/audit-logs', { key: key.key, project: null, endUser: null });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(3);
    expect(res.body.items).toHaveLength(3);
    expect(res.body.items.every((e: { project_id: string }) => e.project_id === t.projectId)).toBe(true);
    expect((await t.call('GET', '/admin/team/audit-logs', { key: t.key, project: null, endUser: null })).status).toBe(
      403,
    );
    const viewer = await t.member('viewer');
    expect((await t.call('GET', '/admin/team/audit-logs', { token: viewer.token })).status).toBe(403);
  });

  it('shows rows not yet sealed as such, and seals them in order', async () => {
    const pending = await t.cli('audit', 'verify', t.organizationId);
    expect(pending.code).toBe(0);
    expect(pending.stdout).toMatch(new RegExp(`${t.organizationId}: ok \\(0 rows; \\d+ not sealed yet\\)`));
    const before = await t.call('GET', '/admin/team/audit-logs', { token: owner.token });
    expect(before.body.items.every((e: { sealed: boolean }) => e.sealed === false)).toBe(true);

    expect(await sealAuditChains(t.database)).toBe(before.body.total);
    expect(await sealAuditChains(t.database)).toBe(0);
    const after = await t.call('GET', '/admin/team/audit-logs', { token: owner.token });
    expect(after.body.items.every((e: { sealed: boolean }) => e.sealed === true)).toBe(true);
    // Seals follow the rows' order: position n holds the n-th row by id.
    const seals = await t.database.db
      .selectFrom('audit_seals')
      .select(['position', 'audit_id'])
      .where('organization_id', '=', t.organizationId)
      .orderBy('position')
      .execute();
    const ids = after.body.items.map((e: { id: number }) => e.id).reverse();
    expect(seals).toEqual(ids.map((id: number, i: number) => ({ position: i + 1, audit_id: id })));
    expect((await verifyAuditChains(t.database, t.organizationId))[0]).toMatchObject({
      ok: true,
      rows: ids.length,
      unsealed: 0,
    });
  });

  it('refuses changes to the log, and `engram audit verify` names a tampered row', async () => {
    await sealAuditChains(t.database);
    const clean = await t.cli('audit', 'verify');
    expect(clean.stdout).toContain(`${t.organizationId}: ok`);
    expect(clean.code).toBe(0);

    const rows = await t.database.db
      .selectFrom('audit_log')
      .select('id')
      .where('organization_id', '=', t.organizationId)
      .orderBy('id')
      .execute();
    const victim = rows[2]!.id;
    await expect(
      sql`UPDATE audit_log SET result = 'failure' WHERE id = ${victim}`.execute(t.database.db),
    ).rejects.toThrow(/append-only/);
    await expect(sql`DELETE FROM audit_log WHERE id = ${victim}`.execute(t.database.db)).rejects.toThrow(/append-only/);

    // An attacker with direct database access switches the protection off first.
    if (dialect === 'sqlite') await sql`DROP TRIGGER audit_log_no_update`.execute(t.database.db);
    else await sql`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_change`.execute(t.database.db);
    await sql`UPDATE audit_log SET result = 'failure' WHERE id = ${victim}`.execute(t.database.db);

    const [report] = await verifyAuditChains(t.database, t.organizationId);
    expect(report).toMatchObject({ ok: false, rows: 2, broken: { id: victim } });
    const tampered = await t.cli('audit', 'verify');
    expect(tampered.code).toBe(1);
    expect(tampered.stdout).toContain(`${t.organizationId}: BROKEN at row ${victim}`);
  });

  it('detects rows removed from the middle or the end of a chain', async () => {
    const other = await t.otherTenant();
    for (const text of ['a', 'b', 'c', 'd']) {
      expect(
        (await t.call('POST', '/memory/add', { key: other.key, project: other.projectId, body: { text } })).status,
      ).toBe(201);
    }
    await sealAuditChains(t.database, other.organizationId);
    const ids = (
      await t.database.db
        .selectFrom('audit_log')
        .select('id')
        .where('organization_id', '=', other.organizationId)
        .orderBy('id')
        .execute()
    ).map((r) => r.id);
    expect(ids).toHaveLength(4);
    if (dialect === 'sqlite') {
      await sql`DROP TRIGGER IF EXISTS audit_log_no_delete`.execute(t.database.db);
      await sql`DROP TRIGGER IF EXISTS audit_seals_no_delete`.execute(t.database.db);
      await sql`DROP TRIGGER IF EXISTS audit_seals_no_update`.execute(t.database.db);
    } else {
      await sql`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_change`.execute(t.database.db);
      await sql`ALTER TABLE audit_seals DISABLE TRIGGER audit_seals_no_change`.execute(t.database.db);
    }
    const verify = async () => (await verifyAuditChains(t.database, other.organizationId))[0];
    // The last seal removed along with its row: the chain head still names it.
    await sql`DELETE FROM audit_seals WHERE audit_id = ${ids[3]!}`.execute(t.database.db);
    await sql`DELETE FROM audit_log WHERE id = ${ids[3]!}`.execute(t.database.db);
    expect(await verify()).toMatchObject({ ok: false, rows: 3, broken: { id: null } });
    // Two seals swapped (positions exchanged): the first moved one no longer fits.
    await sql`UPDATE audit_seals SET position = -1 WHERE audit_id = ${ids[0]!}`.execute(t.database.db);
    await sql`UPDATE audit_seals SET position = 1 WHERE audit_id = ${ids[1]!}`.execute(t.database.db);
    await sql`UPDATE audit_seals SET position = 2 WHERE audit_id = ${ids[0]!}`.execute(t.database.db);
    expect(await verify()).toMatchObject({ ok: false, rows: 0, broken: { id: ids[1] } });
    await sql`UPDATE audit_seals SET position = -1 WHERE audit_id = ${ids[1]!}`.execute(t.database.db);
    await sql`UPDATE audit_seals SET position = 1 WHERE audit_id = ${ids[0]!}`.execute(t.database.db);
    await sql`UPDATE audit_seals SET position = 2 WHERE audit_id = ${ids[1]!}`.execute(t.database.db);
    // A sealed row removed from the middle.
    await sql`DELETE FROM audit_log WHERE id = ${ids[1]!}`.execute(t.database.db);
    expect(await verify()).toMatchObject({ ok: false, rows: 1, broken: { id: ids[1] } });
  });
});

forEachDialect('audit rows of every kind of change', (dialect) => {
  const t = useTestApp(dialect);

  /** The one audit row of a request, by its request id. */
  async function auditOf(res: { headers: Record<string, unknown> }) {
    return t.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('request_id', '=', String(res.headers['x-request-id']))
      .execute();
  }
  const row = (action: string, actorType: string, actorId: number, targetType: string, targetId: unknown) => ({
    organization_id: t.organizationId,
    action,
    actor_type: actorType,
    actor_id: actorId,
    target_type: targetType,
    target_id: String(targetId),
    result: 'success',
  });

  it('writes one for add_turn, feedback, refresh jobs, sign-in, refresh, sign-out and session revoke', async () => {
    const turn = await t.call('POST', '/v1/memory/add_turn', {
      endUser: null,
      headers: { 'X-Tenant-ID': 'acme' },
      body: { tenant_id: 'acme', user_id: 'u1', text: 'audited turn', speaker: 'me' },
    });
    expect(turn.status).toBe(201);
    expect(await auditOf(turn)).toMatchObject([row('memory.add_turn', 'api_key', t.keyId, 'memory', turn.body.id)]);

    const memory = (await t.call('POST', '/memory/add', { body: { text: 'rated' } })).body;
    const rated = await t.call('POST', `/memory/${memory.id}/feedback`, { body: { rating: 'positive' } });
    expect(rated.status).toBe(201);
    expect(await auditOf(rated)).toMatchObject([row('memory.feedback', 'api_key', t.keyId, 'memory', memory.id)]);
    const withdrawn = await t.call('DELETE', `/memory/${memory.id}/feedback/${rated.body.id}`);
    expect(withdrawn.status).toBe(200);
    expect(await auditOf(withdrawn)).toMatchObject([
      row('memory.feedback_withdraw', 'api_key', t.keyId, 'feedback', rated.body.id),
    ]);

    const job = await t.call('POST', '/memory/refresh', { endUser: null });
    expect(job.status).toBe(202);
    expect(await auditOf(job)).toMatchObject([row('memory.refresh', 'api_key', t.keyId, 'job', job.body.id)]);

    const anonymous = { key: null, project: null, endUser: null } as const;
    const login = await t.call('POST', '/auth/login', { ...anonymous, body: { email: t.email, password: t.password } });
    expect(login.status).toBe(200);
    expect(await auditOf(login)).toMatchObject([row('auth.login', 'user', t.userId, 'session', login.body.session_id)]);
    const refreshed = await t.call('POST', '/auth/refresh', {
      ...anonymous,
      body: { refresh_token: login.body.refresh_token },
    });
    expect(refreshed.status).toBe(200);
    expect(await auditOf(refreshed)).toMatchObject([
      row('auth.refresh', 'user', t.userId, 'session', login.body.session_id),
    ]);
    const second = await t.login();
    const revoked = await t.call('POST', `/auth/sessions/${second.sessionId}/revoke`, {
      token: refreshed.body.access_token,
    });
    expect(revoked.status).toBe(200);
    expect(await auditOf(revoked)).toMatchObject([
      row('session.revoke', 'user', t.userId, 'session', second.sessionId),
    ]);
    const logout = await t.call('POST', '/auth/logout', { token: refreshed.body.access_token });
    expect(logout.status).toBe(200);
    expect(await auditOf(logout)).toMatchObject([
      row('auth.logout', 'user', t.userId, 'session', login.body.session_id),
    ]);
    await sealAuditChains(t.database);
    expect((await verifyAuditChains(t.database, t.organizationId))[0]).toMatchObject({ ok: true, unsealed: 0 });
  });
});

forEachDialect('audit chain verification', (dialect) => {
  // No background sealer: each test seals the organizations it means to.
  const t = useTestApp(dialect, { runJobs: false });

  /** A fresh organization with `count` audited adds, sealed unless told otherwise. */
  async function organizationWithRows(count: number, seal = true) {
    const other = await t.otherTenant();
    for (let i = 0; i < count; i++) {
      expect(
        (await t.call('POST', '/memory/add', { key: other.key, project: other.projectId, body: { text: `row ${i}` } }))
          .status,
      ).toBe(201);
    }
    if (seal) await sealAuditChains(t.database, other.organizationId);
    const ids = (
      await t.database.db
        .selectFrom('audit_log')
        .select('id')
        .where('organization_id', '=', other.organizationId)
        .orderBy('id')
        .execute()
    ).map((r) => r.id);
    expect(ids).toHaveLength(count);
    return { organizationId: other.organizationId, ids };
  }

  /** What an attacker with direct database access does first. */
  async function switchProtectionOff() {
    if (dialect === 'sqlite') {
      for (const trigger of [
        'audit_log_no_update',
        'audit_log_no_delete',
        'audit_seals_no_delete',
        'audit_seals_no_update',
      ]) {
        await sql`DROP TRIGGER IF EXISTS ${sql.raw(trigger)}`.execute(t.database.db);
      }
    } else {
      await sql`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_change`.execute(t.database.db);
      await sql`ALTER TABLE audit_seals DISABLE TRIGGER audit_seals_no_change`.execute(t.database.db);
    }
  }
  const verify = async (organizationId: string) => {
    const reports = await verifyAuditChains(t.database, organizationId);
    expect(reports.map((r) => r.organizationId)).toEqual([organizationId]);
    return reports[0]!;
  };

  it('reports every organization in order, one when asked, and rows never sealed as pending', async () => {
    const sealed = [await organizationWithRows(1), await organizationWithRows(1), await organizationWithRows(1)];
    const pending = [
      await organizationWithRows(2, false),
      await organizationWithRows(2, false),
      await organizationWithRows(2, false),
    ];
    const all = await verifyAuditChains(t.database);
    const ids = all.map((r) => r.organizationId);
    expect(ids).toEqual([...ids].sort((a, b) => a.localeCompare(b)));
    for (const { organizationId } of sealed) {
      expect(all.find((r) => r.organizationId === organizationId)).toEqual({
        organizationId,
        rows: 1,
        unsealed: 0,
        ok: true,
      });
    }
    for (const { organizationId } of pending) {
      expect(all.find((r) => r.organizationId === organizationId)).toEqual({
        organizationId,
        rows: 0,
        unsealed: 2,
        ok: true,
      });
      expect(await verifyAuditChains(t.database, organizationId)).toEqual([
        { organizationId, rows: 0, unsealed: 2, ok: true },
      ]);
    }
    expect(await verify(sealed[1]!.organizationId)).toEqual({
      organizationId: sealed[1]!.organizationId,
      rows: 1,
      unsealed: 0,
      ok: true,
    });
  });

  it('reports an organization with sealed and pending rows once', async () => {
    const other = await t.otherTenant();
    const add = async (text: string) =>
      expect(
        (await t.call('POST', '/memory/add', { key: other.key, project: other.projectId, body: { text } })).status,
      ).toBe(201);
    await add('sealed');
    await sealAuditChains(t.database, other.organizationId);
    await add('pending');
    const expected = { organizationId: other.organizationId, rows: 1, unsealed: 1, ok: true };
    expect(await verifyAuditChains(t.database, other.organizationId)).toEqual([expected]);
    expect((await verifyAuditChains(t.database)).filter((r) => r.organizationId === other.organizationId)).toEqual([
      expected,
    ]);
  });

  it('detects a seal moved to another position though it still names the seal before it', async () => {
    const { organizationId, ids } = await organizationWithRows(3);
    await switchProtectionOff();
    await sql`UPDATE audit_seals SET position = 4 WHERE audit_id = ${ids[2]!}`.execute(t.database.db);
    expect(await verify(organizationId)).toMatchObject({
      ok: false,
      rows: 2,
      broken: { id: ids[2], reason: expect.stringMatching(/does not follow/) },
    });
  });

  it('detects a seal whose link to the seal before it was rewritten', async () => {
    const { organizationId, ids } = await organizationWithRows(3);
    await switchProtectionOff();
    await sql`UPDATE audit_seals SET prev_hash = ${'0'.repeat(64)} WHERE audit_id = ${ids[1]!}`.execute(t.database.db);
    expect(await verify(organizationId)).toMatchObject({
      ok: false,
      rows: 1,
      broken: { id: ids[1], reason: expect.stringMatching(/does not follow/) },
    });
  });

  it("detects a seal pointed at another organization's row", async () => {
    const victim = await organizationWithRows(2);
    const stranger = await organizationWithRows(1, false);
    await switchProtectionOff();
    await sql`UPDATE audit_seals SET audit_id = ${stranger.ids[0]!} WHERE audit_id = ${victim.ids[1]!}`.execute(
      t.database.db,
    );
    expect(await verify(victim.organizationId)).toMatchObject({
      ok: false,
      rows: 1,
      broken: { id: stranger.ids[0], reason: expect.stringMatching(/missing/) },
    });
  });

  it('detects a chain head that disagrees with the last seal, by hash or by position alone', async () => {
    const byHash = await organizationWithRows(2);
    const byPosition = await organizationWithRows(2);
    await sql`UPDATE audit_chain_heads SET last_hash = ${'f'.repeat(64)} WHERE organization_id = ${byHash.organizationId}`.execute(
      t.database.db,
    );
    await sql`UPDATE audit_chain_heads SET last_position = 3 WHERE organization_id = ${byPosition.organizationId}`.execute(
      t.database.db,
    );
    for (const { organizationId } of [byHash, byPosition]) {
      expect(await verify(organizationId)).toMatchObject({
        ok: false,
        rows: 2,
        broken: { id: null, reason: expect.stringMatching(/chain head/) },
      });
    }
  });

  it('filters events by actor and actor kind', async () => {
    const owner = await t.login();
    expect((await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'By a person' } })).status).toBe(
      201,
    );
    expect((await t.call('POST', '/memory/add', { body: { text: 'by a key' } })).status).toBe(201);
    const everything = (await t.call('GET', '/admin/team/audit-logs?limit=100', { token: owner.token })).body;
    const kinds = new Set(everything.items.map((e: { actor_type: string }) => e.actor_type));
    expect(kinds).toEqual(new Set(['user', 'api_key']));
    for (const [query, keep] of [
      [
        `actor_id=${owner.userId}&actor_type=user`,
        (e: { actor_id: number; actor_type: string }) => e.actor_id === owner.userId && e.actor_type === 'user',
      ],
      ['actor_type=api_key', (e: { actor_type: string }) => e.actor_type === 'api_key'],
      [
        `actor_id=${t.keyId}&actor_type=api_key`,
        (e: { actor_id: number; actor_type: string }) => e.actor_id === t.keyId && e.actor_type === 'api_key',
      ],
    ] as const) {
      const res = await t.call('GET', `/admin/team/audit-logs?limit=100&${query}`, { token: owner.token });
      expect(res.status, query).toBe(200);
      const wanted = everything.items.filter(keep);
      expect(wanted.length, query).toBeGreaterThan(0);
      expect(res.body.items, query).toEqual(wanted);
    }
    // An actor id alone, of a key whose id no person of the organization has.
    const extra = await t.newKey({ projectId: t.projectId });
    expect(extra.id).not.toBe(owner.userId);
    expect((await t.call('POST', '/memory/add', { key: extra.key, body: { text: 'by another key' } })).status).toBe(
      201,
    );
    const byKeyId = await t.call('GET', `/admin/team/audit-logs?limit=100&actor_id=${extra.id}`, {
      token: owner.token,
    });
    expect(
      byKeyId.body.items.map((e: { actor_type: string; actor_id: number; action: string }) => [
        e.actor_type,
        e.actor_id,
        e.action,
      ]),
    ).toEqual([['api_key', extra.id, 'memory.add']]);
  });

  it("shows a key bound to an end user only that key's own actions", async () => {
    const owner = await t.login();
    const bound = await t.newKey({
      scopes: ['audit:read', 'memories:write'],
      projectId: t.projectId,
      endUserId: 'alice',
    });
    expect(
      (await t.call('POST', '/memory/add', { key: t.key, endUser: 'bob', body: { text: 'by the project key' } }))
        .status,
    ).toBe(201);
    const own = await t.call('POST', '/memory/add', {
      key: bound.key,
      endUser: 'alice',
      body: { text: 'by the bound key' },
    });
    expect(own.status).toBe(201);
    const everything = (await t.call('GET', '/admin/team/audit-logs?limit=100', { token: owner.token })).body;
    expect(everything.items.some((e: { actor_id: number }) => e.actor_id !== bound.id)).toBe(true);
    const seen = await t.call('GET', '/admin/team/audit-logs?limit=100', {
      key: bound.key,
      project: null,
      endUser: null,
    });
    expect(seen.status).toBe(200);
    expect(
      seen.body.items.map((e: { actor_type: string; actor_id: number; target_id: string }) => [
        e.actor_type,
        e.actor_id,
        e.target_id,
      ]),
    ).toEqual([['api_key', bound.id, String(own.body.id)]]);
  });

  it('seals a row whose transaction was still open during a pass once it commits, though later rows were sealed first (PostgreSQL)', async (context) => {
    if (dialect !== 'postgres') return context.skip();
    const other = await t.otherTenant();
    const add = async (text: string) =>
      expect(
        (await t.call('POST', '/memory/add', { key: other.key, project: other.projectId, body: { text } })).status,
      ).toBe(201);
    await add('before');
    // A transaction that wrote an audit row and stays open: its id is below the next writes'.
    const held = await holdUncommitted(
      t,
      (trx) =>
        trx
          .insertInto('audit_log')
          .values({
            organization_id: other.organizationId,
            project_id: other.projectId,
            actor_type: 'system',
            actor_id: null,
            action: 'test.held',
            target_type: 'test',
            target_id: null,
            result: 'success',
            request_id: null,
            created_at: new Date().toISOString(),
          })
          .execute(),
      { commit: true },
    );
    await add('after');
    await sealAuditChains(t.database);
    expect(await verify(other.organizationId)).toEqual({
      organizationId: other.organizationId,
      rows: 2,
      unsealed: 0,
      ok: true,
    });
    await held.release();
    // Committed below the horizon the pass moved to: still found, as unsealed, and sealed by the next pass.
    expect(await verify(other.organizationId)).toEqual({
      organizationId: other.organizationId,
      rows: 2,
      unsealed: 1,
      ok: true,
    });
    expect(await sealAuditChains(t.database)).toBe(1);
    expect(await verify(other.organizationId)).toEqual({
      organizationId: other.organizationId,
      rows: 3,
      unsealed: 0,
      ok: true,
    });
    const chained = await t.database.db
      .selectFrom('audit_seals as s')
      .innerJoin('audit_log as a', 'a.id', 's.audit_id')
      .select(['s.position', 'a.action'])
      .where('s.organization_id', '=', other.organizationId)
      .orderBy('s.position')
      .execute();
    expect(chained.map((r) => [Number(r.position), r.action])).toEqual([
      [1, 'memory.add'],
      [2, 'memory.add'],
      [3, 'test.held'],
    ]);
  });

  it('writes nothing in a pass with nothing to seal', async () => {
    await organizationWithRows(1);
    await sealAuditChains(t.database);
    // PostgreSQL: the row version's transaction, which any update of the horizon (or a row lock on it) would change.
    const horizon = async () =>
      (
        await sql<{
          version: string;
        }>`SELECT ${sql.raw(dialect === 'postgres' ? "xmin::text || ':' || xid::text" : 'xid')} || ':' || audit_id || ':' || open_xids AS version
      FROM audit_seal_horizon`.execute(t.database.db)
      ).rows[0]!.version;
    const before = await horizon();
    for (let i = 0; i < 3; i++) expect(await sealAuditChains(t.database)).toBe(0);
    expect(await horizon()).toBe(before);
    await organizationWithRows(1, false);
    expect(await sealAuditChains(t.database)).toBe(1);
    expect(await horizon()).not.toBe(before);
  });

  it('finds unsealed rows through the indexes, whether or not there are statistics for the tables', async () => {
    const scans: string[] = [];
    // Tables of some size (written and rolled back) with no statistics, as on a new database or one never analysed.
    await t.database.db
      .transaction()
      .execute(async (trx) => {
        const filler = (n: number) =>
          sql`SELECT 'org-filler', 'system', 'test.filler', 'test', 'success', ${new Date().toISOString()} FROM ${sql.raw(
            dialect === 'postgres'
              ? `generate_series(1, ${n})`
              : `(WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ${n}) SELECT n FROM g)`,
          )}`;
        await sql`INSERT INTO audit_log (organization_id, actor_type, action, target_type, result, created_at) ${filler(20000)}`.execute(
          trx,
        );
        await sql`INSERT INTO audit_seals (organization_id, position, audit_id, prev_hash, hash) SELECT 'org-filler', id, id, '', '' FROM audit_log WHERE organization_id = 'org-filler'`.execute(
          trx,
        );
        const newest = Number(
          (
            await trx
              .selectFrom('audit_log')
              .select((eb) => eb.fn.max('id').as('id'))
              .executeTakeFirstOrThrow()
          ).id,
        );
        if (dialect === 'postgres') {
          await sql`DELETE FROM pg_statistic WHERE starelid IN ('audit_log'::regclass, 'audit_seals'::regclass)`.execute(
            trx,
          );
          const { xid } = (await sql<{ xid: string }>`SELECT CAST(pg_current_xact_id() AS text) AS xid`.execute(trx))
            .rows[0]!;
          const from = { below: { xid: BigInt(xid), id: newest - 100 }, open: [BigInt(xid) - 5n] };
          const query = unsealedRows(
            t.database,
            trx,
            from,
            { xid: BigInt(xid) + 10n, id: 0 },
            { xid: BigInt(xid), id: newest - 50 },
          ).compile();
          const { rows } = await trx.executeQuery(
            CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${query.sql}`, [...query.parameters]),
          );
          const walk = (node: PlanNode): void => {
            if (node['Relation Name']) scans.push(`${node['Node Type']} ${node['Relation Name']}`);
            node.Plans?.forEach(walk);
          };
          walk((rows as Array<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>)[0]!['QUERY PLAN'][0].Plan);
        } else {
          const query = unsealedRows(
            t.database,
            trx,
            { below: { xid: 0n, id: newest - 100 }, open: [] },
            { xid: 0n, id: newest + 1 },
            { xid: 0n, id: newest - 50 },
          ).compile();
          const { rows } = await trx.executeQuery(
            CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]),
          );
          scans.push(
            ...(rows as Array<{ detail: string }>)
              .map((r) => r.detail)
              .filter((detail) => /^(SEARCH|SCAN) /.test(detail)),
          );
        }
        throw new RolledBack();
      })
      .catch((error) => {
        if (!(error instanceof RolledBack)) throw error;
      });
    if (dialect === 'postgres') {
      expect(scans).toContain('Index Only Scan audit_seals');
      expect(scans.filter((scan) => !scan.startsWith('Index') && !scan.startsWith('Bitmap'))).toEqual([]);
    } else {
      // An id range of the (xid, id) index, and the seal looked up by its audit id.
      expect(scans).toEqual([
        expect.stringMatching(/^SEARCH a USING INDEX audit_log_xid \(xid=\? AND id>\? AND id<\?\)$/),
        expect.stringMatching(/^SEARCH s USING COVERING INDEX/),
      ]);
    }
  });

  it('seals the rows still queued when migration 0024 replaced the queue, and no sealed row twice', async () => {
    const fresh = await freshDatabaseConfig(dialect);
    const database = openDatabase(fresh.config);
    try {
      await migrate(database, { through: '0023_journal_inserted_id.sql' });
      const entry = (organizationId: string, i: number) => ({
        organization_id: organizationId,
        project_id: null,
        actor_type: 'system',
        actor_id: null,
        action: `test.${i}`,
        target_type: 'test',
        target_id: String(i),
        result: 'success',
        request_id: null,
        created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      });
      // A and B write in turn; the old sealer had chained A's rows (organization by organization) but not B's yet.
      const written: Array<{ org: string; id: number }> = [];
      for (const [i, org] of ['org-a', 'org-a', 'org-b', 'org-a', 'org-b'].entries()) {
        const { id } = await database.db
          .insertInto('audit_log')
          .values(entry(org, i))
          .returning('id')
          .executeTakeFirstOrThrow();
        written.push({ org, id: Number(id) });
      }
      let prev = GENESIS_HASH;
      const ofA = written.filter((w) => w.org === 'org-a');
      for (const [n, { id }] of ofA.entries()) {
        const hash = chainHash(
          entryOf(
            entry(
              'org-a',
              written.findIndex((w) => w.id === id),
            ) as Parameters<typeof entryOf>[0],
          ),
          { auditId: id, position: n + 1, legacy: false },
          prev,
        );
        await database.db
          .insertInto('audit_seals')
          .values({
            organization_id: 'org-a',
            position: n + 1,
            audit_id: id,
            prev_hash: prev,
            hash,
            legacy: database.bool(false),
          })
          .execute();
        prev = hash;
      }
      await sql`DELETE FROM audit_unsealed WHERE organization_id = 'org-a'`.execute(database.db);
      await database.db
        .insertInto('audit_chain_heads')
        .values({ organization_id: 'org-a', last_hash: prev, last_position: ofA.length })
        .execute();

      await migrate(database);
      expect(await verifyAuditChains(database)).toEqual([
        { organizationId: 'org-a', rows: 3, unsealed: 0, ok: true },
        { organizationId: 'org-b', rows: 0, unsealed: 2, ok: true },
      ]);
      expect(await sealAuditChains(database)).toBe(2);
      expect(await sealAuditChains(database)).toBe(0);
      expect(await verifyAuditChains(database)).toEqual([
        { organizationId: 'org-a', rows: 3, unsealed: 0, ok: true },
        { organizationId: 'org-b', rows: 2, unsealed: 0, ok: true },
      ]);
    } finally {
      await database.close();
      await fresh.drop();
    }
  });
});

class RolledBack extends Error {}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}
