/**
 * Write throughput and latency of a real server: single POST /memory/add at 1 and 16 concurrent
 * clients, and bulk-add memories per second. SQLite always; PostgreSQL too when a URL is given
 * (`npm run bench:write -- --postgres postgres://postgres@127.0.0.1:5432/postgres` or
 * ENGRAM_BENCH_DATABASE_URL). Prints JSON.
 */
import { jsonClient } from './lib/http.js';
import { runLoad } from './lib/load.js';
import { startServer, type BenchServer } from './lib/server.js';

const args = process.argv.slice(2);
const pgIndex = args.indexOf('--postgres');
const postgresUrl = pgIndex >= 0 ? args[pgIndex + 1] : process.env.ENGRAM_BENCH_DATABASE_URL;
const scale = Number(process.env.ENGRAM_BENCH_SCALE ?? 1);

async function benchmark(server: BenchServer) {
  const request = jsonClient(server.url, { 'x-api-key': server.key });
  const post = async (_server: BenchServer, path: string, endUser: string, body: unknown, expect: number[]) =>
    expect.includes((await request('POST', path, body, { 'x-end-user-id': endUser })).status);
  const text = (i: number) => `Benchmark memory number ${i}: the user mentioned preference ${i % 97} while planning trip ${i}`;
  // Warm up connections and JIT.
  await runLoad(200, 4, (i) => post(server, '/memory/add', 'warmup', { text: text(i) }, [201]));
  const single1 = await runLoad(Math.round(2000 * scale), 1, (i) => post(server, '/memory/add', 'single-1', { text: text(i) }, [201]));
  const single16 = await runLoad(Math.round(10000 * scale), 16, (i) => post(server, '/memory/add', `single-16-${i % 64}`, { text: text(i) }, [201]));
  const batches = Math.round(400 * scale);
  const bulk = await runLoad(batches, 8, (b) =>
    post(server, '/memory/bulk-add', `bulk-${b % 32}`, Array.from({ length: 50 }, (_, j) => ({ text: text(b * 50 + j), client_ref: `ref-${b}-${j}` })), [200]),
  );
  return {
    dialect: server.dialect,
    add_single_1_client: single1,
    add_single_16_clients: single16,
    bulk_add_50_items_8_clients: { ...bulk, memories_per_second: Math.round(bulk.per_second * 50) },
  };
}

const results = [];
for (const url of [undefined, postgresUrl].filter((u, i) => i === 0 || u)) {
  const server = await startServer({ postgresUrl: url });
  try {
    results.push(await benchmark(server));
  } finally {
    await server.stop();
  }
}
process.stdout.write(JSON.stringify({ benchmark: 'write', node: process.version, results }, null, 2) + '\n');
