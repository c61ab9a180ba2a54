import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect, it } from 'vitest';
import { until } from '../../testing/until.js';
import { sealAuditChains } from '../../core/audit-log.js';
import { verifyAuditChains } from '../audit/index.js';
import { forEachDialect, useTestApp, type Response } from '../../testing/harness.js';
import { upload } from '../../testing/files.js';
import { addMemory, expectError } from '../../testing/memories.js';

forEachDialect('erasure of what copies a forgotten memory', (dialect) => {
  const t = useTestApp(dialect);
  let serial = 0;
  const marker = () => `zq${dialect}marker${++serial}x`;
  const keyed = (key: string) => ({ headers: { 'idempotency-key': key } });
  const forget = (ids: number[], endUser = 'user-1') => t.call('DELETE', '/memory/forget', { body: { ids }, endUser });

  /** The stored answer of `key` is gone from the table, and its replay is 410 without the marker. */
  async function expectErasedReplay(replay: () => Promise<Response>, secret: string): Promise<void> {
    const res = await replay();
    expectError(res, 410, 'gone', 'Idempotency-Key');
    expect(res.text).not.toContain(secret);
    const rows = await t.database.db
      .selectFrom('idempotency_keys')
      .select(['response', 'committed', 'erased_at'])
      .where('erased_at', 'is not', null)
      .execute();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row).toMatchObject({ response: null, committed: null });
  }

  it('a replay of an add, infer, bulk-add, patch, batch-update, summarize or upload after the memory is forgotten is 410, not its content', async () => {
    type Sent = { send: () => Promise<Response>; ids: (res: Response) => number[] };
    const cases: Record<string, (secret: string, key: string) => Promise<Sent>> = {
      add: async (secret, key) => ({
        send: () =>
          t.call('POST', '/memory/add', {
            ...keyed(key),
            body: { text: `Visits ${secret}`, tags: [secret], metadata: { note: secret } },
          }),
        ids: (res) => [res.body.id],
      }),
      infer: async (secret, key) => ({
        send: () =>
          t.call('POST', '/memory/infer', {
            ...keyed(key),
            body: { messages: [{ role: 'user', content: `My favorite color is ${secret}.` }] },
          }),
        ids: (res) => res.body.results.map((r: { memory: { id: number } }) => r.memory.id),
      }),
      'bulk-add': async (secret, key) => ({
        send: () => t.call('POST', '/memory/bulk-add', { ...keyed(key), body: [{ text: `Bulk ${secret}` }] }),
        ids: (res) => [res.body.results[0].memory.id],
      }),
      patch: async (secret, key) => {
        const m = await addMemory(t, 'Plain text to patch');
        return {
          send: () => t.call('PATCH', `/memory/${m.id}`, { ...keyed(key), body: { metadata: { note: secret } } }),
          ids: () => [m.id],
        };
      },
      'batch-update': async (secret, key) => {
        const m = await addMemory(t, 'Plain text to batch-update');
        return {
          send: () =>
            t.call('POST', '/memory/batch-update', {
              ...keyed(key),
              body: { updates: [{ id: m.id, tags: [secret] }] },
            }),
          ids: () => [m.id],
        };
      },
      summarize: async (secret, key) => {
        const a = await addMemory(t, `Summarized source ${secret} one`);
        const b = await addMemory(t, `Summarized source ${secret} two`);
        return {
          send: () => t.call('POST', '/memory/summarize', { ...keyed(key), body: { memory_ids: [a.id, b.id] } }),
          ids: () => [a.id, b.id],
        };
      },
      upload: async (secret, key) => ({
        send: () =>
          upload(
            t,
            { name: `${secret}.txt`, content: `Uploaded note about ${secret}.`, type: 'text/plain' },
            keyed(key),
          ),
        ids: (res) => res.body.memories.map((m: { id: number }) => m.id),
      }),
    };
    for (const [name, make] of Object.entries(cases)) {
      const secret = marker();
      const { send, ids } = await make(secret, `erase-${name}`);
      const first = await send();
      expect(first.status, name).toBeLessThan(300);
      expect(first.text, name).toContain(secret);
      const replayed = await send();
      expect(replayed.headers['idempotent-replayed'], name).toBe('true');
      expect((await forget(ids(first))).status).toBe(200);
      await expectErasedReplay(send, secret);
    }
  });

  it('a patch replayed after the memory is forgotten is 410', async () => {
    const secret = marker();
    const m = await addMemory(t, 'A memory to patch once');
    const patch = () =>
      t.call('PATCH', `/memory/${m.id}`, { ...keyed(`patch-${dialect}`), body: { metadata: { note: secret } } });
    expect((await patch()).status).toBe(200);
    expect((await patch()).headers['idempotent-replayed']).toBe('true');
    await forget([m.id]);
    await expectErasedReplay(patch, secret);
  });

  it('a purge erases every answer given for the end user, even one naming no memory', async () => {
    const endUser = `purged-${dialect}`;
    const secret = marker();
    const add = () =>
      t.call('POST', '/memory/add', { ...keyed(`purge-add-${dialect}`), endUser, body: { text: `Purged ${secret}` } });
    const m = await add();
    expect(m.status).toBe(201);
    await t.call('DELETE', '/memory/forget', { ...keyed(`purge-forget-${dialect}`), endUser, body: { ids: [987654] } });
    expect((await t.call('DELETE', `/memory/user/${endUser}`, { endUser: null })).status).toBe(200);
    await expectErasedReplay(add, secret);
    const forgetAgain = await t.call('DELETE', '/memory/forget', {
      ...keyed(`purge-forget-${dialect}`),
      endUser,
      body: { ids: [987654] },
    });
    expectError(forgetAgain, 410, 'gone', 'Idempotency-Key');
    const links = await t.database.db.selectFrom('idempotency_answer_subjects').selectAll().execute();
    expect(JSON.stringify(links)).not.toContain(endUser);
  });

  it('a purge names the end user by pseudonym in the audit log, whose chain still verifies, and not in the request log', async () => {
    const endUser = `${marker()} person`;
    await addMemory(t, 'A note of a person to remove', { endUser });
    expect((await t.call('DELETE', `/memory/user/${encodeURIComponent(endUser)}`, { endUser: null })).status).toBe(200);
    await sealAuditChains(t.database);
    const audit = await t.database.db
      .selectFrom('audit_log')
      .select(['target_id'])
      .where('action', '=', 'memory.purge_end_user')
      .execute();
    expect(audit.map((r) => r.target_id)).toContain(t.services.pseudonymize(t.projectId, endUser));
    expect(JSON.stringify(audit)).not.toContain(endUser);
    expect((await verifyAuditChains(t.database, t.organizationId))[0]).toMatchObject({ ok: true, unsealed: 0 });
    expect(t.logs.join('\n')).toContain('/memory/user/[end user]');
    expect(t.logs.join('\n')).not.toContain(encodeURIComponent(endUser));
  });

  it.runIf(dialect === 'sqlite')(
    'SQLite: a forgotten memory’s text is overwritten in the database file and gone from its WAL',
    async () => {
      const secret = marker();
      const ids: number[] = [];
      for (let i = 0; i < 20; i++)
        ids.push(
          (await addMemory(t, { text: `Note ${i} on ${secret}`, tags: [secret], metadata: { about: secret } })).id,
        );
      const dir = dirname((t.database.config as { path: string }).path);
      const hits = () =>
        readdirSync(dir).filter(
          (f) =>
            existsSync(join(dir, f)) && statSync(join(dir, f)).isFile() && readFileSync(join(dir, f)).includes(secret),
        );
      expect(hits().length).toBeGreaterThan(0);
      expect((await forget(ids)).status).toBe(200);
      // The checkpointer truncates the WAL in the background once the erasure committed.
      await until(() => hits().length === 0, `no file of ${dir} holding ${secret}`);
    },
  );
});
