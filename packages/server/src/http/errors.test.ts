import { beforeAll, expect, it } from 'vitest';
import { forEachDialect, type CallOptions, type Response, useTestApp } from '../testing/harness.js';
import { addMemory, breakAuditLog, expectError, expectNothingWritten } from '../testing/memories.js';

forEachDialect('Error responses and request hygiene', (dialect) => {
  const t = useTestApp(dialect);
  let memoryId: number;
  beforeAll(async () => {
    memoryId = (await addMemory(t, 'Hygiene memory')).id;
  });

  const json = { 'content-type': 'application/json' };
  const raw = (method: string, url: string, payload: string, headers: Record<string, string | undefined> = json) =>
    expectNothingWritten(t, () => t.call(method, url, { payload, headers }));

  it('answers unknown routes with 404 not_found in the error shape, with or without a key', async () => {
    for (const [method, url] of [
      ['GET', '/nope'],
      ['POST', '/memory/unknown'],
      ['PUT', '/memory/add'],
      ['DELETE', '/memory'],
      ['GET', '/v2/memory/1'],
    ]) {
      for (const key of [undefined, null]) {
        const res = await t.call(method!, url!, { key });
        expectError(res, 404, 'not_found', null);
        expect(res.body.error.message).toContain(url!.split('?')[0]);
      }
    }
  });

  it('answers malformed or empty JSON with 400 naming the body, writing nothing', async () => {
    const poisoned = '{"text": "x", "metadata": {"__proto__": {"admin": true}}}';
    for (const payload of ['{"text": "unterminated"', "{text: 'x'}", '{"text": "a",}', 'nul', '', poisoned]) {
      expectError(await raw('POST', '/memory/add', payload), 400, 'validation_error', 'body');
    }
    expectError(await raw('PATCH', `/memory/${memoryId}`, '{"tags": ['), 400, 'validation_error', 'body');
    expectError(await raw('DELETE', '/memory/forget', '{"ids": [1'), 400, 'validation_error', 'body');
  });

  it('answers a body that is not JSON with 415, writing nothing', async () => {
    const payload = JSON.stringify({ text: 'Sent with the wrong type' });
    for (const headers of [
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      { 'content-type': 'application/xml' },
      {},
    ]) {
      for (const [method, url] of [
        ['POST', '/memory/add'],
        ['POST', '/memory/bulk-add'],
        ['PATCH', `/memory/${memoryId}`],
      ]) {
        expectError(await raw(method!, url!, payload, headers), 415, 'unsupported_media_type');
      }
    }
    const charset = await t.call('POST', '/memory/add', {
      payload,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(charset.status).toBe(201);
  });

  it('answers a body over the limit with 413, writing nothing', async () => {
    const big = 'x'.repeat(1024 * 1024);
    expectError(await raw('POST', '/memory/add', JSON.stringify({ text: big })), 413, 'payload_too_large');
    const items = Array.from({ length: 50 }, (_, i) => ({ text: `${i} ${'y'.repeat(25_000)}` }));
    expectError(await raw('POST', '/memory/bulk-add', JSON.stringify(items)), 413, 'payload_too_large');
  });

  it('answers unknown fields with 400 naming them, on every operation', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/memory/add', { text: 'x', colour: 'red' }, 'colour'],
      ['PATCH', `/memory/${memoryId}`, { importance: 0.4, colour: 'red' }, 'colour'],
      ['POST', '/memory/batch-update', { updates: [{ id: memoryId, colour: 'red' }] }, 'updates/0/colour'],
      ['POST', '/memory/batch-update', { updates: [{ id: memoryId, importance: 0.4 }], colour: 'red' }, 'colour'],
      ['DELETE', '/memory/forget', { ids: [memoryId], colour: 'red' }, 'colour'],
    ];
    for (const [method, url, body, field] of cases) {
      expectError(await expectNothingWritten(t, () => t.call(method, url, { body })), 400, 'validation_error', field);
    }
    const bulk = await t.call('POST', '/memory/bulk-add', { body: [{ text: 'Bulk colour', colour: 'red' }] });
    expect(bulk.body.results[0]).toMatchObject({
      status: 'failed',
      error: { code: 'validation_error', field: 'colour' },
    });
  });

  it('answers malformed paths in the error shape', async () => {
    expectError(await t.call('GET', '/memory/%E0%A4%A'), 400, 'validation_error', 'path');
    expectError(
      await t.call('DELETE', `/memory/user/${'z'.repeat(5_000)}`, { endUser: null }),
      400,
      'validation_error',
      'path',
    );
  });

  it('sends X-Request-ID on every response, echoing a valid incoming one', async () => {
    const bad = await t.newKey({ scopes: [] });
    const requests: Array<[string, string, CallOptions]> = [
      ['POST', '/memory/add', { body: { text: 'Request id one' } }],
      ['POST', '/memory/add', { body: { text: 'Request id one' } }],
      ['POST', '/memory/bulk-add', { body: [{ text: 'Request id two' }, { text: '' }] }],
      ['GET', `/memory/${memoryId}`, {}],
      ['GET', '/memory/export', { endUser: null }],
      ['GET', '/memory/999999', {}],
      ['POST', '/memory/add', { body: {} }],
      ['POST', '/memory/add', { key: null }],
      ['POST', '/memory/add', { key: bad.key }],
      ['GET', '/nowhere', {}],
      ['POST', '/memory/add', { payload: 'x', headers: { 'content-type': 'text/plain' } }],
      ['POST', '/memory/add', { payload: JSON.stringify({ text: 'x'.repeat(1024 * 1024) }), headers: json }],
      ['GET', '/memory/%E0%A4%A', {}],
    ];
    const seen = new Set<number>();
    for (const [index, [method, url, options]] of requests.entries()) {
      const generated = await t.call(method, url, options);
      expect(generated.headers['x-request-id'], `${method} ${url}`).toMatch(/^req_[0-9a-f]{24}$/);
      const id = `trace-${index}.a:b_c`;
      const echoed = await t.call(method, url, { ...options, headers: { ...options.headers, 'x-request-id': id } });
      expect(echoed.headers['x-request-id'], `${method} ${url}`).toBe(id);
      if (echoed.status >= 400) expect(echoed.body.error.request_id).toBe(id);
      seen.add(generated.status).add(echoed.status);
    }
    expect([...seen].sort()).toEqual([200, 201, 207, 400, 401, 403, 404, 413, 415]);
  });

  it('rolls a write back whole when it fails midway, answering 500 with a request id and no internals', async () => {
    const target = await addMemory(t, 'Survives failed writes');
    const writes: Array<[string, string, unknown]> = [
      ['POST', '/memory/add', { text: 'Never stored', client_ref: 'never' }],
      ['POST', '/memory/bulk-add', [{ text: 'Never stored A' }, { text: 'Never stored B' }]],
      ['PATCH', `/memory/${target.id}`, { importance: 0.01, tags: ['never'] }],
      [
        'POST',
        '/memory/batch-update',
        {
          updates: [
            { id: target.id, importance: 0.02 },
            { id: memoryId, source: 'never' },
          ],
        },
      ],
      ['DELETE', '/memory/forget', { ids: [target.id, memoryId] }],
      ['DELETE', '/memory/user/user-1', undefined],
    ];
    const restore = await breakAuditLog(t);
    const failures: Response[] = [];
    try {
      for (const [method, url, body] of writes) {
        const res = await expectNothingWritten(t, () => t.call(method, url, body === undefined ? {} : { body }));
        expectError(res, 500, 'internal_error', null);
        expect(res.text).not.toContain('injected');
        failures.push(res);
      }
    } finally {
      await restore();
    }
    expect(failures).toHaveLength(writes.length);
    // The unhandled error is logged with its request id, so it can be traced.
    for (const res of failures)
      expect(
        t.logs.some((line) => line.includes(String(res.headers['x-request-id'])) && line.includes('injected')),
      ).toBe(true);
    // With the audit log working again the same writes go through.
    expect((await t.call('POST', '/memory/add', { body: writes[0]![2] })).status).toBe(201);
  });

  it('never writes an API key to the logs', async () => {
    const revoked = await t.newKey();
    await t.database.db
      .updateTable('api_keys')
      .set({ revoked_at: new Date().toISOString() })
      .where('id', '=', revoked.id)
      .execute();
    const wrong = `egm_${'Q'.repeat(43)}`;
    for (const key of [t.key, revoked.key, wrong]) {
      await t.call('POST', '/memory/add', { body: { text: `Logged request ${key.slice(-4)}` }, key });
      await t.call('GET', '/memory/export', { key, endUser: null });
      await t.call('POST', '/memory/add', { payload: '{bad', headers: json, key });
      await t.call('GET', '/not-a-route', { key });
    }
    expect(t.logs.length).toBeGreaterThan(10);
    const logged = t.logs.join('\n');
    for (const key of [t.key, revoked.key, wrong]) {
      expect(logged).not.toContain(key);
      expect(logged).not.toContain(key.slice(4));
    }
  });
});
