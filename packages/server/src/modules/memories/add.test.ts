import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, startTestApp, type TestApp } from '../../testing/harness.js';

forEachDialect('POST /memory/add', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(dialect);
  });
  afterAll(() => t.close());

  const count = async () =>
    Number((await t.database.db.selectFrom('memories').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  it('creates a memory and answers with it', async () => {
    const res = await t.call('POST', '/memory/add', {
      body: { text: 'Prefers window seats on long flights', tags: ['travel'], importance: 0.8, metadata: { origin: 'chat' }, source: 'chat' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      text: 'Prefers window seats on long flights', tags: ['travel'], importance: 0.8, metadata: { origin: 'chat' },
      source: 'chat', is_summary: false, end_user_id: 'user-1', client_ref: null,
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
    const sameRef = await t.call('POST', '/memory/add', { body: { text: 'Something else entirely', client_ref: 'crm-1' } });
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
    ];
    for (const [body, field] of cases) {
      const res = await t.call('POST', '/memory/add', { body });
      expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'validation_error', field });
      expect(res.body.error.request_id).toBe(res.headers['x-request-id']);
    }
    expect(await count()).toBe(before);
  });
});
