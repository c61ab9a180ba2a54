/**
 * Write throughput and latency of a real server: single POST /memory/add at 1 and 16 concurrent
 * clients, and bulk-add memories per second. SQLite always; PostgreSQL too when a URL is given
 * (`npm run bench:write -- --postgres postgres://postgres@127.0.0.1:5432/postgres` or
 * ENGRAM_BENCH_DATABASE_URL), and at 16 clients with an Idempotency-Key on every add, as the official clients send
 * them. Beside each single-add figure, in the same run: the ceiling of a bare
 * insert through the same driver (one INSERT of one row per commit, same durability settings, same
 * concurrency) and Engram's ratio to it, and beside the bulk-add the ceiling of a bare 50-row insert per commit (8
 * clients) and the ratio to that; for the 16-client adds and the bulk-add, the CPU milliseconds per memory
 * of the server process and (PostgreSQL) of the database backends, and the server's write system calls per request
 * (socket writes, SQLite's WAL frames: a count the machine's load does not move); GET /healthz at 16 clients, the machine's
 * speed of the moment (bench:latency reports the same). Prints JSON. `--cpu-prof DIR` writes the server's CPU profile there.
 * `--base REV [--rounds 3]` runs this checkout and REV's build (bench/lib/baseline.ts) alternately, fresh servers each
 * round, and prints each figure's median, min and max per side and of the ratio current / base within a round.
 * `--processes N --postgres URL [--rounds 3]` measures a fleet instead (issue 51): N `engram serve` processes on one
 * database against one of them, alternately, 16 clients of single adds split across the processes by the same load
 * generator (client c to process c mod N, each client writing its own 4 end users, as a balancer with end-user
 * affinity would send them), with the CPU an add costs the servers taking the load (by thread, with their context
 * switches), the database, the load generator itself and everything else on the machine, the cores left idle, and
 * the database's transactions an add (grouped statements); with `--share-check` also one process at 16/N clients
 * each round (what a fleet's smaller groups cost, apart from the second process); with `--cpu-prof DIR` a profile of
 * each process in each phase (through its inspector); with `--idle SECONDS` first what each process and the database
 * cost a second with no requests; with `--base REV [--runs 2]` this checkout's fleet and REV's one after the other,
 * `--runs` times, the order alternating.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { option } from './lib/args.js';
import { baselineMain, median } from './lib/baseline.js';
import { machineCpuSeconds, processCpuSeconds, processWriteCalls, postgresCpuSeconds, threadCpu } from './lib/cpu.js';
import { jsonClient } from './lib/http.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { inspectorProfiler } from './lib/profile.js';
import { freshDataDir, startServer, type BenchServer } from './lib/server.js';

const postgresUrl = option('--postgres') ?? process.env.ENGRAM_BENCH_DATABASE_URL;
const scale = Number(process.env.ENGRAM_BENCH_SCALE ?? 1);
const cpuProfDir = option('--cpu-prof');
/** Adds before the first measured phase: past them V8's compiler threads take ~0.01 ms of CPU an add, against 0.35 after 200. */
const WARM_UP_ADDS = Math.round(5000 * scale);
/** `--base REV --rounds N`: this checkout against another revision, N rounds of each, paired (medians, min, max). */
const baseRev = option('--base');
const rounds = Number(option('--rounds') ?? 3);
/** `--processes N`: the fleet measurement (fleetBenchmark) instead of the usual phases. */
const processes = Number(option('--processes') ?? 1);
/** `--idle SECONDS` (fleet): the processes' and the database's CPU a second with no requests, after the warm-up. */
const idleSeconds = Number(option('--idle') ?? 0);
/** `--share-check` (fleet): each round also one process at 16/N clients, the share each process of the fleet serves. */
const shareCheck = process.argv.includes('--share-check');
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const nodeArgs = cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(cpuProfDir)}`] : [];

async function benchmark(server: BenchServer) {
  const request = jsonClient(server.url, { 'x-api-key': server.key });
  const post = async (_server: BenchServer, path: string, endUser: string, body: unknown, expect: number[]) =>
    expect.includes((await request('POST', path, body, { 'x-end-user-id': endUser })).status);
  const text = (i: number) =>
    `Benchmark memory number ${i}: the user mentioned preference ${i % 97} while planning trip ${i}`;
  // Warm-up, so that each phase measures the server in its steady state: V8 optimizes a route's code over its first
  // thousands of requests, on compiler threads that take CPU from the phase measured (bench/README.md, "Round 12").
  await runLoad(WARM_UP_ADDS, 4, (i) => post(server, '/memory/add', 'warmup', { text: text(i) }, [201]));
  await runLoad(
    500,
    4,
    async (i) =>
      (
        await request(
          'POST',
          '/memory/add',
          { text: `Keyed ${text(i)}` },
          { 'x-end-user-id': 'warmup-keyed', 'idempotency-key': `warmup-${i}` },
        )
      ).status === 201,
  );
  await runLoad(40, 4, (b) =>
    post(
      server,
      '/memory/bulk-add',
      'warmup-bulk',
      Array.from({ length: 50 }, (_, j) => ({ text: `Warm-up ${text(b * 50 + j)}` })),
      [200],
    ),
  );
  const single1 = await runLoad(Math.round(2000 * scale), 1, (i) =>
    post(server, '/memory/add', 'single-1', { text: text(i) }, [201]),
  );
  const single16 = await costed(server, Math.round(10000 * scale), () =>
    runLoad(Math.round(10000 * scale), 16, (i) =>
      post(server, '/memory/add', `single-16-${i % 64}`, { text: text(i) }, [201]),
    ),
  );
  // As the official clients send every write they may retry: with an Idempotency-Key (its claim, the write's
  // journal and the stored answer ride along), 16 clients.
  let idempotencyKeys = 0;
  const idempotent16 = await costed(server, Math.round(3000 * scale), () =>
    runLoad(
      Math.round(3000 * scale),
      16,
      async (i) =>
        (
          await request(
            'POST',
            '/memory/add',
            { text: `Keyed ${text(i)}` },
            { 'x-end-user-id': `keyed-16-${i % 64}`, 'idempotency-key': `bench-${++idempotencyKeys}` },
          )
        ).status === 201,
    ),
  );
  const batches = Math.round(400 * scale);
  const bulk = await costed(server, batches * 50, () =>
    runLoad(batches, 8, (b) =>
      post(
        server,
        '/memory/bulk-add',
        `bulk-${b % 32}`,
        Array.from({ length: 50 }, (_, j) => ({ text: text(b * 50 + j), client_ref: `ref-${b}-${j}` })),
        [200],
      ),
    ),
  );
  // The machine's speed of the moment, comparable with bench:latency's: GET /healthz at 16 clients.
  const healthz = await runLoad(
    Math.round(40_000 * scale),
    16,
    async () => (await request('GET', '/healthz')).status === 200,
  );
  const ceiling1 = await bareInsertCeiling(server, Math.round(2000 * scale), 1);
  const ceiling16 = await bareInsertCeiling(server, Math.round(10000 * scale), 16);
  const bulkCeiling = await bareInsertCeiling(server, batches, 8, 50);
  const ratio = (engram: { per_second: number }, bare: { per_second: number }) =>
    Math.round((engram.per_second / bare.per_second) * 1000) / 1000;
  return {
    dialect: server.dialect,
    add_single_1_client: single1,
    bare_insert_1_client: ceiling1,
    ratio_to_bare_insert_1_client: ratio(single1, ceiling1),
    add_single_16_clients: single16,
    bare_insert_16_clients: ceiling16,
    ratio_to_bare_insert_16_clients: ratio(single16, ceiling16),
    add_with_idempotency_key_16_clients: idempotent16,
    bulk_add_50_items_8_clients: { ...bulk, memories_per_second: Math.round(bulk.per_second * 50) },
    bare_insert_50_rows_8_clients: { ...bulkCeiling, rows_per_second: Math.round(bulkCeiling.per_second * 50) },
    ratio_to_bare_bulk_insert: ratio(bulk, bulkCeiling),
    healthz_16_clients: healthz,
  };
}

/**
 * A run with the CPU milliseconds it cost the server process and (PostgreSQL) the database's
 * backends per memory written: on this 2-core machine the load generator, the server and the
 * database share the cores, so these say which side bounds the throughput.
 */
async function costed(server: BenchServer, memories: number, run: () => Promise<LoadResult>) {
  const serverCpu = () => processCpuSeconds(server.process.pid!);
  const databaseCpu = () => (server.dialect === 'postgres' ? postgresCpuSeconds(server.databaseUrl) : 0);
  const writeCalls = () => processWriteCalls(server.process.pid!);
  const [server0, database0, writes0] = [serverCpu(), databaseCpu(), writeCalls()];
  const result = await run();
  const perMemory = (seconds: number) => Math.round((seconds * 1e6) / memories) / 1000;
  return {
    ...result,
    server_cpu_ms_per_memory: perMemory(serverCpu() - server0),
    server_write_calls_per_request: Math.round(((writeCalls() - writes0) / result.requests) * 100) / 100,
    ...(server.dialect === 'postgres' ? { database_cpu_ms_per_memory: perMemory(databaseCpu() - database0) } : {}),
  };
}

/**
 * One INSERT of `rows` rows per commit through the driver the server uses, `concurrency` at a time:
 * PostgreSQL through a pg pool on the server's database (one multi-row VALUES statement, as a bulk-add
 * sends its memories); SQLite through better-sqlite3 in WAL with synchronous=FULL on a file beside the
 * server's (one connection: commits run one at a time). The rows are the bench's memory texts with a time,
 * in a table with nothing but its primary key: what the database and the driver allow, not what a memory costs.
 */
async function bareInsertCeiling(
  server: BenchServer,
  total: number,
  concurrency: number,
  rows = 1,
): Promise<LoadResult> {
  const values = (i: number) =>
    Array.from({ length: rows }, (_, j) => [
      `Benchmark memory number ${i * rows + j}: the user mentioned preference ${(i * rows + j) % 97} while planning trip ${i * rows + j}`,
      new Date().toISOString(),
    ]);
  const table = `bench_bare_insert_${rows}`;
  if (server.dialect === 'postgres') {
    const pool = new pg.Pool({ connectionString: server.databaseUrl, max: concurrency });
    const text = `INSERT INTO ${table} (text, created_at) VALUES ${Array.from({ length: rows }, (_, j) => `($${2 * j + 1}, $${2 * j + 2})`).join(', ')}`;
    const insert = async (i: number) => (await pool.query(text, values(i).flat())).rowCount === rows;
    try {
      await pool.query(
        `CREATE TABLE IF NOT EXISTS ${table} (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, text TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL)`,
      );
      await runLoad(Math.ceil(200 / rows), concurrency, insert);
      return await runLoad(total, concurrency, insert);
    } finally {
      await pool.end();
    }
  }
  const dir = freshDataDir();
  const db = new BetterSqlite3(join(dir, 'bare.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec(
      `CREATE TABLE ${table} (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL, created_at TEXT NOT NULL)`,
    );
    const statement = db.prepare(`INSERT INTO ${table} (text, created_at) VALUES (?, ?)`);
    const insert = db.transaction((batch: string[][]) =>
      batch.reduce((n, row) => n + statement.run(...row).changes, 0),
    );
    // better-sqlite3 is synchronous: each "client" yields between commits so the loop interleaves them.
    return await runLoad(total, concurrency, async (i) => {
      await new Promise((r) => setImmediate(r));
      return insert(values(i)) === rows;
    });
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every number of a result, by its path (`add_single_16_clients.per_second`), for figures across rounds. */
function numbers(value: unknown, path = '', into: Record<string, number> = {}): Record<string, number> {
  if (typeof value === 'number') into[path] = value;
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) numbers(v, path ? `${path}.${k}` : k, into);
  return into;
}
const round3 = (n: number) => Math.round(n * 1000) / 1000;
const spread = (values: number[]) => ({
  median: round3(median(values)),
  min: round3(Math.min(...values)),
  max: round3(Math.max(...values)),
});

/**
 * Adds at 16 clients through one process and through `processes` processes on the same database, alternately
 * (1, N, N, 1, …), the same warmed processes throughout: each round's throughput, the CPU milliseconds an add cost
 * the servers taking the load and the database's backends (the idle processes' chores included), and the ratio of N
 * processes to one in the same round. On this 2-core machine the load generator, the database and the servers share
 * the cores, so each phase also says what the load generator and everything else cost and how many cores sat idle.
 */
async function fleetBenchmark(url: string, main?: string) {
  // With --cpu-prof, a profile of each process in each phase, taken through its inspector.
  const inspectPorts = Array.from({ length: processes }, () => 40000 + Math.floor(Math.random() * 20000));
  const argsOf = (p: number) => (cpuProfDir ? [`--inspect=127.0.0.1:${inspectPorts[p]}`] : []);
  const first = await startServer({ postgresUrl: url, nodeArgs: argsOf(0), main });
  const servers = [first];
  try {
    for (let p = 1; p < processes; p++)
      servers.push(await startServer({ databaseUrl: first.databaseUrl, nodeArgs: argsOf(p), main }));
    const profilers = cpuProfDir ? await Promise.all(inspectPorts.map((port) => inspectorProfiler(port))) : [];
    const requests = servers.map((server) => jsonClient(server.url, { 'x-api-key': server.key }));
    const add = (target: number, endUser: string, i: number) =>
      requests[target]!(
        'POST',
        '/memory/add',
        { text: `Fleet ${i}: preference ${i % 97} for trip ${i}` },
        {
          'x-end-user-id': endUser,
        },
      ).then((r) => r.status === 201);
    let written = 0;
    for (let p = 0; p < servers.length; p++)
      await runLoad(WARM_UP_ADDS, 4, (i) => add(p, `warmup-${p}`, written + i + p * WARM_UP_ADDS));
    written += WARM_UP_ADDS * servers.length;
    // What the processes and the database cost with no requests (their chores and polls), after the warm-up settled.
    let idle: { server_cpu_ms_per_second: number[]; database_cpu_ms_per_second: number } | undefined;
    if (idleSeconds > 0) {
      await new Promise((resolve) => setTimeout(resolve, 5000));
      const servers0 = servers.map((server) => processCpuSeconds(server.process.pid!));
      const database0 = postgresCpuSeconds(first.databaseUrl);
      await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
      const perSecond = (seconds: number) => Math.round((seconds * 10000) / idleSeconds) / 10;
      idle = {
        server_cpu_ms_per_second: servers.map((server, p) =>
          perSecond(processCpuSeconds(server.process.pid!) - servers0[p]!),
        ),
        database_cpu_ms_per_second: perSecond(postgresCpuSeconds(first.databaseUrl) - database0),
      };
    }
    const adds = Math.round(10000 * scale);
    const stats = new pg.Client({ connectionString: first.databaseUrl });
    await stats.connect();
    // Transactions the database committed or rolled back (a grouped add's statement is one): read after the
    // backends flushed their counters (at most once a second while busy).
    const transactions = async () => {
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const { rows } = await stats.query<{ n: string }>(
        'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()',
      );
      return Number(rows[0]!.n);
    };
    const phase = async (used: number, clients = 16) => {
      // The processes taking the load (an idle one's chores, ~30 ms of CPU a second, are not the adds' cost).
      const cpu = () => servers.slice(0, used).reduce((sum, server) => sum + processCpuSeconds(server.process.pid!), 0);
      const threads = () => servers.slice(0, used).map((server) => threadCpu(server.process.pid!));
      const transactions0 = await transactions();
      const allServers = () => servers.reduce((sum, server) => sum + processCpuSeconds(server.process.pid!), 0);
      const [server0, database0, threads0, client0, machine0, all0] = [
        cpu(),
        postgresCpuSeconds(first.databaseUrl),
        threads(),
        process.cpuUsage(),
        machineCpuSeconds(),
        allServers(),
      ];
      await Promise.all(profilers.map((profiler) => profiler.start()));
      const from = written;
      written += adds;
      // Client c writes end users c, c + 16, c + 32 and c + 48, all through process c mod `used`.
      const load = await runLoad(adds, clients, (i, client) =>
        add(client % used, `fleet-${client + 16 * (i % 4)}`, from + i),
      );
      const [server1, database1, threads1, client1, machine1, all1] = [
        cpu(),
        postgresCpuSeconds(first.databaseUrl),
        threads(),
        process.cpuUsage(client0),
        machineCpuSeconds(),
        allServers(),
      ];
      const clientSeconds = (client1.user + client1.system) / 1e6;
      const tag = `${main ? 'base' : 'current'}-${Date.now()}-${used}p${clients}c`;
      await Promise.all(
        profilers.map((profiler, p) => profiler.stop(join(resolve(cpuProfDir!), `${tag}-process${p}.cpuprofile`))),
      );
      const perAdd = (seconds: number) => round3((seconds * 1000) / adds);
      // Each thread kind's CPU an add, over the processes taking the load (`MainThread`, V8's `V8Worker`s, the
      // search `WorkerThread`).
      const byThread: Record<string, number> = {};
      threads1.forEach((after, p) => {
        for (const [name, seconds] of Object.entries(after.seconds))
          byThread[name] = (byThread[name] ?? 0) + seconds - (threads0[p]!.seconds[name] ?? 0);
      });
      const switches = (kind: 'voluntary' | 'involuntary') =>
        round3(threads1.reduce((sum, after, p) => sum + after[kind] - threads0[p]![kind], 0) / adds);
      return {
        ...load,
        server_cpu_ms_per_add: perAdd(server1 - server0),
        database_cpu_ms_per_add: perAdd(database1 - database0),
        // The load generator's own CPU (this process): it shares the 2 cores with the servers and the database.
        client_cpu_ms_per_add: perAdd(clientSeconds),
        // What else ran meanwhile (other processes on the machine, the database's own background processes): noise.
        other_cpu_ms_per_add: perAdd(
          machine1.busy - machine0.busy - (all1 - all0) - (database1 - database0) - clientSeconds,
        ),
        // Cores left idle, on average: a phase that leaves some is bounded by waiting (a commit's flush), not CPU.
        machine_idle_cores: round3((machine1.idle - machine0.idle) / load.seconds),
        server_cpu_ms_per_add_by_thread: Object.fromEntries(
          Object.entries(byThread)
            .filter(([, seconds]) => seconds > 0)
            .map(([name, seconds]) => [name, perAdd(seconds)]),
        ),
        server_context_switches_per_add: { voluntary: switches('voluntary'), involuntary: switches('involuntary') },
        database_transactions_per_add: round3(((await transactions()) - transactions0) / adds),
      };
    };
    type Phase = Awaited<ReturnType<typeof phase>>;
    const runs: Array<{ one: Phase; fleet: Phase; one_at_fleet_share?: Phase }> = [];
    for (let r = 0; r < rounds; r++) {
      const run: Partial<(typeof runs)[number]> = {};
      for (const step of r % 2 === 0 ? (['one', 'fleet'] as const) : (['fleet', 'one'] as const)) {
        run[step] = await phase(step === 'one' ? 1 : processes);
        // One process at the clients each process of the fleet serves: what smaller groups cost, apart from a second process.
        if (step === 'one' && shareCheck) run.one_at_fleet_share = await phase(1, Math.round(16 / processes));
      }
      runs.push(run as (typeof runs)[number]);
    }
    await stats.end();
    for (const profiler of profilers) profiler.close();
    type Figure = 'per_second' | 'server_cpu_ms_per_add' | 'database_cpu_ms_per_add' | 'database_transactions_per_add';
    const ratiosTo = (base: (run: (typeof runs)[number]) => Phase) =>
      Object.fromEntries(
        (
          [
            'per_second',
            'server_cpu_ms_per_add',
            'database_cpu_ms_per_add',
            'database_transactions_per_add',
          ] as Figure[]
        ).map((figure) => [figure, spread(runs.map((run) => run.fleet[figure] / base(run)[figure]))]),
      );
    return {
      dialect: 'postgres',
      processes,
      ...(main ? { build: 'base' } : {}),
      ...(idle ? { idle } : {}),
      rounds: runs,
      fleet_over_one_process: ratiosTo((run) => run.one),
      ...(shareCheck ? { fleet_over_one_process_at_fleet_share: ratiosTo((run) => run.one_at_fleet_share!) } : {}),
    };
  } finally {
    for (const server of servers.reverse()) await server.stop();
  }
}

const dialects = [undefined, postgresUrl].filter((u, i) => i === 0 || u);
if (processes > 1) {
  if (!postgresUrl) throw new Error('--processes needs --postgres URL: the processes share one PostgreSQL database');
  // With --base: this checkout's fleet and the base's, one after the other, `--runs` times (order alternating).
  const base = baseRev ? baselineMain(repoRoot, baseRev).main : undefined;
  const results = [];
  const runs = base ? Number(option('--runs') ?? 2) : 1;
  for (let run = 0; run < runs; run++)
    for (const main of !base ? [undefined] : run % 2 === 0 ? [undefined, base] : [base, undefined])
      results.push(await fleetBenchmark(postgresUrl, main));
  process.stdout.write(`${JSON.stringify({ benchmark: 'write', node: process.version, results }, null, 2)}\n`);
} else if (!baseRev) {
  const results = [];
  for (const url of dialects) {
    const server = await startServer({ postgresUrl: url, nodeArgs });
    try {
      results.push(await benchmark(server));
    } finally {
      await server.stop();
    }
  }
  process.stdout.write(`${JSON.stringify({ benchmark: 'write', node: process.version, results }, null, 2)}\n`);
} else {
  // Paired: this checkout and the base, fresh servers, alternating (ABBA) so the machine's drift falls on both.
  const base = baselineMain(repoRoot, baseRev);
  const current = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
  const results = [];
  for (const url of dialects) {
    const runs: Record<'base' | 'current', Array<Record<string, number>>> = { base: [], current: [] };
    for (let r = 0; r < rounds; r++) {
      for (const side of r % 2 === 0 ? (['base', 'current'] as const) : (['current', 'base'] as const)) {
        const server = await startServer({ postgresUrl: url, nodeArgs, main: side === 'base' ? base.main : undefined });
        try {
          runs[side].push(numbers(await benchmark(server)));
        } finally {
          await server.stop();
        }
      }
    }
    const figures = Object.keys(runs.base[0]!);
    const summary = (side: 'base' | 'current') =>
      Object.fromEntries(figures.map((f) => [f, spread(runs[side].map((run) => run[f]!))]));
    results.push({
      dialect: url ? 'postgres' : 'sqlite',
      rounds,
      base: summary('base'),
      current: summary('current'),
      // current / base of each figure within a round (the two ran back to back), over the rounds.
      current_over_base: Object.fromEntries(
        figures.map((f) => [f, spread(runs.current.map((run, i) => run[f]! / runs.base[i]![f]!))]),
      ),
    });
  }
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'write',
        node: process.version,
        base: { rev: baseRev, sha: base.sha },
        current: { sha: current },
        results,
      },
      null,
      2,
    )}\n`,
  );
}
