/**
 * This checkout against a baseline revision, in alternation: what one change does to the CPU an
 * operation costs and to throughput, on a machine whose speed drifts from minute to minute (a shared
 * 2-core machine). Two servers run side by side on fresh databases, the baseline built from
 * `git archive <rev>` (kept in the temp directory per commit), and the load goes to one, then the
 * other, in rounds (ABBA order, the first round a warm-up): each round's figures are compared with
 * the other side's in the same round, and the median of those ratios is the answer. Prints JSON.
 *
 *   npm run bench:pair -- --base <rev> [--phase add|keyed-add|turn|bulk|query] [--rounds 10] [--postgres URL]
 *                         [--memories 10000] [--clients N]
 *
 * Phases: `add` (POST /memory/add, 16 clients, 64 end users), `keyed-add` (the same with an Idempotency-Key
 * on every add, as the official clients send them), `turn` (POST /v1/memory/add_turn, 16 clients, 64 users of
 * 8 tenants), `bulk` (POST /memory/bulk-add of 50,
 * 8 clients, 32 end users), `query` (POST /memory/query {k: 10} with LoCoMo questions, 16 clients,
 * on an end user holding `--memories` memories); `--clients` sets another number of clients (1 for
 * latency). CPU per operation: the server process, and on PostgreSQL the database's backends
 * (/proc), as in `bench:write`, and the server's write system calls per operation; the median
 * latency of each round too.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { option } from './lib/args.js';
import { baselineMain, median } from './lib/baseline.js';
import { postgresCpuSeconds, processCpuSeconds, processWriteCalls } from './lib/cpu.js';
import { jsonClient } from './lib/http.js';
import { runLoad } from './lib/load.js';
import { loadConversation, mulberry32 } from './lib/locomo.js';
import { startServer, type BenchServer } from './lib/server.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const baseRev = option('--base');
if (!baseRev) throw new Error('--base <rev> is required: the revision to compare this checkout with');
const phase = (option('--phase') ?? 'bulk') as 'add' | 'keyed-add' | 'turn' | 'bulk' | 'query';
if (!['add', 'keyed-add', 'turn', 'bulk', 'query'].includes(phase))
  throw new Error('--phase must be add, keyed-add, turn, bulk or query');
const rounds = Number(option('--rounds') ?? 10);
const postgresUrl = option('--postgres');
const memories = Number(option('--memories') ?? 10_000);
const clients = Number(option('--clients') ?? (phase === 'bulk' ? 8 : 16));
if (!Number.isInteger(clients) || clients < 1) throw new Error('--clients must be a positive integer');

// ---- workloads ---------------------------------------------------------------------
const locomo = resolve(repoRoot, '../shared/bench/locomo-dev');
const conversations = () =>
  readdirSync(locomo)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => loadConversation(join(locomo, f)));

interface Side {
  name: 'base' | 'current';
  server: BenchServer;
  request: ReturnType<typeof jsonClient>;
}

/** Distinct texts: every round adds memories no end user has yet. */
let written = 0;
const text = (i: number) =>
  `Benchmark memory number ${i}: the user mentioned preference ${i % 97} while planning trip ${i}`;

/** One round's load on one side: its operations and the result. */
async function roundOf(side: Side, questions: string[]) {
  const { request } = side;
  if (phase === 'add' || phase === 'keyed-add') {
    const from = written;
    written += 5_000;
    const key = (i: number): Record<string, string> =>
      phase === 'keyed-add' ? { 'idempotency-key': `pair-${from + i}` } : {};
    return {
      operations: 5_000,
      load: await runLoad(
        5_000,
        clients,
        async (i) =>
          (
            await request(
              'POST',
              '/memory/add',
              { text: text(from + i) },
              { 'x-end-user-id': `add-${i % 64}`, ...key(i) },
            )
          ).status === 201,
      ),
    };
  }
  if (phase === 'turn') {
    const from = written;
    written += 3_000;
    const turn = (i: number) => ({
      tenant_id: `pair-${i % 8}`,
      user_id: `user-${i % 64}`,
      text: text(from + i),
      speaker: 'user',
    });
    return {
      operations: 3_000,
      load: await runLoad(
        3_000,
        clients,
        async (i) =>
          (await request('POST', '/v1/memory/add_turn', turn(i), { 'x-tenant-id': `pair-${i % 8}` })).status === 201,
      ),
    };
  }
  if (phase === 'bulk') {
    const from = written;
    written += 400 * 50;
    const items = (b: number) =>
      Array.from({ length: 50 }, (_, j) => ({ text: text(from + b * 50 + j), client_ref: `ref-${from + b * 50 + j}` }));
    return {
      operations: 400 * 50,
      load: await runLoad(
        400,
        clients,
        async (b) =>
          (await request('POST', '/memory/bulk-add', items(b), { 'x-end-user-id': `bulk-${b % 32}` })).status === 200,
      ),
    };
  }
  return {
    operations: 3_000,
    load: await runLoad(
      3_000,
      clients,
      async (i) =>
        (
          await request(
            'POST',
            '/memory/query',
            { query: questions[i % questions.length], k: 10 },
            { 'x-end-user-id': 'reader' },
          )
        ).status === 200,
    ),
  };
}

