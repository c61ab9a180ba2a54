import { expect, it } from 'vitest';
import { decodeJson } from '../../store/database.js';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { holdOwnerLocks, lockWaiters } from '../../testing/locks.js';
import {
  addMemory,
  expectAudited,
  expectError,
  expectNothingWritten,
  historyRows,
  memoryRow,
  withEffects,
} from '../../testing/memories.js';

forEachDialect('GET, PATCH /memory/{id} and POST /memory/batch-update', (dialect) => {
  const t = useTestApp(dialect);

  const patch = (id: number | string, body: unknown) => t.call('PATCH', `/memory/${id}`, { body });
  const batch = (body: unknown) => t.call('POST', '/memory/batch-update', { body });

  it('reads a memory by id, and answers 404 for an unknown one and 400 for a malformed one', async () => {
    const memory = await addMemory(t, { text: 'Reads the news at 7', tags: ['habit'] });
    const got = await t.call('GET', `/memory/${memory.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(memory);
    expectError(await t.call('GET', `/memory/${memory.id + 1_000_000}`), 404, 'not_found', null);
    // A path id not written in canonical decimal within 2^53-1 names no memory; 0 is outside the schema.
    for (const id of ['abc', '-1', '1.5', '99999999999999999999', '01', '+1', '%201', '1e3']) {
      expectError(await t.call('GET', `/memory/${id}`), 404, 'not_found');
    }
    expectError(await t.call('GET', '/memory/0'), 400, 'validation_error', 'memory_id');
  });

  it('changes tags, importance, metadata (whole) and source, recording the change', async () => {
    const memory = await addMemory(t, {
      text: 'Drinks oat milk',
      tags: ['diet'],
      metadata: { a: 1, b: 2 },
      source: 'chat',
    });
    const { res, audit, events } = await withEffects(t, () =>
      patch(memory.id, { tags: ['diet', 'coffee'], importance: 0.9, metadata: { c: 3 }, source: 'crm' }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      ...memory,
      tags: ['diet', 'coffee'],
      importance: 0.9,
      metadata: { c: 3 },
      source: 'crm',
      updated_at: expect.any(String),
    });
    expect(res.body.updated_at >= memory.updated_at).toBe(true);
    expect((await t.call('GET', `/memory/${memory.id}`)).body).toEqual(res.body);
    expectAudited({ audit, events }, t, {
      action: 'memory.update',
      target_type: 'memory',
      target_id: String(memory.id),
    });
    expect(events).toMatchObject([
      { type: 'memory.updated', payload: { memory: res.body, fields: ['tags', 'importance', 'metadata', 'source'] } },
    ]);
  });

  it('changes only the fields sent', async () => {
    const memory = await addMemory(t, {
      text: 'Owns a red bicycle',
      tags: ['t'],
      importance: 0.3,
      metadata: { m: 1 },
      source: 's',
    });
    const res = await patch(memory.id, { importance: 0 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      tags: ['t'],
      importance: 0,
      metadata: { m: 1 },
      source: 's',
      text: 'Owns a red bicycle',
    });
  });

  it('records nothing for a patch that changes nothing, whatever the key order of metadata', async () => {
    const memory = await addMemory(t, {
      text: 'No-op target',
      tags: ['x'],
      metadata: { zeta: 1, alpha: { y: 2, b: 3 } },
    });
    const res = await expectNothingWritten(
      t,
      () => patch(memory.id, { tags: ['x'], metadata: { alpha: { b: 3, y: 2 }, zeta: 1 } }),
      true,
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual(memory);
    expect(await historyRows(t, memory.id)).toHaveLength(1);
  });

  it('refuses a text change, an empty patch and bad fields with 400 naming the field, changing nothing', async () => {
    const memory = await addMemory(t, 'Immutable text');
    const cases: Array<[unknown, string]> = [
      [{ text: 'Changed' }, 'text'],
      [{ text: 'Changed', importance: 0.2 }, 'text'],
      [{}, 'body'],
      [[], 'body'],
      [null, 'body'],
      [{ importance: 1.01 }, 'importance'],
      [{ importance: -1 }, 'importance'],
      [{ importance: '1' }, 'importance'],
      [{ tags: 'x' }, 'tags'],
      [{ tags: ['dup', 'dup'] }, 'tags'],
      [{ tags: [''] }, 'tags/0'],
      [{ metadata: [] }, 'metadata'],
      [{ metadata: null }, 'metadata'],
      [{ metadata: { big: 'x'.repeat(17_000) } }, 'metadata'],
      [{ metadata: { bad: '\u0000' } }, 'metadata/bad'],
      [{ source: '' }, 'source'],
      [{ source: null }, 'source'],
      [{ client_ref: 'new' }, 'client_ref'],
      [{ is_summary: true }, 'is_summary'],
      [{ id: 5, tags: [] }, 'id'],
    ];
    for (const [body, field] of cases) {
      const res = await expectNothingWritten(t, () => patch(memory.id, body));
      expectError(res, 400, 'validation_error', field);
    }
    const noBody = await expectNothingWritten(t, () => t.call('PATCH', `/memory/${memory.id}`));
    expectError(noBody, 400, 'validation_error', 'body');
    expectError(await patch('nope', { importance: 0.1 }), 404, 'not_found');
    expectError(
      await expectNothingWritten(t, () => patch(memory.id + 1_000_000, { importance: 0.1 })),
      404,
      'not_found',
    );
  });

  it('batch-updates several memories in one transaction (200), one audit row, an event per change', async () => {
    const a = await addMemory(t, 'Batch A');
    const b = await addMemory(t, 'Batch B');
    const { res, audit, events } = await withEffects(t, () =>
      batch({
        updates: [
          { id: a.id, importance: 0.1 },
          { id: b.id, tags: ['x'], source: 'batch' },
        ],
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body.totals).toEqual({ updated: 2, failed: 0 });
    expect(res.body.results).toEqual([
      { index: 0, id: a.id, status: 'updated', memory: expect.objectContaining({ id: a.id, importance: 0.1 }) },
      {
        index: 1,
        id: b.id,
        status: 'updated',
        memory: expect.objectContaining({ id: b.id, tags: ['x'], source: 'batch' }),
      },
    ]);
    expectAudited({ audit, events }, t, { action: 'memory.batch_update', target_id: `${a.id},${b.id}` });
    expect(events.map((e) => [e.type, (e.payload.memory as { id: number }).id, e.payload.fields])).toEqual([
      ['memory.updated', a.id, ['importance']],
      ['memory.updated', b.id, ['tags', 'source']],
    ]);
    expect((await memoryRow(t, a.id)).importance).toBe(0.1);
  });

  it('answers 207 when an id is not the end user’s, leaving that memory untouched', async () => {
    const mine = await addMemory(t, 'Mine to change');
    const theirs = await addMemory(t, 'Theirs to keep', { endUser: 'user-2' });
    const theirsBefore = await memoryRow(t, theirs.id);
    const res = await batch({
      updates: [
        { id: mine.id, importance: 0.7 },
        { id: theirs.id, importance: 0.1 },
        { id: 987_654_321, tags: [] },
      ],
    });
    expect(res.status).toBe(207);
    expect(res.body.totals).toEqual({ updated: 1, failed: 2 });
    expect(res.body.results.slice(1)).toEqual([
      { index: 1, id: theirs.id, status: 'failed', error: { code: 'not_found', message: expect.any(String) } },
      { index: 2, id: 987_654_321, status: 'failed', error: { code: 'not_found', message: expect.any(String) } },
    ]);
    expect(await memoryRow(t, theirs.id)).toEqual(theirsBefore);
    expect(await historyRows(t, theirs.id)).toHaveLength(1);
    expect((await memoryRow(t, mine.id)).importance).toBe(0.7);
  });

  it('refuses malformed batches with 400 naming the field, changing nothing', async () => {
    const memory = await addMemory(t, 'Batch validation target');
    const ok = { id: memory.id, importance: 0.2 };
    const cases: Array<[unknown, string]> = [
      [{}, 'updates'],
      [{ updates: [] }, 'updates'],
      [{ updates: 'x' }, 'updates'],
      [{ updates: Array.from({ length: 101 }, () => ok) }, 'updates'],
      [{ updates: [ok], extra: true }, 'extra'],
      [{ updates: [ok, { importance: 0.5 }] }, 'updates/1/id'],
      [{ updates: [ok, { id: memory.id }] }, 'updates/1'],
      [{ updates: [ok, { id: 'x', importance: 0.5 }] }, 'updates/1/id'],
      [{ updates: [ok, { id: 0, importance: 0.5 }] }, 'updates/1/id'],
      [{ updates: [ok, { id: memory.id, text: 'new' }] }, 'updates/1/text'],
      [{ updates: [ok, { id: memory.id, importance: 3 }] }, 'updates/1/importance'],
      [{ updates: [ok, { id: memory.id, tags: [7] }] }, 'updates/1/tags/0'],
      [{ updates: [ok, { id: memory.id, metadata: { big: 'x'.repeat(17_000) } }] }, 'updates/1/metadata'],
      [[ok], 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await expectNothingWritten(t, () => batch(body));
      expectError(res, 400, 'validation_error', field);
    }
  });

  it.runIf(dialect === 'postgres')(
    'answers 404 for a memory forgotten while its patch waited, writing nothing onto the tombstone',
    async () => {
      const endUser = 'patched-while-forgotten';
      const memory = await addMemory(t, { text: 'Patched while forgotten', tags: ['before'] }, { endUser });
      // The forget queues first for the owner's lock, then the patch, which has read the memory live unless it waits first.
      const lock = await holdOwnerLocks(t, [endUser]);
      const forgetting = t.call('DELETE', '/memory/forget', { endUser, body: { ids: [memory.id] } });
      await lockWaiters(t, 1, 'the forget to wait for the owner lock');
      const patching = t.call('PATCH', `/memory/${memory.id}`, {
        endUser,
        body: { tags: ['after'], metadata: { leaked: 'yes' }, source: 'crm' },
      });
      await lockWaiters(t, 2, 'the patch to wait behind it');
      await lock.release();
      expect((await forgetting).body).toEqual([memory.id]);
      expectError(await patching, 404, 'not_found');
      const row = await memoryRow(t, memory.id);
      expect([decodeJson(row.tags), decodeJson(row.metadata), row.source, row.deleted_at]).toEqual([
        [],
        {},
        null,
        expect.any(String),
      ]);
      expect((await historyRows(t, memory.id)).map((h) => [h.action, h.changes])).toEqual([
        ['create', null],
        ['forget', null],
      ]);
      const events = await t.database.db
        .selectFrom('outbox_events')
        .select('type')
        .where('memory_id', '=', memory.id)
        .execute();
      expect(events.map((e) => e.type)).not.toContain('memory.updated');
    },
  );

  it('takes exactly 100 updates', async () => {
    const memory = await addMemory(t, 'Hundred updates');
    const res = await batch({
      updates: Array.from({ length: 100 }, (_, i) => ({ id: memory.id, importance: i / 100 })),
    });
    expect(res.status).toBe(200);
    expect(res.body.totals).toEqual({ updated: 100, failed: 0 });
    expect((await memoryRow(t, memory.id)).importance).toBe(0.99);
    expect(await historyRows(t, memory.id)).toHaveLength(101); // create and 100 changes
  });
});
