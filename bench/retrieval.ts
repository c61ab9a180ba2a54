/**
 * Retrieval quality through the public HTTP API of a real server: every turn of each LoCoMo
 * conversation goes in through `POST /v1/memory/add_turn` (one user per conversation, in
 * conversation order), every category 1-4 question is asked through `POST /v1/memory/recall`
 * (k = 10; the top 5 of it for @5), and the returned ids are mapped back to dia_ids to score
 * evidence recall@5/@10. A plain BM25 baseline over the same turns is scored in the same run.
 * Only the question text is ever sent; answers and evidence are read by the scoring alone.
 *
 *   npm run bench:retrieval [-- files...] [--postgres URL]
 *
 * Default files: ../shared/bench/locomo-dev/*.json relative to the repository root. Prints JSON.
 */
import { readdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonClient } from './lib/http.js';
import { ingestConversation } from './lib/ingest.js';
import { percentile } from './lib/load.js';
import { baselineSearch, loadConversation, pooled, recallOf, type Conversation, type Recall } from './lib/locomo.js';
import { startServer, type BenchServer } from './lib/server.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TENANT = 'locomo-bench';

const argv = process.argv.slice(2);
const files: string[] = [];
let postgresUrl: string | undefined = process.env.ENGRAM_BENCH_DATABASE_URL;
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--postgres') postgresUrl = argv[++i];
  else files.push(resolve(argv[i]!));
}
if (files.length === 0) {
  const dir = resolve(repoRoot, '../shared/bench/locomo-dev');
  files.push(
    ...readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => resolve(dir, f)),
  );
}
const convs = files.map(loadConversation);

const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

async function run(server: BenchServer) {
  const request = jsonClient(server.url, { 'x-api-key': server.key, 'x-tenant-id': TENANT }, 16);
  const post = async (path: string, body: unknown) => {
    const res = await request('POST', path, body);
    if (res.status !== 200 && res.status !== 201) throw new Error(`${path} -> ${res.status}: ${res.body}`);
    return JSON.parse(res.body) as Record<string, unknown>;
  };

  // Ingest: each conversation in order (ids give the session neighbour order), conversations in parallel.
  const addLatencies: number[] = [];
  let duplicates = 0;
  const t0 = performance.now();
  const idMaps = await Promise.all(
    convs.map(async (conv, c) => {
      const userId = `conversation-${c + 1}-${conv.name.replace(/\.json$/, '')}`;
      const ingested = await ingestConversation(post, conv, TENANT, userId);
      addLatencies.push(...ingested.latencies);
      duplicates += ingested.duplicates;
      return { userId, diaOf: ingested.diaOf };
    }),
  );
  const ingestSeconds = (performance.now() - t0) / 1000;

  // Ask: one recall with k = 10 per question; @5 is its top 5.
  const recallLatencies: number[] = [];
  const results = await Promise.all(
    convs.map(async (conv: Conversation, c) => {
      const { userId, diaOf } = idMaps[c]!;
      const asked = new Map<string, number[]>();
      const engram = await recallOf(
        conv,
        async (question, k) => {
          let ids = asked.get(question);
          if (!ids) {
            const s = performance.now();
            const res = await post('/v1/memory/recall', { tenant_id: TENANT, user_id: userId, query: question, k: 10 });
            recallLatencies.push(performance.now() - s);
            ids = (res.memories as Array<{ id: number }>).map((m) => m.id);
            asked.set(question, ids);
          }
          return ids.slice(0, k);
        },
        diaOf,
      );
      const baseline = await recallOf(conv, baselineSearch(conv.docs));
      return { conv, engram, baseline };
    }),
  );

  const stats = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return { requests: s.length, p50_ms: round(percentile(s, 50)), p99_ms: round(percentile(s, 99)) };
  };
  const e: Recall[] = results.map((r) => r.engram);
  const b: Recall[] = results.map((r) => r.baseline);
  return {
    dialect: server.dialect,
    ingest: {
      turns: addLatencies.length,
      duplicates,
      seconds: round(ingestSeconds),
      per_second: round(addLatencies.length / ingestSeconds),
      add_turn: stats(addLatencies),
    },
    recall_requests: stats(recallLatencies),
    overall: { engram: pooled(e), baseline: pooled(b) },
    per_file: Object.fromEntries(
      results.map((r) => [r.conv.name, { turns: r.conv.docs.length, engram: r.engram, baseline: r.baseline }]),
    ),
  };
}

const runs = [];
for (const url of [undefined, postgresUrl].filter((u, i) => i === 0 || u)) {
  const server = await startServer({ postgresUrl: url });
  try {
    runs.push(await run(server));
  } finally {
    await server.stop();
  }
}
process.stdout.write(
  `${JSON.stringify(
    {
      benchmark: 'retrieval',
      node: process.version,
      files: files.map((f) => f.split('/').pop()),
      measure:
        'evidence recall@5/@10, LoCoMo categories 1-4; Engram via POST /v1/memory/add_turn + /v1/memory/recall (k=10), baseline = plain BM25 over the same turn texts',
      runs,
    },
    null,
    2,
  )}\n`,
);
