import { beforeAll, expect, it } from 'vitest';
import { forEachDialect, HARNESS_SUBSCRIBER, useOwner, useTestApp } from '../testing/harness.js';
import { eventsAfter, lastEventId } from '../testing/memories.js';
import { startServerProcess } from '../testing/process.js';
import { CREDENTIALS_CHANNEL } from '../modules/org/resolved-keys.js';
import { heardEverything, startSlowRelay } from '../testing/slow-network.js';
import { subscribe, SUBSCRIPTIONS_CHANNEL } from './event-subscriptions.js';

/**
 * A process builds no event nobody receives, deciding from the subscriptions it holds
 * (event-subscriptions.ts); a subscription made through another process must be honoured by the
 * very next write all the same. On PostgreSQL that process is reached over a relay that delays
 * every byte from the database by 60 ms, so the subscription's notification arrives long after
 * the write: what it holds answers only once its listening connection has caught up.
 */
forEachDialect('event subscriptions across processes', (dialect) => {
  const t = useTestApp(dialect, {
    runJobs: false,
    webhooks: { allowHosts: ['127.0.0.1'], allowHttp: true, timeoutMs: 2000, retentionDays: 30 },
  });
  const owner = useOwner(t);
  beforeAll(() => subscribe(t.database.db, HARNESS_SUBSCRIBER, null));

  it('honours a subscription made through one process on the very next write through another', async () => {
    const url = new URL(t.databaseUrl, 'file:');
    const relay =
      dialect === 'postgres' ? await startSlowRelay({ host: url.hostname, port: Number(url.port || 5432) }, 60) : null;
    if (relay) url.host = `127.0.0.1:${relay.port}`;
    const other = await startServerProcess({
      ENGRAM_DATABASE_URL: relay ? url.toString() : t.databaseUrl,
      ENGRAM_RUN_JOBS: 'false',
      ENGRAM_LOG_LEVEL: 'warn',
    });
    try {
      const key = (await t.newKey()).key;
      let n = 0;
      const post = async (path: string, body: unknown) => {
        const res = await fetch(`${other.url}${path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-api-key': key,
            'x-project-id': t.projectId,
            'x-end-user-id': 'elsewhere',
          },
          body: JSON.stringify(body),
        });
        expect(res.status).toBeLessThan(300);
        return (await res.json()) as { id: number; results: Array<{ memory: { id: number } }> };
      };
      const add = async () => (await post('/memory/add', { text: `Fact ${++n} written elsewhere` })).id;
      // Used until the other process holds the key and the project's (empty) subscriptions: once it
      // has heard every notification sent before (SQLite holds nothing, so there is none to hear).
      await add();
      if (relay) await heardEverything(relay, t.databaseUrl, [CREDENTIALS_CHANNEL, SUBSCRIPTIONS_CHANNEL]);
      await add();
      const mark = await lastEventId(t);
      await add();
      expect(await eventsAfter(t, mark)).toEqual([]);

      const created = await t.call('POST', '/org/webhooks', {
        token: owner.token,
        headers: { 'x-project-id': t.projectId },
        body: { name: 'elsewhere', url: 'http://127.0.0.1:9/hook', events: ['memory.created'] },
      });
      expect(created.status, created.text).toBe(201);
      const single = await add();
      const bulk = await post('/memory/bulk-add', [{ text: `Fact ${++n} in bulk` }, { text: `Fact ${++n} in bulk` }]);
      const ids = [single, ...bulk.results.map((r) => r.memory.id)];
      expect(await eventsAfter(t, mark)).toEqual(ids.map((id) => ['memory.created', t.projectId, id]));
    } finally {
      expect(await other.stop()).toBe(0);
      await relay?.close();
    }
  });
});
