/**
 * Query latency of a real server at scale: POST /memory/query (k = 10) p50/p99 for one end user
 * holding 1,000, 10,000 and 100,000 memories, with 1,000,000 memories in the database in total
 * (the rest spread over many other end users); queries per second at 16 concurrent clients (at
 * the 10,000 size); the throughput of GET /healthz at 16 clients on the same server as the
 * ceiling; the server's resident memory (VmRSS) after warm-up and at the end. Prints JSON.
 *
 *   npm run bench:latency [-- --fill http|direct] [--total N] [--sizes 1000,10000,100000] [--postgres URL]
 *                         [--cpu-prof DIR] [--restarts 3] [--vectors 512] [--data DIR] [--base REV]
 *
 * `--cpu-prof DIR`: every server process of the run (the measured one and each restart) writes its threads'
 * profiles there.
 * `--data DIR` (SQLite, direct fill): the database file in DIR, filled there the first time and kept; a run on a
 * DIR already filled skips the fill and deletes the stored index snapshots first (the cold first query is again
 * from rows). `--postgres URL --fill direct`: the same on the PostgreSQL database URL names (it must exist; it is
 * served as it is and kept), filled the first time (while it holds no memories). `--base REV`: the measured server is that revision's build (bench/lib/baseline.ts), to alternate
 * before and after on one filled database.
 *
 * `--vectors D` (SQLite): the server uses an OpenAI-compatible embedder that this process serves on a
 * local port (the real wire format; D-dimension vectors of the built-in hashed embedder, so texts that
 * share words are near). Queries are measured once every measured end user's memories are embedded
 * (in the background); then the same database is served without an embedder and the same queries
 * measured again: the lexical-only ceiling of the same run. Restarts and the 16-client figures are
 * left out in this mode.
 *
 * Fill: `http` bulk-adds 50 memories per request, 8 requests in flight (the honest path);
 * `direct` (SQLite only) adds the same batches through the memories module in this process while
 * the server is stopped, then starts it on that file. Texts are 1-3
 * sentences recombined from the LoCoMo turns (unique per end user); queries are LoCoMo questions.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { builtinEmbedder, normalizeText } from '../packages/server/src/engine/index.js';
import { sql } from 'kysely';
import { bulkAdd } from '../packages/server/src/modules/memories/index.js';
import { resolveApiKey } from '../packages/server/src/modules/org/index.js';
import { openDatabase } from '../packages/server/src/store/database.js';
import { option } from './lib/args.js';
import { processCpuSeconds } from './lib/cpu.js';
import { jsonClient } from './lib/http.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { baselineMain } from './lib/baseline.js';
import { locomoCorpus, mulberry32 } from './lib/locomo.js';
import { BENCH_KEY, freshDataDir, startServer, type BenchServer } from './lib/server.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

// ---- arguments ---------------------------------------------------------------
const postgresUrl = option('--postgres');
const total = Number(option('--total') ?? 1_000_000);
const fill = (option('--fill') ?? 'http') as 'http' | 'direct';
const cpuProfDir = option('--cpu-prof');
/** ENGRAM_HTTP_PROCESSES for the measured server: HTTP processes sharing the port. */
const workers = Number(option('--workers') ?? 1);
const restarts = Number(option('--restarts') ?? 3);
if (!Number.isInteger(restarts) || restarts < 1) throw new Error('--restarts must be a positive integer');
const SIZES = (option('--sizes') ?? '1000,10000,100000').split(',').map(Number);
const vectorDims = option('--vectors') === undefined ? 0 : Number(option('--vectors'));
if (vectorDims && postgresUrl) throw new Error('--vectors is for SQLite only');
const keptData = option('--data');
if (keptData && (fill !== 'direct' || postgresUrl)) throw new Error('--data is for SQLite with --fill direct');
/** With --postgres and --fill direct: the database URL names is served and kept, filled on first use. */
const keptPostgres = fill === 'direct' && postgresUrl ? postgresUrl : undefined;
const baseRev = option('--base');
const QPS_SIZE = SIZES.includes(10_000) ? 10_000 : SIZES[SIZES.length - 1]!;
const BATCH = 50;

// ---- data ----------------------------------------------------------------------
// Beside the repository; ENGRAM_LOCOMO_DIR when the checkout lives elsewhere (a worktree).
const dataDir = process.env.ENGRAM_LOCOMO_DIR ?? resolve(repoRoot, '../shared/bench/locomo-dev');
const { sentences, questions } = locomoCorpus(dataDir);
const rand = mulberry32(7);
const pick = <T>(a: T[]) => a[Math.floor(rand() * a.length)]!;

