// In-process quality and latency harness for the retrieval engine.
//
//   node --import tsx bench/engine-eval.ts [files...] [--weights '{"context":0.4}'] [--no-latency]
//        [--no-quality] [--sizes 1000,10000,100000] [--no-ngram] [--now ISO|after-last]
//        [--grid '[{"time":0.3},{"time":0.6}]'] [--typos]
//
// --typos: every question is asked with one typing error (a letter dropped, doubled, replaced by a
// neighbour on the keyboard, or two swapped) in one of its words of six letters or more, chosen by
// a seeded generator (the same errors every run); questions with no such word are asked as they are.
// Files: default every ../shared/bench/locomo-dev/*.json.
// --grid: leave-one-conversation-out. Every weight variant (each on top of --weights) is scored on
// every file; for each file, the variant with the best recall@5 + recall@10 on the *other* files
// is picked and scored on the held-out file. Prints each variant's per-file figures, the picks and
// the pooled held-out figures (quality only).
//
// The clock: by default the real Date.now(), like the server (so the figures equal
// `npm run bench:retrieval`'s); `--now after-last` = one day after each conversation's last session.
//
// Quality: LoCoMo evidence recall@5/@10 (categories 1-4) for the engine and for a plain
// BM25 baseline. Questions are asked with the question text only; answers and evidence
// are read solely to score the returned ids.
// Latency: p50/p99 of search (k=10) over synthetic indexes built from recombined dataset sentences.
import { readdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { MemoryIndex, type EngineDoc, type RankingWeights } from '../packages/server/src/engine/index.js';
import { baselineSearch, loadConversation as load, mulberry32, pooled, recallOf, type Recall } from './lib/locomo.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

// ---- arguments -------------------------------------------------------------
const argv = process.argv.slice(2);
const files: string[] = [];
let weights: Partial<RankingWeights> = {};
let doLatency = true;
let doQuality = true;
let ngram = true;
let sizes = [1000, 10000, 100000];
let nowArg: string | undefined;
let grid: Partial<RankingWeights>[] | undefined;
let typos = false;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === '--weights') weights = JSON.parse(argv[++i]!) as Partial<RankingWeights>;
  else if (a === '--no-latency') doLatency = false;
  else if (a === '--no-quality') doQuality = false;
  else if (a === '--no-ngram') ngram = false;
  else if (a === '--now') nowArg = argv[++i]!;
  else if (a === '--sizes') sizes = argv[++i]!.split(',').map(Number);
  else if (a === '--grid') grid = JSON.parse(argv[++i]!) as Partial<RankingWeights>[];
  else if (a === '--typos') typos = true;
  else files.push(resolve(a));
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
const indexOpts = (variant: Partial<RankingWeights> = {}) => ({
  weights: { ...weights, ...variant },
  ...(ngram ? {} : { embedder: null }),
});

const convs = files.map(load);
const out: Record<string, unknown> = {
  files: files.map((f) => f.split('/').pop()),
  weights,
  now: nowArg ?? 'Date.now()',
  typos,
};

// The server's clock unless told otherwise (the conversations are from 2023, so recency is ~0).
const nowFor = (conv: (typeof convs)[number]) =>
  nowArg === undefined
    ? Date.now()
    : nowArg === 'after-last'
      ? Math.max(...conv.docs.map((d) => d.createdAt)) + 86_400_000
      : Date.parse(nowArg);
// Keys near each other on a QWERTY keyboard: a replaced letter is one of its neighbours.
const NEIGHBOURS: Record<string, string> = {
  q: 'wa',
  w: 'qes',
  e: 'wrd',
  r: 'etf',
  t: 'ryg',
  y: 'tuh',
  u: 'yij',
  i: 'uok',
  o: 'ipl',
  p: 'ol',
  a: 'qsz',
  s: 'adw',
  d: 'sfe',
  f: 'dgr',
  g: 'fht',
  h: 'gjy',
  j: 'hku',
  k: 'jli',
  l: 'ko',
  z: 'xa',
  x: 'zcs',
  c: 'xvd',
  v: 'cbf',
  b: 'vng',
  n: 'bmh',
  m: 'nj',
};
/** The question with one typing error in one of its longer words (never the first letter), the same every run. */
function withTypo(question: string, seed: number): string {
  const rand = mulberry32(seed);
  const words = [...question.matchAll(/[A-Za-z]{6,}/g)];
  if (words.length === 0) return question;
  const word = words[Math.floor(rand() * words.length)]!;
  const w = word[0];
  const at = 1 + Math.floor(rand() * (w.length - 1));
  const kind = Math.floor(rand() * 4);
  const near = (c: string) =>
    (NEIGHBOURS[c.toLowerCase()] ?? 'e')[Math.floor(rand() * (NEIGHBOURS[c.toLowerCase()] ?? 'e').length)]!;
  const typed =
    kind === 0
      ? w.slice(0, at) + w.slice(at + 1)
      : kind === 1
        ? w.slice(0, at) + w[at] + w.slice(at)
        : kind === 2
          ? w.slice(0, at) + near(w[at]!) + w.slice(at + 1)
          : at < w.length - 1
            ? w.slice(0, at) + w[at + 1] + w[at] + w.slice(at + 2)
            : w.slice(0, at - 1) + w[at] + w[at - 1];
  return question.slice(0, word.index) + typed + question.slice(word.index! + w.length);
}
const asked = (question: string) =>
  typos
    ? withTypo(
        question,
        [...question].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7),
      )
    : question;

