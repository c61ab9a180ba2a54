import { PSEUDONYM_PREFIX } from '../../core/pseudonyms.js';
import { expect, it } from 'vitest';
import { decodeJson } from '../../store/database.js';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { holdOwnerLocks, lockWaiters } from '../../testing/locks.js';
import {
  addMemory,
  eventsAfter,
  expectAudited,
  expectError,
  expectNothingWritten,
  historyRows,
  lastEventId,
  memoryRow,
  withEffects,
} from '../../testing/memories.js';

forEachDialect('DELETE /memory/forget and DELETE /memory/user/{end_user_id}', (dialect) => {
  const t = useTestApp(dialect);

  const forget = (ids: unknown, endUser?: string) =>
    t.call('DELETE', '/memory/forget', { body: { ids }, ...(endUser ? { endUser } : {}) });
  const purge = (endUserId: string) =>
    t.call('DELETE', `/memory/user/${encodeURIComponent(endUserId)}`, { endUser: null });
  const secret = 'Secret diagnosis: mild asthma';

  /** The row keeps its id and times; nothing of the content survives in it or in its history. */
  async function expectTombstone(id: number, text: string): Promise<void> {
    const row = await memoryRow(t, id);
    expect(row).toMatchObject({
      id,
      text: '',
      source: null,
      client_ref: null,
      session_id: null,
      speaker: null,
      dedupe_hash: null,
    });
    expect(row.deleted_at).toEqual(expect.any(String));
    expect(decodeJson(row.metadata)).toEqual({});
    expect(decodeJson(row.tags)).toEqual([]);
    expect(JSON.stringify(row)).not.toContain(text);
    const history = await historyRows(t, id);
    expect(history.map((h) => h.action)).toContain('forget');
    expect(history.every((h) => h.changes === null)).toBe(true);
    expect(JSON.stringify(history)).not.toContain(text);
  }

  it('forgets the end user’s memories and answers with exactly the ids deleted', async () => {
    const a = await addMemory(t, {
      text: secret,
      tags: ['health'],
      metadata: { doctor: 'Dr. Silva' },
      source: 'intake',
      client_ref: 'h-1',
      session_id: 's',
    });
    await t.call('PATCH', `/memory/${a.id}`, { body: { metadata: { doctor: 'Dr. Costa' } } });
    const b = await addMemory(t, 'Second to forget');
    const kept = await addMemory(t, 'Kept memory');
    const theirs = await addMemory(t, 'Another user’s memory', { endUser: 'user-2' });
    const theirsBefore = await memoryRow(t, theirs.id);

    const { res, audit, events } = await withEffects(t, () => forget([b.id, theirs.id, 987_654_321, a.id, a.id]));
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect([...res.body].sort((x, y) => x - y)).toEqual([a.id, b.id]);
    expectAudited({ audit, events }, t, {
      action: 'memory.forget',
      target_type: 'memory',
      target_id: [a.id, b.id].join(','),
    });
    expect(events.map((e) => [e.type, e.payload])).toEqual([
      ['memory.deleted', { memory_id: a.id, end_user_id: 'user-1' }],
      ['memory.deleted', { memory_id: b.id, end_user_id: 'user-1' }],
    ]);
    for (const event of events) expect(JSON.stringify(event)).not.toContain(secret);

    await expectTombstone(a.id, secret);
    expect(JSON.stringify(await historyRows(t, a.id))).not.toContain('Dr.');
    await expectTombstone(b.id, 'Second to forget');
    expect(await memoryRow(t, theirs.id)).toEqual(theirsBefore);
    expect((await t.call('GET', `/memory/${kept.id}`)).status).toBe(200);
    expectError(await t.call('GET', `/memory/${a.id}`), 404, 'not_found');
    expectError(await t.call('GET', `/memory/${a.id}/history`), 404, 'not_found');
    expectError(await t.call('PATCH', `/memory/${a.id}`, { body: { importance: 0.1 } }), 404, 'not_found');
  });

  it('answers an empty array when nothing was the end user’s, and for ids already forgotten', async () => {
    const m = await addMemory(t, 'Forget me twice');
    expect((await forget([m.id])).body).toEqual([m.id]);
    const again = await expectNothingWritten(t, () => forget([m.id, 123_456_789]), true);
    expect(again.status).toBe(200);
    expect(again.body).toEqual([]);
  });

  it('refuses malformed requests with 400 naming the field, deleting nothing', async () => {
    const m = await addMemory(t, 'Not forgotten by bad requests');
    const cases: Array<[unknown, string]> = [
      [{}, 'ids'],
      [{ ids: [] }, 'ids'],
      [{ ids: m.id }, 'ids'],
      [{ ids: ['1'] }, 'ids/0'],
      [{ ids: [m.id, 0] }, 'ids/1'],
      [{ ids: [m.id, -3] }, 'ids/1'],
      [{ ids: [m.id, 1.5] }, 'ids/1'],
      [{ ids: [m.id, 1e20] }, 'ids/1'],
      [{ ids: Array.from({ length: 1001 }, (_, i) => i + 1) }, 'ids'],
      [{ ids: [m.id], all: true }, 'all'],
      [[m.id], 'body'],
    ];
    for (const [body, field] of cases) {
      const res = await expectNothingWritten(t, () => t.call('DELETE', '/memory/forget', { body }));
      expectError(res, 400, 'validation_error', field);
    }
    expectError(
      await expectNothingWritten(t, () => t.call('DELETE', '/memory/forget')),
      400,
      'validation_error',
      'body',
    );
    const noUser = await expectNothingWritten(t, () =>
      t.call('DELETE', '/memory/forget', { body: { ids: [m.id] }, endUser: null }),
    );
    expectError(noUser, 400, 'validation_error', 'X-End-User-ID');
  });

  it('purges every memory of an end user and nothing of anyone else', async () => {
    const gone = [
      await addMemory(t, { text: 'Purge one', metadata: { p: 1 } }, { endUser: 'leaving-user' }),
      await addMemory(t, 'Purge two', { endUser: 'leaving-user' }),
      await addMemory(t, 'Purge three', { endUser: 'leaving-user' }),
    ];
    await forget([gone[2].id], 'leaving-user');
    const stays = await addMemory(t, 'Purge one', { endUser: 'staying-user' });
    const other = await t.otherTenant();
    const elsewhere = await t.call('POST', '/memory/add', {
      body: { text: 'Purge one' },
      key: other.key,
      project: other.projectId,
      endUser: 'leaving-user',
    });
    expect(elsewhere.status).toBe(201);
    const staysRow = await memoryRow(t, stays.id);
    const elsewhereRow = await memoryRow(t, elsewhere.body.id);

    const { res, audit, events } = await withEffects(t, () => purge('leaving-user'));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ end_user_id: 'leaving-user', deleted: 2 });
    // The audit row outlives the purge: it names the end user by pseudonym, not by the id the customer chose.
    expectAudited({ audit, events }, t, {
      action: 'memory.purge_end_user',
      target_type: 'end_user',
      target_id: expect.stringMatching(new RegExp(`^${PSEUDONYM_PREFIX}`)),
    });
    expect(JSON.stringify(audit)).not.toContain('leaving-user');
    const pseudonym = t.services.pseudonymize(t.projectId, 'leaving-user');
    expect(events).toMatchObject([{ type: 'end_user.purged', payload: { end_user_id: pseudonym, deleted: 2 } }]);
    for (const m of gone) await expectTombstone(m.id, m.text);
    const left = await t.database.db
      .selectFrom('memories')
      .select('id')
      .where('end_user_id', '=', 'leaving-user')
      .where('project_id', '=', t.projectId)
      .where('deleted_at', 'is', null)
      .execute();
    expect(left).toEqual([]);
    expect(await memoryRow(t, stays.id)).toEqual(staysRow);
    expect(await memoryRow(t, elsewhere.body.id)).toEqual(elsewhereRow);

    const again = await purge('leaving-user');
    expect(again.body).toEqual({ end_user_id: 'leaving-user', deleted: 0 });
  });

  it('purges an end user with more memories than one erase batch (500): every row and history erased', async () => {
    const endUser = 'prolific-user';
    const count = 1_001;
    for (let start = 0; start < count; start += 50) {
      const items = Array.from({ length: Math.min(50, count - start) }, (_, i) => ({
        text: `prolific secret ${start + i}`,
        metadata: { n: start + i },
      }));
      expect((await t.call('POST', '/memory/bulk-add', { body: items, endUser })).status).toBe(200);
    }
    const res = await purge(endUser);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ end_user_id: endUser, deleted: count });
    const rows = await t.database.db
      .selectFrom('memories')
      .select(['text', 'metadata', 'deleted_at'])
      .where('end_user_id', '=', t.services.pseudonymize(t.projectId, endUser))
      .execute();
    expect(rows).toHaveLength(count);
    expect(
      rows.filter((r) => r.text !== '' || r.deleted_at === null || JSON.stringify(decodeJson(r.metadata)) !== '{}'),
    ).toEqual([]);
    const history = await t.database.db
      .selectFrom('memory_history')
      .innerJoin('memories', 'memories.id', 'memory_history.memory_id')
      .select(['memory_history.changes', 'memory_history.action'])
      .where('memories.end_user_id', '=', t.services.pseudonymize(t.projectId, endUser))
      .execute();
    expect(history.filter((h) => h.changes !== null)).toEqual([]);
    expect(history.filter((h) => h.action === 'forget')).toHaveLength(count);
  }, 60_000);

  it.runIf(dialect === 'postgres')('purges a memory added while the purge waited for the end user', async () => {
    const endUser = 'purged-while-adding';
    const old = await addMemory(t, 'There before the purge', { endUser });
    // The add queues first for the owner's lock, then the purge, which has listed the memories unless it waits first.
    const lock = await holdOwnerLocks(t, [endUser]);
    const adding = t.call('POST', '/memory/add', { endUser, body: { text: secret } });
    await lockWaiters(t, 1, 'the add to wait for the owner lock');
    const purging = purge(endUser);
    await lockWaiters(t, 2, 'the purge to wait behind it');
    await lock.release();
    const added = await adding;
    expect(added.status, added.text).toBe(201);
    expect((await purging).body).toEqual({ end_user_id: endUser, deleted: 2 });
    await expectTombstone(old.id, 'There before the purge');
    await expectTombstone(added.body.id, secret);
  });

  it.runIf(dialect === 'postgres')(
    'two forgets of one memory at once: one forgets it, the other finds nothing, and memory.deleted is emitted once',
    async () => {
      const endUser = 'forgotten-twice';
      const memory = await addMemory(t, 'Forgotten by two requests at once', { endUser });
      const mark = await lastEventId(t);
      // Both have read the memory live before either takes the owner lock.
      const lock = await holdOwnerLocks(t, [endUser]);
      const first = forget([memory.id], endUser);
      await lockWaiters(t, 1, 'the first forget to wait for the owner lock');
      const second = forget([memory.id], endUser);
      await lockWaiters(t, 2, 'the second forget to wait behind it');
      await lock.release();
      const answers = [(await first).body, (await second).body];
      expect(answers).toEqual([[memory.id], []]);
      expect((await eventsAfter(t, mark)).filter(([type]) => type === 'memory.deleted')).toHaveLength(1);
      await expectTombstone(memory.id, 'Forgotten by two requests at once');
    },
  );

  it('refuses an e-mail-like or malformed end user id naming end_user_id, deleting nothing', async () => {
    await addMemory(t, 'Mail user memory', { endUser: 'mail-user' });
    for (const id of ['someone@example.com', 'bad\u0001id', 'x'.repeat(257)]) {
      const res = await expectNothingWritten(t, () => purge(id));
      expectError(res, 400, 'validation_error', 'end_user_id');
    }
  });

  it('purges an end user whose id is as long as X-End-User-ID allows, even percent-encoded', async () => {
    for (const id of ['u'.repeat(256), 'é'.repeat(256)]) {
      await addMemory(t, 'Long id memory', { endUser: id });
      const res = await purge(id);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ end_user_id: id, deleted: 1 });
    }
  });
});