interface User {
  id: string;
  count: number;
  made: number;
  seen: Set<string>;
}
const targets = SIZES.map((n) => ({ id: `user-${n}`, count: n, made: 0, seen: new Set<string>() }));
const fillerTotal = Math.max(0, total - SIZES.reduce((a, b) => a + b, 0));
const fillers: User[] = [];
for (let i = 0, left = fillerTotal; left > 0; i++, left -= 1000) {
  fillers.push({
    id: `filler-${String(i + 1).padStart(4, '0')}`,
    count: Math.min(1000, left),
    made: 0,
    seen: new Set(),
  });
}

/** A text this end user does not have yet (by the server's duplicate key). */
function textFor(user: User): string {
  for (;;) {
    const parts = 1 + Math.floor(rand() * 3);
    const text = Array.from({ length: parts }, () => pick(sentences)).join(' ');
    const key = normalizeText(text);
    if (key && !user.seen.has(key)) {
      user.seen.add(key);
      return text;
    }
  }
}

/**
 * Batches of 50 in a mixed order: 32 end users are being filled at a time, round robin, so each
 * user's rows are spread through the table as in a live database.
 */
function* batches(): Generator<{ user: User; items: Array<{ text: string; session_id: string }> }> {
  const waiting = [...targets, ...fillers];
  // Spread the target users through the queue.
  waiting.sort((a, b) => (a.id < b.id ? -1 : 1));
  const active: User[] = waiting.splice(0, 32);
  let turn = 0;
  while (active.length > 0) {
    turn %= active.length;
    const user = active[turn]!;
    const n = Math.min(BATCH, user.count - user.made);
    const items = Array.from({ length: n }, () => {
      const i = user.made++;
      return { text: textFor(user), session_id: `s${Math.floor(i / 20) + 1}` };
    });
    yield { user, items };
    if (user.made >= user.count) {
      user.seen = new Set();
      active.splice(turn, 1);
      const next = waiting.shift();
      if (next) active.splice(turn, 0, next);
    } else {
      turn++;
    }
  }
}

// ---- fill ------------------------------------------------------------------------
async function fillHttp(server: BenchServer): Promise<number> {
  const request = jsonClient(server.url, { 'x-api-key': server.key }, 16);
  const gen = batches();
  let done = 0;
  let nextReport = 100_000;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let b = gen.next(); !b.done; b = gen.next()) {
        const res = await request('POST', '/memory/bulk-add', b.value.items, { 'x-end-user-id': b.value.user.id });
        if (res.status !== 200) throw new Error(`bulk-add -> ${res.status}: ${res.body.slice(0, 300)}`);
        done += b.value.items.length;
        if (done >= nextReport) {
          process.stderr.write(`filled ${done}\n`);
          nextReport += 100_000;
        }
      }
    }),
  );
  return done;
}

/**
 * The fill without HTTP: with the server stopped, this process adds the same batches through the
 * memories module (bulk-add's own code: rows, history, revisions), one transaction per batch of 50.
 */
async function fillDirect(file: string): Promise<number> {
  const database = keptPostgres
    ? openDatabase({ dialect: 'postgres', url: keptPostgres, poolSize: 4 })
    : openDatabase({ dialect: 'sqlite', path: file });
  try {
    // A bulk load with the server stopped: no fsync per transaction (the old direct fill did the same).
    if (keptPostgres) await sql`SET synchronous_commit = OFF`.execute(database.db);
    else await sql`PRAGMA synchronous = OFF`.execute(database.db);
    const key = await resolveApiKey(database.db, BENCH_KEY);
    if (!key?.projectId) throw new Error('the bench key must be locked to the bootstrap project');
    let done = 0;
    let requestNo = 0;
    for (const { user, items } of batches()) {
      const ctx = {
        actor: { type: 'api_key' as const, id: key.id },
        organizationId: key.organizationId,
        projectId: key.projectId,
        requestId: `req-fill-${++requestNo}`,
      };
      const result = await bulkAdd(
        database,
        ctx,
        { projectId: key.projectId, tenantId: '', endUserId: user.id },
        items,
      );
      done += result.totals.created + result.totals.skipped;
      if (result.totals.failed > 0) throw new Error(`bulk-add refused ${result.totals.failed} items`);
    }
    return done;
  } finally {
    await database.close();
  }
}

