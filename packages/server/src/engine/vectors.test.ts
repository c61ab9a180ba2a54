import { describe, expect, it } from 'vitest';
import { builtinEmbedder } from './embedder.js';
import { MemoryIndex } from './memory-index.js';
import { arena } from './vector-arena.js';
import { kthLargest, rotation, unit, VECTOR_TRAIN_MIN, VectorIndex } from './vectors.js';

// Texts of a few themes recombined, with the built-in hashed vectors (words and character n-grams)
// at 128 dimensions as a remote embedder's: near for texts that share words or sub-words.
const WORDS = `hiking mountain trail guitar concert band sushi ramen dinner puppy kitten shelter paint canvas museum
  marathon running shoes garden roses tomato violin lesson school teacher camping lake tent coffee beans roast`.split(
  /\s+/,
);
const embedder = builtinEmbedder(128);
const T0 = Date.UTC(2024, 0, 1);

function build(n: number, vectors = true, vectorKernel: 'wasm' | 'js' = 'wasm'): MemoryIndex {
  const index = new MemoryIndex({ embedder: null, vectorKernel });
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

describe('the WebAssembly kernel and its arena', () => {
  it('ranks as the JavaScript dot product does (bounded and exact), cosines within 1e-3', () => {
    const n = VECTOR_TRAIN_MIN * 2;
    const [simd, js] = [build(n), build(n, true, 'js')];
    for (const q of ['evening concert with the band', 'a puppy from the shelter', 'tent by the lake', 'zzz']) {
      const queryVector = embedder.embedSync(q);
      for (const exactVectors of [false, true]) {
        const [a, b] = [simd, js].map((i) => i.search(q, { k: 10, now: T0, queryVector, exactVectors, explain: true }));
        expect(a!.map((h) => h.id)).toEqual(b!.map((h) => h.id));
        a!.forEach((h, i) => expect(h.explanation!.semantic).toBeCloseTo(b![i]!.explanation!.semantic!, 3));
      }
    }
    const probe = new VectorIndex();
    probe.resize(4);
    probe.set(0, embedder.embedSync('guitar'), 4);
    expect(probe.simd).toBe(true);
  });

  it('reads sign bits as JavaScript does, for any number of dimensions (an odd count of sign bytes too)', () => {
    for (const dims of [100, 128, 200]) {
      const e = builtinEmbedder(dims);
      const n = VECTOR_TRAIN_MIN - 48;
      const [simd, js] = [new VectorIndex(), new VectorIndex({ kernel: 'js' })];
      for (const v of [simd, js]) {
        v.resize(n);
        for (let i = 0; i < n; i++)
          v.set(i, e.embedSync(`${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} ${i}`), n);
      }
      for (const q of ['guitar concert', 'puppy shelter', 'lake tent camping']) {
        const [a, b] = [simd, js].map((v) => v.nearest(v.prepare(unit(e.embedSync(q))), 20, n, () => true));
        // The same 20 but where the quantised query moves a doc across the rescoring cut or two cosines' order.
        expect(a!.slots.filter((s) => b!.slots.includes(s)).length).toBeGreaterThanOrEqual(19);
        expect(a!.cosines[0]).toBeCloseTo(b!.cosines[0]!, 3);
        expect(a!.cosines[19]).toBeCloseTo(b!.cosines[19]!, 2);
      }
    }
  });

  it('zeroes a forgotten vector at once, and the codes an index outgrew', () => {
    const vectors = new VectorIndex();
    // 40 slots: the codes' block (5,120 bytes -> 8 KiB) and the signs' (640 -> 4 KiB) are of other sizes
    // than the signs' next block, which could otherwise reuse the codes' old one.
    vectors.resize(40);
    for (let s = 0; s < 8; s++) vectors.set(s, embedder.embedSync(`${WORDS[s]} ${WORDS[s + 1]}`), 40);
    const d = vectors.dims;
    const before = vectors.codes;
    const zero = (a: ArrayLike<number>) => Array.prototype.every.call(a, (x: number) => x === 0);
    expect(zero(before.subarray(3 * d, 4 * d))).toBe(false);
    vectors.delete(3);
    expect(zero(vectors.codes.subarray(3 * d, 4 * d))).toBe(true);
    expect(zero(vectors.signs.subarray(3 * vectors.signBytes, 4 * vectors.signBytes))).toBe(true);
    expect(vectors.scale[3]).toBe(0);
    const kept = vectors.codes.slice(0, 8 * d);
    const signsBefore = vectors.signs;
    vectors.resize(64);
    // The old blocks (the same memory: a shared memory's views stay valid) are zeroed; the codes moved.
    expect(zero(before)).toBe(true);
    expect(zero(signsBefore)).toBe(true);
    expect([...vectors.codes.subarray(0, 8 * d)]).toEqual([...kept]);
    const q = vectors.prepare(unit(embedder.embedSync(`${WORDS[4]} ${WORDS[5]}`)));
    expect(vectors.nearest(q, 1, 64, () => true).slots).toEqual([4]);
  });

  it('gives a block back zeroed and hands it out again', () => {
    const a = arena.allocate(10_000, Int8Array)!;
    a.view.fill(7);
    arena.release(a);
    expect(a.view.every((x) => x === 0)).toBe(true);
    const b = arena.allocate(9_000, Int8Array)!;
    expect(b.at).toBe(a.at);
    expect(b.view.every((x) => x === 0)).toBe(true);
    arena.release(b);
  });
});

describe('the rotation and the sign bits', () => {
  it('keeps dot products (an orthogonal map), for dimensions of any size', () => {
    for (const dims of [8, 100, 512, 1536]) {
      const rotate = rotation(dims);
      const a = Float32Array.from({ length: dims }, (_, i) => (i % 7 === 0 ? 1 : 0));
      const b = Float32Array.from({ length: dims }, (_, i) => Math.sin(i));
      const dot = (x: Float32Array, y: Float32Array) => x.reduce((s, v, i) => s + v * y[i]!, 0);
      expect(dot(rotate(a), rotate(b))).toBeCloseTo(dot(a, b), 3);
      expect(dot(rotate(a), rotate(a))).toBeCloseTo(dot(a, a), 3);
    }
  });

  it('spreads a sparse vector over every dimension, so that its sign bits describe it', () => {
    const sparse = new Float32Array(512);
    sparse[3] = 1;
    sparse[300] = -0.5;
    const rotated = rotation(512)(sparse);
    expect(rotated.filter((x) => x === 0)).toHaveLength(0);
  });

  it('ranks by sign bits, then rescores exactly: the same nearest as scoring every code', () => {
    const vectors = new VectorIndex();
    // Below VECTOR_TRAIN_MIN every vector is read (by its bits): the sign bits alone pick what is rescored.
    const n = VECTOR_TRAIN_MIN - 48;
    vectors.resize(n);
    const texts = Array.from(
      { length: n },
      (_, i) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} ${i}`,
    );
    texts.forEach((text, i) => vectors.set(i, embedder.embedSync(text), n));
    let found = 0;
    for (const q of ['guitar concert', 'puppy shelter', 'lake tent camping']) {
      const query = vectors.prepare(embedder.embedSync(q));
      const near = vectors.nearest(query, 20, n, () => true);
      const exact = Array.from({ length: n }, (_, s) => [s, vectors.cosine(query, s)] as const)
        .sort((a, b) => b[1] - a[1] || a[0] - b[0])
        .slice(0, 20);
      found += exact.filter(([s]) => near.slots.includes(s)).length;
      expect(near.cosines[0]).toBeCloseTo(exact[0]![1], 6);
    }
    expect(found / 60).toBeGreaterThanOrEqual(0.95);
  });
});

describe('kthLargest', () => {
  it('is the value a full sort puts k-th from the top, for any k, with ties', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (const n of [1, 2, 3, 10, 257, 1000]) {
      // Few distinct values as well as many: ties are where a partition goes wrong.
      for (const distinct of [3, 1e9]) {
        const values = Float32Array.from({ length: n + 5 }, () => Math.floor(next() * distinct));
        const sorted = values.slice(0, n).sort();
        for (const k of [1, 2, Math.ceil(n / 2), n]) expect(kthLargest(values, n, k)).toBe(sorted[n - k]);
      }
    }
  });
});
