import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { holdUncommitted, lockWaiterCount, lockWaiters } from '../../testing/locks.js';
import { until } from '../../testing/until.js';
import {
  addMemory,
  expectAudited,
  expectError,
  expectIdempotentReplay,
  expectNothingWritten,
  historyRows,
  withEffects,
} from '../../testing/memories.js';
import { addAll, freshUser } from '../../testing/retrieval.js';

forEachDialect('POST /memory/relations, GET /memory/{id}/relations, DELETE /memory/relations/{id}', (dialect) => {
  const t = useTestApp(dialect);
  const relationRows = () => t.database.db.selectFrom('memory_relations').selectAll().orderBy('id').execute();

  it('links two memories, answers the same link again, lists both directions and removes it, with history, audit and events', async () => {
    const endUser = freshUser();
    const [a, b, c] = await addAll(t, ['Moved to Lisbon in May', 'Lives in Lisbon', 'Works remotely'], { endUser });
    const created = await withEffects(t, () =>
      t.call('POST', '/memory/relations', {
        endUser,
        body: { source_id: b.id, target_id: a.id, type: 'follows', metadata: { confidence: 0.9 } },
      }),
    );
    expect(created.res.status, created.res.text).toBe(201);
    const relation = created.res.body;
    expect(relation).toEqual({
      id: expect.any(Number),
      source_id: b.id,
      target_id: a.id,
      type: 'follows',
      metadata: { confidence: 0.9 },
      created_at: expect.any(String),
    });
    expectAudited(created, t, { action: 'relation.create', target_type: 'relation', target_id: String(relation.id) });
    expect(created.events).toEqual([
      {
        type: 'relation.created',
        created_at: expect.any(String),
        payload: { relation_id: relation.id, type: 'follows', source_id: b.id, target_id: a.id, end_user_id: endUser },
      },
    ]);

    const again = await withEffects(t, () =>
      t.call('POST', '/memory/relations', { endUser, body: { source_id: b.id, target_id: a.id, type: 'follows' } }),
    );
    expect(again.res.status).toBe(200);
    expect(again.res.body).toEqual(relation);
    expectAudited(again, t, { action: 'relation.create', target_id: String(relation.id), result: 'existing' });
    expect(again.events).toEqual([]);

    const other = await t.call('POST', '/memory/relations', {
      endUser,
      body: { source_id: c.id, target_id: b.id, type: 'related' },
    });
    expect(other.status).toBe(201);
    const listed = await t.call('GET', `/memory/${b.id}/relations`, { endUser });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ memory_id: b.id, items: [relation, other.body] });
    expect((await t.call('GET', `/memory/${a.id}/relations`, { endUser })).body.items).toEqual([relation]);

    const link = { id: relation.id, type: 'follows', source_id: b.id, target_id: a.id };
    expect((await historyRows(t, a.id)).map((h) => h.action)).toEqual(['create', 'relate']);

    const removed = await withEffects(t, () => t.call('DELETE', `/memory/relations/${relation.id}`, { endUser }));
    expect(removed.res.status, removed.res.text).toBe(200);
    expect(removed.res.body).toEqual(relation);
    expectAudited(removed, t, { action: 'relation.delete', target_id: String(relation.id) });
    expect(removed.events.map((e) => e.type)).toEqual(['relation.deleted']);
    expect((await t.call('GET', `/memory/${a.id}/relations`, { endUser })).body.items).toEqual([]);
    const history = await t.call('GET', `/memory/${a.id}/history`, { endUser });
    expect(history.body.items.map((h: { action: string; changes: unknown }) => [h.action, h.changes])).toEqual([
      ['create', expect.any(Object)],
      ['relate', { relation: { before: null, after: link } }],
      ['unrelate', { relation: { before: link, after: null } }],
    ]);
    expectError(await t.call('DELETE', `/memory/relations/${relation.id}`, { endUser }), 404, 'not_found');
  });

  it("refuses self-relations, unknown types and another end user's or a forgotten memory, writing nothing", async () => {
    const endUser = freshUser();
    const [a, b] = await addAll(t, ['Plays the cello', 'Joined an orchestra'], { endUser });
    const stranger = await addMemory(t, 'Someone else entirely', { endUser: freshUser() });
    const bad: Array<[Record<string, unknown>, number, string]> = [
      [{ source_id: a.id, target_id: a.id, type: 'related' }, 400, 'target_id'],
      [{ source_id: a.id, target_id: b.id, type: 'summarizes' }, 400, 'type'],
      [{ source_id: a.id, target_id: b.id, type: 'likes' }, 400, 'type'],
      [{ source_id: a.id, target_id: b.id }, 400, 'type'],
      [{ source_id: a.id, target_id: b.id, type: 'related', note: 'x' }, 400, 'note'],
      [{ source_id: '1', target_id: b.id, type: 'related' }, 400, 'source_id'],
      [{ source_id: a.id, target_id: stranger.id, type: 'related' }, 404, 'target_id'],
      [{ source_id: 999_999_999, target_id: b.id, type: 'supports' }, 404, 'source_id'],
      [{ source_id: a.id, target_id: b.id, type: 'related', metadata: { blob: 'x'.repeat(17_000) } }, 400, 'metadata'],
    ];
    for (const [body, status, field] of bad) {
      const res = await expectNothingWritten(t, () => t.call('POST', '/memory/relations', { endUser, body }));
      expectError(res, status, status === 400 ? 'validation_error' : 'not_found', field);
    }
    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [b.id] } })).body).toEqual([b.id]);
    expectError(
      await t.call('POST', '/memory/relations', {
        endUser,
        body: { source_id: a.id, target_id: b.id, type: 'related' },
      }),
      404,
      'not_found',
      'target_id',
    );
    expectError(await t.call('GET', `/memory/${stranger.id}/relations`, { endUser }), 404, 'not_found');
  });

  it("hides relations from other end users and removes a forgotten memory's relations with it", async () => {
    const endUser = freshUser();
    const [a, b] = await addAll(t, ['Bought a red bicycle', 'Cycles to work daily'], { endUser });
    const rel = (
      await t.call('POST', '/memory/relations', {
        endUser,
        body: { source_id: b.id, target_id: a.id, type: 'supports' },
      })
    ).body;
    expectError(await t.call('DELETE', `/memory/relations/${rel.id}`, { endUser: freshUser() }), 404, 'not_found');
    expect((await relationRows()).some((r) => r.id === rel.id)).toBe(true);

    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [a.id] } })).body).toEqual([a.id]);
    expect((await relationRows()).filter((r) => r.source_id === a.id || r.target_id === a.id)).toEqual([]);
    expect((await t.call('GET', `/memory/${b.id}/relations`, { endUser })).body.items).toEqual([]);
  });

  it.runIf(dialect === 'postgres')('deletes a link made while one of its memories was being forgotten', async () => {
    const endUser = freshUser();
    const [a, b] = await addAll(t, ['Linked while forgotten', 'The other end of the link'], { endUser });
    // Another transaction inserts the same link and has not ended: the request's insert waits for it,
    // after finding both memories live.
    const other = await holdUncommitted(t, (trx) =>
      trx
        .insertInto('memory_relations')
        .values({
          project_id: t.projectId,
          tenant_id: '',
          end_user_id: endUser,
          source_id: a.id,
          target_id: b.id,
          type: 'related',
          metadata: '{}',
          created_at: new Date().toISOString(),
        })
        .execute(),
    );
    const relating = t.call('POST', '/memory/relations', {
      endUser,
      body: { source_id: a.id, target_id: b.id, type: 'related' },
    });
    await lockWaiters(t, 1, "the link's insert to wait for the other transaction");
    let forgotten = false;
    const forgetting = t
      .call('DELETE', '/memory/forget', { endUser, body: { ids: [b.id] } })
      .finally(() => (forgotten = true));
    // The forget waits for the request's transaction, or (were the memories not kept live until it commits) is done.
    await until(async () => forgotten || (await lockWaiterCount(t)) >= 2, 'the forget to end or to wait for the link');
    await other.release();
    expect((await relating).status).toBe(201);
    expect((await forgetting).body).toEqual([b.id]);
    expect((await relationRows()).filter((r) => r.source_id === b.id || r.target_id === b.id)).toEqual([]);
  });

  it('replays an idempotent create', async () => {
    const endUser = freshUser();
    const [a, b] = await addAll(t, ['Runs marathons', 'Ran Boston in 2023'], { endUser });
    const send = () =>
      t.call('POST', '/memory/relations', {
        endUser,
        headers: { 'idempotency-key': `rel-${endUser}` },
        body: { source_id: b.id, target_id: a.id, type: 'supports' },
      });
    await expectIdempotentReplay(send, 201);
  });
});