// ---- measuring ---------------------------------------------------------------------
/** Resident memory of the server: its process and, with workers, theirs. */
const rssMb = (pid: number) => {
  let children: number[] = [];
  try {
    children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)])
      .toString()
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    // ps exits 1 when there are none.
  }
  let kb = 0;
  for (const p of [pid, ...children]) {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
    kb += m ? Number(m[1]) : 0;
  }
  return Math.round(kb / 1024);
};

async function measure(server: BenchServer) {
  const request = jsonClient(server.url, { 'x-api-key': server.key }, 32);
  // The i-th question of every measurement is the same, so that sizes (and runs) compare like with like.
  const query = async (user: string, i: number) => {
    const res = await request(
      'POST',
      '/memory/query',
      { query: questions[i % questions.length], k: 10 },
      { 'x-end-user-id': user },
    );
    if (res.status !== 200) throw new Error(`query -> ${res.status}: ${res.body.slice(0, 300)}`);
    return (JSON.parse(res.body) as { memories: unknown[] }).memories.length;
  };
  const pid = server.process.pid!;
  const rssStart = rssMb(pid);
  const latency: Record<string, unknown> = {};
  const cold: Record<string, number> = {};
  for (const n of SIZES) {
    const s = performance.now();
    await query(`user-${n}`, 0);
    cold[String(n)] = Math.round((performance.now() - s) * 100) / 100;
  }
  const embedded = embeddings ? await untilEmbedded() : undefined;
  // Warm-up (JIT, statement caches, connections), so that the percentiles are the server's steady state: V8 optimizes
  // the route's code, and the search thread's, over its first thousand queries or so (bench/README.md, "Round 12").
  // With vectors, every question at least once: a question first seen waits for the embedder's call (the query
  // vectors are cached), which at 100,000 (300 warm-up queries) fell on 284 of the 1,000 measured.
  for (const n of SIZES)
    await runLoad(
      Math.max(n >= 100_000 ? 300 : 1000, embeddings ? questions.length : 0),
      1,
      async (i) => (await query(`user-${n}`, questions.length - 1 - (i % questions.length))) >= 0,
    );
  const rssWarm = rssMb(pid);
  const indexCacheMb = Math.round((await indexCacheBytes(server)) / 1e5) / 10;
  let empty = 0;
  for (const n of SIZES) {
    const runs = n >= 100_000 ? 1000 : 3000;
    const cpuBefore = processCpuSeconds(pid);
    const r: LoadResult = await runLoad(runs, 1, async (i) => {
      if ((await query(`user-${n}`, i)) === 0) empty++;
      return true;
    });
    latency[String(n)] = {
      memories_of_user: n,
      cold_first_query_ms: cold[String(n)],
      p50_ms: r.p50_ms,
      p99_ms: r.p99_ms,
      // Every thread of the server: what a query costs it, which the machine's load does not inflate as it does latency.
      server_cpu_ms_per_query: Math.round(((processCpuSeconds(pid) - cpuBefore) * 1e5) / r.requests) / 100,
      queries: r.requests,
      errors: r.errors,
    };
  }
  if (embeddings)
    return {
      query_latency_1_client: latency,
      queries_with_no_result: empty,
      texts_embedded: embedded,
      rss_mb: { after_start: rssStart, after_warm_up: rssWarm },
      index_cache_mb_after_warm_up: indexCacheMb,
    };
  const qps = await runLoad(20_000, 16, async (i) => (await query(`user-${QPS_SIZE}`, i)) >= 0);
  const healthz = await runLoad(40_000, 16, async () => (await request('GET', '/healthz')).status === 200);
  const rssEnd = rssMb(pid);
  return {
    query_latency_1_client: latency,
    queries_with_no_result: empty,
    query_16_clients: { memories_of_user: QPS_SIZE, ...qps },
    healthz_16_clients: healthz,
    rss_mb: { after_start: rssStart, after_warm_up: rssWarm, at_end: rssEnd },
    index_cache_mb_after_warm_up: indexCacheMb,
  };
}

