/**
 * Soak: `--minutes` (default 10) of mixed traffic from `--clients` (default 16) closed-loop clients
 * against one real server: add, bulk-add, query, retrieve, patch, forget, /v1 add_turn and recall,
 * and control-plane reads. Prints JSON per minute (server RSS, requests, p50/p99 ms, errors by
 * status) and flags RSS growth after warm-up (the first two minutes).
 *
 *   npm run bench:soak [-- --minutes N] [--clients N] [--postgres URL]
 */
import { readFileSync } from 'node:fs';
import { option } from './lib/args.js';
import { jsonClient } from './lib/http.js';
import { percentile } from './lib/load.js';
import { mulberry32 } from './lib/locomo.js';
import { startServer } from './lib/server.js';

const minutes = Number(option('--minutes') ?? 10);
const clients = Number(option('--clients') ?? 16);
const postgresUrl = option('--postgres');
const WARMUP_MINUTES = Math.min(2, Math.max(0, minutes - 1));
/** RSS may grow this much after warm-up before it is flagged (data and caches grow with the load). */
const RSS_GROWTH_FLAG = 0.25;

const EMAIL = 'soak@example.com';
const PASSWORD = 'soak password 123';
const server = await startServer({
  ...(postgresUrl ? { postgresUrl } : {}),
  env: { ENGRAM_BOOTSTRAP_EMAIL: EMAIL, ENGRAM_BOOTSTRAP_PASSWORD: PASSWORD },
});
const pid = server.process.pid!;
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const data = jsonClient(server.url, { 'x-api-key': server.key });
const login = await data('POST', '/auth/login', { email: EMAIL, password: PASSWORD });
if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.body}`);
const control = jsonClient(server.url, { authorization: `Bearer ${JSON.parse(login.body).access_token}` });

const words =
  'coffee tea hiking Lisbon piano cats deadline budget sister birthday allergy peanuts meeting Tuesday flight Berlin'.split(
    ' ',
  );
const rand = mulberry32(11);
const sentence = () =>
  `${Array.from({ length: 6 }, () => words[Math.floor(rand() * words.length)]).join(' ')} ${Math.floor(rand() * 1e9)}`;

type Op = (client: number, mine: number[]) => Promise<{ status: number; ok: number[] }>;
const headers = (client: number) => ({ 'x-end-user-id': `soak-user-${client}` });
const OPS: [number, string, Op][] = [
  [
    25,
    'add',
    async (c, mine) => {
      const r = await data('POST', '/memory/add', { text: sentence() }, headers(c));
      if (r.status === 201) mine.push(JSON.parse(r.body).id);
      return { status: r.status, ok: [200, 201] };
    },
  ],
  [
    5,
    'bulk-add',
    async (c, mine) => {
      const r = await data(
        'POST',
        '/memory/bulk-add',
        Array.from({ length: 10 }, () => ({ text: sentence() })),
        headers(c),
      );
      if (r.status === 200 || r.status === 207)
        for (const x of JSON.parse(r.body).results) if (x.memory) mine.push(x.memory.id);
      return { status: r.status, ok: [200, 207] };
    },
  ],
  [
    15,
    'query',
    async (c) => ({
      status: (await data('POST', '/memory/query', { query: sentence(), k: 10 }, headers(c))).status,
      ok: [200],
    }),
  ],
  [
    10,
    'retrieve',
    async (c) => ({
      status: (await data('POST', '/memory/retrieve', { prompt: `What about ${sentence()}?` }, headers(c))).status,
      ok: [200],
    }),
  ],
  [
    10,
    'patch',
    async (c, mine) => {
      if (!mine.length) return { status: 200, ok: [200] };
      const id = mine[Math.floor(rand() * mine.length)];
      return { status: (await data('PATCH', `/memory/${id}`, { importance: rand() }, headers(c))).status, ok: [200] };
    },
  ],
  [
    5,
    'forget',
    async (c, mine) => {
      if (mine.length < 20) return { status: 200, ok: [200] };
      const ids = mine.splice(0, 3);
      return { status: (await data('DELETE', '/memory/forget', { ids }, headers(c))).status, ok: [200] };
    },
  ],
  [
    12,
    'v1 add_turn',
    async (c) => ({
      status: (
        await data(
          'POST',
          '/v1/memory/add_turn',
          { tenant_id: 'soak', user_id: `soak-user-${c}`, text: sentence(), speaker: 'user' },
          { 'x-tenant-id': 'soak' },
        )
      ).status,
      ok: [200, 201],
    }),
  ],
  [
    10,
    'v1 recall',
    async (c) => ({
      status: (
        await data(
          'POST',
          '/v1/memory/recall',
          { tenant_id: 'soak', user_id: `soak-user-${c}`, query: sentence() },
          { 'x-tenant-id': 'soak' },
        )
      ).status,
      ok: [200],
    }),
  ],
  [
    8,
    'control-plane reads',
    async () => {
      const path = ['/org/projects', '/org/api-keys', '/admin/team/audit-logs?limit=20', '/org/billing/current-plan'][
        Math.floor(rand() * 4)
      ]!;
      return { status: (await control('GET', path)).status, ok: [200] };
    },
  ],
];
const totalWeight = OPS.reduce((n, [w]) => n + w, 0);
const pickOp = () => {
  let r = rand() * totalWeight;
  for (const op of OPS) if ((r -= op[0]) < 0) return op;
  return OPS[0]!;
};

interface Minute {
  latencies: number[];
  errors: Record<string, number>;
  byOp: Record<string, number>;
}
const fresh = (): Minute => ({ latencies: [], errors: {}, byOp: {} });
let current = fresh();
const report: Record<string, unknown>[] = [];
const started = Date.now();
const end = started + minutes * 60_000;
const round = (n: number) => Math.round(n * 10) / 10;

const ticker = setInterval(() => {
  const m = current;
  current = fresh();
  m.latencies.sort((a, b) => a - b);
  const row = {
    minute: report.length + 1,
    rss_mb: round(rssMb()),
    requests: m.latencies.length,
    p50_ms: round(percentile(m.latencies, 50)),
    p99_ms: round(percentile(m.latencies, 99)),
    errors: m.errors,
    requests_by_operation: m.byOp,
  };
  report.push(row);
  console.error(JSON.stringify(row));
}, 60_000);

await Promise.all(
  Array.from({ length: clients }, async (_, client) => {
    const mine: number[] = [];
    while (Date.now() < end) {
      const [, name, run] = pickOp();
      const t0 = performance.now();
      let outcome: { status: number; ok: number[] };
      try {
        outcome = await run(client, mine);
      } catch {
        outcome = { status: 0, ok: [] };
      }
      current.latencies.push(performance.now() - t0);
      current.byOp[name] = (current.byOp[name] ?? 0) + 1;
      if (!outcome.ok.includes(outcome.status))
        current.errors[`${name} ${outcome.status}`] = (current.errors[`${name} ${outcome.status}`] ?? 0) + 1;
    }
  }),
);
clearInterval(ticker);
await server.stop();

const afterWarmup = report[WARMUP_MINUTES - 1] ?? report[0];
const last = report[report.length - 1];
const growth =
  afterWarmup && last ? ((last.rss_mb as number) - (afterWarmup.rss_mb as number)) / (afterWarmup.rss_mb as number) : 0;
const errors = report.reduce(
  (n, r) => n + Object.values(r.errors as Record<string, number>).reduce((a, b) => a + b, 0),
  0,
);
console.log(
  JSON.stringify(
    {
      benchmark: 'soak',
      database: server.dialect,
      minutes,
      clients,
      per_minute: report,
      total_requests: report.reduce((n, r) => n + (r.requests as number), 0),
      total_errors: errors,
      rss_after_warmup_mb: afterWarmup?.rss_mb ?? null,
      rss_end_mb: last?.rss_mb ?? null,
      rss_growth_after_warmup_pct: round(growth * 100),
      rss_growth_flagged: growth > RSS_GROWTH_FLAG,
    },
    null,
    2,
  ),
);