/** The query phase's end user on both sides, the same memories in the same order (texts recombined from LoCoMo turns). */
async function fillReader(sides: Side[]): Promise<string[]> {
  const convs = conversations();
  const sentences = [
    ...new Set(convs.flatMap((c) => c.docs.flatMap((d) => d.text.split(/(?<=[.!?])\s+/))).filter((s) => s.length > 3)),
  ];
  const rand = mulberry32(7);
  const texts = new Set<string>();
  while (texts.size < memories)
    texts.add(
      Array.from({ length: 1 + Math.floor(rand() * 3) }, () => sentences[Math.floor(rand() * sentences.length)]!).join(
        ' ',
      ),
    );
  const all = [...texts];
  for (const { request } of sides) {
    await runLoad(Math.ceil(all.length / 50), 8, async (b) => {
      const items = all
        .slice(b * 50, b * 50 + 50)
        .map((t, j) => ({ text: t, session_id: `s${Math.floor((b * 50 + j) / 20) + 1}` }));
      return (await request('POST', '/memory/bulk-add', items, { 'x-end-user-id': 'reader' })).status === 200;
    });
  }
  const questions = convs.flatMap((c) => c.qa.map((q) => q.question));
  for (let i = questions.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [questions[i], questions[j]] = [questions[j]!, questions[i]!];
  }
  return questions;
}

// ---- run ------------------------------------------------------------------------------
const base = baselineMain(repoRoot, baseRev);
const current = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
const dirty =
  execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: repoRoot, encoding: 'utf8' }).trim() !==
  '';
const sides: Side[] = [];
for (const [name, main] of [
  ['base', base.main],
  ['current', undefined],
] as const) {
  const server = await startServer({ postgresUrl, main });
  sides.push({ name, server, request: jsonClient(server.url, { 'x-api-key': server.key }) });
}

interface Figures {
  per_second: number;
  p50_ms: number;
  server_cpu_ms: number;
  server_write_calls: number;
  database_cpu_ms?: number;
}
const perRound: Record<Side['name'], Figures[]> = { base: [], current: [] };
try {
  const questions = phase === 'query' ? await fillReader(sides) : [];
  for (let r = 0; r <= rounds; r++) {
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
      const { server } = side;
      const cpu = () =>
        [
          processCpuSeconds(server.process.pid!),
          server.dialect === 'postgres' ? postgresCpuSeconds(server.databaseUrl) : 0,
          processWriteCalls(server.process.pid!),
        ] as const;
      const [server0, database0, writes0] = cpu();
      const { operations, load } = await roundOf(side, questions);
      const [server1, database1, writes1] = cpu();
      if (load.errors > 0) throw new Error(`${side.name}: ${load.errors} of ${load.requests} requests failed`);
      if (r === 0) continue; // warm-up
      const ms = (seconds: number) => Math.round((seconds * 1e6) / operations) / 1000;
      perRound[side.name].push({
        per_second: Math.round(operations / load.seconds),
        p50_ms: load.p50_ms,
        server_cpu_ms: ms(server1 - server0),
        server_write_calls: Math.round(((writes1 - writes0) / operations) * 100) / 100,
        ...(server.dialect === 'postgres' ? { database_cpu_ms: ms(database1 - database0) } : {}),
      });
    }
  }
} finally {
  for (const { server } of sides) await server.stop();
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;
/** current / base of one figure, round by round (each pair ran back to back), and its median. */
const ratio = (figure: keyof Figures) => {
  const ratios = perRound.current.map((c, i) => (c[figure] ?? 0) / (perRound.base[i]![figure] ?? 1));
  return { median: round3(median(ratios)), min: round3(Math.min(...ratios)), max: round3(Math.max(...ratios)) };
};
const summary = (figures: Figures[]) => ({
  per_second: Math.round(median(figures.map((f) => f.per_second))),
  p50_ms: round3(median(figures.map((f) => f.p50_ms))),
  server_cpu_ms_per_operation: round3(median(figures.map((f) => f.server_cpu_ms))),
  server_write_calls_per_operation: round3(median(figures.map((f) => f.server_write_calls))),
  ...(figures[0]?.database_cpu_ms !== undefined
    ? { database_cpu_ms_per_operation: round3(median(figures.map((f) => f.database_cpu_ms!))) }
    : {}),
});
process.stdout.write(
  `${JSON.stringify(
    {
      benchmark: 'pair',
      node: process.version,
      dialect: sides[0]!.server.dialect,
      phase,
      ...(phase === 'query' ? { memories_of_user: memories } : {}),
      clients,
      rounds,
      base: { rev: baseRev, sha: base.sha, ...summary(perRound.base) },
      current: { sha: current, uncommitted_changes: dirty, ...summary(perRound.current) },
      current_over_base: {
        per_second: ratio('per_second'),
        p50_ms: ratio('p50_ms'),
        server_cpu_ms: ratio('server_cpu_ms'),
        server_write_calls: ratio('server_write_calls'),
        ...(sides[0]!.server.dialect === 'postgres' ? { database_cpu_ms: ratio('database_cpu_ms') } : {}),
      },
      rounds_detail: perRound,
    },
    null,
    2,
  )}\n`,
);