// ---- run -----------------------------------------------------------------------
const dir = postgresUrl && !keptPostgres ? undefined : (keptData ?? freshDataDir());
const main = baseRev ? baselineMain(repoRoot, baseRev).main : undefined;
const nodeArgs = cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${resolve(cpuProfDir)}`] : [];
const METRICS_TOKEN = 'engram-bench-metrics';
const baseEnv = { ENGRAM_HTTP_PROCESSES: String(workers), ENGRAM_METRICS_TOKEN: METRICS_TOKEN };

/** An OpenAI-compatible embeddings endpoint on a local port (POST /v1/embeddings {model, input[]}); counts the texts it embedded. */
async function startEmbeddings(dims: number) {
  const embedder = builtinEmbedder(dims);
  const served = { texts: 0, url: '', close: () => new Promise<void>((r) => http.close(() => r())) };
  const http = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const body = JSON.parse(raw) as { model: string; input: string[] };
      served.texts += body.input.length;
      const data = body.input.map((text, index) => ({
        object: 'embedding',
        index,
        embedding: Array.from(embedder.embedSync(text)),
      }));
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 0, total_tokens: 0 } }));
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  served.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`;
  return served;
}
const embeddings = vectorDims ? await startEmbeddings(vectorDims) : null;
const workerEnv: Record<string, string> = embeddings
  ? {
      ...baseEnv,
      ENGRAM_EMBEDDER: 'openai',
      ENGRAM_EMBEDDER_BASE_URL: embeddings.url,
      ENGRAM_EMBEDDER_MODEL: `bench-hashed-${vectorDims}`,
    }
  : baseEnv;

/** Waits until the measured end users' memories are embedded (and a moment for the indexes to take them). */
async function untilEmbedded(): Promise<number> {
  const wanted = SIZES.reduce((a, b) => a + b, 0) - vectorsStoredBefore;
  for (let i = 0; i < 6000 && embeddings!.texts < wanted; i++) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 3000));
  return embeddings!.texts;
}

/** What the index cache counts it holds (GET /metrics). */
async function indexCacheBytes(server: BenchServer): Promise<number> {
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  return Number(/engram_index_cache_bytes (\d+)/.exec(await res.text())?.[1] ?? 0);
}

/** Indexes the server has stored (GET /metrics). */
async function snapshotsStored(server: BenchServer): Promise<number> {
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  return Number(/engram_index_snapshots_total\{event="stored"\} (\d+)/.exec(await res.text())?.[1] ?? 0);
}

/**
 * The first query of each end user on a new server process over the same database, once the
 * measured server has stored the indexes of those at or above the snapshot threshold (default 10,000).
 */
