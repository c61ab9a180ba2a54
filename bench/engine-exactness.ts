// Exactness check for engine speed work: every query is run through the current engine
// (packages/server/src/engine) and through a frozen copy of the engine as of commit 1d9825b
// (bench/exactness/reference-*.ts, before the search-speed work), and the results must be
// identical: same ids in the same order, scores and explanation contributions equal within 1e-9.
//
//   node --import tsx bench/engine-exactness.ts [--size 10000] [--queries 600] [--verbose]
//
// Cases: every LoCoMo question of ../shared/bench/locomo-dev/*.json (all categories) at k 1, 5,
// 10, 50; a synthetic 10,000-doc index (recombined dataset sentences, sessions of 20) after
// replacements and removals (reused slots, reordered postings), with dataset questions, random
// word bags, temporal phrases, speaker-only, stop-word-only and empty queries, k 1..100, session
// and id filters; weight variants (no expansion, no context, no session, more expansion terms,
// built-in n-gram vectors); caller-supplied vectors. Exits 1 on any difference.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryIndex, type EngineDoc, type RankingWeights, type SearchHit, type SearchOptions } from '../packages/server/src/engine/index.js';
import { MemoryIndex as ReferenceIndex } from './exactness/reference-memory-index.js';
import { loadConversation, mulberry32 } from './lib/locomo.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const opt = (name: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const SIZE = Number(opt('--size') ?? 10_000);
const RANDOM_QUERIES = Number(opt('--queries') ?? 600);
const verbose = argv.includes('--verbose');
const EPS = 1e-9;

const dataDir = resolve(repoRoot, '../shared/bench/locomo-dev');
const files = readdirSync(dataDir).filter((f) => f.endsWith('.json')).sort().map((f) => join(dataDir, f));
const convs = files.map(loadConversation);
/** Every question of the file, all categories (loadConversation keeps 1-4 only). */
const allQuestions = (file: string): string[] => {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as { qa?: { question: string }[]; conversation?: { qa?: { question: string }[] } };
  return (raw.qa ?? raw.conversation?.qa ?? []).map((q) => q.question).filter((q) => typeof q === 'string');
};

interface Pair {
  name: string;
  cur: MemoryIndex;
  ref: ReferenceIndex;
}
const makePair = (name: string, weights: Partial<RankingWeights> = {}, ngram = false): Pair => {
  const o = { weights, ...(ngram ? {} : { embedder: null }) };
  return { name, cur: new MemoryIndex(o), ref: new ReferenceIndex(o) };
};

let compared = 0;
let bitwise = 0;
let failures = 0;
const fail = (msg: string) => {
  failures++;
  if (failures <= 20) console.error(msg);
};

function same(a: SearchHit[], b: SearchHit[]): string | null {
  if (a.length !== b.length) return `length ${a.length} != reference ${b.length}`;
  let exact = true;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.id !== y.id) return `rank ${i}: id ${x.id} != reference ${y.id}`;
    if (!(Math.abs(x.score - y.score) <= EPS)) return `rank ${i}: score ${x.score} != reference ${y.score}`;
    if (x.score !== y.score) exact = false;
    const ex = x.explanation;
    const ey = y.explanation;
    if (!!ex !== !!ey) return `rank ${i}: explanation presence differs`;
    if (ex && ey) {
      for (const key of new Set([...Object.keys(ex), ...Object.keys(ey)])) {
        const u = ex[key] ?? 0;
        const v = ey[key] ?? 0;
        if (!(Math.abs(u - v) <= EPS)) return `rank ${i}: explanation.${key} ${u} != reference ${v}`;
        if (u !== v) exact = false;
      }
    }
  }
  if (exact) bitwise++;
  return null;
}

function check(p: Pair, query: string, opts: SearchOptions): void {
  compared++;
  const a = p.cur.search(query, opts);
  const b = p.ref.search(query, opts);
  const d = same(a, b);
  if (d) {
    const { filter, queryVector, ...shown } = opts;
    fail(`[${p.name}] ${JSON.stringify(query)} ${JSON.stringify({ ...shown, filter: !!filter, queryVector: !!queryVector })}: ${d}`);
  }
}

const upsert = (p: Pair, d: EngineDoc, v?: Float32Array) => {
  p.cur.upsert(d, v);
  p.ref.upsert(d, v);
};
const remove = (p: Pair, id: number) => {
  p.cur.remove(id);
  p.ref.remove(id);
};

const rand = mulberry32(1234);
const pick = <T>(a: readonly T[]) => a[Math.floor(rand() * a.length)]!;
const NOW = Date.UTC(2030, 0, 1);
const t0 = performance.now();

// ---- 1. LoCoMo: each conversation as it is, every question ----------------------------------
for (let i = 0; i < convs.length; i++) {
  const conv = convs[i]!;
  const qs = allQuestions(files[i]!);
  const now = Date.now();
  const variants: [string, Partial<RankingWeights>][] = [
    ['defaults', {}],
    ['expansion 0', { expansion: 0 }],
    ['expansion 0.3, 20 terms, 5 docs', { expansion: 0.3, expansionTerms: 20, expansionDocs: 5 }],
  ];
  for (const [vn, w] of variants) {
    const p = makePair(`${conv.name} ${vn}`, w, vn === 'defaults');
    for (const d of conv.docs) upsert(p, d);
    for (const q of qs) {
      for (const k of vn === 'defaults' ? [1, 5, 10, 50] : [10]) check(p, q, { k, now, explain: true });
    }
    // Without explanations (a different code path in some engines), and without the clock.
    if (vn === 'defaults') for (const q of qs) check(p, q, { k: 10, now });
  }
}
const locomoCompared = compared;

