import { expect, it } from 'vitest';
import { forEachDialect, useTestApp, type TestApp } from '../../testing/harness.js';
import { addMemory, expectError } from '../../testing/memories.js';
import { freshUser } from '../../testing/retrieval.js';
import { matchesFilters } from './filter-match.js';
import type { FiltersInput } from './filters.js';

type Listed = {
  id: number;
  created_at: string;
  updated_at: string;
  tags: string[];
  source: string | null;
  metadata: Record<string, unknown>;
  is_summary: boolean;
  session_id: string | null;
  importance: number;
  text: string;
};

/** Every page of GET /memory with these parameters, following next_cursor; checks each page's shape on the way. */
async function allPages(
  t: TestApp,
  endUser: string,
  params: Record<string, string | number | boolean>,
  headers: Record<string, string> = {},
) {
  const items: Listed[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const query = new URLSearchParams(
      Object.entries({ ...params, ...(cursor ? { cursor } : {}) }).map(([k, v]): [string, string] => [k, String(v)]),
    );
    const res = await t.call('GET', `/memory?${query}`, { endUser, headers });
    expect(res.status, res.text).toBe(200);
    expect(res.body.has_next).toBe(res.body.next_cursor !== null);
    items.push(...res.body.items);
    if (!res.body.has_next) return items;
    expect(res.body.items).toHaveLength(Number(params.limit ?? 50));
    cursor = res.body.next_cursor;
  }
  throw new Error('the list did not end');
}

const subject = (m: Listed) => ({
  tags: m.tags,
  source: m.source,
  createdAt: Date.parse(m.created_at),
  metadata: m.metadata,
  isSummary: m.is_summary,
  sessionId: m.session_id,
  importance: m.importance,
  updatedAt: Date.parse(m.updated_at),
  text: m.text,
});

