/**
 * A fleet behind a balancer (issue 51): HAProxy with the shipped configuration
 * (docs/deploy/haproxy.cfg: consistent hashing on X-End-User-ID) in front of three `engram serve`
 * processes on one PostgreSQL database, against the same with round robin. Prints JSON.
 *
 *   npm run bench:fleet -- --postgres URL [--users 24] [--memories 1000] [--queries 2000] [--cache-mb 512]
 *
 * 1. Load: `--users` end users of `--memories` memories each, bulk-added through one process, which
 *    then stores every end user's index snapshot (the retrieval.snapshots chore; the threshold is
 *    lowered to 1,000 memories so that these end users have one), and is stopped.
 * 2. For each of affinity and round robin: three fresh processes and a balancer; `--queries` queries
 *    from 16 clients over random end users through the balancer, twice (the first pass loads the
 *    indexes: restored from the snapshots), then each process's RSS, index cache (bytes, entries) and
 *    snapshots loaded from its /metrics.
 * 3. With affinity: the process holding the most end users is killed (SIGKILL); each of its end users
 *    is asked once through the balancer at once: which process answered, the status, and the latency
 *    of that first query (the index restored from its snapshot in the process it moved to), then of a
 *    second one.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startBalancer } from '../packages/server/src/testing/haproxy.js';
import { HAPROXY_CONFIG } from '../packages/server/src/testing/haproxy.js';
import { until } from '../packages/server/src/testing/until.js';
import { option } from './lib/args.js';
import { jsonClient } from './lib/http.js';
import { percentile, runLoad } from './lib/load.js';
import { type BenchServer, freshPostgres, startServer } from './lib/server.js';

const postgresUrl = option('--postgres');
if (!postgresUrl) throw new Error('--postgres URL is required (one database for the fleet)');
const USERS = Number(option('--users') ?? 24);
const MEMORIES = Number(option('--memories') ?? 1000);
const QUERIES = Number(option('--queries') ?? 2000);
const CACHE_MB = option('--cache-mb');
const CLIENTS = 16;
const METRICS_TOKEN = 'fleet-bench-metrics-token';
const env = {
  ENGRAM_INDEX_SNAPSHOT_MIN_MEMORIES: String(Math.min(1000, MEMORIES)),
  ENGRAM_METRICS_TOKEN: METRICS_TOKEN,
  ENGRAM_TRUST_PROXY: 'true',
  ...(CACHE_MB ? { ENGRAM_INDEX_CACHE_MB: CACHE_MB } : {}),
};

// Synthetic text: a fixed vocabulary, 8-16 words a memory, so every end user's index is alike.
let seed = 51;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};
const syllables = ['ka', 'lo', 'mi', 'ren', 'tas', 'vo', 'dri', 'pel', 'sun', 'ark', 'bel', 'cor', 'fin', 'gra'];
const vocabulary = Array.from({ length: 4000 }, (_, i) => {
  let word = '';
  for (let n = i + 7; n > 0; n = Math.floor(n / syllables.length)) word += syllables[n % syllables.length];
  return word;
});
const words = (n: number) =>
  Array.from({ length: n }, () => vocabulary[Math.floor(random() * random() * 4000)]).join(' ');
const users = Array.from({ length: USERS }, (_, i) => `fleet-user-${i}`);

const database = await freshPostgres(postgresUrl);
const admin = new pg.Client({ connectionString: database.url });
const started: BenchServer[] = [];
const rss = (server: BenchServer) => {
  const status = readFileSync(`/proc/${server.process.pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
};
const metrics = async (server: BenchServer) => {
  const text = await (
    await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  ).text();
  const sample = (name: string) =>
    Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return {
    index_cache_mb: Math.round(sample('engram_index_cache_bytes') / 1048576),
    index_cache_entries: sample('engram_index_cache_entries'),
    index_lookups:
      sample('engram_index_cache_lookups_total{result="hit"}') +
      sample('engram_index_cache_lookups_total{result="miss"}'),
    snapshots_loaded: sample('engram_index_snapshots_total{event="loaded"}'),
  };
};

try {
  // ---- 1. load, and the snapshots stored ----------------------------------------
  const t0 = performance.now();
  const loader = await startServer({ databaseUrl: database.url, env: { ...env, ENGRAM_INDEX_SNAPSHOT_INTERVAL: '1' } });
  started.push(loader);
  const add = jsonClient(loader.url, { 'x-api-key': loader.key }, 8);
  const batches = users.flatMap((user) => Array.from({ length: Math.ceil(MEMORIES / 50) }, () => user));
  await runLoad(batches.length, 8, async (i) => {
    const user = batches[i]!;
    const items = Array.from({ length: 50 }, (_, n) => ({
      text: `${words(8 + Math.floor(random() * 8))} ${i}.${n}`,
      session_id: `s${i}`,
    }));
    const res = await add('POST', '/memory/bulk-add', { items }, { 'x-end-user-id': user });
    if (res.status !== 200) throw new Error(`bulk-add: ${res.status} ${res.body.slice(0, 200)}`);
    return true;
  });
  const loadSeconds = (performance.now() - t0) / 1000;
  await admin.connect();
  await until(
    async () => Number((await admin.query('SELECT count(*) AS n FROM index_snapshots')).rows[0].n) >= USERS,
    'every end user to have an index snapshot',
    300_000,
  );
  const snapshotSeconds = (performance.now() - t0) / 1000 - loadSeconds;
  await loader.stop();
  started.length = 0;

  // ---- 2. affinity and round robin ------------------------------------------------
  const roundRobinConfig = join(tmpdir(), `engram-fleet-roundrobin-${process.pid}.cfg`);
  const shipped = readFileSync(HAPROXY_CONFIG, 'utf8');
  const roundRobin = shipped.replace(/^\s*balance hash .*$/m, '    balance roundrobin');
  if (roundRobin === shipped) throw new Error('the shipped configuration has no "balance hash" line');
  writeFileSync(roundRobinConfig, roundRobin);

  const fleet = async () => {
    const servers: BenchServer[] = [];
    for (let i = 0; i < 3; i++) {
      servers.push(await startServer({ databaseUrl: database.url, env }));
      started.push(servers[i]!);
    }
    return servers;
  };
  const address = (s: BenchServer) => new URL(s.url).host;
  const queryPass = async (url: string) => {
    const client = jsonClient(url, { 'x-api-key': started[0]!.key }, CLIENTS);
    const statuses: Record<number, number> = {};
    const result = await runLoad(QUERIES, CLIENTS, async () => {
      const res = await client(
        'POST',
        '/memory/query',
        { query: words(3), k: 10 },
        { 'x-end-user-id': users[Math.floor(random() * USERS)]! },
      );
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status !== 200 && Object.keys(statuses).length < 4)
        process.stderr.write(`${res.status} ${res.body.slice(0, 300)}\n`);
      return res.status === 200;
    });
    return { ...result, statuses };
  };
  const modes: Record<string, unknown> = {};
  let kill: unknown;
  for (const mode of ['affinity', 'round_robin'] as const) {
    const servers = await fleet();
    const balancer = await startBalancer(
      servers.map(address) as [string, string, string],
      mode === 'affinity' ? HAPROXY_CONFIG : roundRobinConfig,
    );
    try {
      const cold = await queryPass(balancer.url);
      const warm = await queryPass(balancer.url);
      const processes = await Promise.all(servers.map(async (s) => ({ rss_mb: rss(s), ...(await metrics(s)) })));
      modes[mode] = {
        first_pass: cold,
        second_pass: warm,
        processes,
        rss_mb_total: processes.reduce((a, p) => a + p.rss_mb, 0),
      };
      if (mode === 'affinity') kill = await killOne(balancer.url, servers);
    } finally {
      await balancer.stop();
      for (const s of servers) await s.stop();
      started.length = 0;
    }
  }

  console.log(
    JSON.stringify(
      {
        processes: 3,
        balancer: 'haproxy (docs/deploy/haproxy.cfg; round robin: its balance line replaced)',
        end_users: USERS,
        memories_per_end_user: MEMORIES,
        index_cache_mb: CACHE_MB ? Number(CACHE_MB) : 512,
        load: { seconds: +loadSeconds.toFixed(1), snapshots_stored_seconds: +snapshotSeconds.toFixed(1) },
        queries_per_pass: QUERIES,
        clients: CLIENTS,
        ...modes,
        kill,
      },
      null,
      2,
    ),
  );
} finally {
  for (const s of started) await s.stop().catch(() => {});
  await admin.end().catch(() => {});
  await database.drop();
}

/** Kills the process holding the most end users; its end users are asked at once through the balancer. */
async function killOne(url: string, servers: BenchServer[]) {
  const ask = async (user: string) => {
    const t = performance.now();
    const res = await fetch(`${url}/memory/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': servers[0]!.key, 'x-end-user-id': user },
      body: JSON.stringify({ query: words(3), k: 10 }),
    });
    await res.arrayBuffer();
    return { process: res.headers.get('x-engram-process'), status: res.status, ms: performance.now() - t };
  };
  const placement = new Map<string, string>();
  for (const user of users) placement.set(user, (await ask(user)).process!);
  const counts = new Map<string, number>();
  for (const p of placement.values()) counts.set(p, (counts.get(p) ?? 0) + 1);
  const victim = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
  const victimServer = servers[Number(victim.replace('engram', '')) - 1]!;
  const survivors = servers.filter((s) => s !== victimServer);
  const loadedBefore = await Promise.all(survivors.map(async (s) => (await metrics(s)).snapshots_loaded));
  await victimServer.kill();
  const moved = users.filter((u) => placement.get(u) === victim);
  // At once, before the balancer's health checks have noticed: the refused connection is retried elsewhere.
  const atOnce = await ask(moved[0]!);
  // Then once they have (fall 3, inter 1s): each moved end user's first query is its index restored.
  await new Promise((r) => setTimeout(r, 4000));
  const first = [atOnce];
  for (const user of moved.slice(1)) first.push(await ask(user));
  const second: number[] = [];
  for (const user of moved) second.push((await ask(user)).ms);
  const stayed = users.filter((u) => placement.get(u) !== victim);
  let stayedPut = 0;
  for (const user of stayed) if ((await ask(user)).process === placement.get(user)) stayedPut++;
  const loadedAfter = await Promise.all(survivors.map(async (s) => (await metrics(s)).snapshots_loaded));
  const firstMs = first
    .slice(1)
    .map((f) => f.ms)
    .sort((a, b) => a - b);
  second.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  const movedTo = new Map<string, number>();
  for (const f of first) movedTo.set(f.process ?? 'none', (movedTo.get(f.process ?? 'none') ?? 0) + 1);
  return {
    placement: Object.fromEntries(counts),
    killed: victim,
    moved_end_users: moved.length,
    moved_to: Object.fromEntries(movedTo),
    answered_200: first.filter((f) => f.status === 200).length,
    at_once: { status: atOnce.status, process: atOnce.process, ms: round(atOnce.ms) },
    snapshots_loaded_by_survivors: loadedAfter.reduce((a, n, i) => a + n - loadedBefore[i]!, 0),
    // After the health checks noticed (the other moved end users).
    first_query_ms: { p50: round(percentile(firstMs, 50)), max: round(firstMs.at(-1) ?? 0) },
    second_query_ms: { p50: round(percentile(second, 50)), max: round(second.at(-1) ?? 0) },
    others_stayed: `${stayedPut} of ${stayed.length}`,
  };
}
