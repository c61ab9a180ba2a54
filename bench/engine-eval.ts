// In-process quality and latency harness for the retrieval engine.
//
//   node --import tsx bench/engine-eval.ts [files...] [--weights '{"context":0.4}'] [--no-latency]
//        [--no-quality] [--sizes 1000,10000,100000] [--no-ngram]
//
// Quality: LoCoMo evidence recall@5/@10 (categories 1-4) for the engine and for a plain
// BM25 baseline. Questions are asked with the question text only; answers and evidence
// are read solely to score the returned ids.
// Latency: p50/p99 of search (k=10) over synthetic indexes built from recombined dataset sentences.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { MemoryIndex, type EngineDoc, type RankingWeights } from '../packages/server/src/engine/index.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface Turn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}
interface Qa {
  question: string;
  category: number;
  evidence: string[];
}
interface Conversation {
  name: string;
  docs: EngineDoc[];
  diaOf: Map<number, string>;
  qa: Qa[];
}

// ---- arguments -------------------------------------------------------------
const argv = process.argv.slice(2);
const files: string[] = [];
let weights: Partial<RankingWeights> = {};
let doLatency = true;
let doQuality = true;
let ngram = true;
let sizes = [1000, 10000, 100000];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === '--weights') weights = JSON.parse(argv[++i]!) as Partial<RankingWeights>;
  else if (a === '--no-latency') doLatency = false;
  else if (a === '--no-quality') doQuality = false;
  else if (a === '--no-ngram') ngram = false;
  else if (a === '--sizes') sizes = argv[++i]!.split(',').map(Number);
  else files.push(resolve(a));
}
if (files.length === 0) {
  files.push(resolve(repoRoot, '../shared/bench/locomo-dev/26.json'), resolve(repoRoot, '../shared/bench/locomo-dev/30.json'));
}
const indexOpts = () => ({ weights, ...(ngram ? {} : { embedder: null }) });

// ---- loading ---------------------------------------------------------------
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
/** "1:56 pm on 8 May, 2023" -> epoch ms (UTC). */
function parseSessionDate(s: string): number {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})/i.exec(s);
  if (!m) return Date.parse(s) || 0;
  let h = Number(m[1]) % 12;
  if (m[3]!.toLowerCase() === 'pm') h += 12;
  const mo = MONTHS.indexOf(m[5]!.toLowerCase());
  return Date.UTC(Number(m[6]), mo, Number(m[4]), h, Number(m[2]));
}