async function firstQueriesAfterRestart(server: BenchServer) {
  const large = SIZES.filter((n) => n >= 10_000).length;
  for (let i = 0; i < 600 && (await snapshotsStored(server)) < large; i++) await new Promise((r) => setTimeout(r, 100));
  const stored = await snapshotsStored(server);
  const runs: Array<Record<string, number>> = [];
  // The server's CPU (every thread) during each first query: what loading costs it, which the machine's load does not inflate.
  const cpuRuns: Array<Record<string, number>> = [];
  let running = server;
  try {
    for (let run = 0; run < restarts; run++) {
      const exited = new Promise((r) => running.process.once('exit', r));
      running.process.kill('SIGTERM');
      await exited;
      // Profiled as the first server is (--cpu-prof): where the first query after a restart goes.
      running = await startServer(
        server.dialect === 'postgres'
          ? { databaseUrl: server.databaseUrl, env: workerEnv, main, nodeArgs }
          : { dataDir: dir!, env: workerEnv, main, nodeArgs },
      );
      const request = jsonClient(running.url, { 'x-api-key': running.key });
      const first: Record<string, number> = {};
      const cpu: Record<string, number> = {};
      for (const n of SIZES) {
        const cpuBefore = processCpuSeconds(running.process.pid!);
        const s = performance.now();
        const res = await request(
          'POST',
          '/memory/query',
          { query: questions[run % questions.length], k: 10 },
          { 'x-end-user-id': `user-${n}` },
        );
        if (res.status !== 200) throw new Error(`query -> ${res.status}: ${res.body.slice(0, 300)}`);
        first[String(n)] = Math.round((performance.now() - s) * 100) / 100;
        cpu[String(n)] = Math.round((processCpuSeconds(running.process.pid!) - cpuBefore) * 1000);
      }
      runs.push(first);
      cpuRuns.push(cpu);
    }
  } finally {
    if (running !== server) await running.stop();
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
  const firstQueryMs = Object.fromEntries(SIZES.map((n) => [String(n), median(runs.map((r) => r[String(n)]!))]));
  return {
    index_snapshots_stored: stored,
    first_query_ms: firstQueryMs,
    first_query_ms_runs: runs,
    first_query_server_cpu_ms_runs: cpuRuns,
  };
}
let server: BenchServer;
let filled: number;
/** With `--data` kept from an earlier run: the vectors its database already holds. */
let vectorsStoredBefore = 0;
const t0 = performance.now();
if (fill === 'http') {
  // Queries are measured on the same process: bulk-add builds no index, so every index is still cold.
  server = await startServer(
    postgresUrl ? { postgresUrl, nodeArgs, env: workerEnv, main } : { dataDir: dir!, nodeArgs, env: workerEnv, main },
  );
  try {
    filled = await fillHttp(server);
  } catch (error) {
    await server.stop();
    throw error;
  }
} else if (keptPostgres) {
  // The same on a kept PostgreSQL database (its own data directory is a fresh one each run).
  const served = { databaseUrl: keptPostgres, dataDir: dir!, main };
  await (await startServer(served)).stop();
  const database = openDatabase({ dialect: 'postgres', url: keptPostgres, poolSize: 1 });
  const held = await sql<{ n: string }>`SELECT count(*) AS n FROM memories`.execute(database.db);
  await sql`DELETE FROM index_snapshots`.execute(database.db);
  await database.close();
  filled = Number(held.rows[0]?.n ?? 0) > 0 ? 0 : await fillDirect('');
  server = await startServer({ ...served, nodeArgs, env: workerEnv });
} else {
  // Schema, organization, project and key from a first start; then rows; then the server measured.
  const file = join(dir!, 'engram.db');
  if (keptData && existsSync(file)) {
    filled = 0;
    const database = openDatabase({ dialect: 'sqlite', path: file });
    await sql`DELETE FROM index_snapshots`.execute(database.db);
    // Vectors stored by an earlier run are not embedded again: untilEmbedded counts them as done.
    const stored = await sql<{ n: number }>`SELECT count(*) AS n FROM memory_embeddings`.execute(database.db);
    vectorsStoredBefore = Number(stored.rows[0]?.n ?? 0);
    await database.close();
  } else {
    await (await startServer({ dataDir: dir!, main })).stop();
    filled = await fillDirect(file);
  }
  server = await startServer({ dataDir: dir!, nodeArgs, env: workerEnv, main });
}
const fillSeconds = (performance.now() - t0) / 1000;
let results: Awaited<ReturnType<typeof measure>>;
try {
  results = await measure(server);
  if (embeddings) {
    // The ceiling of this run: the same database and queries, served without an embedder.
    const exited = new Promise((r) => server.process.once('exit', r));
    server.process.kill('SIGTERM');
    await exited;
    server = await startServer({ dataDir: dir!, env: baseEnv, main, nodeArgs });
    const lexical = await measure(server);
    type Measured = Record<string, { p50_ms: number; server_cpu_ms_per_query: number }>;
    const withVectors = results.query_latency_1_client as Measured;
    const without = lexical.query_latency_1_client as Measured;
    const ratio = (of: 'p50_ms' | 'server_cpu_ms_per_query') =>
      Object.fromEntries(
        SIZES.map((n) => [String(n), Math.round((withVectors[String(n)]![of] / without[String(n)]![of]) * 100) / 100]),
      );
    results = {
      vectors: { dimensions: vectorDims, ...results },
      lexical_only: lexical,
      p50_with_vectors_over_lexical_only: ratio('p50_ms'),
      server_cpu_with_vectors_over_lexical_only: ratio('server_cpu_ms_per_query'),
    };
  } else {
    results = { ...results, after_restart: await firstQueriesAfterRestart(server) };
  }
} finally {
  await server.stop();
  await embeddings?.close();
  if (dir && !keptData) rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(
  `${JSON.stringify(
    {
      benchmark: 'latency',
      ...(baseRev ? { base: baseRev } : {}),
      node: process.version,
      dialect: server.dialect,
      workers,
      route: 'POST /memory/query {query: <LoCoMo question>, k: 10}',
      fill: {
        method:
          fill === 'http'
            ? 'HTTP POST /memory/bulk-add, 50 per request, 8 in flight'
            : "the memories module's bulk-add in the bench process, 50 per transaction, server stopped",
        memories: filled,
        end_users: targets.length + fillers.length,
        seconds: Math.round(fillSeconds * 10) / 10,
        memories_per_second: Math.round(filled / fillSeconds),
      },
      ...results,
    },
    null,
    2,
  )}\n`,
);
