import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { sha256Hex } from '../../core/crypto.js';
import { decodeJson } from '../../store/database.js';
import { forEachDialect, useTestApp, type TestApp } from '../../testing/harness.js';
import { holdUncommitted, lockWaiters } from '../../testing/locks.js';
import { countRows, expectError, memoryRow } from '../../testing/memories.js';
import { freshUser } from '../../testing/retrieval.js';

/** A /v1 call: no X-End-User-ID; X-Tenant-ID when `tenant` is given. */
function v1(t: TestApp, method: string, url: string, options: { body?: unknown; tenant?: string; key?: string } = {}) {
  return t.call(method, url, {
    endUser: null,
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.key ? { key: options.key } : {}),
    headers: options.tenant ? { 'X-Tenant-ID': options.tenant } : {},
  });
}

function turnsOf(t: TestApp) {
  return {
    add: (tenant: string, body: Record<string, unknown>, key?: string) =>
      v1(t, 'POST', '/v1/memory/add_turn', {
        tenant,
        body: { tenant_id: tenant, source: 'chat', ...body },
        ...(key ? { key } : {}),
      }),
    recall: (tenant: string, body: Record<string, unknown>) =>
      v1(t, 'POST', '/v1/memory/recall', { tenant, body: { tenant_id: tenant, ...body } }),
    list: (query: string, tenant?: string) => v1(t, 'GET', `/v1/memory/memories${query}`, tenant ? { tenant } : {}),
  };
}

async function created(res: Promise<Awaited<ReturnType<TestApp['call']>>>) {
  const r = await res;
  expect(r.status, r.text).toBe(201);
  expect(r.body.status).toBe('created');
  return r.body;
}