forEachDialect("GET /memory: listing an end user's memories", (dialect) => {
  const t = useTestApp(dialect);

  it('pages through every memory in each order, after cursors, without gaps or repeats', async () => {
    const user = freshUser('lister');
    const tenant = headersOf('listing');
    // Turns dated out of id order, some at the same instant (ties go by id).
    const times = [
      '2024-03-01T10:00:00Z',
      '2024-01-01T10:00:00Z',
      '2024-02-01T10:00:00Z',
      '2024-01-01T10:00:00Z',
      '2024-05-01T10:00:00Z',
      '2024-04-01T10:00:00Z',
      '2024-01-01T10:00:00Z',
    ];
    const ids: number[] = [];
    for (const [i, timestamp] of times.entries()) {
      const res = await t.call('POST', '/v1/memory/add_turn', {
        endUser: null,
        headers: tenant,
        body: { tenant_id: 'listing', user_id: user, text: `turn ${i}`, speaker: 's', metadata: { timestamp } },
      });
      expect(res.status, res.text).toBe(201);
      ids.push(res.body.id);
    }
    // A change moves a memory in the updated_at order only.
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(
      (await t.call('PATCH', `/memory/${ids[0]}`, { endUser: user, headers: tenant, body: { importance: 0.9 } }))
        .status,
    ).toBe(200);
    const byCreated = ids
      .map((id, i) => ({ id, at: Date.parse(times[i]!) }))
      .sort((a, b) => a.at - b.at || a.id - b.id)
      .map((m) => m.id);
    for (const limit of [1, 2, 3, 7, 100]) {
      expect((await allPages(t, user, { limit, order: 'asc' }, tenant)).map((m) => m.id)).toEqual(byCreated);
      expect((await allPages(t, user, { limit }, tenant)).map((m) => m.id)).toEqual([...byCreated].reverse());
    }
    const byUpdated = [...ids.slice(1), ids[0]];
    expect(
      (await allPages(t, user, { limit: 2, order_by: 'updated_at', order: 'asc' }, tenant)).map((m) => m.id),
    ).toEqual(byUpdated);
    expect((await allPages(t, user, { limit: 3, order_by: 'updated_at' }, tenant)).map((m) => m.id)).toEqual(
      [...byUpdated].reverse(),
    );

    // Whole records, as GET /memory/{id} answers them; total when asked; a memory forgotten between pages is not listed.
    const first = await t.call('GET', '/memory?limit=2&total=true', { endUser: user, headers: tenant });
    expect(first.body).toMatchObject({ limit: 2, total: 7, has_next: true });
    expect(first.body.items[0]).toEqual(
      (await t.call('GET', `/memory/${first.body.items[0].id}`, { endUser: user, headers: tenant })).body,
    );
    expect((await t.call('GET', '/memory?limit=2', { endUser: user, headers: tenant })).body).not.toHaveProperty(
      'total',
    );
    const next = byCreated.at(-3)!;
    expect(
      (await t.call('DELETE', '/memory/forget', { endUser: user, headers: tenant, body: { ids: [next] } })).body,
    ).toEqual([next]);
    const second = await t.call('GET', `/memory?limit=2&cursor=${first.body.next_cursor}&total=true`, {
      endUser: user,
      headers: tenant,
    });
    expect(second.body.items.map((m: Listed) => m.id)).toEqual([byCreated.at(-4), byCreated.at(-5)]);
    expect(second.body.total).toBe(6);
    // Another end user, another tenant, and no tenant each have a list of their own.
    expect((await t.call('GET', '/memory?total=true', { endUser: user })).body).toMatchObject({
      items: [],
      total: 0,
      has_next: false,
      next_cursor: null,
    });
    expect((await t.call('GET', '/memory', { endUser: freshUser('other'), headers: tenant })).body.items).toEqual([]);
  });

  it('narrows by the filters of query, exactly as they match, and by session', async () => {
    const user = freshUser('filtered');
    const made: Listed[] = [];
    const sources = ['chat', 'email', null];
    const values = [1, 'one', true, null, { a: 1, b: [2] }, [1, 'x']];
    for (let i = 0; i < 36; i++) {
      const body: Record<string, unknown> = {
        text: `memory number ${i}`,
        tags: [['travel'], ['work', 'travel'], [], ['food']][i % 4],
        metadata: i % 5 === 0 ? {} : { k: values[i % values.length], lang: i % 2 ? 'en' : 'fr' },
        session_id: `s${i % 3}`,
        ...(sources[i % 3] ? { source: sources[i % 3] } : {}),
      };
      made.push(await addMemory(t, body, { endUser: user }));
    }
    const later = made[20]!.created_at;
    const cases: FiltersInput[] = [
      {},
      { tags_any: ['travel'] },
      { tags_any: ['food', 'work'] },
      { tags_all: ['travel', 'work'] },
      { tags_all: [] },
      { tags_any: [] },
      { source: 'chat' },
      { source: 'nope' },
      { is_summary: false },
      { is_summary: true },
      { metadata: { k: 1 } },
      { metadata: { k: 1.0, lang: 'en' } },
      { metadata: { k: 'one' } },
      { metadata: { k: true } },
      { metadata: { k: null } },
      { metadata: { k: { b: [2], a: 1 } } },
      { metadata: { k: [1, 'x'] } },
      { metadata: { k: ['x', 1] } },
      { metadata: { missing: null } },
      { created_after: later },
      { created_before: later, tags_any: ['travel'] },
      { metadata: { "it's": 'quoted"' } },
    ];
    for (const filters of cases) {
      const expected = made
        .filter((m) => matchesFilters(subject(m), filters))
        .map((m) => m.id)
        .reverse();
      const listed = await allPages(t, user, { limit: 4, filters: JSON.stringify(filters) });
      expect(
        listed.map((m) => m.id),
        JSON.stringify(filters),
      ).toEqual(expected);
      const counted = await t.call(
        'GET',
        `/memory?limit=1&total=true&filters=${encodeURIComponent(JSON.stringify(filters))}`,
        { endUser: user },
      );
      expect(counted.body.total, JSON.stringify(filters)).toBe(expected.length);
    }
    const inSession = await allPages(t, user, {
      limit: 5,
      session_id: 's1',
      filters: JSON.stringify({ tags_any: ['travel'] }),
    });
    expect(inSession.map((m) => m.id)).toEqual(
      made
        .filter((m) => m.session_id === 's1' && m.tags.includes('travel'))
        .map((m) => m.id)
        .reverse(),
    );
  });

  it("refuses malformed parameters with 400 naming them, and reaches only the key's own end user", async () => {
    const user = freshUser('refused');
    await addMemory(t, 'one memory', { endUser: user });
    const first = await t.call('GET', '/memory?limit=1', { endUser: user });
    await addMemory(t, 'another memory', { endUser: user });
    const cursor = (await t.call('GET', '/memory?limit=1', { endUser: user })).body.next_cursor;
    expect(first.body.has_next).toBe(false);
    const cases: Array<[string, string]> = [
      ['filters=nope', 'filters'],
      ['filters=%5B%5D', 'filters'],
      ['filters=%7B%22nope%22%3A1%7D', 'filters/nope'],
      [`filters=${encodeURIComponent('{"tags_any":[1]}')}`, 'filters/tags_any/0'],
      [`filters=${encodeURIComponent('{"created_after":"May"}')}`, 'filters/created_after'],
      [`filters=${encodeURIComponent('{"source":"a\\u0000b"}')}`, 'filters/source'],
      ['cursor=zzz', 'cursor'],
      [`cursor=${cursor}&order=asc`, 'cursor'],
      [`cursor=${cursor}&order_by=updated_at`, 'cursor'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['order=up', 'order'],
      ['order_by=id', 'order_by'],
      ['total=maybe', 'total'],
      ['nope=1', 'nope'],
    ];
    for (const [query, field] of cases)
      expectError(await t.call('GET', `/memory?${query}`, { endUser: user }), 400, 'validation_error', field);
    expectError(await t.call('GET', '/memory', { endUser: null }), 400, 'validation_error', 'X-End-User-ID');
    const bound = await t.newKey({ endUserId: user });
    expect((await t.call('GET', '/memory', { key: bound.key, endUser: null })).body.items).toHaveLength(2);
    expectError(await t.call('GET', '/memory', { key: bound.key, endUser: freshUser('someone') }), 404, 'not_found');
    const writeOnly = await t.newKey({ scopes: ['memories:write'] });
    expectError(await t.call('GET', '/memory', { key: writeOnly.key, endUser: user }), 403, 'forbidden');
  });
});

const headersOf = (tenant: string) => ({ 'X-Tenant-ID': tenant });
