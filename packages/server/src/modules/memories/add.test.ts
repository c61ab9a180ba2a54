import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { addMemory, expectAudited, expectError, expectNothingWritten, withEffects } from '../../testing/memories.js';

forEachDialect('POST /memory/add', (dialect) => {
  const t = useTestApp(dialect);

  const count = async () =>
    Number(
      (
        await t.database.db
          .selectFrom('memories')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('creates a memory and answers with it', async () => {
    const res = await t.call('POST', '/memory/add', {
      body: {
        text: 'Prefers window seats on long flights',
        tags: ['travel'],
        importance: 0.8,
        metadata: { origin: 'chat' },
        source: 'chat',
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      text: 'Prefers window seats on long flights',
      tags: ['travel'],
      importance: 0.8,
      metadata: { origin: 'chat' },
      source: 'chat',
      is_summary: false,
      end_user_id: 'user-1',
      client_ref: null,
    });
    expect(res.body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    const got = await t.call('GET', `/memory/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('skips the same normalised text and the same client_ref', async () => {
    const first = await t.call('POST', '/memory/add', { body: { text: 'Allergic to peanuts', client_ref: 'crm-1' } });
    expect(first.status).toBe(201);
    const sameText = await t.call('POST', '/memory/add', { body: { text: '  allergic   to PEANUTS! ' } });
    expect(sameText.status).toBe(200);
    expect(sameText.body).toEqual({ status: 'skipped', reason: 'duplicate_text', memory_id: first.body.id });
    const sameRef = await t.call('POST', '/memory/add', {
      body: { text: 'Something else entirely', client_ref: 'crm-1' },
    });
    expect(sameRef.body).toEqual({ status: 'skipped', reason: 'duplicate_client_ref', memory_id: first.body.id });
    // Another end user has their own memories: no skip.
    const other = await t.call('POST', '/memory/add', { body: { text: 'Allergic to peanuts' }, endUser: 'user-2' });
    expect(other.status).toBe(201);
  });

  it('rejects bad input naming the field, and writes nothing', async () => {
    const before = await count();
    const cases: Array<[unknown, string]> = [
      [{}, 'text'],
      [{ text: '' }, 'text'],
      [{ text: '   ' }, 'text'],
      [{ text: 42 }, 'text'],
      [{ text: 'x'.repeat(32_001) }, 'text'],
      [{ text: 'ok', importance: 1.5 }, 'importance'],
      [{ text: 'ok', importance: '0.5' }, 'importance'],
      [{ text: 'ok', tags: 'a' }, 'tags'],
      [{ text: 'ok', tags: [1] }, 'tags/0'],
      [{ text: 'ok', metadata: [] }, 'metadata'],
      [{ text: 'ok', metadata: { blob: 'x'.repeat(20_000) } }, 'metadata'],
      [{ text: 'ok', txet: 'typo' }, 'txet'],
      [{ text: 'ok', importance: -0.01 }, 'importance'],
      [{ text: 'ok', importance: null }, 'importance'],
      [{ text: 'ok', tags: ['a', 'a'] }, 'tags'],
      [{ text: 'ok', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tags'],
      [{ text: 'ok', tags: [''] }, 'tags/0'],
      [{ text: 'ok', tags: ['x'.repeat(65)] }, 'tags/0'],
      [{ text: 'ok', metadata: null }, 'metadata'],
      [{ text: 'ok', metadata: 'x' }, 'metadata'],
      [{ text: 'ok', source: '' }, 'source'],
      [{ text: 'ok', source: 7 }, 'source'],
      [{ text: 'ok', source: 'x'.repeat(129) }, 'source'],
      [{ text: 'ok', client_ref: '' }, 'client_ref'],
      [{ text: 'ok', client_ref: 12 }, 'client_ref'],
      [{ text: 'ok', client_ref: 'x'.repeat(257) }, 'client_ref'],
      [{ text: 'ok', session_id: '' }, 'session_id'],
      [{ text: 'ok', session_id: ['s'] }, 'session_id'],
      [{ text: null }, 'text'],
      // PostgreSQL cannot store these, so neither dialect accepts them.
      [{ text: 'nul \u0000 inside' }, 'text'],
      [{ text: 'ok', metadata: { k: 'nul \u0000' } }, 'metadata/k'],
      [{ text: 'ok', metadata: { k: 'lone \ud800 surrogate' } }, 'metadata/k'],
      [{ text: 'ok', tags: ['\udc00'] }, 'tags/0'],
    ];
    for (const [body, field] of cases) {
      const res = await t.call('POST', '/memory/add', { body });
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'validation_error', field });
      expect(res.body.error.request_id).toBe(res.headers['x-request-id']);
    }
    expect(await count()).toBe(before);
  });

  it('rejects a body that is not an object, and an end user without X-End-User-ID', async () => {
    for (const body of [[{ text: 'in an array' }], 'text', 42, null]) {
      expectError(
        await expectNothingWritten(t, () => t.call('POST', '/memory/add', { body })),
        400,
        'validation_error',
        'body',
      );
    }
    expectError(
      await t.call('POST', '/memory/add', { body: { text: 'no user' }, endUser: null }),
      400,
      'validation_error',
      'X-End-User-ID',
    );
  });

  it('applies defaults and keeps client_ref and session_id', async () => {
    const memory = await addMemory(t, { text: 'Works remotely on Fridays', client_ref: 'hr-7', session_id: 'sess-1' });
    expect(memory).toMatchObject({
      tags: [],
      importance: 0.5,
      metadata: {},
      source: null,
      client_ref: 'hr-7',
      session_id: 'sess-1',
      is_summary: false,
    });
    expect(memory.updated_at).toBe(memory.created_at);
    expect(Number.isInteger(memory.id)).toBe(true);
  });

  it('keeps a text with a unicode surrogate pair and nested metadata intact', async () => {
    const memory = await addMemory(t, {
      text: 'Loves 🍣 and café',
      metadata: { nested: { list: [1, 'two', null, true] }, zeta: 1, alpha: 2 },
    });
    const got = await t.call('GET', `/memory/${memory.id}`);
    expect(got.body.text).toBe('Loves 🍣 and café');
    expect(got.body.metadata).toEqual({ nested: { list: [1, 'two', null, true] }, zeta: 1, alpha: 2 });
  });

  it('writes one memory.add audit row and a memory.created event with the memory', async () => {
    const { res, audit, events } = await withEffects(t, () =>
      t.call('POST', '/memory/add', { body: { text: 'Audited addition' } }),
    );
    expect(res.status).toBe(201);
    expectAudited({ audit, events }, t, {
      action: 'memory.add',
      target_type: 'memory',
      target_id: String(res.body.id),
    });
    expect(events.map(({ type, payload }) => ({ type, payload }))).toEqual([
      { type: 'memory.created', payload: { memory: res.body, tenant_id: null } },
    ]);
    const history = await t.call('GET', `/memory/${res.body.id}/history`);
    expect(history.body.items.map((i: { action: string }) => i.action)).toEqual(['create']);
  });

  it('audits a skipped add as skipped, without an event or a new row', async () => {
    const first = await addMemory(t, 'Commutes by bike');
    const { res, audit, events } = await withEffects(t, () =>
      t.call('POST', '/memory/add', { body: { text: 'commutes by BIKE.' } }),
    );
    expect(res.body).toEqual({ status: 'skipped', reason: 'duplicate_text', memory_id: first.id });
    expectAudited({ audit, events }, t, { action: 'memory.add', target_id: String(first.id), result: 'skipped' });
    expect(events).toEqual([]);
  });

  it('takes client_ref before text when both match, and scopes duplicates to the project', async () => {
    const a = await addMemory(t, { text: 'Speaks Portuguese', client_ref: 'ref-a' });
    const b = await addMemory(t, { text: 'Speaks Japanese', client_ref: 'ref-b' });
    const both = await t.call('POST', '/memory/add', { body: { text: 'Speaks Japanese', client_ref: 'ref-a' } });
    expect(both.body).toEqual({ status: 'skipped', reason: 'duplicate_client_ref', memory_id: a.id });
    expect(b.id).not.toBe(a.id);
    const other = await t.otherTenant();
    const elsewhere = await t.call('POST', '/memory/add', {
      body: { text: 'Speaks Portuguese', client_ref: 'ref-a' },
      key: other.key,
      project: other.projectId,
    });
    expect(elsewhere.status).toBe(201);
  });

  it('adds again once the earlier memory is forgotten', async () => {
    const first = await addMemory(t, { text: 'Lives in Lisbon', client_ref: 'addr-1' });
    expect((await t.call('DELETE', '/memory/forget', { body: { ids: [first.id] } })).body).toEqual([first.id]);
    const again = await addMemory(t, { text: 'Lives in Lisbon', client_ref: 'addr-1' });
    expect(again.id).not.toBe(first.id);
  });

  it('tells apart texts without letters or digits, and still skips their exact repeats', async () => {
    const sushi = await addMemory(t, '🍣', { endUser: 'emoji-user' });
    await addMemory(t, '🍕', { endUser: 'emoji-user' });
    await addMemory(t, '!!!', { endUser: 'emoji-user' });
    await addMemory(t, '???', { endUser: 'emoji-user' });
    const repeat = await t.call('POST', '/memory/add', { body: { text: ' 🍣 ' }, endUser: 'emoji-user' });
    expect(repeat.body).toEqual({ status: 'skipped', reason: 'duplicate_text', memory_id: sushi.id });
  });

  it('creates one memory when the same text is added concurrently', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.call('POST', '/memory/add', { body: { text: 'Concurrent text' }, endUser: 'racing-user' }),
      ),
    );
    const created = results.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 201)) {
      expect(r.body).toEqual({ status: 'skipped', reason: 'duplicate_text', memory_id: created[0]!.body.id });
    }
  });
});