forEachDialect('/v1 tenant data plane', (dialect) => {
  const t = useTestApp(dialect);
  const turns = turnsOf(t);

  it('stores turns verbatim and in order, and converges a repeated delivery on one row', async () => {
    const user = freshUser('user');
    const texts = [
      '  Hi!  How are you?\n\nI’m fine 🙂 ',
      'Great — thanks for asking.',
      'Let us meet at 5pm <b>sharp</b> & "on time".',
    ];
    const ids: number[] = [];
    for (const [i, text] of texts.entries()) {
      const body = await created(
        turns.add('acme', {
          user_id: user,
          text,
          speaker: i % 2 ? 'bob' : 'alice',
          metadata: { session_id: 's1', project: 'demo' },
        }),
      );
      expect(body).toMatchObject({
        tenant_id: 'acme',
        user_id: user,
        session_id: 's1',
        created_at: expect.any(String),
      });
      ids.push(body.id);
    }
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    for (const [i, id] of ids.entries()) {
      const row = await memoryRow(t, id);
      expect(row).toMatchObject({
        text: texts[i],
        tenant_id: 'acme',
        end_user_id: user,
        session_id: 's1',
        source: 'chat',
        speaker: i % 2 ? 'bob' : 'alice',
      });
      expect(decodeJson(row.metadata)).toEqual({ project: 'demo' });
    }
    // Each turn's history is its one create row, written with the turn's last statement.
    const history = await t.database.db
      .selectFrom('memory_history')
      .select(['memory_id', 'action', 'changes'])
      .where('memory_id', 'in', ids)
      .orderBy('memory_id')
      .execute();
    expect(history.map((h) => [h.memory_id, h.action, (decodeJson(h.changes) as { text: unknown }).text])).toEqual(
      ids.map((id, i) => [id, 'create', { before: null, after: texts[i] }]),
    );

    const rows = await countRows(t, 'memories');
    const again = await turns.add('acme', {
      user_id: user,
      text: texts[1],
      speaker: 'bob',
      metadata: { session_id: 's1', project: 'demo' },
    });
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ id: ids[1], status: 'duplicate' });
    expect(await countRows(t, 'memories')).toBe(rows);
    // Another session or speaker is another turn.
    await created(turns.add('acme', { user_id: user, text: texts[1], speaker: 'bob', metadata: { session_id: 's2' } }));
    await created(
      turns.add('acme', { user_id: user, text: texts[1], speaker: 'alice', metadata: { session_id: 's1' } }),
    );
  });

  it('keeps the same words said again later as another turn, and converges a redelivery with the same timestamp', async () => {
    const user = freshUser('user');
    const ok = (timestamp: string) =>
      turns.add('acme', { user_id: user, text: 'ok', speaker: 'alice', metadata: { session_id: 's', timestamp } });
    const first = await created(ok('2026-11-20T09:00:00Z'));
    const second = await created(ok('2026-11-20T09:04:00Z'));
    expect(second.id).not.toBe(first.id);
    const rows = await countRows(t, 'memories');
    // The same turn delivered again (same speaker, words and timestamp, however it is spelled) is the stored row.
    for (const again of [await ok('2026-11-20T09:04:00Z'), await ok('2026-11-20T10:04:00+01:00')]) {
      expect(again.status, again.text).toBe(200);
      expect(again.body).toMatchObject({ id: second.id, status: 'duplicate' });
    }
    expect(await countRows(t, 'memories')).toBe(rows);
    const listed = (await turns.list(`?user_id=${user}`, 'acme')).body;
    expect(
      listed.items.map((m: { id: number; text: string; created_at: string }) => [m.id, m.text, m.created_at]),
    ).toEqual([
      [second.id, 'ok', '2026-11-20T09:04:00.000Z'],
      [first.id, 'ok', '2026-11-20T09:00:00.000Z'],
    ]);
    // Without a timestamp the turn is dated on arrival; delivered again at once, it converges too.
    const undated = await created(
      turns.add('acme', { user_id: user, text: 'ok', speaker: 'alice', metadata: { session_id: 's' } }),
    );
    const redelivered = await turns.add('acme', {
      user_id: user,
      text: 'ok',
      speaker: 'alice',
      metadata: { session_id: 's' },
    });
    expect(redelivered.body).toMatchObject({ id: undated.id, status: 'duplicate' });
    expect((await turns.list(`?user_id=${user}`, 'acme')).body.total).toBe(3);
  });

  it("converges a content-hash speaker's turn at any distance, and keeps an ordinary speaker's words said again later", async () => {
    const user = freshUser('user');
    const hashed = {
      user_id: user,
      text: 'Queued, retried hours later',
      speaker: `sha256:${sha256Hex('turn 17')}`,
      metadata: { session_id: 's' },
    };
    const plain = { user_id: user, text: 'ok', speaker: 'alice', metadata: { session_id: 's' } };
    const first = await created(turns.add('acme', hashed));
    const said = await created(turns.add('acme', plain));
    // Both stored two hours ago, as a queue retry or a later reply would find them (an undated turn is keyed by its
    // arrival's minute slot).
    const earlier = Date.now() - 2 * 3_600_000;
    await t.database.db
      .updateTable('memories')
      .set({ created_at: new Date(earlier).toISOString() })
      .where('id', '=', first.id)
      .execute();
    await t.database.db
      .updateTable('memories')
      .where('id', '=', said.id)
      .set({
        created_at: new Date(earlier).toISOString(),
        dedupe_hash: sha256Hex(JSON.stringify(['turn-arrival', 's', 'alice', 'ok', Math.floor(earlier / 60_000)])),
      })
      .execute();
    for (const timestamp of [undefined, '2026-11-20T09:00:00Z']) {
      const again = await turns.add('acme', {
        ...hashed,
        metadata: { ...hashed.metadata, ...(timestamp ? { timestamp } : {}) },
      });
      expect(again.status, again.text).toBe(200);
      expect(again.body).toMatchObject({ id: first.id, status: 'duplicate' });
    }
    // Another session is another turn, even with the same hash.
    await created(turns.add('acme', { ...hashed, metadata: { session_id: 's2' } }));
    const okAgain = await created(turns.add('acme', plain));
    expect(okAgain.id).not.toBe(said.id);
    expect((await turns.list(`?user_id=${user}`, 'acme')).body.total).toBe(4);
  });

  it('converges concurrent deliveries of one turn on one row', async () => {
    const user = freshUser('user');
    const turn = {
      user_id: user,
      text: 'Delivered many times at once',
      speaker: 'hash-abc',
      metadata: { session_id: 's' },
    };
    const results = await Promise.all(Array.from({ length: 6 }, () => turns.add('acme', turn)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect((await turns.list(`?user_id=${user}`, 'acme')).body.total).toBe(1);
  });

  it('dates a turn by metadata.timestamp and refuses bad fields with 400 naming them', async () => {
    const user = freshUser('user');
    const body = await created(
      turns.add('acme', {
        user_id: user,
        text: 'Said long ago',
        speaker: 'alice',
        metadata: { session_id: 's', timestamp: '2023-05-08T13:56:00+02:00' },
      }),
    );
    expect(body.created_at).toBe('2023-05-08T11:56:00.000Z');
    expect((await memoryRow(t, body.id)).created_at).toBe('2023-05-08T11:56:00.000Z');

    const before = await countRows(t, 'memories');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ user_id: 'someone@example.com', text: 'x', speaker: 'a' }, 'user_id'],
      [{ user_id: user, text: '', speaker: 'a' }, 'text'],
      [{ user_id: user, text: 'x' }, 'speaker'],
      [{ text: 'x', speaker: 'a' }, 'user_id'],
      [{ user_id: user, text: 'x', speaker: 'a', metadata: { timestamp: 'May 8th' } }, 'metadata/timestamp'],
      [{ user_id: user, text: 'x', speaker: 'a', metadata: { session_id: 5 } }, 'metadata/session_id'],
      [{ user_id: user, text: 'x', speaker: 'a', metadata: 'none' }, 'metadata'],
      [{ user_id: user, text: 'x', speaker: 'a', extra: true }, 'extra'],
      // The limits of /memory/add hold on this plane too.
      [{ user_id: user, text: '   \n ', speaker: 'a' }, 'text'],
      [{ user_id: user, text: 'x', speaker: 'a', metadata: { big: 'x'.repeat(17_000) } }, 'metadata'],
      [{ user_id: user, text: 'x', speaker: 'a', metadata: { big: 'x'.repeat(900_000) } }, 'metadata'],
    ];
    for (const [body, field] of cases) expectError(await turns.add('acme', body), 400, 'validation_error', field);
    expect(await countRows(t, 'memories')).toBe(before);
  });

  it('recalls the relevant turns best first, with a ready context string', async () => {
    const user = freshUser('user');
    const said = [
      ['alice', 'I just got back from a trip to Kyoto', 's1'],
      ['bob', 'How were the temples in Kyoto?', 's1'],
      ['alice', 'Beautiful, the gardens were the highlight', 's1'],
      ['alice', 'My new job at the bakery starts Monday', 's2'],
    ] as const;
    const ids = [];
    for (const [speaker, text, session] of said)
      ids.push(
        (await created(turns.add('acme', { user_id: user, text, speaker, metadata: { session_id: session } }))).id,
      );
    await created(
      turns.add('acme', { user_id: freshUser('other'), text: 'Kyoto temples are my favourite', speaker: 'carol' }),
    );
    await created(
      turns.add('globex', { user_id: user, text: 'Kyoto travel notes of another tenant', speaker: 'dave' }),
    );

    const res = await turns.recall('acme', { user_id: user, query: 'What did Alice think of the Kyoto temples?' });
    expect(res.status, res.text).toBe(200);
    const { memories, context } = res.body;
    expect(memories.length).toBeGreaterThan(0);
    // Best first: a turn of the Kyoto conversation (the question, the trip or Alice's verdict), never the bakery.
    expect(ids.slice(0, 3)).toContain(memories[0].id);
    for (const m of memories) {
      // Whole memory records, as every retrieval operation returns them (spec rule 4).
      expect(Object.keys(m).sort()).toEqual([
        'client_ref',
        'created_at',
        'end_user_id',
        'expires_at',
        'id',
        'importance',
        'is_summary',
        'metadata',
        'score',
        'session_id',
        'source',
        'speaker',
        'superseded_by',
        'tags',
        'tenant_id',
        'text',
        'updated_at',
      ]);
      expect(m).toMatchObject({
        source: 'chat',
        tags: [],
        importance: 0.5,
        metadata: {},
        tenant_id: 'acme',
        end_user_id: user,
      });
      expect(m.score).toBeGreaterThan(0);
      expect(m.score).toBeLessThanOrEqual(1);
      expect(ids).toContain(m.id);
    }
    expect(memories.map((m: { score: number }) => m.score)).toEqual(
      [...memories.map((m: { score: number }) => m.score)].sort((a, b) => b - a),
    );
    expect(memories[0]).toMatchObject({
      speaker: expect.any(String),
      session_id: 's1',
      created_at: expect.any(String),
    });
    for (const m of memories) expect(context).toContain(`${m.speaker}: ${m.text}`);
    expect(context).not.toContain('another tenant');

    const narrowed = await turns.recall('acme', { user_id: user, query: 'Kyoto bakery job', session_id: 's2' });
    expect(narrowed.body.memories.map((m: { id: number }) => m.id)).toEqual([ids[3]]);
    const nobody = await turns.recall('acme', { user_id: freshUser('nobody'), query: 'Kyoto' });
    expect(nobody.body).toEqual({ memories: [], context: '' });
    expectError(await turns.recall('acme', { user_id: user, query: '' }), 400, 'validation_error', 'query');
    expectError(await turns.recall('acme', { user_id: user, query: 'x', k: 101 }), 400, 'validation_error', 'k');
  });

  it('recalls whole memory records with their metadata, and only relevant ones unless min_score says otherwise', async () => {
    const user = freshUser('user');
    const passport = await created(
      turns.add('acme', {
        user_id: user,
        text: 'My passport is in the top drawer of the desk',
        speaker: 'alice',
        source: 'assistant-chat',
        metadata: { session_id: 's9', project: 'travel', mood: 'calm' },
      }),
    );
    for (const text of [
      'Adopted a grey cat called Smudge',
      'Booked flights to Lisbon for the summer',
      'Allergic to peanuts',
    ]) {
      await created(
        turns.add('acme', { user_id: user, text, speaker: 'alice', metadata: { session_id: `other-${text.length}` } }),
      );
    }
    const res = await turns.recall('acme', { user_id: user, query: 'where is my passport?' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.memories).toHaveLength(1);
    expect(res.body.memories[0]).toMatchObject({
      id: passport.id,
      text: 'My passport is in the top drawer of the desk',
      speaker: 'alice',
      source: 'assistant-chat',
      metadata: { project: 'travel', mood: 'calm' },
      tags: [],
      importance: 0.5,
      is_summary: false,
      session_id: 's9',
      tenant_id: 'acme',
      end_user_id: user,
      superseded_by: null,
      created_at: passport.created_at,
    });
    // The same score as /memory/query would give: one scale for every retrieval operation.
    expect(res.body.memories[0].score).toBeGreaterThan(0);
    expect(res.body.memories[0].score).toBeLessThan(1);
    expect((await turns.recall('acme', { user_id: user, query: 'volcano insurance' })).body).toEqual({
      memories: [],
      context: '',
    });
    expect(
      (await turns.recall('acme', { user_id: user, query: 'where is my passport?', min_score: 0 })).body.memories[0].id,
    ).toBe(passport.id);
    expectError(
      await turns.recall('acme', { user_id: user, query: 'x', min_score: 1.1 }),
      400,
      'validation_error',
      'min_score',
    );
  });

  it('lists memories a page at a time with tenant, user and session filters', async () => {
    const tenant = freshUser('tenant');
    const [u1, u2] = [freshUser('user'), freshUser('user')];
    const ids = [];
    for (let i = 0; i < 7; i++) {
      ids.push(
        (
          await created(
            turns.add(tenant, {
              user_id: i < 5 ? u1 : u2,
              text: `turn ${i}`,
              speaker: 's',
              metadata: { session_id: i % 2 ? 'odd' : 'even' },
            }),
          )
        ).id,
      );
    }
    const page = (query: string) =>
      turns.list(query, tenant).then((r) => {
        expect(r.status, r.text).toBe(200);
        return r.body;
      });
    const first = await page('?limit=3');
    expect(first).toMatchObject({ total: 7, offset: 0, limit: 3, has_next: true });
    expect(first.items.map((m: { id: number }) => m.id)).toEqual([ids[6], ids[5], ids[4]]);
    expect(first.items[0]).toMatchObject({
      id: ids[6],
      text: 'turn 6',
      speaker: 's',
      session_id: 'even',
      tenant_id: tenant,
      user_id: u2,
      source: 'chat',
      metadata: {},
      created_at: expect.any(String),
    });
    // Whole records, as every other read answers them: the memory as GET /memory/{id} shows it, plus speaker, tenant and user.
    await t.call('PATCH', `/memory/${ids[6]}`, {
      endUser: u2,
      headers: { 'X-Tenant-ID': tenant },
      body: { tags: ['kept'], importance: 0.9 },
    });
    const whole = (await t.call('GET', `/memory/${ids[6]}`, { endUser: u2, headers: { 'X-Tenant-ID': tenant } })).body;
    expect(whole.tags).toEqual(['kept']);
    expect((await page('?limit=1')).items[0]).toEqual({ ...whole, speaker: 's', tenant_id: tenant, user_id: u2 });
    const last = await page('?limit=3&offset=6');
    expect(last).toMatchObject({ total: 7, offset: 6, limit: 3, has_next: false });
    expect(last.items.map((m: { id: number }) => m.id)).toEqual([ids[0]]);
    expect((await page('?offset=3&limit=3')).has_next).toBe(true);
    expect(await page('?offset=50')).toMatchObject({ items: [], total: 7, offset: 50, limit: 50, has_next: false });

    const byUser = await page(`?user_id=${u1}&session_id=odd`);
    expect(byUser.items.map((m: { id: number }) => m.id)).toEqual([ids[3], ids[1]]);
    expect(byUser.total).toBe(2);
    expect((await page(`?tenant_id=${tenant}&user_id=${u2}`)).items.map((m: { id: number }) => m.id)).toEqual([
      ids[6],
      ids[5],
    ]);
    for (const [query, field] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?offset=-1', 'offset'],
      ['?limit=x', 'limit'],
      ['?nope=1', 'nope'],
    ]) {
      expectError(await turns.list(query!, tenant), 400, 'validation_error', field);
    }
  });

  it('reports health, counts and the quota', async () => {
    const tenant = freshUser('tenant');
    await created(turns.add(tenant, { user_id: 'u1', text: 'one', speaker: 's' }));
    await created(turns.add(tenant, { user_id: 'u1', text: 'two', speaker: 's' }));
    await created(turns.add(tenant, { user_id: 'u2', text: 'three', speaker: 's' }));
    const sent = Date.now();
    const res = await v1(t, 'GET', '/v1/memory/status', { tenant });
    const answered = Date.now();
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      status: 'ok',
      database: 'ok',
      tenant_id: tenant,
      counts: { tenants: 1, users: 2, memories: 3, turns_this_period: 3 },
      quota: {
        monthly_turns: 100_000,
        used: 3,
        remaining: 99_997,
        period_start: expect.any(String),
        period_end: expect.any(String),
      },
    });
    // The server's month at the moment it answered, whichever side of a month boundary that was.
    expect(Date.parse(res.body.quota.period_start)).toBeLessThanOrEqual(answered);
    expect(Date.parse(res.body.quota.period_end)).toBeGreaterThan(sent);

    const all = await v1(t, 'GET', '/v1/memory/status');
    expect(all.status).toBe(200);
    expect(all.body.tenant_id).toBeNull();
    expect(all.body.quota).toBeNull();
    expect(all.body.counts.tenants).toBeGreaterThan(1);
    expect(all.body.counts.memories).toBeGreaterThan(3);
  });

  it('keeps a tenant-bound key to its own tenant: another tenant is 404 and nothing changes', async () => {
    const user = freshUser('user');
    await created(turns.add('tenant-b', { user_id: user, text: 'Tenant B secret plan', speaker: 's' }));
    const a = await t.newKey({ tenantId: 'tenant-a' });
    const own = await v1(t, 'POST', '/v1/memory/add_turn', {
      key: a.key,
      body: { tenant_id: 'tenant-a', user_id: user, text: 'Tenant A plan', speaker: 's' },
    });
    expect(own.status, own.text).toBe(201);

    const rows = await countRows(t, 'memories');
    const attempts = [
      v1(t, 'POST', '/v1/memory/add_turn', {
        key: a.key,
        tenant: 'tenant-b',
        body: { tenant_id: 'tenant-b', user_id: user, text: 'intrusion', speaker: 's' },
      }),
      v1(t, 'POST', '/v1/memory/add_turn', {
        key: a.key,
        body: { tenant_id: 'tenant-b', user_id: user, text: 'intrusion', speaker: 's' },
      }),
      v1(t, 'POST', '/v1/memory/recall', {
        key: a.key,
        tenant: 'tenant-b',
        body: { tenant_id: 'tenant-b', user_id: user, query: 'secret plan' },
      }),
      v1(t, 'POST', '/v1/memory/recall', {
        key: a.key,
        body: { tenant_id: 'tenant-b', user_id: user, query: 'secret plan' },
      }),
      v1(t, 'GET', '/v1/memory/memories', { key: a.key, tenant: 'tenant-b' }),
      v1(t, 'GET', '/v1/memory/memories?tenant_id=tenant-b', { key: a.key }),
      v1(t, 'GET', '/v1/memory/status', { key: a.key, tenant: 'tenant-b' }),
    ];
    for (const res of await Promise.all(attempts)) {
      expectError(res, 404, 'not_found');
      expect(res.text).not.toContain('secret');
    }
    expect(await countRows(t, 'memories')).toBe(rows);

    // What the key does see is its own tenant only.
    const recall = await v1(t, 'POST', '/v1/memory/recall', {
      key: a.key,
      body: { tenant_id: 'tenant-a', user_id: user, query: 'plan' },
    });
    expect(recall.body.memories.map((m: { text: string }) => m.text)).toEqual(['Tenant A plan']);
    const listed = await v1(t, 'GET', '/v1/memory/memories', { key: a.key });
    expect(listed.body.items.map((m: { tenant_id: string }) => m.tenant_id)).toEqual(['tenant-a']);
    expect((await v1(t, 'GET', '/v1/memory/status', { key: a.key })).body).toMatchObject({
      tenant_id: 'tenant-a',
      counts: { memories: 1 },
    });
  });

  it('makes a cross-tenant key send X-Tenant-ID, and a body tenant_id agree with it', async () => {
    const rows = await countRows(t, 'memories');
    const body = { tenant_id: 'acme', user_id: 'u1', text: 'no tenant header', speaker: 's' };
    expectError(await v1(t, 'POST', '/v1/memory/add_turn', { body }), 400, 'validation_error', 'X-Tenant-ID');
    expectError(
      await v1(t, 'POST', '/v1/memory/recall', { body: { tenant_id: 'acme', user_id: 'u1', query: 'x' } }),
      400,
      'validation_error',
      'X-Tenant-ID',
    );
    expectError(
      await v1(t, 'POST', '/v1/memory/add_turn', { tenant: 'globex', body }),
      400,
      'validation_error',
      'tenant_id',
    );
    expectError(
      await v1(t, 'POST', '/v1/memory/recall', {
        tenant: 'globex',
        body: { tenant_id: 'acme', user_id: 'u1', query: 'x' },
      }),
      400,
      'validation_error',
      'tenant_id',
    );
    expectError(await turns.list('?tenant_id=acme', 'globex'), 400, 'validation_error', 'tenant_id');
    expect(await countRows(t, 'memories')).toBe(rows);
  });
});

