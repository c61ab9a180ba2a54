import { expect, it } from 'vitest';
import { forEachDialect, useTestApp } from '../../testing/harness.js';
import { createProject } from '../org/service.js';
import { addMemory, expectError } from '../../testing/memories.js';
import {
  addAll,
  explained,
  fieldOfError,
  freshUser,
  idsOf,
  query,
  retrievalConfig,
  setColumns,
} from '../../testing/retrieval.js';

forEachDialect('POST /memory/query', (dialect) => {
  const t = useTestApp(dialect);

  it('ranks the relevant memory first, matching inflected forms of the query words', async () => {
    const endUser = freshUser();
    const [, puppies, , running] = await addAll(
      t,
      [
        'My favourite food is sushi from the place downtown',
        'I adopted two puppies from the shelter last spring',
        'I work as a nurse at the city hospital',
        'She runs every morning before work along the river',
      ],
      { endUser },
    );
    expect(idsOf(await query(t, 'When did I adopt the puppy?', { endUser }))[0]).toBe(puppies.id);
    expect(idsOf(await query(t, 'who was running by the rivers', { endUser }))[0]).toBe(running.id);
    const [best] = await query(t, 'adopting a puppy', { endUser });
    // Whole memory records with their metadata, plus a score.
    expect(best).toMatchObject({
      id: puppies.id,
      text: puppies.text,
      tags: [],
      metadata: {},
      end_user_id: endUser,
      score: expect.any(Number),
    });
    expect(best).not.toHaveProperty('explanation');
  });

  it('finds what a mistyped word means: a word no memory holds is read as the held word one edit away', async () => {
    const endUser = freshUser();
    const [sushi, , nurse] = await addAll(
      t,
      [
        'My favourite food is sushi from the restaurant downtown',
        'I adopted two puppies from the shelter last spring',
        'I work as a nurse at the city hospital',
      ],
      { endUser },
    );
    expect(idsOf(await query(t, 'which restuarant do I like?', { endUser }))).toEqual([sushi.id]);
    const [hit] = await query(t, { query: 'where is the hospitl', explain: true }, { endUser });
    expect(hit).toMatchObject({ id: nurse.id, explanation: { lexical: expect.any(Number) } });
    // A word nothing is one edit from still matches nothing.
    expect(await query(t, 'zqxjkv', { endUser })).toEqual([]);
  });

  it('returns k results, 10 by default and at most 100', async () => {
    const endUser = freshUser();
    const res = await t.call('POST', '/memory/bulk-add', {
      endUser,
      body: Array.from({ length: 15 }, (_, i) => ({ text: `garden note number ${i}: tomatoes need water` })),
    });
    expect(res.body.totals.created).toBe(15);
    expect(await query(t, 'tomatoes', { endUser })).toHaveLength(10);
    expect(await query(t, { query: 'tomatoes', k: 3 }, { endUser })).toHaveLength(3);
    expect(await query(t, { query: 'tomatoes', k: 100 }, { endUser })).toHaveLength(15);
    const scores = (await query(t, { query: 'tomatoes', k: 15 }, { endUser })).map((m) => m.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
  });

  it('explains every result with per-feature contributions whose sum s gives its score, 1 - e^(-s)', async () => {
    const endUser = freshUser();
    await addAll(t, ['Paris trip booked for May', 'The trip to Rome was cancelled', 'Bought a new lamp'], { endUser });
    const found = await query(t, { query: 'trip to Paris', explain: true }, { endUser });
    expect(found.length).toBeGreaterThan(0);
    for (const m of found) {
      expect(Object.keys(m.explanation).length).toBeGreaterThan(0);
      expect(1 - Math.exp(-explained(m.explanation))).toBeCloseTo(m.score, 6);
      expect(m.explanation.lexical).toEqual(expect.any(Number));
    }
  });

  it('narrows to a session with session_id', async () => {
    const endUser = freshUser();
    const [a, b] = await addAll(
      t,
      [
        { text: 'We talked about the concert tickets', session_id: 's-1' },
        { text: 'Concert tickets were sold out', session_id: 's-2' },
      ],
      { endUser },
    );
    expect(idsOf(await query(t, { query: 'concert tickets', session_id: 's-1' }, { endUser }))).toEqual([a.id]);
    expect(idsOf(await query(t, { query: 'concert tickets', session_id: 's-2' }, { endUser }))).toEqual([b.id]);
    expect(await query(t, { query: 'concert tickets', session_id: 's-none' }, { endUser })).toEqual([]);
  });

  it('applies every filter', async () => {
    const endUser = freshUser();
    const [a, b, c, d] = await addAll(
      t,
      [
        {
          text: 'Budget meeting notes for the quarter',
          tags: ['work', 'finance'],
          source: 'email',
          metadata: { team: 'ops', level: 2 },
        },
        { text: 'Budget for the family holiday', tags: ['family'], source: 'chat', metadata: { team: 'home' } },
        { text: 'Budget review with finance', tags: ['work'], source: 'email', metadata: { team: 'ops', level: 3 } },
        { text: 'Summary: budget decisions so far', tags: ['finance'], source: 'summary' },
      ],
      { endUser },
    );
    await setColumns(t, a.id, { created_at: '2023-01-10T10:00:00.000Z' });
    await setColumns(t, b.id, { created_at: '2023-03-10T10:00:00.000Z' });
    await setColumns(t, c.id, { created_at: '2023-05-10T10:00:00.000Z' });
    await setColumns(t, d.id, { created_at: '2023-07-10T10:00:00.000Z', is_summary: true });
    const filtered = async (filters: Record<string, unknown>) =>
      idsOf(await query(t, { query: 'budget', k: 100, filters }, { endUser })).sort((x, y) => x - y);

    expect(await filtered({})).toEqual([a.id, b.id, c.id, d.id]);
    expect(await filtered({ tags_any: ['family', 'finance'] })).toEqual([a.id, b.id, d.id]);
    expect(await filtered({ tags_any: [] })).toEqual([a.id, b.id, c.id, d.id]);
    expect(await filtered({ tags_all: ['work', 'finance'] })).toEqual([a.id]);
    expect(await filtered({ source: 'email' })).toEqual([a.id, c.id]);
    expect(await filtered({ created_after: '2023-03-10T10:00:00Z' })).toEqual([c.id, d.id]);
    expect(await filtered({ created_before: '2023-03-10T10:00:00Z' })).toEqual([a.id]);
    expect(
      await filtered({ created_after: '2023-02-01T00:00:00+02:00', created_before: '2023-06-01T00:00:00Z' }),
    ).toEqual([b.id, c.id]);
    expect(await filtered({ metadata: { team: 'ops' } })).toEqual([a.id, c.id]);
    expect(await filtered({ metadata: { team: 'ops', level: 3 } })).toEqual([c.id]);
    expect(await filtered({ metadata: { level: '3' } })).toEqual([]);
    expect(await filtered({ is_summary: true })).toEqual([d.id]);
    expect(await filtered({ is_summary: false })).toEqual([a.id, b.id, c.id]);
    expect(await filtered({ tags_any: ['work'], source: 'email', metadata: { level: 2 } })).toEqual([a.id]);
  });

  it('compares nested metadata by value, whatever the order of its keys', async () => {
    const endUser = freshUser();
    const m = await addMemory(
      t,
      {
        text: 'Parcel sent to the new flat',
        metadata: { address: { street: 'Main', city: 'Porto', zip: '4000' }, tags: [{ b: 1, a: 2 }] },
      },
      { endUser },
    );
    const filtered = (metadata: Record<string, unknown>) =>
      query(t, { query: 'parcel', filters: { metadata } }, { endUser }).then(idsOf);
    expect(await filtered({ address: { zip: '4000', city: 'Porto', street: 'Main' } })).toEqual([m.id]);
    expect(await filtered({ address: { street: 'Main', city: 'Porto', zip: '4000' }, tags: [{ a: 2, b: 1 }] })).toEqual(
      [m.id],
    );
    expect(await filtered({ address: { street: 'Main', city: 'Porto' } })).toEqual([]);
    expect(await filtered({ tags: [{ a: 2, b: 1 }, { c: 3 }] })).toEqual([]);
  });

  it('answers a malformed request with 400 naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'query'],
      [{ query: '' }, 'query'],
      [{ query: '   \n\t ' }, 'query'],
      [{ query: 'x'.repeat(4001) }, 'query'],
      [{ query: 5 }, 'query'],
      [{ query: 'ok', k: 0 }, 'k'],
      [{ query: 'ok', k: 101 }, 'k'],
      [{ query: 'ok', k: 2.5 }, 'k'],
      [{ query: 'ok', k: '5' }, 'k'],
      [{ query: 'ok', session_id: '' }, 'session_id'],
      [{ query: 'ok', explain: 'yes' }, 'explain'],
      [{ query: 'ok', filters: [] }, 'filters'],
      [{ query: 'ok', filters: { tags_any: 'work' } }, 'filters/tags_any'],
      [{ query: 'ok', filters: { tags_any: [1] } }, 'filters/tags_any/0'],
      [{ query: 'ok', filters: { tags_all: { a: 1 } } }, 'filters/tags_all'],
      [{ query: 'ok', filters: { source: 7 } }, 'filters/source'],
      [{ query: 'ok', filters: { created_after: 'yesterday' } }, 'filters/created_after'],
      [{ query: 'ok', filters: { created_before: 1700000000 } }, 'filters/created_before'],
      [{ query: 'ok', filters: { metadata: 'team=ops' } }, 'filters/metadata'],
      [{ query: 'ok', filters: { is_summary: 'true' } }, 'filters/is_summary'],
      [{ query: 'ok', filters: { tag: ['x'] } }, 'filters/tag'],
      [{ query: 'ok', limit: 5 }, 'limit'],
    ];
    const got = [];
    for (const [body] of cases) got.push(fieldOfError(await t.call('POST', '/memory/query', { body })));
    expect(got).toEqual(cases.map(([, field]) => field));
    expectError(await t.call('POST', '/memory/query', { body: { query: 'ok', k: 101 } }), 400, 'validation_error', 'k');
    expectError(
      await t.call('POST', '/memory/query', { body: { query: 'ok' }, endUser: null }),
      400,
      'validation_error',
      'X-End-User-ID',
    );
  });

  it('answers punctuation-only queries and other scripts sensibly, never 500', async () => {
    const endUser = freshUser();
    const [cjk, cyr, emoji] = await addAll(
      t,
      ['我喜欢在北京吃饺子', 'Я люблю читать книги по вечерам', 'Party time 🎉🎂 with friends'],
      { endUser },
    );
    expect(idsOf(await query(t, '北京 饺子', { endUser }))[0]).toBe(cjk.id);
    expect(idsOf(await query(t, 'книги', { endUser }))[0]).toBe(cyr.id);
    for (const q of ['?!...,;', '🎉', '—', '"\'`', '%_\\*', 'ÄÖÜ ß', '\u200b', 'null', 'SELECT * FROM memories;']) {
      const res = await t.call('POST', '/memory/query', { endUser, body: { query: q } });
      expect(res.status, `${q}: ${res.text}`).toBe(200);
      expect(Array.isArray(res.body.memories)).toBe(true);
    }
    expect(idsOf(await query(t, 'party 🎉', { endUser }))[0]).toBe(emoji.id);
  });

  it('answers an end user with no memories with an empty list', async () => {
    const res = await t.call('POST', '/memory/query', {
      endUser: freshUser('nobody'),
      body: { query: 'anything at all' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ memories: [] });
  });

  it("never returns another end user's or another project's memories", async () => {
    const mine = freshUser();
    const theirs = freshUser();
    const own = await addMemory(t, 'Zanzibar spice tour booked', { endUser: mine });
    await addMemory(t, 'Zanzibar beach holiday with the kids', { endUser: theirs });
    const other = await t.otherTenant();
    await addMemory(t, 'Zanzibar ferry times', { endUser: mine, key: other.key, project: other.projectId });
    // A second project of this organization, same end-user id.
    const second = await createProject(t.database.db, {
      organizationId: t.organizationId,
      name: 'Second',
      slug: freshUser('second'),
    });
    await addMemory(t, 'Zanzibar hotel invoice', { endUser: mine, project: second.id });

    expect(idsOf(await query(t, { query: 'zanzibar', k: 100 }, { endUser: mine }))).toEqual([own.id]);
    const fromOther = await query(
      t,
      { query: 'zanzibar', k: 100 },
      { endUser: mine, key: other.key, project: other.projectId },
    );
    expect(fromOther.map((m) => m.text)).toEqual(['Zanzibar ferry times']);
    const fromSecond = await query(t, { query: 'zanzibar', k: 100 }, { endUser: mine, project: second.id });
    expect(fromSecond.map((m) => m.text)).toEqual(['Zanzibar hotel invoice']);
  });

  it('sees every write on the very next query: add, update, forget, purge', async () => {
    const endUser = freshUser();
    expect(await query(t, 'kayak', { endUser })).toEqual([]);
    const m = await addMemory(t, 'Bought a red kayak for the lake', { endUser });
    expect(idsOf(await query(t, 'kayak', { endUser }))).toEqual([m.id]);

    const patched = await t.call('PATCH', `/memory/${m.id}`, {
      endUser,
      body: { tags: ['outdoors'], source: 'shop', metadata: { colour: 'red' } },
    });
    expect(patched.status).toBe(200);
    expect(idsOf(await query(t, { query: 'kayak', filters: { tags_any: ['outdoors'] } }, { endUser }))).toEqual([m.id]);
    expect(
      idsOf(await query(t, { query: 'kayak', filters: { source: 'shop', metadata: { colour: 'red' } } }, { endUser })),
    ).toEqual([m.id]);
    await t.call('PATCH', `/memory/${m.id}`, { endUser, body: { tags: ['water'] } });
    expect(await query(t, { query: 'kayak', filters: { tags_any: ['outdoors'] } }, { endUser })).toEqual([]);

    const batch = await t.call('POST', '/memory/batch-update', {
      endUser,
      body: { updates: [{ id: m.id, importance: 0.9, source: 'batch' }] },
    });
    expect(batch.status, batch.text).toBe(200);
    expect(idsOf(await query(t, { query: 'kayak', filters: { source: 'batch' } }, { endUser }))).toEqual([m.id]);

    const n = await addMemory(t, 'The kayak paddle is in the garage', { endUser });
    expect(idsOf(await query(t, 'kayak', { endUser })).sort()).toEqual([m.id, n.id].sort());
    expect((await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [m.id] } })).body).toEqual([m.id]);
    expect(idsOf(await query(t, 'kayak', { endUser }))).toEqual([n.id]);

    expect((await t.call('DELETE', `/memory/user/${endUser}`, { endUser: null })).status).toBe(200);
    expect(await query(t, 'kayak', { endUser })).toEqual([]);
    expect(await query(t, 'paddle garage', { endUser })).toEqual([]);
  });
});

forEachDialect('POST /memory/query with an index cache smaller than one index', (dialect) => {
  const t = useTestApp(dialect, retrievalConfig({ indexCacheBytes: 1 }));

  it('stays exact while indexes are evicted between queries', async () => {
    const users = [freshUser(), freshUser(), freshUser()];
    const added = new Map<string, number[]>(users.map((u) => [u, []]));
    for (let round = 0; round < 3; round++) {
      for (const endUser of users) {
        added
          .get(endUser)!
          .push((await addMemory(t, `Lighthouse visit number ${round} for ${endUser}`, { endUser })).id);
        const found = idsOf(await query(t, { query: 'lighthouse visit', k: 100 }, { endUser }));
        expect(found.sort((a, b) => a - b)).toEqual(added.get(endUser));
      }
    }
    const [first] = users;
    const gone = added.get(first!)![0]!;
    expect((await t.call('DELETE', '/memory/forget', { endUser: first, body: { ids: [gone] } })).body).toEqual([gone]);
    for (const endUser of users) await query(t, 'lighthouse', { endUser });
    expect(idsOf(await query(t, { query: 'lighthouse', k: 100 }, { endUser: first }))).not.toContain(gone);
  });
});
