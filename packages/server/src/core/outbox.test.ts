import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../testing/harness.js';
import { dispatchOutbox, outboxBacklog, purgeDispatchedEvents, type OutboxDispatcher, type StoredEvent } from './events.js';

/**
 * The outbox: a dispatch takes the oldest pending events exactly once, in order, and only if its
 * transaction commits; retention deletes events once dispatched, never one still pending.
 * Background work is off, so nothing dispatches but the test.
 */
forEachDialect('the outbox', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });

  const pendingIds = async () =>
    (await t.database.db.selectFrom('outbox_events').select('id').where('dispatched_at', 'is', null).orderBy('id').execute()).map((r) => Number(r.id));

  /** A dispatcher that records what it is handed, with the payloads. */
  const recorder = () => {
    const seen: Array<{ event: StoredEvent; payload: Record<string, unknown> }> = [];
    const dispatch: OutboxDispatcher = async (_trx, events, payloadsOf) => {
      const payloads = await payloadsOf(events);
      events.forEach((event, i) => seen.push({ event, payload: payloads[i]! }));
    };
    return { seen, dispatch };
  };

  it('hands the oldest events on once and in order, keeps them pending when the dispatch fails, and purges only dispatched ones', async () => {
    // Whatever earlier setup wrote is dispatched first.
    while ((await dispatchOutbox(t.database, [async () => {}])) > 0);
    const added = await t.call('POST', '/memory/bulk-add', { endUser: 'outbox-user', body: [{ text: 'Outbox one' }, { text: 'Outbox two' }, { text: 'Outbox three' }] });
    expect(added.status).toBe(200);
    const memoryIds = added.body.results.map((r: { memory: { id: number } }) => r.memory.id);
    const queued = await pendingIds();
    expect(queued).toHaveLength(3);
    expect((await outboxBacklog(t.database.db)).pending).toBe(3);

    // A dispatcher that fails rolls its batch back: nothing is marked.
    await expect(dispatchOutbox(t.database, [async () => { throw new Error('endpoint store down'); }], 2)).rejects.toThrow('endpoint store down');
    expect(await pendingIds()).toEqual(queued);

    const first = recorder();
    expect(await dispatchOutbox(t.database, [first.dispatch], 2)).toBe(2);
    expect(first.seen.map((s) => s.event.id)).toEqual(queued.slice(0, 2));
    expect(first.seen.map((s) => [s.event.type, (s.payload.memory as { id: number }).id])).toEqual([
      ['memory.created', memoryIds[0]], ['memory.created', memoryIds[1]],
    ]);
    expect(await pendingIds()).toEqual(queued.slice(2));
    expect(await outboxBacklog(t.database.db)).toMatchObject({ pending: 1, oldest: expect.any(String) });

    // Retention deletes the events dispatched before its cut-off, never a pending one.
    expect(await purgeDispatchedEvents(t.database.db, new Date(Date.now() - 60_000).toISOString())).toBe(0);
    expect(await purgeDispatchedEvents(t.database.db, new Date(Date.now() + 60_000).toISOString())).toBeGreaterThanOrEqual(2);
    const left = await t.database.db.selectFrom('outbox_events').select('id').execute();
    expect(left.map((r) => Number(r.id))).toEqual(queued.slice(2));

    const last = recorder();
    expect(await dispatchOutbox(t.database, [last.dispatch])).toBe(1);
    expect(last.seen.map((s) => s.event.id)).toEqual(queued.slice(2));
    expect(await dispatchOutbox(t.database, [last.dispatch])).toBe(0);
    expect(await outboxBacklog(t.database.db)).toEqual({ pending: 0, oldest: null });
  });

  it('hands each event to exactly one of several dispatches running at once', async () => {
    while ((await dispatchOutbox(t.database, [async () => {}])) > 0);
    const items = Array.from({ length: 40 }, (_, i) => ({ text: `Concurrent outbox memory ${i}` }));
    expect((await t.call('POST', '/memory/bulk-add', { endUser: 'outbox-many', body: items })).status).toBe(200);
    const queued = await pendingIds();
    expect(queued).toHaveLength(40);
    const taken: number[] = [];
    const slow: OutboxDispatcher = async (_trx, events) => {
      taken.push(...events.map((e) => e.id));
      await new Promise((r) => setTimeout(r, 20));
    };
    const drain = async () => {
      while ((await dispatchOutbox(t.database, [slow], 7)) > 0);
    };
    await Promise.all([drain(), drain(), drain()]);
    expect(taken.sort((a, b) => a - b)).toEqual(queued);
    expect(await pendingIds()).toEqual([]);
  });
});
