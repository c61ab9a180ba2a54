import { describe, expect, it } from 'vitest';
import { builtinEmbedder } from './embedder.js';
import { MemoryIndex } from './memory-index.js';
import { VECTOR_TRAIN_MIN } from './vectors.js';

// Texts of a few themes recombined, with the built-in hashed vectors (words and character n-grams)
// at 128 dimensions as a remote embedder's: near for texts that share words or sub-words.
const WORDS = `hiking mountain trail guitar concert band sushi ramen dinner puppy kitten shelter paint canvas museum
  marathon running shoes garden roses tomato violin lesson school teacher camping lake tent coffee beans roast`.split(
  /\s+/,
);
const embedder = builtinEmbedder(128);
const T0 = Date.UTC(2024, 0, 1);

function build(n: number, vectors = true): MemoryIndex {
  const index = new MemoryIndex({ embedder: null });
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  for (let id = 1; id <= n; id++) {
    const text = Array.from(
      { length: 4 + Math.floor(next() * 5) },
      () => WORDS[Math.floor(next() * WORDS.length)],
    ).join(' ');
    index.upsert(
      { id, text, createdAt: T0 + id * 60_000, sessionId: `s${Math.floor(id / 10)}`, importance: 0.5, feedback: 0 },
      vectors ? embedder.embedSync(text) : undefined,
    );
  }
  return index;
}

describe('compact vectors and the bounded candidate search', () => {
  const index = build(VECTOR_TRAIN_MIN * 3);
  const queries = [
    'evening concert with the band',
    'a puppy from the shelter',
    'ramen for dinner',
    'tent by the lake',
    'violin teacher',
    'roses',
  ];

  it('finds what scoring every vector finds, with int8 codes', () => {
    let agree = 0;
    let total = 0;
    for (const q of queries) {
      const queryVector = embedder.embedSync(q);
      const bounded = index.search(q, { k: 10, now: T0, queryVector }).map((h) => h.id);
      const exact = index.search(q, { k: 10, now: T0, queryVector, exactVectors: true }).map((h) => h.id);
      expect(exact).toHaveLength(10);
      agree += exact.filter((id) => bounded.includes(id)).length;
      total += exact.length;
      // A query with no word of any memory is answered by the vectors alone.
      const byVector = index.search('zzz', { k: 5, now: T0, queryVector, explain: true });
      expect(byVector).toHaveLength(5);
      for (const hit of byVector) expect(hit.explanation!.semantic).toBeGreaterThan(0);
    }
    expect(agree / total).toBeGreaterThanOrEqual(0.95);
    // About a quarter of float32's bytes (a code a dimension, a scale and a list per doc; slots grow by doubling).
    const floatBytes = VECTOR_TRAIN_MIN * 3 * 128 * 4;
    expect(build(VECTOR_TRAIN_MIN * 3).approxBytes() - build(VECTOR_TRAIN_MIN * 3, false).approxBytes()).toBeLessThan(
      floatBytes * 0.4,
    );
  });

  it('carries the codes and the trained lists in a snapshot: a restored index answers alike, and after changes', () => {
    const restored = MemoryIndex.restore(index.snapshot(), { embedder: null });
    const answers = (i: MemoryIndex) =>
      queries.map((q) => i.search(q, { k: 10, now: T0, queryVector: embedder.embedSync(q), explain: true }));
    expect(answers(restored)).toEqual(answers(index));
    const text = 'hiking trail to the mountain lake';
    for (const i of [index, restored]) {
      i.upsert(
        { id: 999_999, text, createdAt: T0, sessionId: null, importance: 0.5, feedback: 0 },
        embedder.embedSync(text),
      );
      i.remove(5);
    }
    expect(answers(restored)).toEqual(answers(index));
    expect(restored.search('hiking lake', { k: 3, now: T0, queryVector: embedder.embedSync(text) })[0]!.id).toBe(
      999_999,
    );
  });

  it('attaches a vector to a held doc later (background embedding)', () => {
    const late = new MemoryIndex({ embedder: null });
    late.upsert({ id: 1, text: 'guitar lesson', createdAt: T0, sessionId: null, importance: 0.5, feedback: 0 });
    late.upsert(
      { id: 2, text: 'a quiet morning', createdAt: T0, sessionId: null, importance: 0.5, feedback: 0 },
      embedder.embedSync('a quiet morning'),
    );
    const queryVector = embedder.embedSync('guitar lessons');
    expect(late.search('zzz', { k: 2, now: T0, queryVector }).map((h) => h.id)).toEqual([2]);
    expect(late.setVector(1, embedder.embedSync('guitar lesson'))).toBe(true);
    expect(late.setVector(3, queryVector)).toBe(false);
    expect(late.search('zzz', { k: 2, now: T0, queryVector }).map((h) => h.id)[0]).toBe(1);
  });
});
