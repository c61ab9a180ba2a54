/**
 * Webhook delivery of a real server: events committed through the API (bulk-add of memories,
 * each a memory.created event) delivered to a local receiver subscribed with 16 endpoints.
 * Prints JSON: deliveries per second (16 endpoints) beside the ceiling (a bare keep-alive POST loop
 * of the delivery loop's concurrency from another process to the same receiver, run just before and
 * just after, `bench/lib/post-loop.ts`), commit-to-delivery p50/p99 (the event's
 * commit timestamp to its arrival, on an idle server, one event at a time), and the duplicates
 * after an `engram worker` process sharing the work is killed with SIGKILL mid-delivery. The throughput phase's CPU
 * a delivery (server, database backends, this process as receiver and client) shows what delivery costs each side.
 *
 *   npm run bench:webhooks [-- --events N] [--postgres URL] [--base REV] [--cpu-prof DIR] [--statements FILE]
 *
 * `--base REV` runs another revision's server (built once, bench/lib/baseline.ts) in the same harness.
 * `--cpu-prof DIR` writes the server's CPU profile there; `--statements FILE` logs every statement the server
 * sends to PostgreSQL (bench/lib/count-statements.mjs), and the JSON counts those of the throughput phase.
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { option } from './lib/args.js';
import { baselineMain } from './lib/baseline.js';
import { postgresCpuSeconds, processCpuSeconds } from './lib/cpu.js';
import { jsonClient } from './lib/http.js';
import { percentile } from './lib/load.js';
import { freshDataDir, startServer } from './lib/server.js';

const postgresUrl = option('--postgres');
const EVENTS = Number(option('--events') ?? 2000);
const ENDPOINTS = 16;
const LATENCY_SAMPLES = 100;
const baseRev = option('--base');
const cpuProfDir = option('--cpu-prof');
const statementLog = option('--statements');
const nodeArgs = [
  ...(cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(cpuProfDir)}`] : []),
  ...(statementLog ? ['--import', fileURLToPath(new URL('./lib/count-statements.mjs', import.meta.url))] : []),
];
/** Lines of the statement log so far (0 without --statements). */
const statementsLogged = () => (statementLog ? readFileSync(statementLog, 'utf8').split('\n').length - 1 : 0);
const MAIN = baseRev
  ? baselineMain(fileURLToPath(new URL('..', import.meta.url)), baseRev).main
  : fileURLToPath(new URL('../packages/server/dist/main.js', import.meta.url));