function load(file: string): Conversation {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const c = (raw.conversation as Record<string, unknown> | undefined) ?? raw;
  const sessionNums = Object.keys(c)
    .map((k) => /^session_(\d+)$/.exec(k)?.[1])
    .filter((x): x is string => x !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  const docs: EngineDoc[] = [];
  const diaOf = new Map<number, string>();
  let id = 0;
  for (const n of sessionNums) {
    const createdAt = parseSessionDate(String(c[`session_${n}_date_time`] ?? ''));
    for (const t of c[`session_${n}`] as Turn[]) {
      id++;
      const text = t.blip_caption ? `${t.text} [image: ${t.blip_caption}]` : t.text;
      docs.push({ id, text, speaker: t.speaker, sessionId: `session_${n}`, createdAt, importance: 0.5, feedback: 0 });
      diaOf.set(id, t.dia_id);
    }
  }
  const qa = ((raw.qa ?? c.qa) as Qa[]).filter((q) => q.category >= 1 && q.category <= 4);
  return { name: file.split('/').pop()!, docs, diaOf, qa };
}

// ---- plain BM25 baseline (lower-case words, no stemming, common stop words) ----
const BASE_STOP = new Set(
  `a an and are as at be but by for from has have he her his i if in into is it its me my no not of on or our she so that the their them then there these they this to was we were what when where which who why will with you your how did do does`.split(' '),
);
const baseTok = (s: string) => (s.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((t) => !BASE_STOP.has(t));
function baselineSearch(docs: EngineDoc[]): (q: string, k: number) => number[] {
  const tfs = docs.map((d) => {
    const m = new Map<string, number>();
    for (const t of baseTok(d.text)) m.set(t, (m.get(t) ?? 0) + 1);
    return m;
  });
  const lens = docs.map((d) => baseTok(d.text).length);
  const avg = lens.reduce((a, b) => a + b, 0) / docs.length;
  const df = new Map<string, number>();
  for (const m of tfs) for (const t of m.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const N = docs.length;
  return (q, k) => {
    const terms = baseTok(q);
    const scores = docs.map((d, i) => {
      let s = 0;
      for (const t of terms) {
        const tf = tfs[i]!.get(t);
        if (!tf) continue;
        const n = df.get(t)!;
        const idf = Math.log(1 + (N - n + 0.5) / (n + 0.5));
        s += (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * lens[i]!) / avg));
      }
      return { id: d.id, s };
    });
    return scores
      .filter((x) => x.s > 0)
      .sort((a, b) => b.s - a.s)
      .slice(0, k)
      .map((x) => x.id);
  };
}

// ---- quality ---------------------------------------------------------------
interface Recall {
  questions: number;
  recall5: number;
  recall10: number;
  byCategory: Record<string, { n: number; recall5: number; recall10: number }>;
}
function recallOf(conv: Conversation, search: (q: string, k: number) => number[]): Recall {
  const cats: Record<string, { n: number; r5: number; r10: number }> = {};
  let r5 = 0;
  let r10 = 0;
  for (const q of conv.qa) {
    const ev = new Set(q.evidence.flatMap((e) => e.split(/[;,]\s*/)).map((e) => e.trim()));
    const frac = (ids: number[]) => {
      const got = new Set(ids.map((id) => conv.diaOf.get(id)));
      let n = 0;
      for (const e of ev) if (got.has(e)) n++;
      return ev.size ? n / ev.size : 0;
    };
    const a5 = frac(search(q.question, 5));
    const a10 = frac(search(q.question, 10));
    r5 += a5;
    r10 += a10;
    const c = (cats[q.category] ??= { n: 0, r5: 0, r10: 0 });
    c.n++;
    c.r5 += a5;
    c.r10 += a10;
  }
  const n = conv.qa.length;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    questions: n,
    recall5: round(r5 / n),
    recall10: round(r10 / n),
    byCategory: Object.fromEntries(
      Object.entries(cats).map(([k, v]) => [k, { n: v.n, recall5: round(v.r5 / v.n), recall10: round(v.r10 / v.n) }]),
    ),
  };
}

function pooled(rs: Recall[]): { questions: number; recall5: number; recall10: number } {
  const n = rs.reduce((a, r) => a + r.questions, 0);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    questions: n,
    recall5: round(rs.reduce((a, r) => a + r.recall5 * r.questions, 0) / n),
    recall10: round(rs.reduce((a, r) => a + r.recall10 * r.questions, 0) / n),
  };
}

const convs = files.map(load);
const out: Record<string, unknown> = { files: files.map((f) => f.split('/').pop()), weights };

if (doQuality) {
  const engine: Recall[] = [];
  const baseline: Recall[] = [];
  const perFile: Record<string, unknown> = {};
  for (const conv of convs) {
    const idx = new MemoryIndex(indexOpts());
    for (const d of conv.docs) idx.upsert(d);
    // "now" one day after the last session: conversations are in the past, as in a live service.
    const now = Math.max(...conv.docs.map((d) => d.createdAt)) + 86_400_000;
    const e = recallOf(conv, (q, k) => idx.search(q, { k, now }).map((h) => h.id));
    const b = recallOf(conv, baselineSearch(conv.docs));
    engine.push(e);
    baseline.push(b);
    perFile[conv.name] = { turns: conv.docs.length, engine: e, baseline: b };
  }
  out.quality = { all: { engine: pooled(engine), baseline: pooled(baseline) }, perFile };
}

// ---- latency ---------------------------------------------------------------
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

if (doLatency) {
  const rand = mulberry32(42);
  const sentences = convs.flatMap((c) => c.docs.flatMap((d) => d.text.split(/(?<=[.!?])\s+/))).filter((s) => s.length > 3);
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
      docs.push({ id: i, text, speaker: pick(speakers), sessionId: `s${Math.ceil(i / 20)}`, createdAt: t, importance: 0.5, feedback: 0 });
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
