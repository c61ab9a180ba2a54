import { expect, it } from 'vitest';
import { forEachDialect, HARNESS_SUBSCRIBER, useTestApp } from '../testing/harness.js';
import { eventsAfter, lastEventId } from '../testing/memories.js';
import { until } from '../testing/until.js';
import { SYSTEM_ACTOR } from './context.js';
import { subscribe } from './event-subscriptions.js';
import {
  dispatchOutbox,
  eventsChecked,
  listEventTypes,
  onEventsCommitted,
  outboxBacklog,
  purgeDispatchedEvents,
  type OutboxDispatcher,
  type StoredEvent,
} from './events.js';
import { write } from './unit-of-work.js';

/**
 * The outbox: a dispatch takes the oldest pending events exactly once, in order, and only if its
 * transaction commits; retention deletes events once dispatched, never one still pending.
 * Background work is off, so nothing dispatches but the test. Only events a subscription receives
 * are written.
 */
forEachDialect('the outbox', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });

  const pendingIds = async () =>
    (
      await t.database.db
        .selectFrom('outbox_events')
        .select('id')
        .where('dispatched_at', 'is', null)
        .orderBy('id')
        .execute()
    ).map((r) => Number(r.id));

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
    const added = await t.call('POST', '/memory/bulk-add', {
      endUser: 'outbox-user',
      body: [{ text: 'Outbox one' }, { text: 'Outbox two' }, { text: 'Outbox three' }],
    });
    expect(added.status).toBe(200);
    const memoryIds = added.body.results.map((r: { memory: { id: number } }) => r.memory.id);
    const queued = await pendingIds();
    expect(queued).toHaveLength(3);
    expect((await outboxBacklog(t.database.db)).pending).toBe(3);

    // A dispatcher that fails rolls its batch back: nothing is marked.
    await expect(
      dispatchOutbox(
        t.database,
        [
          async () => {
            throw new Error('endpoint store down');
          },
        ],
        2,
      ),
    ).rejects.toThrow('endpoint store down');
    expect(await pendingIds()).toEqual(queued);

    const first = recorder();
    expect(await dispatchOutbox(t.database, [first.dispatch], 2)).toBe(2);
    expect(first.seen.map((s) => s.event.id)).toEqual(queued.slice(0, 2));
    expect(first.seen.map((s) => [s.event.type, (s.payload.memory as { id: number }).id])).toEqual([
      ['memory.created', memoryIds[0]],
      ['memory.created', memoryIds[1]],
    ]);
    expect(await pendingIds()).toEqual(queued.slice(2));
    expect(await outboxBacklog(t.database.db)).toMatchObject({ pending: 1, oldest: expect.any(String) });

    // Retention deletes the events dispatched before its cut-off, never a pending one.
    expect(await purgeDispatchedEvents(t.database.db, new Date(Date.now() - 60_000).toISOString())).toBe(0);
    expect(
      await purgeDispatchedEvents(t.database.db, new Date(Date.now() + 60_000).toISOString()),
    ).toBeGreaterThanOrEqual(2);
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

  // A single add (grouped into one statement on PostgreSQL), a bulk-add and an update (write()).
  const writeAll = async (label: string) => {
    const single = await t.call('POST', '/memory/add', { endUser: 'subscribed', body: { text: `${label}: single` } });
    const bulk = await t.call('POST', '/memory/bulk-add', {
      endUser: 'subscribed',
      body: [{ text: `${label}: bulk one` }, { text: `${label}: bulk two` }],
    });
    expect([single.status, bulk.status]).toEqual([201, 200]);
    const updated = await t.call('PATCH', `/memory/${single.body.id}`, {
      endUser: 'subscribed',
      body: { tags: [label] },
    });
    expect(updated.status, updated.text).toBe(200);
    return [single.body.id, ...bulk.body.results.map((r: { memory: { id: number } }) => r.memory.id)] as number[];
  };
  const everything = () => ({
    organizationId: t.organizationId,
    projectId: t.projectId,
    types: listEventTypes().map((e) => e.type),
  });

  it('writes only the events a subscription receives, on every write path', async () => {
    const db = t.database.db;
    try {
      await subscribe(db, HARNESS_SUBSCRIBER, null);
      let mark = await lastEventId(t);
      const unheard = await writeAll('Nobody listens');
      expect(await eventsAfter(t, mark)).toEqual([]);
      expect(await db.selectFrom('memories').select('id').where('id', 'in', unheard).execute()).toHaveLength(3);

      // Another project's subscription receives nothing of this one.
      await subscribe(db, 'elsewhere', {
        organizationId: t.organizationId,
        projectId: 'prj_elsewhere',
        types: ['memory.created'],
      });
      mark = await lastEventId(t);
      await writeAll('Elsewhere listens');
      expect(await eventsAfter(t, mark)).toEqual([]);

      await subscribe(db, 'creations', {
        organizationId: t.organizationId,
        projectId: t.projectId,
        types: ['memory.created'],
      });
      mark = await lastEventId(t);
      const heard = await writeAll('Creations are heard');
      expect(await eventsAfter(t, mark)).toEqual(heard.map((id) => ['memory.created', t.projectId, id]));

      // An event of the organization as a whole reaches a subscription in any of its projects.
      const orgWide = { actor: SYSTEM_ACTOR, organizationId: t.organizationId, projectId: null, requestId: null };
      const emitRemoval = () =>
        write(t.database, orgWide, async (_trx, effects) =>
          effects.emit('member.removed', { user_id: 7, previous_role: 'viewer' }),
        );
      mark = await lastEventId(t);
      await emitRemoval();
      expect(await eventsAfter(t, mark)).toEqual([]);
      await subscribe(db, 'elsewhere', {
        organizationId: t.organizationId,
        projectId: 'prj_elsewhere',
        types: ['member.removed'],
      });
      await emitRemoval();
      expect(await eventsAfter(t, mark)).toEqual([['member.removed', null, null]]);
    } finally {
      await subscribe(db, 'creations', null);
      await subscribe(db, 'elsewhere', null);
      await subscribe(db, HARNESS_SUBSCRIBER, everything());
    }
  });

  it('builds, checks and sends no event nobody receives, and wakes no delivery loop for it', async () => {
    const db = t.database.db;
    let wakes = 0;
    const stopCounting = onEventsCommitted(() => wakes++);
    const observe = async (label: string) => {
      const [built, woken, mark] = [eventsChecked(), wakes, await lastEventId(t)];
      await writeAll(label);
      return { built: eventsChecked() - built, wakes: wakes - woken, stored: (await eventsAfter(t, mark)).length };
    };
    try {
      await subscribe(db, HARNESS_SUBSCRIBER, null);
      // PostgreSQL: the process rules events out once it listens for subscription changes, which its first writes start.
      let tries = 0;
      await until(
        async () => (await observe(`Unheard while warming up ${tries++}`)).built === 0,
        'the process to rule unheard events out',
        5_000,
      );
      expect(await observe('Unheard')).toEqual({ built: 0, wakes: 0, stored: 0 });

      // A transaction that subscribes hears its own events, whatever the process holds.
      const caughtUp = {
        actor: SYSTEM_ACTOR,
        organizationId: t.organizationId,
        projectId: t.projectId,
        requestId: null,
        caughtUp: true,
      };
      const mark = await lastEventId(t);
      await write(t.database, caughtUp, async (trx, effects) => {
        await subscribe(trx, 'same-transaction', {
          organizationId: t.organizationId,
          projectId: t.projectId,
          types: ['member.removed'],
        });
        effects.emit('member.removed', { user_id: 8, previous_role: 'viewer' });
      });
      expect(await eventsAfter(t, mark)).toEqual([['member.removed', t.projectId, null]]);
      await subscribe(db, 'same-transaction', null);

      // The adds' three memory.created are built, stored and wake the loop (once per write); the
      // update's memory.updated, which nobody receives, is not built.
      await subscribe(db, 'creations', {
        organizationId: t.organizationId,
        projectId: t.projectId,
        types: ['memory.created'],
      });
      expect(await observe('Heard')).toEqual({ built: 3, wakes: 2, stored: 3 });
    } finally {
      stopCounting();
      await subscribe(db, 'creations', null);
      await subscribe(db, HARNESS_SUBSCRIBER, everything());
    }
  });
});
