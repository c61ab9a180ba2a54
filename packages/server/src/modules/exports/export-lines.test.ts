import { expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { waitFor } from '../../testing/jobs.js';

/**
 * An export job's memory lines are read from rows that PostgreSQL sends as arrays (memories/export.ts#exportPage)
 * where every other read of a memory builds it from a row object (feed.ts#viewOf): each line must be, byte for
 * byte, the JSON of the memory's view (GET /memory/:id) followed by its owner.
 */
forEachDialect('export lines', (dialect) => {
  const t = useTestApp(dialect);
  const owner = useOwner(t);

  it('writes each memory as the JSON of its view with tenant_id and speaker, for a project and for one end user', async () => {
    const items = [
      { text: 'plain' },
      {
        text: 'Ünïcödé "quoted", a\ttab\nnew line \u2028 and 😀',
        source: 'chat',
        tags: ['b', 'a', 'ü'],
        importance: 0.5,
        metadata: { z: 1, a: { nested: [1, 'two', null, 1.5, -0, 1e15] }, '1': 'integer-like key', emoji: '😀' },
        client_ref: 'ref-1',
        session_id: 'session-1',
        expires_at: '2999-01-02T03:04:05.678Z',
      },
      { text: 'with a time to live', ttl_seconds: 86_400, tags: [] },
    ];
    const added = await t.call('POST', '/memory/bulk-add', { body: items, endUser: 'lines-a' });
    expect(added.status, added.text).toBe(200);
    const ids = (added.body.results as { memory: { id: number } }[]).map((r) => r.memory.id);
    // Values no add sets: a summary, a supersession and a /v1 speaker.
    await t.database.db
      .updateTable('memories')
      .set({ is_summary: t.database.bool(true), superseded_by: ids[0]!, speaker: 'Ana' })
      .where('id', '=', ids[2]!)
      .execute();
    const expected: string[] = [];
    for (const id of ids) {
      const view = await t.call('GET', `/memory/${id}`, { endUser: 'lines-a' });
      expect(view.status, view.text).toBe(200);
      // A summary's links to its sources travel with it (none here).
      const summary = id === ids[2] ? { speaker: 'Ana', relations: [] } : { speaker: null };
      expected.push(JSON.stringify({ ...view.body, tenant_id: '', ...summary }));
    }
    for (const scope of [{}, { end_user_id: 'lines-a' }]) {
      const created = await t.call('POST', '/exports', { token: owner.token, project: t.projectId, body: { scope } });
      expect(created.status, created.text).toBe(202);
      const done = await waitFor(t, owner.token, `/exports/${created.body.id}`, t.projectId);
      expect(done.status).toBe('completed');
      const file = await t.app.inject({
        method: 'GET',
        url: `/exports/${done.id}/download`,
        headers: { authorization: `Bearer ${owner.token}`, 'x-project-id': t.projectId },
      });
      const lines = file.payload.split('\n').slice(1, -1);
      expect(lines).toEqual(expected);
      // Spelled out, so that a change to the one mapping of a row to a memory (feed.ts#viewOfValues), which the
      // view above is built by too, still shows. PostgreSQL's jsonb keeps keys ordered by length, then bytes.
      const { created_at, updated_at } = JSON.parse(lines[1]!) as { created_at: string; updated_at: string };
      const metadata =
        dialect === 'postgres'
          ? '{"1":"integer-like key","a":{"nested":[1,"two",null,1.5,0,1000000000000000]},"z":1,"emoji":"😀"}'
          : '{"1":"integer-like key","z":1,"a":{"nested":[1,"two",null,1.5,0,1000000000000000]},"emoji":"😀"}';
      expect(lines[1]).toBe(
        `{"id":${ids[1]},"text":"Ünïcödé \\"quoted\\", a\\ttab\\nnew line \u2028 and 😀","tags":["b","a","ü"],` +
          `"is_summary":false,"source":"chat","importance":0.5,"metadata":${metadata},"client_ref":"ref-1",` +
          `"session_id":"session-1","end_user_id":"lines-a","created_at":"${created_at}","updated_at":"${updated_at}",` +
          `"superseded_by":null,"expires_at":"2999-01-02T03:04:05.678Z","tenant_id":"","speaker":null}`,
      );
      expect(created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });
});
