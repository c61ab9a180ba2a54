import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { countRows, expectAudited, expectError, expectNothingWritten, withEffects } from '../../testing/memories.js';

forEachDialect('POST /memory/bulk-add', (dialect) => {
  const t = useTestApp(dialect);

  const bulk = (body: unknown, endUser?: string) =>
    t.call('POST', '/memory/bulk-add', { body, ...(endUser ? { endUser } : {}) });
  const statuses = (body: { results: Array<{ status: string }> }) => body.results.map((r) => r.status);

  it('creates every item in order and answers 200, with one audit row and an event per memory', async () => {
    const items = [
      { text: 'Bulk one', tags: ['a'], client_ref: 'b-1' },
      { text: 'Bulk two', importance: 0.9, metadata: { k: 1 }, source: 'import' },
      {
        text: 'Bulk three',
        session_id: 's-1',
        importance: 1,
        metadata: { zeta: [1, { b: null, a: 'x' }], alpha: 'é' },
      },
    ];
    const { res, audit, events } = await withEffects(t, () => bulk(items, 'bulk-user'));
    expect(res.status).toBe(200);
    expect(res.body.totals).toEqual({ created: 3, skipped: 0, failed: 0 });
    expect(res.body.results.map((r: { index: number }) => r.index)).toEqual([0, 1, 2]);
    expect(statuses(res.body)).toEqual(['created', 'created', 'created']);
    res.body.results.forEach((r: { memory: Record<string, unknown> }, i: number) => {
      expect(r.memory).toMatchObject({ ...items[i], end_user_id: 'bulk-user' });
    });
    const ids = res.body.results.map((r: { memory: { id: number } }) => r.memory.id);
    expectAudited({ audit, events }, t, { action: 'memory.bulk_add', target_type: 'memory', target_id: ids.join(',') });
    expect(events.map((e) => [e.type, e.payload.memory])).toEqual(
      res.body.results.map((r: { memory: unknown }) => ['memory.created', r.memory]),
    );
    // The answer is the stored row (SQLite answers from the values it inserted, PostgreSQL from the row returned).
    for (const [i, id] of ids.entries()) {
      const stored = await t.call('GET', `/memory/${id}`, { endUser: 'bulk-user' });
      expect(stored.status).toBe(200);
      expect(JSON.stringify(stored.body)).toBe(JSON.stringify(res.body.results[i].memory));
    }
  });

  it("takes one new change sequence for a call's memories, whether or not some are skipped", async () => {
    const revision = async () =>
      Number(
        (
          await t.database.db
            .selectFrom('end_users')
            .select('revision')
            .where('project_id', '=', t.projectId)
            .where('end_user_id', '=', 'seq-user')
            .executeTakeFirst()
        )?.revision ?? 0,
      );
    const seqs = async (ids: number[]) =>
      (await t.database.db.selectFrom('memories').select('seq').where('id', 'in', ids).execute()).map((r) =>
        Number(r.seq),
      );
    const first = await bulk([{ text: 'Seq one' }, { text: 'Seq two', client_ref: 'seq-2' }], 'seq-user');
    expect(first.status).toBe(200);
    const r1 = await revision();
    expect(await seqs(first.body.results.map((r: { memory: { id: number } }) => r.memory.id))).toEqual([r1, r1]);
    // A skip (an existing client_ref) takes the path that inserts around conflicts.
    const second = await bulk(
      [{ text: 'Seq three' }, { text: 'Seq two again', client_ref: 'seq-2' }, { text: 'Seq four' }],
      'seq-user',
    );
    expect(statuses(second.body)).toEqual(['created', 'skipped', 'created']);
    expect(await revision()).toBe(r1 + 1);
    const created = second.body.results
      .filter((r: { status: string }) => r.status === 'created')
      .map((r: { memory: { id: number } }) => r.memory.id);
    expect(await seqs(created)).toEqual([r1 + 1, r1 + 1]);
  });

  it('accepts {"items": [...]} as well as a bare array', async () => {
    const res = await bulk({ items: [{ text: 'Wrapped item' }] }, 'wrapped-user');
    expect(res.status).toBe(200);
    expect(res.body.results[0].memory.text).toBe('Wrapped item');
  });

  it('skips items whose client_ref already landed as already_migrated on re-import (207), writing no second row', async () => {
    const items = [
      { text: 'Import A', client_ref: 'imp-a' },
      { text: 'Import B', client_ref: 'imp-b' },
    ];
    const first = await bulk(items, 'importer');
    expect(first.status).toBe(200);
    const before = await countRows(t, 'memories');
    const again = await bulk([...items, { text: 'Import C', client_ref: 'imp-c' }], 'importer');
    expect(again.status).toBe(207);
    expect(again.body.totals).toEqual({ created: 1, skipped: 2, failed: 0 });
    expect(again.body.results.slice(0, 2)).toEqual(
      first.body.results.map((r: { index: number; memory: { id: number } }) => ({
        index: r.index,
        status: 'skipped',
        reason: 'already_migrated',
        memory_id: r.memory.id,
      })),
    );
    expect(await countRows(t, 'memories')).toBe(before + 1);
  });

  it('skips a text the end user already has, and duplicates within the call, naming the first', async () => {
    const seed = await bulk([{ text: 'Has a cat named Miso' }], 'dup-user');
    const existingId = seed.body.results[0].memory.id;
    const res = await bulk(
      [
        { text: 'HAS a cat, named Miso!' },
        { text: 'Plays chess', client_ref: 'c-1' },
        { text: 'plays chess' },
        { text: 'Something different', client_ref: 'c-1' },
      ],
      'dup-user',
    );
    expect(res.status).toBe(207);
    const chessId = res.body.results[1].memory.id;
    expect(res.body.results).toEqual([
      { index: 0, status: 'skipped', reason: 'duplicate_text', memory_id: existingId },
      expect.objectContaining({ index: 1, status: 'created' }),
      { index: 2, status: 'skipped', reason: 'duplicate_text', memory_id: chessId },
      { index: 3, status: 'skipped', reason: 'already_migrated', memory_id: chessId },
    ]);
    expect(res.body.totals).toEqual({ created: 1, skipped: 3, failed: 0 });
  });

  it('names the memory each item duplicates when no item repeats another (a client_ref before a text), with events for the new ones only', async () => {
    const seed = await bulk(
      [{ text: 'Owns a red kayak', client_ref: 'k-1' }, { text: 'Climbs on Sundays' }],
      'no-repeats',
    );
    const [kayakId, climbId] = seed.body.results.map((r: { memory: { id: number } }) => r.memory.id);
    const before = await countRows(t, 'memories');
    const revision = () =>
      t.database.db
        .selectFrom('end_users')
        .select('revision')
        .where('end_user_id', '=', 'no-repeats')
        .executeTakeFirstOrThrow();
    const { revision: revisionBefore } = await revision();
    const [historyBefore, eventsBefore] = [await countRows(t, 'memory_history'), await countRows(t, 'outbox_events')];
    // The first attempt's plain insert meets the duplicates and is rolled back whole; the second skips them.
    const { res, events, audit } = await withEffects(t, () =>
      bulk(
        [
          { text: 'climbs on sundays!', client_ref: 'k-1' },
          { text: 'Learns Portuguese', client_ref: 'k-2' },
          { text: 'CLIMBS ON SUNDAYS' },
        ],
        'no-repeats',
      ),
    );
    expect(res.status).toBe(207);
    const newId = res.body.results[1].memory.id;
    expect(res.body.results).toEqual([
      { index: 0, status: 'skipped', reason: 'already_migrated', memory_id: kayakId },
      expect.objectContaining({
        index: 1,
        status: 'created',
        memory: expect.objectContaining({ text: 'Learns Portuguese', client_ref: 'k-2' }),
      }),
      { index: 2, status: 'skipped', reason: 'duplicate_text', memory_id: climbId },
    ]);
    expect(await countRows(t, 'memories')).toBe(before + 1);
    expect(events.map((e) => [e.type, (e.payload.memory as { id: number }).id])).toEqual([['memory.created', newId]]);
    expect(audit.map((a) => [a.action, a.target_id])).toEqual([['memory.bulk_add', String(newId)]]);
    expect([await countRows(t, 'memory_history'), await countRows(t, 'outbox_events')]).toEqual([
      historyBefore + 1,
      eventsBefore + 1,
    ]);
    expect(Number((await revision()).revision)).toBe(Number(revisionBefore) + 1);
  });

  it('reports invalid items as failed naming the field while the others land', async () => {
    const res = await bulk(
      [
        { text: 'Valid first' },
        { text: 42 },
        { text: 'Bad importance', importance: 2 },
        { txet: 'typo' },
        { text: '   ' },
        { text: 'Bad tag', tags: [1] },
        'not an object',
        { text: 'Valid last' },
      ],
      'mixed-user',
    );
    expect(res.status).toBe(207);
    expect(res.body.totals).toEqual({ created: 2, skipped: 0, failed: 6 });
    expect(statuses(res.body)).toEqual([
      'created',
      'failed',
      'failed',
      'failed',
      'failed',
      'failed',
      'failed',
      'created',
    ]);
    const fields = res.body.results
      .filter((r: { status: string }) => r.status === 'failed')
      .map((r: { error: { field: string } }) => r.error.field);
    expect(fields).toEqual(['text', 'importance', 'txet', 'text', 'tags/0', 'body']);
    for (const r of res.body.results.filter((x: { status: string }) => x.status === 'failed')) {
      expect(r.error).toMatchObject({ code: 'validation_error', message: expect.any(String) });
      expect(r).not.toHaveProperty('memory');
    }
    const listed = await t.database.db
      .selectFrom('memories')
      .select('text')
      .where('end_user_id', '=', 'mixed-user')
      .orderBy('id')
      .execute();
    expect(listed.map((r) => r.text)).toEqual(['Valid first', 'Valid last']);
  });

  it('writes nothing when every item fails', async () => {
    const res = await expectNothingWritten(t, () => bulk([{ text: '' }, { importance: 0.5 }], 'failing-user'));
    expect(res.status).toBe(207);
    expect(res.body.totals).toEqual({ created: 0, skipped: 0, failed: 2 });
  });

  it('takes exactly 50 items and refuses 51, empty lists and other shapes with 400, writing nothing', async () => {
    const items = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => ({ text: `${prefix} item ${i}` }));
    const fifty = await bulk(items(50, 'fifty'), 'limit-user');
    expect(fifty.status).toBe(200);
    expect(fifty.body.totals.created).toBe(50);
    const refused: unknown[] = [
      items(51, 'too many'),
      { items: items(51, 'wrapped too many') },
      [],
      { items: [] },
      { items: 'x' },
      { text: 'not a list' },
      { items: [{ text: 'x' }], extra: 1 },
      'string',
      null,
    ];
    for (const body of refused) {
      const res = await expectNothingWritten(t, () => bulk(body, 'limit-user'));
      expectError(res, 400, 'validation_error', 'body');
    }
  });

  it('needs an end user', async () => {
    const res = await t.call('POST', '/memory/bulk-add', { body: [{ text: 'x' }], endUser: null });
    expectError(res, 400, 'validation_error', 'X-End-User-ID');
  });

  it('stores each client_ref once when the same import runs concurrently', async () => {
    const items = [
      { text: 'Parallel import A', client_ref: 'par-a' },
      { text: 'Parallel import B', client_ref: 'par-b' },
    ];
    const results = await Promise.all(Array.from({ length: 5 }, () => bulk(items, 'parallel-user')));
    const created = results.reduce((n, r) => n + r.body.totals.created, 0);
    expect(created).toBe(2);
    const rows = await t.database.db
      .selectFrom('memories')
      .select('client_ref')
      .where('end_user_id', '=', 'parallel-user')
      .orderBy('client_ref')
      .execute();
    expect(rows.map((r) => r.client_ref)).toEqual(['par-a', 'par-b']);
  });
});