// ---- 2. Synthetic index -------------------------------------------------------------------
const sentences = convs.flatMap((c) => c.docs.flatMap((d) => d.text.split(/(?<=[.!?])\s+/))).filter((s) => s.length > 3);
const speakers = [...new Set(convs.flatMap((c) => c.docs.map((d) => d.speaker ?? '')))];
const questions = convs.flatMap((c, i) => allQuestions(files[i]!));
const words = [...new Set(sentences.flatMap((s) => s.split(/\s+/)))];
const synth = (from: number, n: number): EngineDoc[] => {
  const docs: EngineDoc[] = [];
  let t = Date.UTC(2022, 0, 1) + from * 3_600_000;
  for (let i = from; i < from + n; i++) {
    if (i % 20 === 1) t += 86_400_000 * (1 + Math.floor(rand() * 5));
    const parts = 1 + Math.floor(rand() * 3);
    const text = Array.from({ length: parts }, () => pick(sentences)).join(' ');
    docs.push({
      id: i,
      text,
      speaker: pick(speakers),
      sessionId: i % 97 === 0 ? null : `s${Math.ceil(i / 20)}`,
      createdAt: t,
      importance: i % 13 === 0 ? rand() : 0.5,
      feedback: i % 17 === 0 ? Math.round(rand() * 6 - 3) : 0,
      ...(i % 11 === 0 ? { tags: [pick(['travel', 'family', 'work', 'art', 'music'])] } : {}),
    });
  }
  return docs;
};
const temporalPhrases = ['last week', 'in May 2022', 'yesterday', 'last year', 'in the past 2 weeks', 'since March', 'recently', '8 May 2023'];
const randomQuery = (): string => {
  const r = rand();
  if (r < 0.5) return pick(questions);
  if (r < 0.75) return Array.from({ length: 1 + Math.floor(rand() * 6) }, () => pick(words)).join(' ');
  if (r < 0.85) return `${pick(questions)} ${pick(temporalPhrases)}`;
  if (r < 0.9) return `${pick(speakers)} ${pick(temporalPhrases)}`;
  if (r < 0.94) return pick(speakers);
  if (r < 0.97) return pick(['what is it?', 'how are you', 'the', '', 'zzzqqq nothing', "what's new?"]);
  return Array.from({ length: 80 }, () => pick(words)).join(' '); // a pasted document (> 64 terms)
};

function synthetic(name: string, size: number, weights: Partial<RankingWeights>, nQueries: number, ngram = false): void {
  const p = makePair(name, weights, ngram);
  const docs = synth(1, size);
  for (const d of docs) upsert(p, d);
  // Replacements (postings reordered), removals (slots freed), then new docs (slots reused).
  for (let i = 0; i < size / 20; i++) {
    const id = 1 + Math.floor(rand() * size);
    upsert(p, { ...synth(id, 1)[0]!, id });
  }
  for (let i = 0; i < size / 50; i++) remove(p, 1 + Math.floor(rand() * size));
  for (const d of synth(size + 1, size / 50)) upsert(p, d);
  for (let i = 0; i < nQueries; i++) {
    const q = randomQuery();
    const k = pick([1, 2, 3, 5, 10, 10, 10, 20, 100]);
    const r = rand();
    const o: SearchOptions = { k, now: NOW, explain: rand() < 0.7 };
    if (r < 0.1) o.sessionId = `s${1 + Math.floor(rand() * (size / 20))}`;
    else if (r < 0.2) o.filter = (id) => id % 3 !== 0;
    else if (r < 0.25) o.temporal = false;
    check(p, q, o);
  }
}

synthetic(`synthetic ${SIZE}`, SIZE, {}, RANDOM_QUERIES);
synthetic('synthetic 3000, no context', 3000, { context: 0 }, RANDOM_QUERIES / 4);
synthetic('synthetic 3000, no session, no expansion', 3000, { session: 0, expansion: 0 }, RANDOM_QUERIES / 4);
synthetic('synthetic 3000, window 3, symmetric, expansion 0.5', 3000, { contextWindow: 3, contextBackward: 1, expansion: 0.5, expansionTerms: 25 }, RANDOM_QUERIES / 4);
synthetic('synthetic 2000, ngram 0.1', 2000, { ngram: 0.1 }, RANDOM_QUERIES / 6, true);

// ---- 3. Caller-supplied vectors -------------------------------------------------------------
{
  const p = makePair('synthetic 2000, vectors');
  const vec = () => Float32Array.from({ length: 16 }, () => rand() - 0.5);
  for (const d of synth(1, 2000)) upsert(p, d, d.id % 5 === 0 ? undefined : vec());
  for (let i = 0; i < RANDOM_QUERIES / 6; i++) check(p, randomQuery(), { k: pick([1, 10, 30]), now: NOW, explain: true, queryVector: vec() });
}

const result = {
  compared,
  locomoQueries: locomoCompared,
  syntheticQueries: compared - locomoCompared,
  bitwiseIdentical: bitwise,
  differences: failures,
  seconds: Math.round((performance.now() - t0) / 100) / 10,
};
console.log(JSON.stringify(result, null, 2));
if (verbose || failures) console.error(failures ? `FAIL: ${failures} of ${compared} searches differ` : 'OK');
process.exit(failures ? 1 : 0);