forEachDialect('/v1 turns sent together', (dialect) => {
  const t = useTestApp(dialect);
  const turns = turnsOf(t);

  it('stores turns of many users sent at once, each once, with its history, audit row and count', async () => {
    const users = Array.from({ length: 6 }, (_, i) => freshUser(`burst-${i}`));
    const sent = Array.from({ length: 18 }, (_, i) => ({
      user_id: users[i % 6]!,
      text: `burst turn ${i}`,
      speaker: i % 2 ? 'bob' : 'alice',
      metadata: { session_id: 'b1' },
    }));
    const answers = await Promise.all(sent.map((body) => turns.add('burst', body)));
    expect(answers.map((a) => a.status)).toEqual(sent.map(() => 201));
    const ids = answers.map((a) => a.body.id as number);
    expect(new Set(ids).size).toBe(18);
    for (const [i, id] of ids.entries())
      expect(await memoryRow(t, id)).toMatchObject({
        text: sent[i]!.text,
        end_user_id: sent[i]!.user_id,
        session_id: 'b1',
      });
    const history = await t.database.db
      .selectFrom('memory_history')
      .select('memory_id')
      .where('memory_id', 'in', ids)
      .where('action', '=', 'create')
      .execute();
    expect(history.map((h) => h.memory_id).sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
    const audited = await t.database.db
      .selectFrom('audit_log')
      .select('target_id')
      .where('action', '=', 'memory.add_turn')
      .where('target_id', 'in', ids.map(String))
      .execute();
    expect(audited).toHaveLength(18);
    expect((await v1(t, 'GET', '/v1/memory/status', { tenant: 'burst' })).body.quota).toMatchObject({ used: 18 });
    // Delivered again, all at once: every one converges on its row.
    const again = await Promise.all(sent.map((body) => turns.add('burst', body)));
    expect(again.map((a) => [a.status, a.body.id])).toEqual(ids.map((id) => [200, id]));
    expect((await v1(t, 'GET', '/v1/memory/status', { tenant: 'burst' })).body.quota).toMatchObject({ used: 18 });
  });

  it('answers a turn sent again with its Idempotency-Key as the first time, storing and counting it once', async () => {
    const user = freshUser('keyed');
    const send = () =>
      t.call('POST', '/v1/memory/add_turn', {
        endUser: null,
        body: { tenant_id: 'keyed', user_id: user, text: 'said once, sent twice', speaker: 'alice' },
        headers: { 'X-Tenant-ID': 'keyed', 'Idempotency-Key': `turn-${user}` },
      });
    const first = await send();
    expect(first.status, first.text).toBe(201);
    const again = await send();
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await t.database.db.selectFrom('memories').select('id').where('end_user_id', '=', user).execute()).toEqual([
      { id: first.body.id },
    ]);
    expect((await v1(t, 'GET', '/v1/memory/status', { tenant: 'keyed' })).body.quota).toMatchObject({ used: 1 });
    // On PostgreSQL the turn's statement recorded its result in the request's claim, with the id it gave the row.
    if (dialect === 'postgres') {
      const claims = await t.database.db
        .selectFrom('idempotency_keys')
        .select('committed_id')
        .where('key_hash', '=', sha256Hex(`turn-${user}`))
        .execute();
      expect(claims.map((c) => Number(c.committed_id))).toEqual([first.body.id]);
    }
  });

  it.runIf(dialect === 'postgres')(
    'a turn stored by another transaction while its statement waits for the end user is not stored again',
    async () => {
      const user = freshUser('raced');
      const first = await created(
        turns.add('acme', { user_id: user, text: 'an earlier turn', speaker: 'alice', metadata: { session_id: 'r1' } }),
      );
      const { project_id: projectId } = await memoryRow(t, first.id);
      // The redelivery below is looked up under this minute's arrival key and the last one's; the other transaction stores
      // the turn under the last one's (it arrived a minute slot earlier), which the dedupe index does not match. A run
      // that crosses into the next minute (the server's arrival then in the slot after) is made again, with new words.
      const delivered = async (attempt: number) => {
        const slot = Math.floor(Date.now() / 60_000);
        const text = `Delivered twice, once by each of two servers (${attempt})`;
        let storedId = 0;
        const other = await holdUncommitted(
          t,
          async (trx) => {
            const { rows } = await sql<{ revision: number }>`UPDATE end_users SET revision = revision + 1
        WHERE project_id = ${projectId} AND tenant_id = 'acme' AND end_user_id = ${user} RETURNING revision`.execute(
              trx,
            );
            const inserted = await sql<{
              id: number;
            }>`INSERT INTO memories (project_id, tenant_id, end_user_id, text, tags, is_summary, source, importance,
          metadata, session_id, speaker, dedupe_hash, seq, created_at, updated_at)
        VALUES (${projectId}, 'acme', ${user}, ${text}, '[]', false, 'chat', 0.5, '{}', 'r1', 'bob',
          ${sha256Hex(JSON.stringify(['turn-arrival', 'r1', 'bob', text, slot - 1]))}, ${rows[0]!.revision}, now(), now()) RETURNING id`.execute(
              trx,
            );
            storedId = Number(inserted.rows[0]!.id);
          },
          { commit: true },
        );
        const answer = turns.add('acme', { user_id: user, text, speaker: 'bob', metadata: { session_id: 'r1' } });
        await lockWaiters(t, 1, 'the turn waiting for its end user');
        await other.release();
        const res = await answer;
        return Math.floor(Date.now() / 60_000) === slot ? { res, storedId, text } : undefined;
      };
      let run = await delivered(0);
      for (let attempt = 1; !run; attempt++) run = await delivered(attempt);
      const { res, storedId, text } = run;
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ id: storedId, status: 'duplicate' });
      expect(await t.database.db.selectFrom('memories').select('id').where('text', '=', text).execute()).toEqual([
        { id: storedId },
      ]);
    },
  );
});

