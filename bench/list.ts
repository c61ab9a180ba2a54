/**
 * GET /memory at scale (issue 54): fills one end user with `--total` memories (default 100,000) through bulk-add on a
 * real `engram serve`, then lists them all page by page (`--limit`, default 100) following next_cursor, newest first,
 * oldest first, and with a filter selecting half of them. A page is a range of the (end user, time, id) index, so the
 * pages at the end should cost what the first ones do: the JSON gives the median milliseconds of the first and last
 * `--edge` pages (default 20) of each walk and their ratio, beside a single GET /memory/{id} measured in the same run
 * (the floor of any request). SQLite by default; PostgreSQL with `--postgres URL`.
 *
 * Then filtered queries (issue 54: "no slower than today's unfiltered ones"): `--queries` (default 200) POST
 * /memory/query, each query text sent once unfiltered and once with each filter of FILTERS, in turn (so drift of a
 * loaded machine falls on all alike); the JSON gives each one's median and its ratio to the unfiltered median of the
 * same run (the ceiling: 1.0), and the first text-filtered query's time apart (it reads the end user's texts).
 *   npm run bench:list -- [--total 100000] [--limit 100] [--queries 200] [--postgres postgres://postgres@127.0.0.1:5432/postgres]
 */
import { option } from './lib/args.js';
import { startServer } from './lib/server.js';

const total = Number(option('--total') ?? 100_000);
const limit = Number(option('--limit') ?? 100);
const edge = Number(option('--edge') ?? 20);
const queries = Number(option('--queries') ?? 200);
const postgresUrl = option('--postgres');
const END_USER = 'bench-lister';

const server = await startServer(postgresUrl ? { postgresUrl } : {});
const headers = { 'x-api-key': server.key, 'x-end-user-id': END_USER, 'content-type': 'application/json' };

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any; ms: number }> {
  const started = performance.now();
  const res = await fetch(server.url + path, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = await res.json();
  return { status: res.status, json, ms: performance.now() - started };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};
const round = (n: number) => Math.round(n * 1000) / 1000;

/** Lists everything the parameters select, page by page; the time of each page. */
async function walk(
  params: Record<string, string>,
): Promise<{ pages: number; items: number; first_ms: number; last_ms: number; last_over_first: number }> {
  const times: number[] = [];
  let items = 0;
  let cursor: string | null = null;
  for (;;) {
    const query = new URLSearchParams({ ...params, limit: String(limit), ...(cursor ? { cursor } : {}) });
    const page = await call('GET', `/memory?${query}`);
    if (page.status !== 200) throw new Error(`GET /memory answered ${page.status}: ${JSON.stringify(page.json)}`);
    times.push(page.ms);
    items += page.json.items.length;
    if (!page.json.has_next) break;
    cursor = page.json.next_cursor;
  }
  const [first, last] = [median(times.slice(0, edge)), median(times.slice(-edge))];
  return {
    pages: times.length,
    items,
    first_ms: round(first),
    last_ms: round(last),
    last_over_first: round(last / first),
  };
}

/** Filters of the query bench, over what the fill writes: each selects part of the memories. */
const FILTERS: Record<string, unknown> = {
  tags_in: { tags: { $in: ['even'] } },
  metadata_range: { metadata: { n: { $gte: Math.floor(total / 2) } } },
  or_not: {
    $or: [{ tags: 'odd' }, { metadata: { n: { $lt: Math.floor(total / 10) } } }],
    $not: { importance: { $gt: 0.9 } },
  },
  text_contains: { text: { $contains: 'topic 4' } },
};

/** Median milliseconds of POST /memory/query unfiltered and with each filter, and each one's ratio to unfiltered. */
async function queryTimes() {
  const query = (i: number, filters?: unknown) =>
    call('POST', '/memory/query', { query: `a note about topic ${i % 97}`, k: 10, ...(filters ? { filters } : {}) });
  const check = (res: { status: number; json: any }) => {
    if (res.status !== 200) throw new Error(`query answered ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`);
    return res;
  };
  // The index is built by the first query; the first text-filtered one (which reads the texts) is timed apart.
  check(await query(0));
  const firstText = check(await query(1, FILTERS.text_contains)).ms;
  const times: Record<string, number[]> = {
    unfiltered: [],
    ...Object.fromEntries(Object.keys(FILTERS).map((k) => [k, []])),
  };
  for (let i = 0; i < queries; i++) {
    times.unfiltered!.push(check(await query(i)).ms);
    for (const [name, filters] of Object.entries(FILTERS)) times[name]!.push(check(await query(i, filters)).ms);
  }
  const base = median(times.unfiltered!);
  return {
    count: queries,
    first_text_filtered_ms: round(firstText),
    ...Object.fromEntries(
      Object.entries(times).map(([name, ms]) => [
        name,
        { p50_ms: round(median(ms)), over_unfiltered: round(median(ms) / base) },
      ]),
    ),
  };
}

try {
  const fillStart = performance.now();
  const batches = Math.ceil(total / 50);
  let next = 0;
  // Four clients at once, 50 memories a request.
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let b = next++; b < batches; b = next++) {
        const items = Array.from({ length: Math.min(50, total - b * 50) }, (_, i) => {
          const n = b * 50 + i;
          return {
            text: `Listed memory ${n}: a note about topic ${n % 97}`,
            tags: [n % 2 ? 'odd' : 'even'],
            metadata: { n },
          };
        });
        const res = await call('POST', '/memory/bulk-add', items);
        if (res.status !== 200)
          throw new Error(`bulk-add answered ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`);
      }
    }),
  );
  const fillSeconds = (performance.now() - fillStart) / 1000;

  const counted = await call('GET', '/memory?limit=1&total=true');
  if (counted.json.total !== total) throw new Error(`the end user holds ${counted.json.total} memories, not ${total}`);
  const someId = counted.json.items[0].id as number;
  const singles: number[] = [];
  for (let i = 0; i < 50; i++) singles.push((await call('GET', `/memory/${someId}`)).ms);

  const newestFirst = await walk({});
  const oldestFirst = await walk({ order: 'asc' });
  const filtered = await walk({ filters: JSON.stringify({ tags_any: ['even'] }) });
  const filteredQueries = await queryTimes();
  console.log(
    JSON.stringify(
      {
        bench: 'list',
        dialect: server.dialect,
        total,
        limit,
        edge_pages: edge,
        fill_seconds: round(fillSeconds),
        single_read_ms: round(median(singles)),
        newest_first: newestFirst,
        oldest_first: oldestFirst,
        filtered_half: filtered,
        total_count_ms: round(counted.ms),
        queries: filteredQueries,
      },
      null,
      2,
    ),
  );
} finally {
  await server.stop();
}
