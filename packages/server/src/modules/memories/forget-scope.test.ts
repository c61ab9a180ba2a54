import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { createProject } from '../org/service.js';
import { forEachDialect, useTestApp, type TestApp } from '../../testing/harness.js';
import {
  addMemory,
  expectAudited,
  expectError,
  expectIdempotentReplay,
  expectNothingWritten,
  withEffects,
} from '../../testing/memories.js';
import { freshUser } from '../../testing/retrieval.js';

/** Every row of every table of the database as text: what a dump of it would hold. */
async function wholeDump(t: TestApp): Promise<string> {
  const db = t.database.db;
  const tables =
    t.dialect === 'sqlite'
      ? (await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.execute(db)).rows.map(
          (r) => r.name,
        )
      : (
          await sql<{
            name: string;
          }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`.execute(db)
        ).rows.map((r) => r.name);
  const parts: string[] = [];
  for (const table of tables) {
    const rows = (await sql`SELECT * FROM ${sql.table(table)}`.execute(db)).rows;
    parts.push(
      JSON.stringify(rows, (_, v) =>
        typeof v === 'bigint' ? String(v) : Buffer.isBuffer(v) ? v.toString('latin1') : v,
      ),
    );
  }
  return parts.join('\n');
}

forEachDialect('DELETE /memory/forget by filters or session', (dialect) => {
  const t = useTestApp(dialect);
  const forget = (endUser: string, body: unknown, headers: Record<string, string> = {}) =>
    t.call('DELETE', '/memory/forget', { endUser, body, headers });

  it('forgets what the filters select, a capped batch at a time, oldest first, counting first on a dry run; then nothing more', async () => {
    const user = freshUser('scoped');
    const secret = `zq${dialect}scope${Date.now()}x`;
    const doomed: number[] = [];
    for (let i = 0; i < 5; i++)
      doomed.push(
        (
          await addMemory(
            t,
            {
              text: `Note ${i} on ${secret}`,
              tags: ['draft', secret],
              metadata: { batch: 'b1', note: secret },
              session_id: 'sx',
            },
            { endUser: user },
          )
        ).id,
      );
    const kept = await addMemory(
      t,
      { text: 'A note to keep', tags: ['draft'], metadata: { batch: 'b2' } },
      { endUser: user },
    );
    const elsewhere = await addMemory(
      t,
      { text: 'Another end user, same batch', metadata: { batch: 'b1' } },
      { endUser: freshUser('other') },
    );
    const selection = { filters: { metadata: { batch: 'b1' }, tags_any: ['draft'] } };
    expect(await wholeDump(t)).toContain(secret);

    const dry = await expectNothingWritten(t, () => forget(user, { ...selection, dry_run: true, limit: 3 }));
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body).toEqual({ dry_run: true, ids: doomed.slice(0, 3), matched: 5, has_more: true });

    const first = await withEffects(t, () => forget(user, { ...selection, limit: 3 }));
    expect(first.res.body).toEqual({ dry_run: false, ids: doomed.slice(0, 3), matched: 5, has_more: true });
    expectAudited(first, t, {
      action: 'memory.forget',
      target_type: 'memory',
      target_id: doomed.slice(0, 3).join(','),
    });
    expect(first.events.map((e) => [e.type, e.payload.memory_id])).toEqual(
      doomed.slice(0, 3).map((id) => ['memory.deleted', id]),
    );
    for (const id of doomed.slice(0, 3))
      expectError(await t.call('GET', `/memory/${id}`, { endUser: user }), 404, 'not_found');

    const rest = await withEffects(t, () => forget(user, selection));
    expect(rest.res.body).toEqual({ dry_run: false, ids: doomed.slice(3), matched: 2, has_more: false });
    // Sent again: nothing left to forget, no event, and what the filters did not select is there.
    const again = await withEffects(t, () => forget(user, selection));
    expect(again.res.body).toEqual({ dry_run: false, ids: [], matched: 0, has_more: false });
    expect(again.events).toEqual([]);
    expect((await t.call('GET', `/memory/${kept.id}`, { endUser: user })).status).toBe(200);
    expect((await t.call('GET', `/memory/${elsewhere.id}`, { endUser: elsewhere.end_user_id })).status).toBe(200);

    // The same erasure as forgetting by id: nothing of the forgotten memories is left anywhere in the database.
    expect(await wholeDump(t)).not.toContain(secret);
  });

  it('forgets a session, all with {"filters": {}}, and replays an answer under its Idempotency-Key', async () => {
    const user = freshUser('session');
    const inSession = [];
    for (let i = 0; i < 3; i++)
      inSession.push((await addMemory(t, { text: `session turn ${i}`, session_id: 'chat-7' }, { endUser: user })).id);
    const outside = await addMemory(t, { text: 'not in the session' }, { endUser: user });
    const first = await expectIdempotentReplay(
      () => forget(user, { session_id: 'chat-7' }, { 'idempotency-key': `scope-${user}` }),
      200,
    );
    expect(first.body).toEqual({ dry_run: false, ids: inSession, matched: 3, has_more: false });
    expect((await forget(user, { filters: {}, dry_run: true })).body).toEqual({
      dry_run: true,
      ids: [outside.id],
      matched: 1,
      has_more: false,
    });
    expect((await forget(user, { filters: {} })).body).toEqual({
      dry_run: false,
      ids: [outside.id],
      matched: 1,
      has_more: false,
    });
    expect((await t.call('GET', '/memory?total=true', { endUser: user })).body.total).toBe(0);
  });

  it("reaches only the caller's scope: the same end user id in another tenant or project, and a bound key's own", async () => {
    const user = freshUser('scoped');
    const sibling = await createProject(t.database.db, {
      organizationId: t.organizationId,
      name: 'Sibling of forget',
      slug: `sibling-${user}`,
    });
    const acme = { 'X-Tenant-ID': 'acme' };
    const add = async (options: { headers?: Record<string, string>; project?: string }) =>
      (await addMemory(t, { text: `kept apart ${user}`, session_id: 'chat-1' }, { endUser: user, ...options })).id;
    const plain = await add({});
    const inTenant = await add({ headers: acme });
    const inSibling = await add({ project: sibling.id });
    const bound = await t.newKey({ projectId: t.projectId, tenantId: 'acme', endUserId: user });
    const live = async () =>
      (
        await t.database.db
          .selectFrom('memories')
          .select('id')
          .where('end_user_id', '=', user)
          .where('deleted_at', 'is', null)
          .orderBy('id')
          .execute()
      ).map((r) => r.id);

    const everything = await forget(user, { filters: {} });
    expect(everything.body).toMatchObject({ ids: [plain], matched: 1 });
    expect(await live()).toEqual([inTenant, inSibling]);
    // A key bound to the tenant user: its session only, whatever it names beside.
    const byBound = await t.call('DELETE', '/memory/forget', {
      endUser: null,
      key: bound.key,
      body: { session_id: 'chat-1' },
    });
    expect(byBound.body, byBound.text).toMatchObject({ ids: [inTenant], matched: 1 });
    expect(await live()).toEqual([inSibling]);
    expectError(
      await t.call('DELETE', '/memory/forget', {
        endUser: 'someone-else',
        key: bound.key,
        body: { filters: {} },
      }),
      404,
      'not_found',
    );
    expect(await live()).toEqual([inSibling]);
  });

  it('refuses a mixed or empty selection with 400 naming the field, writing nothing', async () => {
    const user = freshUser('refused');
    const m = await addMemory(t, { text: 'still here', tags: ['x'] }, { endUser: user });
    const cases: Array<[unknown, string]> = [
      [{ ids: [m.id], filters: {} }, 'filters'],
      [{ ids: [m.id], session_id: 's' }, 'session_id'],
      [{ ids: [m.id], dry_run: true }, 'dry_run'],
      [{ ids: [m.id], limit: 5 }, 'limit'],
      [{ dry_run: true }, 'ids'],
      [{ limit: 5 }, 'ids'],
      [{}, 'ids'],
      [{ filters: { nope: 1 } }, 'filters/nope'],
      [{ filters: { tags_any: 'x' } }, 'filters/tags_any'],
      [{ filters: {}, limit: 0 }, 'limit'],
      [{ filters: {}, limit: 1001 }, 'limit'],
      [{ session_id: '' }, 'session_id'],
      [{ filters: {}, dry_run: 'yes' }, 'dry_run'],
    ];
    for (const [body, field] of cases) {
      const res = await expectNothingWritten(t, () => forget(user, body), true);
      expectError(res, 400, 'validation_error', field);
    }
    expect((await t.call('GET', `/memory/${m.id}`, { endUser: user })).status).toBe(200);
  });
});
