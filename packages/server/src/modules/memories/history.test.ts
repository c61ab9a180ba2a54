import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { addMemory, expectError } from '../../testing/memories.js';

forEachDialect('GET /memory/{id}/history', (dialect) => {
  const t = useTestApp(dialect);

  const withRequestId = (id: string) => ({ headers: { 'x-request-id': id } });
  const history = (id: number) => t.call('GET', `/memory/${id}/history`);

  it('lists every change oldest first with the fields before and after, the actor and the request id', async () => {
    const add = await t.call('POST', '/memory/add', {
      body: { text: 'Prefers tea', tags: ['drinks'], metadata: { since: 2020 }, client_ref: 'h-1' },
      ...withRequestId('req-history-add'),
    });
    expect(add.headers['x-request-id']).toBe('req-history-add');
    const id = add.body.id;
    const patch = await t.call('PATCH', `/memory/${id}`, {
      body: { importance: 0.9, tags: ['drinks'] },
      ...withRequestId('req-history-patch'),
    });
    expect(patch.status).toBe(200);
    const batch = await t.call('POST', '/memory/batch-update', {
      body: { updates: [{ id, metadata: { since: 2021 }, source: 'crm' }] },
      ...withRequestId('req-history-batch'),
    });
    expect(batch.status).toBe(200);

    const res = await history(id);
    expect(res.status).toBe(200);
    expect(res.body.memory_id).toBe(id);
    const actor = { type: 'api_key', id: t.keyId };
    expect(res.body.items).toEqual([
      {
        id: expect.any(Number),
        action: 'create',
        actor,
        request_id: 'req-history-add',
        created_at: add.body.created_at,
        changes: {
          text: { before: null, after: 'Prefers tea' },
          tags: { before: null, after: ['drinks'] },
          source: { before: null, after: null },
          importance: { before: null, after: 0.5 },
          metadata: { before: null, after: { since: 2020 } },
          client_ref: { before: null, after: 'h-1' },
          session_id: { before: null, after: null },
        },
      },
      {
        id: expect.any(Number),
        action: 'update',
        actor,
        request_id: 'req-history-patch',
        created_at: patch.body.updated_at,
        changes: { importance: { before: 0.5, after: 0.9 } },
      },
      {
        id: expect.any(Number),
        action: 'update',
        actor,
        request_id: 'req-history-batch',
        created_at: batch.body.results[0].memory.updated_at,
        changes: {
          metadata: { before: { since: 2020 }, after: { since: 2021 } },
          source: { before: null, after: 'crm' },
        },
      },
    ]);
    const ids = res.body.items.map((i: { id: number }) => i.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    // The documents keep the order they were written in, on both dialects (PostgreSQL stores them as json).
    expect(res.body.items.map((i: { changes: object }) => Object.keys(i.changes))).toEqual([
      ['text', 'tags', 'source', 'importance', 'metadata', 'client_ref', 'session_id'],
      ['importance'],
      ['metadata', 'source'],
    ]);
  });

  it('records the generated request id when none (or an unusable one) was sent', async () => {
    for (const sent of [undefined, 'has spaces in it', 'x'.repeat(129), 'semi;colon']) {
      const res = await t.call('POST', '/memory/add', {
        body: { text: `Request id case ${String(sent).slice(0, 20)}` },
        headers: { 'x-request-id': sent },
      });
      expect(res.status).toBe(201);
      const generated = res.headers['x-request-id'];
      expect(generated).toMatch(/^req_[0-9a-f]{24}$/);
      const items = (await history(res.body.id)).body.items;
      expect(items[0].request_id).toBe(generated);
    }
  });

  it('records a key of its own as the actor', async () => {
    const other = await t.newKey();
    const memory = await addMemory(t, 'Changed by two keys');
    await t.call('PATCH', `/memory/${memory.id}`, { body: { importance: 0.2 }, key: other.key });
    const items = (await history(memory.id)).body.items;
    expect(items.map((i: { actor: unknown }) => i.actor)).toEqual([
      { type: 'api_key', id: t.keyId },
      { type: 'api_key', id: other.id },
    ]);
  });

  it('answers 404 for an unknown or forgotten memory and 400 for a malformed id', async () => {
    const memory = await addMemory(t, 'Soon forgotten');
    await t.call('DELETE', '/memory/forget', { body: { ids: [memory.id] } });
    expectError(await history(memory.id), 404, 'not_found');
    expectError(await history(memory.id + 1_000), 404, 'not_found');
    expectError(await t.call('GET', '/memory/abc/history'), 404, 'not_found');
    expectError(
      await t.call('GET', `/memory/${memory.id}/history`, { endUser: null }),
      400,
      'validation_error',
      'X-End-User-ID',
    );
  });
});
