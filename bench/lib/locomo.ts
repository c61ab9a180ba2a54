/**
 * LoCoMo conversations for the retrieval benchmarks: loading (turns as engine docs with their
 * dia_ids), the plain BM25 baseline of the dataset README, and evidence recall@k scoring.
 * Shared by the in-process harness (bench/engine-eval.ts) and the HTTP benchmark
 * (bench/retrieval.ts). Answers and evidence are read only by the scoring here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngineDoc } from '../../packages/server/src/engine/index.js';

export interface Turn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}
export interface Qa {
  question: string;
  /** The gold answer (scoring only; never sent). */
  answer?: string | number;
  category: number;
  evidence: string[];
}
export interface Conversation {
  name: string;
  /** Every turn in conversation order; ids 1..n in that order. */
  docs: EngineDoc[];
  /** Local doc id -> dia_id. */
  diaOf: Map<number, string>;
  /** Category 1-4 questions only. */
  qa: Qa[];
}

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
/** "1:56 pm on 8 May, 2023" -> epoch ms (UTC). */
export function parseSessionDate(s: string): number {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})/i.exec(s);
  if (!m) return Date.parse(s) || 0;
  let h = Number(m[1]) % 12;
  if (m[3]!.toLowerCase() === 'pm') h += 12;
  const mo = MONTHS.indexOf(m[5]!.toLowerCase());
  return Date.UTC(Number(m[6]), mo, Number(m[4]), h, Number(m[2]));
}

/** A turn's text as stored: the image caption appended where the turn shared one. */
export const turnText = (t: Turn) => (t.blip_caption ? `${t.text} [image: ${t.blip_caption}]` : t.text);

export function loadConversation(file: string): Conversation {
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
      docs.push({
        id,
        text: turnText(t),
        speaker: t.speaker,
        sessionId: `session_${n}`,
        createdAt,
        importance: 0.5,
        feedback: 0,
      });
      diaOf.set(id, t.dia_id);
    }
  }
  const qa = ((raw.qa ?? c.qa) as Qa[]).filter((q) => q.category >= 1 && q.category <= 4);
  return { name: file.split('/').pop()!, docs, diaOf, qa };
}

// ---- plain BM25 baseline (lower-case words, no stemming, common stop words) ----
const BASE_STOP = new Set(
  `a an and are as at be but by for from has have he her his i if in into is it its me my no not of on or our she so that the their them then there these they this to was we were what when where which who why will with you your how did do does`.split(
    ' ',
  ),
);
const baseTok = (s: string) => (s.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((t) => !BASE_STOP.has(t));

/** BM25 (k1 1.2, b 0.75) over the docs' texts; returns the top k doc ids with a positive score. */
export function baselineSearch(docs: EngineDoc[]): (q: string, k: number) => number[] {
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

// ---- evidence recall@k -------------------------------------------------------
export interface Recall {
  questions: number;
  recall5: number;
  recall10: number;
  byCategory: Record<string, { n: number; recall5: number; recall10: number }>;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** The evidence dia_ids of a question ("D1:3; D2:4" entries split). */
export const evidenceOf = (q: Qa) => new Set(q.evidence.flatMap((e) => e.split(/[;,]\s*/)).map((e) => e.trim()));

/**
 * Evidence recall@5 and @10 over the conversation's questions. `search(question, k)` returns ids
 * best first; `diaOf` maps them to dia_ids (default: the conversation's local doc ids).
 */
export async function recallOf(
  conv: Conversation,
  search: (q: string, k: number) => number[] | Promise<number[]>,
  diaOf: Map<number, string> = conv.diaOf,
): Promise<Recall> {
  const cats: Record<string, { n: number; r5: number; r10: number }> = {};
  let r5 = 0;
  let r10 = 0;
  for (const q of conv.qa) {
    const ev = evidenceOf(q);
    const frac = (ids: number[]) => {
      const got = new Set(ids.map((id) => diaOf.get(id)));
      let n = 0;
      for (const e of ev) if (got.has(e)) n++;
      return ev.size ? n / ev.size : 0;
    };
    const a5 = frac(await search(q.question, 5));
    const a10 = frac(await search(q.question, 10));
    r5 += a5;
    r10 += a10;
    const c = (cats[q.category] ??= { n: 0, r5: 0, r10: 0 });
    c.n++;
    c.r5 += a5;
    c.r10 += a10;
  }
  const n = conv.qa.length;
  return {
    questions: n,
    recall5: round3(r5 / n),
    recall10: round3(r10 / n),
    byCategory: Object.fromEntries(
      Object.entries(cats).map(([k, v]) => [k, { n: v.n, recall5: round3(v.r5 / v.n), recall10: round3(v.r10 / v.n) }]),
    ),
  };
}

/** Question-weighted overall recall, with per-category figures pooled across files. */
export function pooled(rs: Recall[]): Recall {
  const n = rs.reduce((a, r) => a + r.questions, 0);
  const cats: Record<string, { n: number; r5: number; r10: number }> = {};
  for (const r of rs) {
    for (const [k, v] of Object.entries(r.byCategory)) {
      const c = (cats[k] ??= { n: 0, r5: 0, r10: 0 });
      c.n += v.n;
      c.r5 += v.recall5 * v.n;
      c.r10 += v.recall10 * v.n;
    }
  }
  return {
    questions: n,
    recall5: round3(rs.reduce((a, r) => a + r.recall5 * r.questions, 0) / n),
    recall10: round3(rs.reduce((a, r) => a + r.recall10 * r.questions, 0) / n),
    byCategory: Object.fromEntries(
      Object.entries(cats).map(([k, v]) => [k, { n: v.n, recall5: round3(v.r5 / v.n), recall10: round3(v.r10 / v.n) }]),
    ),
  };
}

/** A small deterministic PRNG for reproducible synthetic data. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The LoCoMo conversations of `dir` (in file order), their distinct sentences (what the scale
 * benches recombine into memories' texts) and their questions (what they ask).
 */
export function locomoCorpus(dir: string): { conversations: Conversation[]; sentences: string[]; questions: string[] } {
  const conversations = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => loadConversation(join(dir, f)));
  const sentences = [
    ...new Set(
      conversations.flatMap((c) => c.docs.flatMap((d) => d.text.split(/(?<=[.!?])\s+/))).filter((s) => s.length > 3),
    ),
  ];
  return { conversations, sentences, questions: conversations.flatMap((c) => c.qa.map((q) => q.question)) };
}