forEachDialect('OpenAPI document: summarize, relations, synthesize', (dialect) => {
  const t = useTestApp(dialect);

  it('documents each operation with its operationId, tags, request, answers and errors', async () => {
    const document = (await t.call('GET', '/openapi.json', { key: null, endUser: null, project: null })).body;
    const paths = document.paths;
    const operations: Array<[string, string, string, string[]]> = [
      ['post', '/memory/summarize', 'memories.summarize', ['201', '200', '400', '404', '503']],
      ['post', '/memory/relations', 'relations.create', ['201', '200', '400', '404']],
      ['get', '/memory/{memory_id}/relations', 'relations.list', ['200', '404']],
      ['delete', '/memory/relations/{relation_id}', 'relations.delete', ['200', '404', '409']],
      ['post', '/memory/synthesize', 'memories.synthesize', ['200', '400', '503']],
    ];
    for (const [method, path, operationId, statuses] of operations) {
      const op = paths[path]?.[method];
      expect(op, `${method} ${path}`).toMatchObject({
        operationId,
        tags: [expect.any(String)],
        summary: expect.any(String),
      });
      for (const status of statuses) expect(op.responses[status], `${path} ${status}`).toBeDefined();
    }
    expect(paths['/memory/relations'].post.requestBody.content['application/json'].schema.$ref).toBe(
      '#/components/schemas/RelationsCreateRequest',
    );
    const relation = document.components.schemas.RelationsCreateRequest;
    expect(JSON.stringify(relation.properties.type)).toContain('contradicts');
  });
});