// ---- the receiver --------------------------------------------------------------
const arrivals = new Map<string, number>(); // `${path} ${webhook-id}` -> count
const latencies: number[] = [];
let received = 0;
let recordLatency = false;
const waiters: Array<() => void> = [];
const receiver = createServer((req, res) => {
  if (req.url === '/ceiling') {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const now = Date.now();
    const key = `${req.url} ${req.headers['webhook-id']}`;
    arrivals.set(key, (arrivals.get(key) ?? 0) + 1);
    received++;
    if (recordLatency)
      latencies.push(
        now - Date.parse((JSON.parse(Buffer.concat(chunks).toString()) as { timestamp: string }).timestamp),
      );
    res.writeHead(204).end();
    for (const w of waiters.splice(0)) w();
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
const receivedAtLeast = (n: number) =>
  new Promise<void>((resolve) => {
    const check = () => (received >= n ? resolve() : waiters.push(check));
    check();
  });

// ---- the server ------------------------------------------------------------------
const email = 'bench@example.com';
const password = 'bench-password-123';
const webhookEnv = { ENGRAM_WEBHOOK_ALLOW_HOSTS: '127.0.0.1', ENGRAM_WEBHOOK_ALLOW_HTTP: 'true' };
const dataDir = freshDataDir();
const server = await startServer({
  ...(postgresUrl ? { postgresUrl } : {}),
  dataDir,
  main: MAIN,
  nodeArgs,
  env: {
    ENGRAM_BOOTSTRAP_EMAIL: email,
    ENGRAM_BOOTSTRAP_PASSWORD: password,
    ...webhookEnv,
    ...(statementLog ? { ENGRAM_BENCH_STATEMENT_LOG: resolve(statementLog) } : {}),
  },
});
const anonymous = jsonClient(server.url, {});
const login = JSON.parse((await anonymous('POST', '/auth/login', { email, password })).body) as {
  access_token: string;
};
const bearer = jsonClient(server.url, { authorization: `Bearer ${login.access_token}` });
const project = (JSON.parse((await bearer('GET', '/org/projects')).body) as { items: Array<{ id: string }> }).items[0]!
  .id;
const control = jsonClient(server.url, { authorization: `Bearer ${login.access_token}`, 'x-project-id': project });
for (let i = 0; i < ENDPOINTS; i++) {
  const res = await control('POST', '/org/webhooks', {
    name: `bench ${i}`,
    url: `${receiverUrl}/hook/${i}`,
    events: ['memory.created'],
  });
  if (res.status !== 201) throw new Error(`endpoint: ${res.status} ${res.body}`);
}
const data = jsonClient(server.url, {
  'x-api-key': server.key,
  'x-project-id': project,
  'x-end-user-id': 'bench-user',
});
let made = 0;
const addBatch = async (n: number) => {
  const items = Array.from({ length: n }, () => ({ text: `Bench memory number ${made++} about webhooks` }));
  const res = await data('POST', '/memory/bulk-add', { items });
  if (res.status !== 200) throw new Error(`bulk-add: ${res.status} ${res.body}`);
};

// ---- commit-to-delivery on an idle server: one event at a time --------------------
recordLatency = true;
for (let i = 0; i < LATENCY_SAMPLES; i++) {
  const target = received + ENDPOINTS;
  await addBatch(1);
  await receivedAtLeast(target);
  await new Promise((r) => setTimeout(r, 20));
}
recordLatency = false;
latencies.sort((a, b) => a - b);

// ---- the ceiling: a bare keep-alive POST loop to the same receiver ------------------
const POST_LOOP = fileURLToPath(new URL('./lib/post-loop.ts', import.meta.url));
/** The delivery loop's attempts in flight (modules/webhooks/attempt.ts, CONCURRENCY), and the size of a delivery's body. */
// Not execFileSync: this process is the receiver.
const ceiling = async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [
    '--import',
    'tsx',
    POST_LOOP,
    `${receiverUrl}/ceiling`,
    '16000',
    '64',
    '420',
  ]);
  return (JSON.parse(stdout) as { per_second: number }).per_second;
};
const ceilingBefore = await ceiling();

// ---- throughput: EVENTS events committed as fast as the API takes them ------------
const before = received;
const statementsBefore = statementsLogged();
// CPU of each side of the throughput phase: the server, its database's backends, and this process (the receiver
// and the bulk-add client), so that the delivery's own cost shows beside the ratio, which the machine's load moves.
const serverCpu = () => processCpuSeconds(server.process.pid!);
const databaseCpu = () => (server.dialect === 'postgres' ? postgresCpuSeconds(server.databaseUrl) : 0);
const benchCpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};
const updatesBefore = await deliveryRowUpdates();
const cpuBefore = [serverCpu(), databaseCpu(), benchCpu()];
const started = performance.now();
const BATCH = 50;
await Promise.all(
  Array.from({ length: 4 }, async () => {
    while (made < LATENCY_SAMPLES + EVENTS) await addBatch(Math.min(BATCH, LATENCY_SAMPLES + EVENTS - made));
  }),
);
const committedMs = performance.now() - started;
await receivedAtLeast(before + EVENTS * ENDPOINTS);
const deliveredMs = performance.now() - started;
const throughputStatements = statementsLogged() - statementsBefore;
const [serverCpuMs, databaseCpuMs, benchCpuMs] = [serverCpu(), databaseCpu(), benchCpu()].map(
  (seconds, i) => +(((seconds - cpuBefore[i]!) * 1000) / (EVENTS * ENDPOINTS)).toFixed(4),
);
const updatesAfter = await deliveryRowUpdates();
const ceilingAfter = await ceiling();
const deliveriesPerSecond = Math.round((EVENTS * ENDPOINTS) / (deliveredMs / 1000));

