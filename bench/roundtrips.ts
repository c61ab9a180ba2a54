/**
 * Round trips to PostgreSQL per operation (writes, a /v1 turn, and a query) of a real server: every statement the server
 * process sends is logged (bench/lib/count-statements.mjs), and the log is read around each
 * operation. `npm run bench:roundtrips -- --postgres URL` (or ENGRAM_BENCH_DATABASE_URL). Prints JSON.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { option } from './lib/args.js';
import { jsonClient } from './lib/http.js';
import { startServer } from './lib/server.js';

const postgresUrl = option('--postgres') ?? process.env.ENGRAM_BENCH_DATABASE_URL;
if (!postgresUrl) throw new Error('a PostgreSQL URL is required: --postgres URL or ENGRAM_BENCH_DATABASE_URL');

const log = join(mkdtempSync(join(tmpdir(), 'engram-roundtrips-')), 'statements.log');
writeFileSync(log, '');
const preload = fileURLToPath(new URL('./lib/count-statements.mjs', import.meta.url));
const server = await startServer({
  postgresUrl,
  nodeArgs: ['--import', preload],
  env: { ENGRAM_BENCH_STATEMENT_LOG: log, ENGRAM_RUN_JOBS: 'false' },
});
const lines = () => readFileSync(log, 'utf8').split('\n').filter(Boolean);
try {
  const request = jsonClient(server.url, { 'x-api-key': server.key });
  const measure = async (name: string, times: number, send: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < 5; i++) await send(1_000_000 + i); // warm: key last-use, end user rows, prepared state
    const before = lines().length;
    for (let i = 0; i < times; i++) await send(i);
    const statements = lines().slice(before);
    const roundTrips = statements.filter((s) => !s.startsWith('+ ')).length;
    return {
      operation: name,
      round_trips_per_request: roundTrips / times,
      statements_per_request: statements.length / times,
      statements_of_one: statements.slice(0, statements.length / times),
    };
  };
  const text = (i: number) => `Round trip memory ${i}: the user mentioned preference ${i % 97}`;
  const results = [
    await measure('POST /memory/add', 20, (i) =>
      request('POST', '/memory/add', { text: text(i) }, { 'x-end-user-id': 'rt' }),
    ),
    await measure('POST /memory/add (Idempotency-Key)', 20, (i) =>
      request('POST', '/memory/add', { text: text(1000 + i) }, { 'x-end-user-id': 'rt', 'idempotency-key': `rt-${i}` }),
    ),
    await measure('POST /memory/bulk-add (50 items)', 5, (i) =>
      request(
        'POST',
        '/memory/bulk-add',
        Array.from({ length: 50 }, (_, j) => ({ text: text(10_000 + i * 50 + j) })),
        { 'x-end-user-id': 'rt' },
      ),
    ),
    await measure('POST /v1/memory/add_turn', 20, (i) =>
      request(
        'POST',
        '/v1/memory/add_turn',
        { tenant_id: 'rt', user_id: 'rt', text: text(20_000 + i), speaker: 'user' },
        { 'x-tenant-id': 'rt' },
      ),
    ),
    await measure('POST /memory/query (k = 10)', 20, (i) =>
      request(
        'POST',
        '/memory/query',
        { query: `what preference did the user mention ${i % 97}`, k: 10 },
        { 'x-end-user-id': 'rt' },
      ),
    ),
  ];
  process.stdout.write(`${JSON.stringify({ benchmark: 'roundtrips', dialect: 'postgres', results }, null, 2)}\n`);
} finally {
  await server.stop();
}
