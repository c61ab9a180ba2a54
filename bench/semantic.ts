/**
 * The semantic path at scale, in process (issue 53): one index of N memories (LoCoMo sentences
 * recombined, as bench:latency's) with 512-dimension vectors, LoCoMo questions as queries. Prints
 * search p50/p99 lexical-only (no query vector: the ceiling to compare with, same run, same index),
 * with vectors (int8 codes, bounded candidate search) and with every vector scored exactly; the
 * agreement of the bounded top 10 with the exact top 10; and the vectors' bytes. The vectors are the
 * built-in hashed embedder's (word and character n-gram features) at 512 dimensions, so texts that
 * share words and sub-words are near, as a remote model's would be for paraphrases; deterministic.
 * Then the bounded candidate search alone (`VectorIndex.nearest`, the 50 candidates a k = 10 query
 * takes) against the exact 50 nearest by the same int8 codes (every vector scored): its recall and p50
 * over the first 100 questions.
 *
 *   node --import tsx bench/semantic.ts [--sizes 10000,100000] [--rounds 3]
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtinEmbedder, MemoryIndex } from '../packages/server/src/engine/index.js';
import { VectorIndex } from '../packages/server/src/engine/vectors.js';
import { option } from './lib/args.js';
import { locomoCorpus, mulberry32 } from './lib/locomo.js';

const here = dirname(fileURLToPath(import.meta.url));
const sizes = (option('--sizes') ?? '10000,100000').split(',').map(Number);
const rounds = Number(option('--rounds') ?? 3);
const dataDir = process.env.ENGRAM_LOCOMO_DIR ?? resolve(here, '../../shared/bench/locomo-dev');
const { sentences, questions: asked } = locomoCorpus(dataDir);
const questions = asked.slice(0, 600);
const embedder = builtinEmbedder(512);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))]! * 1000) / 1000;
};

const out: Record<string, unknown> = { dims: 512, questions: questions.length, rounds };
for (const size of sizes) {
  const rand = mulberry32(size);
  const index = new MemoryIndex({ embedder: null });
  const built = performance.now();
  const texts = new Set<string>();
  while (texts.size < size)
    texts.add(
      Array.from({ length: 1 + Math.floor(rand() * 3) }, () => sentences[Math.floor(rand() * sentences.length)]).join(
        ' ',
      ),
    );
  let id = 0;
  const alone = new VectorIndex();
  alone.grow(size);
  for (const text of texts) {
    id++;
    const vector = embedder.embedSync(text);
    alone.set(id - 1, vector, size);
    index.upsert(
      {
        id,
        text,
        createdAt: 1_700_000_000_000 + id * 60_000,
        sessionId: `s${Math.floor(id / 20)}`,
        importance: 0.5,
        feedback: 0,
      },
      vector,
    );
  }
  const buildMs = performance.now() - built;
  const vectors = questions.map((q) => embedder.embedSync(q));
  const times: Record<'lexical' | 'bounded' | 'exact', number[]> = { lexical: [], bounded: [], exact: [] };
  let agree = 0;
  let asked = 0;
  for (let r = 0; r < rounds; r++) {
    questions.forEach((q, i) => {
      // The three in turn for each question, so that load on the machine falls on all three alike.
      let t = performance.now();
      index.search(q, { k: 10 });
      times.lexical.push(performance.now() - t);
      t = performance.now();
      const bounded = index.search(q, { k: 10, queryVector: vectors[i] });
      times.bounded.push(performance.now() - t);
      t = performance.now();
      const exact = index.search(q, { k: 10, queryVector: vectors[i], exactVectors: true });
      times.exact.push(performance.now() - t);
      if (r === 0) {
        const got = new Set(bounded.map((h) => h.id));
        agree += exact.length ? exact.filter((h) => got.has(h.id)).length / exact.length : 1;
        asked++;
      }
    });
  }
  // The candidate search alone against the exact nearest by the same codes.
  const CANDIDATES = 50;
  const nearestMs: number[] = [];
  let found = 0;
  const all = () => true;
  // The first 100 questions: the exact 50 cost a read of every vector each.
  const sample = vectors.slice(0, 100);
  for (const q of sample) {
    const t = performance.now();
    const rotated = alone.prepare(q);
    const near = alone.nearest(rotated, CANDIDATES, size, all);
    nearestMs.push(performance.now() - t);
    const exact = Array.from({ length: size }, (_, s) => [s, alone.cosine(rotated, s)] as const)
      .sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .slice(0, CANDIDATES);
    const got = new Set(near.slots);
    found += exact.filter(([s]) => got.has(s)).length / exact.length;
  }
  const p50 = { lexical: pct(times.lexical, 0.5), bounded: pct(times.bounded, 0.5), exact: pct(times.exact, 0.5) };
  out[size] = {
    build_s: Math.round(buildMs / 100) / 10,
    p50_ms: p50,
    p99_ms: { lexical: pct(times.lexical, 0.99), bounded: pct(times.bounded, 0.99), exact: pct(times.exact, 0.99) },
    bounded_over_lexical_p50: Math.round((p50.bounded / p50.lexical) * 100) / 100,
    top10_agreement_with_exact: Math.round((agree / asked) * 10000) / 10000,
    index_bytes: index.approxBytes(),
    candidates: {
      k: CANDIDATES,
      p50_ms: pct(nearestMs, 0.5),
      p99_ms: pct(nearestMs, 0.99),
      questions: sample.length,
      recall_against_exact: Math.round((found / sample.length) * 10000) / 10000,
    },
  };
  console.error(JSON.stringify({ [size]: out[size] }));
}
console.log(JSON.stringify(out, null, 2));