/**
 * PostgreSQL's count of updates of webhook_deliveries rows and of those that were HOT (heap-only: no index entry
 * written, the lease and the outcome updated in place on the row's page, which migration 0075's fillfactor leaves room
 * for). The statistics reach pg_stat_user_tables up to a second after a backend's transaction, so this waits that long.
 */
async function deliveryRowUpdates(): Promise<{ updates: number; hot: number } | null> {
  if (server.dialect !== 'postgres') return null;
  await new Promise((r) => setTimeout(r, 1500));
  const client = new pg.Client({ connectionString: server.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT n_tup_upd::float8 AS updates, n_tup_hot_upd::float8 AS hot FROM pg_stat_user_tables WHERE relname = 'webhook_deliveries'",
    );
    return rows[0] ? { updates: rows[0].updates, hot: rows[0].hot } : null;
  } finally {
    await client.end();
  }
}

// ---- a worker killed mid-delivery: nothing lost, duplicates counted ----------------
const worker = spawn(process.execPath, [MAIN, 'worker'], {
  env: {
    ...process.env,
    ENGRAM_DATA_DIR: dataDir,
    ENGRAM_LOG_LEVEL: 'warn',
    ENGRAM_SECRET_KEY: 'engram-bench-secret-0123456789abcdef0123456789',
    ENGRAM_DATABASE_URL: server.databaseUrl,
    ...webhookEnv,
  },
  stdio: 'ignore',
});
await new Promise((r) => setTimeout(r, 2000));
const keysBefore = arrivals.size;
const duplicatesBefore = received - keysBefore;
const killBase = received;
const KILL_EVENTS = 500;
const writing = (async () => {
  const stop = LATENCY_SAMPLES + EVENTS + KILL_EVENTS;
  while (made < stop) await addBatch(Math.min(BATCH, stop - made));
})();
await receivedAtLeast(killBase + (KILL_EVENTS * ENDPOINTS) / 4);
worker.kill('SIGKILL');
await writing;
const expected = keysBefore + KILL_EVENTS * ENDPOINTS;
await new Promise<void>((resolve) => {
  const check = () => (arrivals.size >= expected ? resolve() : waiters.push(check));
  check();
});
const duplicates = received - arrivals.size - duplicatesBefore;

console.log(
  JSON.stringify(
    {
      dialect: server.dialect,
      ...(baseRev ? { base: baseRev } : {}),
      endpoints: ENDPOINTS,
      events: EVENTS,
      deliveries: EVENTS * ENDPOINTS,
      deliveries_per_second: deliveriesPerSecond,
      bare_post_loop_per_second: { before: ceilingBefore, after: ceilingAfter },
      ratio_to_ceiling: +(deliveriesPerSecond / ((ceilingBefore + ceilingAfter) / 2)).toFixed(3),
      ...(statementLog ? { statements_per_delivery: +(throughputStatements / (EVENTS * ENDPOINTS)).toFixed(3) } : {}),
      cpu_ms_per_delivery: {
        server: serverCpuMs,
        ...(server.dialect === 'postgres' ? { database: databaseCpuMs } : {}),
        receiver_and_client: benchCpuMs,
      },
      ...(updatesBefore && updatesAfter
        ? {
            delivery_row_updates: {
              per_delivery: +((updatesAfter.updates - updatesBefore.updates) / (EVENTS * ENDPOINTS)).toFixed(3),
              hot_share: +(
                (updatesAfter.hot - updatesBefore.hot) /
                Math.max(1, updatesAfter.updates - updatesBefore.updates)
              ).toFixed(3),
            },
          }
        : {}),
      commit_seconds: +(committedMs / 1000).toFixed(2),
      delivery_seconds: +(deliveredMs / 1000).toFixed(2),
      commit_to_delivery_ms: {
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        samples: latencies.length,
      },
      worker_kill: {
        events: KILL_EVENTS,
        deliveries: KILL_EVENTS * ENDPOINTS,
        lost: expected - arrivals.size,
        duplicates,
      },
    },
    null,
    2,
  ),
);

await server.stop();
receiver.close();