async function engineRecall(conv: (typeof convs)[number], variant: Partial<RankingWeights> = {}): Promise<Recall> {
  const idx = new MemoryIndex(indexOpts(variant));
  for (const d of conv.docs) idx.upsert(d);
  const now = nowFor(conv);
  return recallOf(conv, (q, k) => idx.search(asked(q), { k, now }).map((h) => h.id));
}

if (doQuality && grid) {
  const brief = (r: Recall) => ({ questions: r.questions, recall5: r.recall5, recall10: r.recall10 });
  const scores: Recall[][] = [];
  for (const variant of grid) scores.push(await Promise.all(convs.map((c) => engineRecall(c, variant))));
  const heldOut: Recall[] = [];
  const picks: Record<string, unknown> = {};
  convs.forEach((conv, h) => {
    let best = 0;
    let bestValue = -Infinity;
    scores.forEach((perFile, v) => {
      const value = perFile.reduce((a, r, i) => (i === h ? a : a + (r.recall5 + r.recall10) * r.questions), 0);
      if (value > bestValue) [best, bestValue] = [v, value];
    });
    heldOut.push(scores[best]![h]!);
    picks[conv.name] = { picked: grid![best], heldOut: scores[best]![h] };
  });
  out.grid = grid.map((variant, v) => ({
    variant,
    all: pooled(scores[v]!),
    perFile: Object.fromEntries(convs.map((c, i) => [c.name, brief(scores[v]![i]!)])),
  }));
  out.leaveOneOut = { picks, pooled: pooled(heldOut) };
} else if (doQuality) {
  const engine: Recall[] = [];
  const baseline: Recall[] = [];
  const perFile: Record<string, unknown> = {};
  for (const conv of convs) {
    const e = await engineRecall(conv);
    const bm25 = baselineSearch(conv.docs);
    const b = await recallOf(conv, (q, k) => bm25(asked(q), k));
    engine.push(e);
    baseline.push(b);
    perFile[conv.name] = { turns: conv.docs.length, engine: e, baseline: b };
  }
  const brief = ({ byCategory: _c, ...r }: Recall) => r;
  out.quality = { all: { engine: pooled(engine), baseline: brief(pooled(baseline)) }, perFile };
}

// ---- latency ---------------------------------------------------------------
if (doLatency) {
  const rand = mulberry32(42);
  const sentences = convs
    .flatMap((c) => c.docs.flatMap((d) => d.text.split(/(?<=[.!?])\s+/)))
    .filter((s) => s.length > 3);
  const speakers = [...new Set(convs.flatMap((c) => c.docs.map((d) => d.speaker ?? '')))];
  const questions = convs.flatMap((c) => c.qa.map((q) => q.question));
  const pick = <T>(a: T[]) => a[Math.floor(rand() * a.length)]!;
  const synth = (n: number): EngineDoc[] => {
    const docs: EngineDoc[] = [];
    let t = Date.UTC(2022, 0, 1);
    for (let i = 1; i <= n; i++) {
      if (i % 20 === 1) t += 86_400_000 * (1 + Math.floor(rand() * 5));
      const parts = 1 + Math.floor(rand() * 3);
      const text = Array.from({ length: parts }, () => pick(sentences)).join(' ');
      docs.push({
        id: i,
        text,
        speaker: pick(speakers),
        sessionId: `s${Math.ceil(i / 20)}`,
        createdAt: t,
        importance: 0.5,
        feedback: 0,
      });
    }
    return docs;
  };
  const pct = (a: number[], p: number) => {
    const s = [...a].sort((x, y) => x - y);
    return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 1000) / 1000;
  };
  const latency: Record<string, unknown> = {};
  for (const n of sizes) {
    const docs = synth(n);
    const idx = new MemoryIndex(indexOpts());
    const t0 = performance.now();
    for (const d of docs) idx.upsert(d);
    const buildMs = performance.now() - t0;
    // Incremental upserts into the built index (new ids and replacements).
    const extra = synth(200).map((d, i) => ({ ...d, id: i % 2 ? n + i + 1 : 1 + Math.floor(rand() * n) }));
    const t1 = performance.now();
    for (const d of extra) idx.upsert(d);
    const upsertMs = (performance.now() - t1) / extra.length;
    const now = Date.UTC(2030, 0, 1);
    for (let i = 0; i < 30; i++) idx.search(pick(questions), { k: 10, now }); // warm-up
    const times: number[] = [];
    const runs = n >= 100_000 ? 300 : 1000;
    for (let i = 0; i < runs; i++) {
      const q = pick(questions);
      const s = performance.now();
      idx.search(q, { k: 10, now });
      times.push(performance.now() - s);
    }
    latency[String(n)] = {
      docs: idx.size,
      buildMs: Math.round(buildMs),
      upsertMsAvg: Math.round(upsertMs * 1000) / 1000,
      approxBytes: idx.approxBytes(),
      searchP50Ms: pct(times, 50),
      searchP99Ms: pct(times, 99),
      heapUsedMB: Math.round(process.memoryUsage().heapUsed / 1e6),
    };
  }
  out.latency = latency;
}

console.log(JSON.stringify(out, null, 2));
