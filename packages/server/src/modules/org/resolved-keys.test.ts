import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { startServerProcess, type ServerProcess } from '../../testing/process.js';
import { SUBSCRIPTIONS_CHANNEL } from '../../core/event-subscriptions.js';
import { LISTENER_APPLICATION_NAME } from '../../store/listener.js';
import { listeningCache } from '../../store/listening-cache.js';
import { heardEverything, startSlowRelay, type SlowRelay } from '../../testing/slow-network.js';
import { CREDENTIALS_CHANNEL, ResolvedKeys } from './resolved-keys.js';

/**
 * Two app instances on one database: this test's app (A) and an `engram serve` process (B). On
 * PostgreSQL both keep resolved keys in memory (resolved-keys.ts); a change made through either,
 * or by any other session, must be refused by both on the very next request.
 */
forEachDialect('resolved API keys across processes', (dialect) => {
  const t = useTestApp(dialect, { runJobs: false });
  const owner = useOwner(t);
  let b: ServerProcess;
  beforeAll(async () => {
    b = await startServerProcess({
      ENGRAM_DATABASE_URL: t.databaseUrl,
      ENGRAM_RUN_JOBS: 'false',
      ENGRAM_LOG_LEVEL: 'warn',
    });
  });
  afterAll(async () => {
    // Its listening connection does not keep it from stopping.
    expect(await b.stop()).toBe(0);
  });

  let n = 0;
  const addOnB = async (key: string, projectId = t.projectId) =>
    (
      await fetch(`${b.url}/memory/add`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': key,
          'x-project-id': projectId,
          'x-end-user-id': 'u',
        },
        body: JSON.stringify({ text: `fact number ${++n} about resolved keys` }),
      })
    ).status;
  const addOnA = async (key: string, project = t.projectId) =>
    (await t.call('POST', '/memory/add', { key, project, body: { text: `fact number ${++n} about resolved keys` } }))
      .status;

  it('refuses a key revoked through the other instance at once, on both', async () => {
    const key = await t.newKey();
    // Used on both first, so that each holds it resolved.
    for (let i = 0; i < 2; i++) {
      expect(await addOnB(key.key)).toBe(201);
      expect(await addOnA(key.key)).toBe(201);
    }
    const revoked = await t.call('DELETE', `/org/api-keys/${key.id}`, { token: owner.token });
    expect(revoked.body.status).toBe('revoked');
    expect(await addOnB(key.key)).toBe(401);
    expect(await addOnA(key.key)).toBe(401);
  });

  it('refuses a key revoked by another process (engram key revoke) at once, on both', async () => {
    const key = await t.newKey();
    expect(await addOnB(key.key)).toBe(201);
    expect(await addOnA(key.key)).toBe(201);
    const revoked = await t.cli('key', 'revoke', String(key.id));
    expect(revoked.code).toBe(0);
    expect(await addOnB(key.key)).toBe(401);
    expect(await addOnA(key.key)).toBe(401);
  });

  it('answers 404 at once, on both, for a project deleted through one of them', async () => {
    const created = await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Short-lived' } });
    const projectId = created.body.id as string;
    const key = await t.newKey();
    expect(await addOnB(key.key, projectId)).toBe(201);
    expect(await addOnA(key.key, projectId)).toBe(201);
    expect((await t.call('DELETE', `/org/projects/${projectId}`, { token: owner.token })).status).toBe(200);
    expect(await addOnB(key.key, projectId)).toBe(404);
    expect(await addOnA(key.key, projectId)).toBe(404);
    // The key itself still works in the project that is live.
    expect(await addOnB(key.key)).toBe(201);
  });

  it('refuses an expired key held in memory', async () => {
    // Expires within the test: resolved (and held) while live, refused once past its time. A busy machine may take
    // longer than the key's life to make and use it: then again with a longer one (what the uses answered is
    // asserted only when both were answered before the expiry).
    const live = async (lifeMs: number) => {
      const expiresAt = new Date(Date.now() + lifeMs);
      const key = await t.newKey({ expiresAt: expiresAt.toISOString() });
      const answers = [await addOnA(key.key), await addOnB(key.key)];
      return Date.now() < expiresAt.getTime() ? { key, expiresAt, answers } : undefined;
    };
    let held = await live(3_000);
    for (let lifeMs = 12_000; !held; lifeMs *= 2) held = await live(lifeMs);
    const { key, expiresAt, answers } = held;
    expect(answers).toEqual([201, 201]);
    while (Date.now() <= expiresAt.getTime()) await new Promise((r) => setTimeout(r, 100));
    expect(await addOnA(key.key)).toBe(401);
    expect(await addOnB(key.key)).toBe(401);
  });

  if (dialect === 'postgres') {
    /** Resolves once A has heard every credentials notification committed before the call (Watch.caughtUp). */
    const caughtUpOnA = () =>
      listeningCache(t.database, CREDENTIALS_CHANNEL, () => new ResolvedKeys())!.watch.caughtUp();

    it('holds a resolved key until notified: a change that notifies no one is not seen, so every change must notify', async () => {
      const key = await t.newKey();
      expect(await addOnA(key.key)).toBe(201);
      // The key's creation notifies too, asynchronously: once it has landed, the key is held from the next use.
      await caughtUpOnA();
      expect(await addOnA(key.key)).toBe(201);
      const admin = new pg.Client({ connectionString: t.databaseUrl });
      await admin.connect();
      try {
        // With triggers off for this session, the revocation notifies no one: the held key still serves.
        await admin.query("SET session_replication_role = 'replica'");
        await admin.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
        expect(await addOnA(key.key)).toBe(201);
        await admin.query('SELECT pg_notify($1, $2)', [CREDENTIALS_CHANNEL, 'test']);
      } finally {
        await admin.end();
      }
      await caughtUpOnA();
      expect(await addOnA(key.key)).toBe(401);
    });

    it('holds a key per project named: a key resolved for one project never serves a request naming another', async () => {
      const created = await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Second for keys' } });
      const second = created.body.id as string;
      const key = await t.newKey();
      for (const project of [t.projectId, second, t.projectId, second])
        expect(await addOnA(key.key, project)).toBe(201);
      const counts = await t.database.db
        .selectFrom('memories')
        .select(['project_id', (eb) => eb.fn.countAll<number>().as('n')])
        .where('project_id', 'in', [t.projectId, second])
        .where('end_user_id', '=', 'user-1')
        .where('text', 'like', 'fact number %')
        .groupBy('project_id')
        .execute();
      expect(Object.fromEntries(counts.map((c) => [c.project_id, Number(c.n)]))[second]).toBe(2);
    });

    it('holds nothing while not listening: a change made meanwhile is seen at once', async () => {
      const key = await t.newKey();
      expect(await addOnA(key.key)).toBe(201);
      expect(await addOnB(key.key)).toBe(201);
      const admin = new pg.Client({ connectionString: t.databaseUrl });
      await admin.connect();
      try {
        // Both instances lose their listening connection; the revocation then notifies no one.
        const listeners = await admin.query(
          'SELECT pg_terminate_backend(pid, 5000) AS ended FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
          [LISTENER_APPLICATION_NAME],
        );
        expect(listeners.rows.map((r) => r.ended)).toEqual([true, true]);
        await admin.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
      } finally {
        await admin.end();
      }
      expect(await addOnA(key.key)).toBe(401);
      expect(await addOnB(key.key)).toBe(401);
    });

    describe('a process whose every byte from PostgreSQL comes 60 ms late', () => {
      // Notifications reach it long after its next request. A held key is used on a hot route
      // (add, query) without waiting for the catch-up, its statement checking the credentials
      // clock instead (core/credentials-clock.ts); on other routes once the catch-up is done.
      let slow: ServerProcess;
      let relay: SlowRelay;
      beforeAll(async () => {
        const url = new URL(t.databaseUrl);
        relay = await startSlowRelay({ host: url.hostname, port: Number(url.port || 5432) }, 60);
        url.host = `127.0.0.1:${relay.port}`;
        slow = await startServerProcess({
          ENGRAM_DATABASE_URL: url.toString(),
          ENGRAM_RUN_JOBS: 'false',
          ENGRAM_LOG_LEVEL: 'warn',
        });
      });
      afterAll(async () => {
        expect(await slow.stop()).toBe(0);
        await relay.close();
      });
      const onSlow = async (path: string, key: string, body: unknown) => {
        const res = await fetch(`${slow.url}${path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-api-key': key,
            'x-project-id': t.projectId,
            'x-end-user-id': 'slow',
          },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as { memories?: unknown[] } };
      };
      const addOnSlow = async (key: string) =>
        (await onSlow('/memory/add', key, { text: `fact number ${++n} about resolved keys` })).status;
      const queryOnSlow = (key: string) => onSlow('/memory/query', key, { query: 'resolved keys fact' });
      const written = async () => {
        const memories = await t.database.db
          .selectFrom('memories')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('project_id', '=', t.projectId)
          .executeTakeFirstOrThrow();
        const revision = await t.database.db
          .selectFrom('end_users')
          .select('revision')
          .where('project_id', '=', t.projectId)
          .where('tenant_id', '=', '')
          .where('end_user_id', '=', 'slow')
          .executeTakeFirst();
        return { memories: Number(memories.n), revision: revision?.revision };
      };
      /** A key the slow process holds, read at the same clock as the organization's subscriptions it holds. */
      const heldKey = async () => {
        const key = await t.newKey();
        // Looked up on first use; once the creation's notification has arrived, kept from the next.
        expect(await addOnSlow(key.key)).toBe(201);
        await heardEverything(relay, t.databaseUrl, [CREDENTIALS_CHANNEL, SUBSCRIPTIONS_CHANNEL]);
        for (let i = 0; i < 2; i++) {
          expect(await addOnSlow(key.key)).toBe(201);
          expect((await queryOnSlow(key.key)).status).toBe(200);
        }
        return key;
      };
      const revoke = async (key: { id: number }) =>
        expect((await t.call('DELETE', `/org/api-keys/${key.id}`, { token: owner.token })).body.status).toBe('revoked');

      it('refuses at once an add with a key revoked elsewhere, and writes nothing with it', async () => {
        const key = await heldKey();
        const before = await written();
        await revoke(key);
        expect(await addOnSlow(key.key)).toBe(401);
        expect(await written()).toEqual(before);
      });

      it('refuses at once a query with a key revoked elsewhere, and answers nothing', async () => {
        const key = await heldKey();
        await revoke(key);
        const query = await queryOnSlow(key.key);
        expect(query.status).toBe(401);
        expect(query.body.memories).toBeUndefined();
      });

      it('refuses at once a query with a key revoked elsewhere when the index held is behind, and answers nothing', async () => {
        const key = await heldKey();
        // Written through the other instance: the slow process's index of this end user is behind, so its query reads rows anew.
        expect(
          (
            await t.call('POST', '/memory/add', {
              endUser: 'slow',
              body: { text: `fact number ${++n} about resolved keys` },
            })
          ).status,
        ).toBe(201);
        await revoke(key);
        const query = await queryOnSlow(key.key);
        expect(query.status).toBe(401);
        expect(query.body.memories).toBeUndefined();
      });

      it('serves a held key whose clock moved for another reason: looked up again and run once', async () => {
        const moveTheClock = async () =>
          expect(
            (await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Moves the clock' } })).status,
          ).toBe(201);
        const key = await heldKey();
        const before = await written();
        await moveTheClock();
        expect(await addOnSlow(key.key)).toBe(201);
        expect((await written()).memories).toBe(before.memories + 1);
        const again = await heldKey();
        await moveTheClock();
        const query = await queryOnSlow(again.key);
        expect(query.status).toBe(200);
        expect(query.body.memories!.length).toBeGreaterThan(0);
      });
    });
  }
});
