import { expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp, type TestApp } from '../../testing/harness.js';
import { waitFor } from '../../testing/jobs.js';
import { addMemory, expectError, historyRows, lastEventId, memoryRow } from '../../testing/memories.js';
import { freshUser, idsOf, query } from '../../testing/retrieval.js';

const sweep = (t: TestApp) => t.services.chores.find((c) => c.name === 'memories.expiry')!.run() as Promise<number>;
const later = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString();

/** Sets a memory's expiry in the past, as time passing would (the API refuses a past expiry). */
async function expireNow(t: TestApp, ids: number[]): Promise<void> {
  await t.database.db
    .updateTable('memories')
    .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
    .where('id', 'in', ids)
    .execute();
}

forEachDialect('memory expiry', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);

  it('takes expires_at or ttl_seconds on add, bulk add, add_turn and patch, and refuses a past or doubled expiry naming the field', async () => {
    const endUser = freshUser('expiry');
    const at = later(3600);
    const a = await addMemory(
      t,
      { text: 'Parking spot B12 this week', expires_at: at.replace('Z', '+00:00') },
      { endUser },
    );
    expect(a.expires_at).toBe(at);
    const sent = Date.now();
    const b = await addMemory(t, { text: 'Wifi code is 4411', ttl_seconds: 60 }, { endUser });
    // 60 s from the server's clock while it answered, however long that took.
    expect(Date.parse(b.expires_at) - 60_000).toBeGreaterThanOrEqual(sent);
    expect(Date.parse(b.expires_at) - 60_000).toBeLessThanOrEqual(Date.now());
    expect((await addMemory(t, { text: 'Lives in Porto' }, { endUser })).expires_at).toBeNull();
    const bulk = await t.call('POST', '/memory/bulk-add', {
      endUser,
      body: [
        { text: 'Hotel until Friday', ttl_seconds: 100 },
        { text: 'x', expires_at: '2001-01-01T00:00:00Z' },
      ],
    });
    expect(bulk.status, bulk.text).toBe(207);
    expect(bulk.body.results[0].memory.expires_at).not.toBeNull();
    expect(bulk.body.results[1]).toMatchObject({
      status: 'failed',
      error: { code: 'validation_error', field: 'expires_at' },
    });
    const turn = await t.call('POST', '/v1/memory/add_turn', {
      endUser: null,
      headers: { 'X-Tenant-ID': 'acme' },
      body: { tenant_id: 'acme', user_id: endUser, text: 'call me tomorrow', speaker: 'u', ttl_seconds: 30 },
    });
    expect(turn.status, turn.text).toBe(201);
    const patched = await t.call('PATCH', `/memory/${a.id}`, { endUser, body: { expires_at: null } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.expires_at).toBeNull();
    const again = await t.call('PATCH', `/memory/${a.id}`, { endUser, body: { ttl_seconds: 120 } });
    expect(Date.parse(again.body.expires_at)).toBeGreaterThan(Date.now());
    const history = await t.call('GET', `/memory/${a.id}/history`, { endUser });
    expect(history.body.items.map((h: { action: string }) => h.action)).toEqual(['create', 'update', 'update']);

    expectError(
      await t.call('POST', '/memory/add', { endUser, body: { text: 'x', expires_at: '2001-01-01T00:00:00Z' } }),
      400,
      'validation_error',
      'expires_at',
    );
    expectError(
      await t.call('POST', '/memory/add', { endUser, body: { text: 'x', expires_at: at, ttl_seconds: 5 } }),
      400,
      'validation_error',
      'ttl_seconds',
    );
    expectError(
      await t.call('POST', '/memory/add', { endUser, body: { text: 'x', ttl_seconds: 0 } }),
      400,
      'validation_error',
      'ttl_seconds',
    );
    expectError(
      await t.call('POST', '/memory/add', { endUser, body: { text: 'x', expires_at: 'tomorrow' } }),
      400,
      'validation_error',
      'expires_at',
    );
    expectError(
      await t.call('PATCH', `/memory/${a.id}`, { endUser, body: { expires_at: '2001-01-01T00:00:00Z' } }),
      400,
      'validation_error',
      'expires_at',
    );
    expectError(
      await t.call('POST', '/memory/batch-update', {
        endUser,
        body: { updates: [{ id: a.id, ttl_seconds: 5, expires_at: null }] },
      }),
      400,
      'validation_error',
      'updates/0/ttl_seconds',
    );
  });

  it('hides an expired memory from every read at once, then the sweep erases it as forgetting does', async () => {
    const endUser = freshUser('expiry');
    const tenant = { 'X-Tenant-ID': 'acme' };
    const kept = await addMemory(t, { text: 'Prefers the window seat', tags: ['travel'] }, { endUser });
    const gone = await addMemory(
      t,
      { text: 'Window seat booked on flight TP123', tags: ['travel'], metadata: { pnr: 'XY7' }, ttl_seconds: 3600 },
      { endUser },
    );
    const turn = await t.call('POST', '/v1/memory/add_turn', {
      endUser: null,
      headers: tenant,
      body: {
        tenant_id: 'acme',
        user_id: endUser,
        text: 'window seat for the flight please',
        speaker: 'u',
        ttl_seconds: 3600,
      },
    });
    expect(turn.status, turn.text).toBe(201);
    // Ranked once, so the index holds them.
    expect(idsOf(await query(t, { query: 'window seat flight', k: 10, min_score: 0 }, { endUser }))).toContain(gone.id);
    await expireNow(t, [gone.id, turn.body.id]);

    expectError(await t.call('GET', `/memory/${gone.id}`, { endUser }), 404, 'not_found');
    expectError(await t.call('GET', `/memory/${gone.id}/history`, { endUser }), 404, 'not_found');
    expectError(await t.call('PATCH', `/memory/${gone.id}`, { endUser, body: { importance: 0.9 } }), 404, 'not_found');
    expect(idsOf(await query(t, { query: 'window seat flight', k: 10, min_score: 0 }, { endUser }))).toEqual([kept.id]);
    const listed = await t.call('GET', '/memory?total=true', { endUser });
    expect({ ids: idsOf(listed.body.items), total: listed.body.total }).toEqual({ ids: [kept.id], total: 1 });
    const exported = await t.call('GET', '/memory/export', { endUser });
    expect(idsOf(exported.body.memories)).toEqual([kept.id]);
    const job = await t.call('POST', '/exports', {
      token: owner.token,
      project: t.projectId,
      body: { scope: { end_user_id: endUser } },
    });
    expect(job.status, job.text).toBe(202);
    const done = await waitFor(t, owner.token, `/exports/${job.body.id}`, t.projectId);
    expect(done).toMatchObject({ status: 'completed', progress: { rows_done: 1, rows_total: 1 } });
    const artifact = await t.app.inject({
      method: 'GET',
      url: `/exports/${job.body.id}/download`,
      headers: { authorization: `Bearer ${owner.token}`, 'x-project-id': t.projectId },
    });
    const records = artifact.body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id?: number });
    expect(records.filter((r) => r.id !== undefined).map((r) => r.id)).toEqual([kept.id]);
    const retrieved = await t.call('POST', '/memory/retrieve', {
      endUser,
      body: { prompt: 'Which flight is the window seat on?', min_score: 0 },
    });
    expect(idsOf(retrieved.body.memories)).toEqual([kept.id]);
    const v1list = await t.call('GET', `/v1/memory/memories?user_id=${endUser}`, { endUser: null, headers: tenant });
    expect(idsOf(v1list.body.items)).toEqual([]);
    const recalled = await t.call('POST', '/v1/memory/recall', {
      endUser: null,
      headers: tenant,
      body: { tenant_id: 'acme', user_id: endUser, query: 'window seat', min_score: 0 },
    });
    expect(idsOf(recalled.body.memories)).toEqual([]);
    const dry = await t.call('DELETE', '/memory/forget', { endUser, body: { filters: {}, dry_run: true } });
    expect(dry.body).toMatchObject({ ids: [kept.id], matched: 1 });

    // The sweep: erased down to a tombstone, history blanked, memory.deleted per memory, audited by the system.
    const events = await lastEventId(t);
    expect(await sweep(t)).toBeGreaterThanOrEqual(2);
    for (const id of [gone.id, turn.body.id]) {
      const row = await memoryRow(t, id);
      expect(row).toMatchObject({
        text: '',
        source: null,
        session_id: null,
        speaker: null,
        dedupe_hash: null,
        client_ref: null,
      });
      expect(JSON.stringify(row)).not.toContain('XY7');
      expect(row.deleted_at).not.toBeNull();
      expect((await historyRows(t, id)).every((h) => h.changes === null)).toBe(true);
    }
    const deleted = await t.database.db
      .selectFrom('outbox_events')
      .select('payload')
      .where('id', '>', events)
      .where('type', '=', 'memory.deleted')
      .execute();
    const emitted = deleted.map((e) => (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload).memory_id);
    expect(emitted).toEqual(expect.arrayContaining([gone.id, turn.body.id]));
    const audit = await t.database.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'memory.expire')
      .where('target_id', 'like', `%${gone.id}%`)
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor_type: 'system', result: 'success' });
    expect(
      JSON.stringify(
        await t.database.db.selectFrom('memory_history').selectAll().where('memory_id', '=', gone.id).execute(),
      ),
    ).not.toContain('TP123');
    // Nothing left to do; the kept memory is untouched.
    expect(await sweep(t)).toBe(0);
    expect((await t.call('GET', `/memory/${kept.id}`, { endUser })).status).toBe(200);
  });

  it('leaves a memory whose expiry was moved on before the sweep took its lock', async () => {
    const endUser = freshUser('expiry');
    const m = await addMemory(t, { text: 'Gate 14 for today', ttl_seconds: 3600 }, { endUser });
    await expireNow(t, [m.id]);
    await t.database.db
      .updateTable('memories')
      .set({ expires_at: later(3600) })
      .where('id', '=', m.id)
      .execute();
    await sweep(t);
    expect((await t.call('GET', `/memory/${m.id}`, { endUser })).body.text).toBe('Gate 14 for today');
  });
});
