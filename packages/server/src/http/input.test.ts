import { expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../testing/harness.js';
import { addMemory, expectError, snapshot } from '../testing/memories.js';
import { INPUT_LIMITS } from './input.js';

/** The one input rule (http/input.ts), on every route and both databases. */
forEachDialect('the input rule', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);
  const v1 = { endUser: null, headers: { 'X-Tenant-ID': 'acme' } } as const;
  const turn = (fields: Record<string, unknown>) => ({
    tenant_id: 'acme',
    user_id: 'u1',
    text: 'hello',
    speaker: 'me',
    ...fields,
  });

  it('refuses NUL and unpaired surrogates in any string with 400 naming the field, and stores nothing', async () => {
    const memory = await addMemory(t, 'a memory to rate');
    const cases: Array<[string, string, Record<string, unknown>, string, object?]> = [
      ['POST', '/memory/add', { text: 'nul\u0000inside' }, 'text'],
      ['POST', '/memory/add', { text: 'ok', metadata: { note: 'x\u0000' } }, 'metadata/note'],
      ['POST', '/memory/add', { text: 'ok', metadata: { 'k\u0000': 1 } }, 'metadata/k\uFFFD'],
      ['POST', '/memory/add', { text: 'lone \ud800 surrogate' }, 'text'],
      ['POST', '/memory/add', { text: 'ok', tags: ['fine', '\udc00'] }, 'tags/1'],
      ['POST', '/v1/memory/add_turn', turn({ text: '\u0000' }), 'text', v1],
      ['POST', '/v1/memory/add_turn', turn({ speaker: 'a\u0000' }), 'speaker', v1],
      ['POST', '/v1/memory/add_turn', turn({ metadata: { session_id: 's\u0000' } }), 'metadata/session_id', v1],
      ['POST', `/memory/${memory.id}/feedback`, { rating: 'positive', comment: 'c\u0000' }, 'comment'],
      [
        'POST',
        '/auth/login',
        { email: 'a\u0000@example.com', password: 'x' },
        'email',
        { key: null, project: null, endUser: null },
      ],
      ['POST', '/org/projects', { name: 'p\u0000' }, 'name', { token: owner.token }],
      ['POST', '/organizations', { name: '\ud83d' }, 'name', { token: owner.token }],
    ];
    const before = await snapshot(t);
    for (const [method, url, body, field, options] of cases) {
      expectError(await t.call(method, url, { body, ...options }), 400, 'validation_error', field);
    }
    expect(await snapshot(t)).toEqual(before);
  });

  it('refuses NUL in query strings and path parameters', async () => {
    expectError(await t.call('GET', '/v1/memory/memories?user_id=a%00b', v1), 400, 'validation_error', 'user_id');
    expectError(
      await t.call('GET', '/admin/team/audit-logs?action=a%00', { token: owner.token }),
      400,
      'validation_error',
      'action',
    );
    expectError(
      await t.call('GET', '/org/projects/proj_%00', { token: owner.token }),
      400,
      'validation_error',
      'project_id',
    );
    expectError(
      await t.call('DELETE', '/memory/user/a%00b', { endUser: null }),
      400,
      'validation_error',
      'end_user_id',
    );
  });

  it('keeps integers within 2^53-1: path ids beyond are 404, query and body values 400', async () => {
    const huge = '99999999999999999999';
    expectError(await t.call('GET', `/org/api-keys/${huge}`, { token: owner.token }), 404, 'not_found');
    expectError(await t.call('GET', `/memory/${huge}`), 404, 'not_found');
    expectError(await t.call('GET', `/memory/refresh/${huge}`, { endUser: null }), 404, 'not_found');
    expectError(
      await t.call('GET', `/admin/team/audit-logs?actor_id=${huge}`, { token: owner.token }),
      400,
      'validation_error',
      'actor_id',
    );
    expectError(await t.call('DELETE', '/memory/forget', { body: { ids: [1e20] } }), 400, 'validation_error', 'ids/0');
    expectError(
      await t.call('DELETE', '/memory/forget', {
        payload: `{"ids":[${huge}]}`,
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'validation_error',
      'ids/0',
    );
  });

  it('answers only canonical decimal path ids: 01, +1, " 1" name no key', async () => {
    const key = await t.newKey();
    expect((await t.call('GET', `/org/api-keys/${key.id}`, { token: owner.token })).status).toBe(200);
    for (const id of [`0${key.id}`, `+${key.id}`, `%20${key.id}`, `${key.id}%20`, `${key.id}.0`, `${key.id}e0`]) {
      expectError(await t.call('GET', `/org/api-keys/${id}`, { token: owner.token }), 404, 'not_found');
      expectError(await t.call('DELETE', `/org/api-keys/${id}`, { token: owner.token }), 404, 'not_found');
    }
    const still = await t.call('GET', `/org/api-keys/${key.id}`, { token: owner.token });
    expect(still.body.status).toBe('active');
  });

  it('answers a huge offset on every list with 400 naming offset; offset and limit are optional in OpenAPI', async () => {
    const lists: Array<[string, object]> = [
      ['/v1/memory/memories', v1],
      ['/admin/team/audit-logs', { token: owner.token }],
      ['/org/projects', { token: owner.token }],
      ['/org/api-keys', { token: owner.token }],
      ['/auth/sessions', { token: owner.token }],
      ['/organizations', { token: owner.token }],
    ];
    for (const [url, options] of lists) {
      expect((await t.call('GET', url, options)).status, url).toBe(200);
      for (const offset of ['1e20', 'Infinity', '100000000000000000000', '-1', '1.5']) {
        expectError(await t.call('GET', `${url}?offset=${offset}`, options), 400, 'validation_error', 'offset');
      }
      expectError(await t.call('GET', `${url}?limit=1e1`, options), 400, 'validation_error', 'limit');
    }
    const spec = (await t.call('GET', '/openapi.json', { key: null, project: null, endUser: null })).body;
    let paged = 0;
    for (const [path, methods] of Object.entries(
      spec.paths as Record<
        string,
        Record<string, { parameters?: Array<{ in: string; name: string; required?: boolean }> }>
      >,
    )) {
      for (const op of Object.values(methods)) {
        for (const p of op.parameters ?? []) {
          if (p.in !== 'query' || (p.name !== 'offset' && p.name !== 'limit')) continue;
          paged++;
          expect(p.required ?? false, `${path} ${p.name}`).toBe(false);
        }
      }
    }
    expect(paged).toBeGreaterThanOrEqual(lists.length * 2);
  });

  it(`refuses JSON nested deeper than ${INPUT_LIMITS.maxDepth} levels with 400 naming the field, on every body`, async () => {
    const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
    const memory = await addMemory(t, 'a memory to patch');
    const json = { 'content-type': 'application/json' };
    const bodies: Array<[string, string, string, object?]> = [
      ['POST', '/memory/add', `{"text":"x","metadata":${deep(5000)}}`],
      ['POST', '/memory/bulk-add', `[{"text":"x","metadata":${deep(5000)}}]`],
      ['PATCH', `/memory/${memory.id}`, `{"metadata":${deep(5000)}}`],
      ['POST', '/memory/query', `{"query":"x","filters":{"metadata":${deep(5000)}}}`],
      [
        'POST',
        '/v1/memory/add_turn',
        `{"tenant_id":"acme","user_id":"u","text":"x","speaker":"s","metadata":${deep(5000)}}`,
        v1,
      ],
    ];
    for (const [method, url, payload, options] of bodies) {
      const res = await t.call(method, url, {
        payload,
        ...options,
        headers: { ...json, ...(options as { headers?: object })?.headers },
      });
      expectError(res, 400, 'validation_error');
      expect(res.body.error.field, url).toMatch(/^(0\/)?metadata(\/a)+$|^filters\/metadata(\/a)+$|^body$/);
    }
    // Within the limit is accepted.
    const ok = await t.call('POST', '/memory/add', {
      payload: `{"text":"nested fine","metadata":${deep(INPUT_LIMITS.maxDepth - 2)}}`,
      headers: json,
    });
    expect(ok.status, ok.text).toBe(201);
    expectError(
      await t.call('POST', '/memory/add', {
        payload: `{"text":"too deep","metadata":${deep(INPUT_LIMITS.maxDepth)}}`,
        headers: json,
      }),
      400,
      'validation_error',
      `metadata${'/a'.repeat(INPUT_LIMITS.maxDepth - 1)}`,
    );
  });
});
