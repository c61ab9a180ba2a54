import { expect, it } from 'vitest';
import { forEachDialect, useTestApp, type TestApp } from '../../testing/harness.js';
import { addMemory, expectError } from '../../testing/memories.js';
import { freshUser, idsOf, query, setColumns } from '../../testing/retrieval.js';
import { matchesFilters } from './filter-match.js';
import type { FilterSubject, FiltersInput } from './filters.js';

type Stored = {
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

const subject = (m: Stored): FilterSubject => ({
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

/** Every id GET /memory lists for the filters (the SQL path), oldest first. */
async function listed(t: TestApp, endUser: string, filters: unknown): Promise<number[]> {
  const ids: number[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const params = new URLSearchParams({
      limit: '7',
      order: 'asc',
      filters: JSON.stringify(filters),
      ...(cursor ? { cursor } : {}),
    });
    const res = await t.call('GET', `/memory?${params}`, { endUser });
    expect(res.status, `${JSON.stringify(filters)}: ${res.text}`).toBe(200);
    ids.push(...idsOf(res.body.items));
    if (!res.body.has_next) return ids.sort((a, b) => a - b);
    cursor = res.body.next_cursor;
  }
  throw new Error('the list did not end');
}

/** Metadata shapes that make the SQL of each dialect work: nesting, every JSON type, arrays, a digit key, a quoted key. */
const metadataOf = (i: number): Record<string, unknown> => {
  const shapes: Array<Record<string, unknown>> = [
    {},
    { level: i, lang: 'en', trip: { year: 2020 + (i % 5), city: i % 2 ? 'Porto' : 'Lyon' } },
    { level: i / 4, lang: 'fr', flags: ['x', 1, true, null], note: `day ${i} notes` },
    { level: String(i), lang: null, trip: { year: String(2020 + (i % 5)) } },
    { lang: 'émoji 😀', trip: [{ year: 2024 }], 'odd"key': 1, items: { 0: 'zero' } },
    { level: true, flags: [], nested: { a: { b: i % 3 } } },
  ];
  return shapes[i % shapes.length]!;
};

const CASES: FiltersInput[] = [
  { tags: 'travel' },
  { tags: { $ne: 'travel' } },
  { tags: { $in: ['work', 'food'] } },
  { tags: { $nin: ['work', 'food'] } },
  { tags: { $contains: 'work' } },
  { tags: { $in: [] } },
  { tags: { $nin: [] } },
  { text: { $contains: 'pottery' } },
  { text: { $contains: 'Pottery' } },
  { text: 'Note 3 about pottery' },
  { text: { $ne: 'Note 3 about pottery' } },
  { source: 'chat' },
  { source: null },
  { source: { $ne: 'chat' } },
  { source: { $in: ['chat', null] } },
  { source: { $nin: ['chat', null] } },
  { source: { $exists: true } },
  { source: { $exists: false } },
  { session_id: 's1' },
  { session_id: { $in: ['s0', 's2'] } },
  { session_id: { $exists: false } },
  { importance: { $gt: 0.5 } },
  { importance: { $gte: 0.5, $lt: 0.9 } },
  { importance: 0.3 },
  { importance: { $in: [0.1, 0.7] } },
  { importance: { $ne: 0.5 } },
  { created_at: { $gte: '2024-03-01T00:00:00Z', $lt: '2024-06-01T00:00:00+02:00' } },
  { created_at: '2024-02-01T10:00:00Z' },
  { updated_at: { $gt: '2020-01-01T00:00:00Z' } },
  { updated_at: { $lt: '2020-01-01T00:00:00Z' } },
  { is_summary: true },
  { is_summary: { $ne: true } },
  { metadata: { level: { $gt: 3 } } },
  { metadata: { level: { $gte: 2.5, $lte: 10 } } },
  { metadata: { level: { $lt: '3' } } },
  { metadata: { level: { $gte: '1' } } },
  { metadata: { level: 4 } },
  { metadata: { level: '4' } },
  { metadata: { level: true } },
  { metadata: { level: { $ne: 4 } } },
  { metadata: { level: { $in: [1, '3', true] } } },
  { metadata: { level: { $nin: [1, '3', true] } } },
  { metadata: { lang: null } },
  { metadata: { lang: { $exists: true } } },
  { metadata: { lang: { $exists: false } } },
  { metadata: { lang: { $ne: null } } },
  { metadata: { lang: { $gt: 'en' } } },
  { metadata: { lang: { $gte: 'émoji' } } },
  { metadata: { lang: { $contains: '😀' } } },
  { metadata: { 'trip.year': { $gte: 2023 } } },
  { metadata: { 'trip.year': 2024 } },
  { metadata: { 'trip.city': 'Porto', 'trip.year': { $lt: 2023 } } },
  { metadata: { 'trip.year': { $exists: true } } },
  { metadata: { 'trip.0.year': 2024 } },
  { metadata: { 'items.0': 'zero' } },
  { metadata: { 'nested.a.b': { $in: [0, 2] } } },
  { metadata: { nested: { $eq: { a: { b: 1 } } } } },
  { metadata: { trip: [{ year: 2024 }] } },
  { metadata: { flags: { $contains: 'x' } } },
  { metadata: { flags: { $contains: 1 } } },
  { metadata: { flags: { $contains: null } } },
  { metadata: { flags: { $contains: true } } },
  { metadata: { note: { $contains: 'notes' } } },
  { metadata: { flags: { $ne: [] } } },
  { metadata: { 'odd"key': 1 } },
  { metadata: { 'odd"key': { $exists: false } } },
  { $or: [{ tags: 'travel' }, { metadata: { level: { $gt: 10 } } }] },
  { $or: [{ source: 'chat' }, { text: { $contains: 'pottery' } }], importance: { $gte: 0.3 } },
  { $not: { tags: 'travel' } },
  { $not: { metadata: { trip: [{ year: 2024 }] } } },
  { $not: { $or: [{ source: null }, { metadata: { level: { $lt: 5 } } }] } },
  { $and: [{ tags: { $in: ['work', 'travel'] } }, { $not: { source: 'chat' } }] },
  { $not: { metadata: { 'odd"key': 1 } } },
  { $not: { metadata: { 'trip.0.year': 2024 } } },
  { tags_any: ['food'], tags_all: ['work', 'travel'], created_after: '2024-01-15T00:00:00Z', metadata: { lang: 'en' } },
];

forEachDialect('the filter language', (dialect) => {
  const t = useTestApp(dialect);

  it('selects exactly what the reference rule does, in SQL (the list) and beside the index (query)', async () => {
    const endUser = freshUser('filters');
    const made: Stored[] = [];
    const tagSets = [[], ['travel'], ['work'], ['travel', 'work'], ['food', 'work', 'travel'], ['food']];
    const sources = [null, 'chat', 'email'];
    for (let i = 0; i < 36; i++) {
      const body = {
        text: i % 4 === 0 ? `Note ${i} about pottery` : `Note ${i} about the garden`,
        tags: tagSets[i % tagSets.length],
        metadata: metadataOf(i),
        importance: [0.1, 0.3, 0.5, 0.7, 0.9][i % 5],
        ...(sources[i % 3] ? { source: sources[i % 3] } : {}),
        ...(i % 4 !== 3 ? { session_id: `s${i % 3}` } : {}),
      };
      const memory = await addMemory(t, body, { endUser });
      await setColumns(t, memory.id, {
        created_at: new Date(Date.UTC(2024, i % 7, 1, 10)).toISOString(),
        is_summary: i % 9 === 0,
      });
      made.push((await t.call('GET', `/memory/${memory.id}`, { endUser })).body);
    }
    const changed = await t.call('PATCH', `/memory/${made[5]!.id}`, {
      endUser,
      body: { importance: 0.8, tags: ['travel', 'changed'] },
    });
    expect(changed.status, changed.text).toBe(200);
    made[5] = changed.body;
    for (const filters of CASES) {
      const expected = made
        .filter((m) => matchesFilters(subject(m), filters))
        .map((m) => m.id)
        .sort((a, b) => a - b);
      expect(await listed(t, endUser, filters), JSON.stringify(filters)).toEqual(expected);
      const ranked = await query(t, { query: 'note', k: 100, min_score: 0, filters }, { endUser });
      expect(
        idsOf(ranked).sort((a, b) => a - b),
        `query ${JSON.stringify(filters)}`,
      ).toEqual(expected);
    }
    // The reference rule itself, on cases worked by hand.
    const counts = (filters: FiltersInput) => made.filter((m) => matchesFilters(subject(m), filters)).length;
    expect(counts({ tags: 'travel' })).toBe(19);
    expect(counts({ metadata: { level: { $gt: 3 } } })).toBe(
      made.filter((m) => typeof m.metadata.level === 'number' && m.metadata.level > 3).length,
    );
    expect(counts({ metadata: { 'trip.year': 2024 } })).toBe(1);
    expect(counts({ text: { $contains: 'pottery' } })).toBe(9);
    expect(counts({ $not: { tags: 'travel' } }) + counts({ tags: 'travel' })).toBe(36);
  });

  it('keeps a filter on the text exact while memories are added and forgotten (texts kept beside the index)', async () => {
    const endUser = freshUser('texts');
    const kiln = async () =>
      idsOf(
        await query(
          t,
          { query: 'bowl tulips kiln oven element', k: 10, min_score: 0, filters: { text: { $contains: 'kiln' } } },
          { endUser },
        ),
      ).sort((x, y) => x - y);
    const forget = async (ids: number[]) => {
      const res = await t.call('DELETE', '/memory/forget', { endUser, body: { ids } });
      expect(res.status, res.text).toBe(200);
    };
    const a = await addMemory(t, 'Fired a bowl in the kiln', { endUser });
    await addMemory(t, 'Planted tulips by the fence', { endUser });
    expect(await kiln()).toEqual([a.id]);
    // Again on the index as held, with the texts the first query read.
    expect(await kiln()).toEqual([a.id]);
    const c = await addMemory(t, 'The kiln needs a new element', { endUser });
    expect(await kiln()).toEqual([a.id, c.id]);
    await forget([a.id]);
    expect(await kiln()).toEqual([c.id]);
    const d = await addMemory(t, 'Tulips painted on a kiln-fired vase', { endUser });
    await forget([c.id]);
    expect(await kiln()).toEqual([d.id]);
    expect(await kiln()).toEqual([d.id]);
  });

  it('answers an unknown operator or a type mismatch with 400 naming the path, on every route that takes filters', async () => {
    const endUser = freshUser('filters');
    const cases: Array<[unknown, string]> = [
      [{ metadata: { a: { $gte: 1, $foo: 2 } } }, 'filters/metadata/a/$foo'],
      [{ metadata: { a: { $gte: true } } }, 'filters/metadata/a/$gte'],
      [{ metadata: { a: { $gte: 1, b: 2 } } }, 'filters/metadata/a/b'],
      [{ metadata: { 'a..b': 1 } }, 'filters/metadata/a..b'],
      [{ metadata: { a: { $in: 'x' } } }, 'filters/metadata/a/$in'],
      [{ metadata: { a: { $exists: 'yes' } } }, 'filters/metadata/a/$exists'],
      [{ metadata: { a: { $contains: { b: 1 } } } }, 'filters/metadata/a/$contains'],
      [{ importance: { $gt: 'high' } }, 'filters/importance/$gt'],
      [{ importance: { $contains: 1 } }, 'filters/importance/$contains'],
      [{ created_at: { $gte: 'yesterday' } }, 'filters/created_at/$gte'],
      [{ tags: ['a', 'b'] }, 'filters/tags'],
      [{ tags: { $in: ['a', 2] } }, 'filters/tags/$in/1'],
      [{ source: 7 }, 'filters/source'],
      [{ is_summary: 'yes' }, 'filters/is_summary'],
      [{ $or: [] }, 'filters/$or'],
      [{ $or: [{ tags: 'a' }, { metadata: { a: { $regex: 'x' } } }] }, 'filters/$or/1/metadata/a/$regex'],
      [{ $not: { colour: 'red' } }, 'filters/$not/colour'],
      [{ $nor: [{ tags: 'a' }] }, 'filters/$nor'],
      [{ color: 'red' }, 'filters/color'],
    ];
    for (const [filters, field] of cases) {
      const forms = [
        t.call('POST', '/memory/query', { endUser, body: { query: 'x', filters } }),
        t.call('GET', `/memory?filters=${encodeURIComponent(JSON.stringify(filters))}`, { endUser }),
        t.call('DELETE', '/memory/forget', { endUser, body: { filters, dry_run: true } }),
        t.call('POST', '/memory/summarize', { endUser, body: { filters } }),
      ];
      for (const res of await Promise.all(forms)) expectError(res, 400, 'validation_error', field);
    }
  });
});

/** A random filter object of the language (seeded): fields, operators and combinations as a caller may send them. */
function randomFilters(random: () => number, depth = 0): Record<string, unknown> {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const values: Record<string, () => unknown> = {
    tags: () => pick(['travel', 'work', 'food', 'none']),
    source: () => pick(['chat', 'email', null]),
    session_id: () => pick(['s0', 's1', 's2', null]),
    importance: () => pick([0.1, 0.3, 0.5, 0.7, 0.9, 0.4]),
    created_at: () => pick(['2024-02-01T10:00:00Z', '2024-04-15T00:00:00Z', '2023-12-31T23:59:59.999Z']),
    level: () => pick([0, 1, 2.5, 4, 12, '3', '13', true, null]),
    'trip.year': () => pick([2021, 2024, '2022', 2020]),
    lang: () => pick(['en', 'fr', 'émoji 😀', null, 'e']),
    flags: () => pick(['x', 1, true, null]),
  };
  const operators: Record<string, readonly string[]> = {
    tags: ['$eq', '$ne', '$contains', '$in', '$nin'],
    source: ['$eq', '$ne', '$in', '$nin', '$exists'],
    session_id: ['$eq', '$ne', '$in', '$nin', '$exists'],
    importance: ['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte'],
    created_at: ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'],
    level: ['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte', '$exists'],
    'trip.year': ['$eq', '$ne', '$in', '$gt', '$lte', '$exists'],
    lang: ['$eq', '$ne', '$gt', '$lte', '$contains', '$exists'],
    flags: ['$contains', '$exists', '$ne'],
  };
  const condition = (field: string): unknown => {
    const op = pick(operators[field]!);
    const ordered = ['$gt', '$gte', '$lt', '$lte'].includes(op);
    let value =
      op === '$exists'
        ? random() < 0.5
        : op === '$in' || op === '$nin'
          ? [values[field]!(), values[field]!()]
          : values[field]!();
    if (ordered && (value === null || typeof value === 'boolean')) value = field === 'lang' ? 'f' : 3;
    if (op === '$contains' && field === 'lang' && typeof value !== 'string') value = 'o';
    return random() < 0.3 && op === '$eq' ? value : { [op]: value };
  };
  const filters: Record<string, unknown> = {};
  for (let n = 1 + Math.floor(random() * 2); n > 0; n--) {
    const field = pick(Object.keys(values));
    if (['level', 'trip.year', 'lang', 'flags'].includes(field))
      filters.metadata = { ...(filters.metadata as object), [field]: condition(field) };
    else filters[field] = condition(field);
  }
  if (depth < 2 && random() < 0.4)
    filters[pick(['$and', '$or'])] = [randomFilters(random, depth + 1), randomFilters(random, depth + 1)];
  if (depth < 2 && random() < 0.25) filters.$not = randomFilters(random, depth + 1);
  return filters;
}

forEachDialect('the filter language, fuzzed', (dialect) => {
  const t = useTestApp(dialect);

  it('agrees with the reference rule on random filters, in SQL and beside the index', async () => {
    const endUser = freshUser('fuzzed');
    const made: Stored[] = [];
    for (let i = 0; i < 24; i++) {
      const memory = await addMemory(
        t,
        {
          text: `Note ${i} of the fuzz`,
          tags: [['travel'], ['work', 'food'], [], ['food']][i % 4],
          metadata: metadataOf(i),
          importance: [0.1, 0.3, 0.5, 0.7, 0.9][i % 5],
          ...(i % 3 ? { source: i % 2 ? 'chat' : 'email' } : {}),
          ...(i % 4 ? { session_id: `s${i % 3}` } : {}),
        },
        { endUser },
      );
      await setColumns(t, memory.id, { created_at: new Date(Date.UTC(2024, i % 6, 1, 10)).toISOString() });
      made.push((await t.call('GET', `/memory/${memory.id}`, { endUser })).body);
    }
    let state = 20261205;
    const random = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let i = 0; i < 60; i++) {
      const filters = randomFilters(random);
      const expected = made
        .filter((m) => matchesFilters(subject(m), filters as FiltersInput))
        .map((m) => m.id)
        .sort((a, b) => a - b);
      expect(await listed(t, endUser, filters), `seed case ${i}: ${JSON.stringify(filters)}`).toEqual(expected);
      const ranked = await query(t, { query: 'note', k: 100, min_score: 0, filters }, { endUser });
      expect(
        idsOf(ranked).sort((a, b) => a - b),
        `seed case ${i} (query): ${JSON.stringify(filters)}`,
      ).toEqual(expected);
    }
  });
});
