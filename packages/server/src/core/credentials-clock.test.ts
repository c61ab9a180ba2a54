import { expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../testing/harness.js';

/**
 * The credentials clock (migration 0021) must move with every committed change to what a key
 * resolves to or who receives events, and with nothing else: a change it missed would let a
 * request on a hot route use a held key that no longer holds (core/credentials-clock.ts).
 */
forEachDialect('the credentials clock', (dialect) => {
  const t = useTestApp(dialect, {
    runJobs: false,
    webhooks: { allowHosts: ['127.0.0.1'], allowHttp: true, timeoutMs: 2000, retentionDays: 30 },
  });
  const owner = useOwner(t);
  const clock = async () =>
    Number(
      (await t.database.db.selectFrom('credentials_clock').select('generation').executeTakeFirstOrThrow()).generation,
    );
  /** How far the clock moved across `change`. */
  const moves = async (change: () => Promise<unknown>) => {
    const before = await clock();
    await change();
    return (await clock()) - before;
  };

  it('moves with keys, projects and subscriptions', async () => {
    let key = { id: 0, key: '' };
    expect(await moves(async () => (key = await t.newKey()))).toBeGreaterThan(0);
    expect(await moves(() => t.call('DELETE', `/org/api-keys/${key.id}`, { token: owner.token }))).toBeGreaterThan(0);
    let projectId = '';
    expect(
      await moves(async () => {
        const created = await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Clock project' } });
        expect(created.status).toBe(201);
        projectId = created.body.id as string;
      }),
    ).toBeGreaterThan(0);
    expect(
      await moves(async () => {
        const created = await t.call('POST', '/org/webhooks', {
          token: owner.token,
          headers: { 'x-project-id': projectId },
          body: { name: 'clock', url: 'http://127.0.0.1:9/hook', events: ['memory.created'] },
        });
        expect(created.status, created.text).toBe(201);
      }),
    ).toBeGreaterThan(0);
    expect(
      await moves(async () =>
        expect((await t.call('DELETE', `/org/projects/${projectId}`, { token: owner.token })).status).toBe(200),
      ),
    ).toBeGreaterThan(0);
  });

  it('stays where it is for what no key resolves by: last use, a project renamed, memories written', async () => {
    const key = await t.newKey();
    expect(
      await moves(async () => {
        await t.database.db
          .updateTable('api_keys')
          .set({ last_used_at: new Date().toISOString() })
          .where('id', '=', key.id)
          .execute();
        expect(
          (await t.call('PATCH', `/org/projects/${t.projectId}`, { token: owner.token, body: { name: 'Renamed' } }))
            .status,
        ).toBe(200);
        expect(
          (await t.call('POST', '/memory/add', { key: key.key, body: { text: 'Nothing about credentials' } })).status,
        ).toBe(201);
      }),
    ).toBe(0);
  });

  it('moves only with a commit', async () => {
    const key = await t.newKey();
    expect(
      await moves(async () => {
        await t.database.db
          .transaction()
          .execute(async (trx) => {
            await trx
              .updateTable('api_keys')
              .set({ revoked_at: new Date().toISOString() })
              .where('id', '=', key.id)
              .execute();
            throw new Error('rolled back');
          })
          .catch((error: Error) => expect(error.message).toBe('rolled back'));
      }),
    ).toBe(0);
  });

  if (dialect === 'postgres') {
    it('moves once per transaction, at its commit', async () => {
      const [a, b] = [await t.newKey(), await t.newKey()];
      expect(
        await moves(() =>
          t.database.db.transaction().execute(async (trx) => {
            await trx
              .updateTable('api_keys')
              .set({ revoked_at: new Date().toISOString() })
              .where('id', 'in', [a.id, b.id])
              .execute();
            await trx
              .insertInto('event_subscriptions')
              .values({
                organization_id: t.organizationId,
                type: 'memory.created',
                project_id: t.projectId,
                subscriber: 'clock-test',
              })
              .execute();
            // Not before the commit: the row is locked only while committing.
            const inside = await trx.selectFrom('credentials_clock').select('generation').executeTakeFirstOrThrow();
            expect(Number(inside.generation)).toBe(await clock());
          }),
        ),
      ).toBe(1);
      await t.database.db.deleteFrom('event_subscriptions').where('subscriber', '=', 'clock-test').execute();
    });
  }
});