forEachDialect('/v1 monthly turn quota', (dialect) => {
  const t = useTestApp(dialect, { tenant: { defaultMonthlyTurns: 3 } });

  it('answers 429 quota_exceeded with Retry-After once the tenant’s turns are used up, storing nothing', async () => {
    const turns = turnsOf(t);
    const first = [];
    for (let i = 0; i < 3; i++)
      first.push(await created(turns.add('small', { user_id: 'u', text: `turn ${i}`, speaker: 's' })));
    const rows = await countRows(t, 'memories');
    const over = await turns.add('small', { user_id: 'u', text: 'one too many', speaker: 's' });
    expectError(over, 429, 'quota_exceeded');
    const retryAfter = Number(over.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(31 * 86_400);
    expect(await countRows(t, 'memories')).toBe(rows);
    expect((await turns.list('', 'small')).body.total).toBe(3);

    // A repeated delivery of a stored turn still converges; another tenant has its own quota.
    const again = await turns.add('small', { user_id: 'u', text: 'turn 1', speaker: 's' });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: first[1].id, status: 'duplicate' });
    await created(turns.add('other', { user_id: 'u', text: 'fresh tenant', speaker: 's' }));
    expect((await v1(t, 'GET', '/v1/memory/status', { tenant: 'small' })).body.quota).toMatchObject({
      monthly_turns: 3,
      used: 3,
      remaining: 0,
    });
    expectError(
      await turns.add('small', { user_id: 'u2', text: 'still too many', speaker: 's' }),
      429,
      'quota_exceeded',
    );
  });

  it('never lets concurrent turns exceed the quota', async () => {
    const turns = turnsOf(t);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        turns.add('busy', { user_id: `u${i % 3}`, text: `burst ${i}`, speaker: 's' }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 429, 429, 429, 429, 429]);
    expect((await turns.list('', 'busy')).body.total).toBe(3);
    expect((await v1(t, 'GET', '/v1/memory/status', { tenant: 'busy' })).body.quota).toMatchObject({
      used: 3,
      remaining: 0,
    });
  });
});
