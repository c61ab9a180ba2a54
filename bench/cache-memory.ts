/**
 * What the index cache setting holds the process to (issue 46, defect 8): `--users` end users of
 * `--memories` memories each (SQLite, filled through the memories module with the server stopped),
 * then for each `--cache-mb` setting a fresh server with ENGRAM_INDEX_CACHE_MB at it, queried
 * round robin over every end user `--passes` times by 4 clients (each query of an end user not held
 * builds its index, evicting others). RSS is sampled every 100 ms; the cache's counted bytes are
 * read from /metrics. Prints JSON: per setting, RSS after start, peak, settled (5 s after the last
 * query), the cache's counted bytes and entries, and RSS over the setting.
 *
 *   npm run bench:cache-memory [-- --users 200] [--memories 2000] [--cache-mb 64,512] [--passes 2]
 *                              [--intelligence-mb N] (ENGRAM_INTELLIGENCE_CACHE_MB; the default, 256, unless given)
 */
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { normalizeText } from '../packages/server/src/engine/index.js';
import { bulkAdd } from '../packages/server/src/modules/memories/index.js';
import { resolveApiKey } from '../packages/server/src/modules/org/index.js';
import { openDatabase } from '../packages/server/src/store/database.js';
import { option } from './lib/args.js';
import { jsonClient } from './lib/http.js';
import { locomoCorpus, mulberry32 } from './lib/locomo.js';
import { BENCH_KEY, freshDataDir, startServer, type BenchServer } from './lib/server.js';

const users = Number(option('--users') ?? 200);
const memories = Number(option('--memories') ?? 2000);
const settings = (option('--cache-mb') ?? '64,512').split(',').map(Number);
const passes = Number(option('--passes') ?? 2);
const intelligenceMb = option('--intelligence-mb');
const CLIENTS = 4;
const BATCH = 50;
const METRICS_TOKEN = 'engram-bench-metrics';
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = process.env.ENGRAM_LOCOMO_DIR ?? resolve(repoRoot, '../shared/bench/locomo-dev');
const { sentences, questions } = locomoCorpus(dataDir);
const rand = mulberry32(11);
const pick = <T>(a: T[]) => a[Math.floor(rand() * a.length)]!;
const userId = (u: number) => `user-${String(u).padStart(4, '0')}`;

/** Texts of 1-3 LoCoMo sentences, unique per end user (by the server's duplicate key), 20 a session. */
async function fill(file: string): Promise<number> {
  const database = openDatabase({ dialect: 'sqlite', path: file });
  try {
    await sql`PRAGMA synchronous = OFF`.execute(database.db);
    const key = await resolveApiKey(database.db, BENCH_KEY);
    if (!key?.projectId) throw new Error('the bench key must be locked to the bootstrap project');
    let done = 0;
    for (let u = 0; u < users; u++) {
      const seen = new Set<string>();
      for (let made = 0; made < memories; ) {
        const items = [];
        for (; items.length < BATCH && made < memories; made++) {
          let text: string;
          do text = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(sentences)).join(' ');
          while (seen.has(normalizeText(text)));
          seen.add(normalizeText(text));
          items.push({ text, session_id: `s${Math.floor(made / 20) + 1}` });
        }
        const ctx = {
          actor: { type: 'api_key' as const, id: key.id },
          organizationId: key.organizationId,
          projectId: key.projectId,
          requestId: `req-fill-${u}-${made}`,
        };
        const result = await bulkAdd(
          database,
          ctx,
          { projectId: key.projectId, tenantId: '', endUserId: userId(u) },
          items,
        );
        if (result.totals.failed > 0) throw new Error(`bulk-add refused ${result.totals.failed} items`);
        done += result.totals.created;
      }
    }
    return done;
  } finally {
    await database.close();
  }
}

/** Resident memory of the server process, MB. */
const rssMb = (pid: number) =>
  Math.round(Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);

async function cacheMetrics(server: BenchServer): Promise<{ bytes: number; entries: number; intelligence: number }> {
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await res.text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return {
    bytes: read('engram_index_cache_bytes'),
    entries: read('engram_index_cache_entries'),
    intelligence: read('engram_intelligence_cache_bytes'),
  };
}

async function measure(dir: string, cacheMb: number) {
  const server = await startServer({
    dataDir: dir,
    env: {
      ENGRAM_INDEX_CACHE_MB: String(cacheMb),
      ENGRAM_METRICS_TOKEN: METRICS_TOKEN,
      ...(intelligenceMb ? { ENGRAM_INTELLIGENCE_CACHE_MB: intelligenceMb } : {}),
    },
  });
  const pid = server.process.pid!;
  try {
    const afterStart = rssMb(pid);
    let peak = afterStart;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(pid));
    }, 100);
    const request = jsonClient(server.url, { 'x-api-key': server.key }, CLIENTS);
    const started = performance.now();
    let next = 0;
    let errors = 0;
    const total = users * passes;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let i = next++; i < total; i = next++) {
          const res = await request(
            'POST',
            '/memory/query',
            { query: questions[i % questions.length], k: 10 },
            { 'x-end-user-id': userId(i % users) },
          );
          if (res.status !== 200) errors++;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cache = await cacheMetrics(server);
    await new Promise((r) => setTimeout(r, 5000));
    clearInterval(sampler);
    const settled = rssMb(pid);
    return {
      cache_mb: cacheMb,
      intelligence_cache_mb: Number(intelligenceMb ?? 256),
      queries: total,
      errors,
      seconds: Math.round(seconds * 10) / 10,
      rss_mb: { after_start: afterStart, peak: Math.max(peak, settled), settled },
      rss_over_start_mb: { peak: Math.max(peak, settled) - afterStart, settled: settled - afterStart },
      cache_counted_mb: Math.round((cache.bytes / 2 ** 20) * 10) / 10,
      cache_entries: cache.entries,
      intelligence_counted_mb: Math.round((cache.intelligence / 2 ** 20) * 10) / 10,
    };
  } finally {
    await server.stop();
  }
}

const dir = freshDataDir();
try {
  await (await startServer({ dataDir: dir })).stop();
  const t0 = performance.now();
  const filled = await fill(join(dir, 'engram.db'));
  const fillSeconds = (performance.now() - t0) / 1000;
  const runs = [];
  for (const mb of settings) {
    const run = await measure(dir, mb);
    process.stderr.write(`${JSON.stringify(run)}\n`);
    runs.push(run);
  }
  process.stdout.write(
    `${JSON.stringify(
      {
        benchmark: 'cache-memory',
        node: process.version,
        dialect: 'sqlite',
        end_users: users,
        memories_per_user: memories,
        memories: filled,
        fill_seconds: Math.round(fillSeconds),
        clients: CLIENTS,
        passes,
        runs,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
