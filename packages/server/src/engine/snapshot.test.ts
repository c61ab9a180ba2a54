import { describe, expect, it } from 'vitest';
import { MemoryIndex } from './memory-index.js';
import { TF_MAX } from './bm25.js';
import { runInSlices, snapshotArrays, snapshotCuts } from './snapshot.js';
import { leaveBufferPool } from './text.js';
import type { EngineDoc } from './types.js';

const T0 = Date.UTC(2023, 4, 8);
const DAY = 86_400_000;

// A deterministic generator (mulberry32) of conversation-like turns.
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const WORDS = (
  'adoption agency painting sunrise lake hiking mountain swimming kids football snacks guitar concert ' +
  'pottery class camping trip beach sister brother wedding birthday cake marathon running shoes job ' +
  'interview promotion bakery recipe garden roses dog puppy cat vet library novel poetry museum Paris ' +
  'Tokyo flight hotel yesterday last week May 2022 Monday tomorrow I my we our you'
).split(' ');
const SPEAKERS = ['Caroline', 'Melanie', 'Jon', 'Gina'];

function turns(count: number, seed: number, firstId = 1): EngineDoc[] {
  const rand = random(seed);
  const pick = <T>(a: T[]) => a[Math.floor(rand() * a.length)]!;
  return Array.from({ length: count }, (_, i) => {
    const words = Array.from({ length: 3 + Math.floor(rand() * 12) }, () => pick(WORDS));
    return {
      id: firstId + i,
      text: words.join(' ') + (rand() < 0.2 ? '?' : '.'),
      sessionId: rand() < 0.8 ? `session_${Math.floor(i / 20)}` : null,
      createdAt: T0 + Math.floor(rand() * 60) * DAY,
      importance: Math.round(rand() * 10) / 10,
      feedback: rand() < 0.1 ? (rand() < 0.5 ? -1 : 2) : 0,
      speaker: rand() < 0.9 ? pick(SPEAKERS) : null,
      tags: rand() < 0.3 ? [pick(['travel', 'family', 'work', 'hobby'])] : [],
    };
  });
}

const QUERIES = [
  'When did Caroline go to the adoption agency?',
  'What did Melanie paint last week?',
  'guitar concert Tokyo',
  'What does Jon think about running shoes and marathon training?',
  'Which novel did Gina read in May 2022?',
  'travel',
  'puppy vet',
  'How long has Caroline been doing pottery?',
  'What happened yesterday?',
];

function answers(index: MemoryIndex): unknown[] {
  const out: unknown[] = [];
  for (const q of QUERIES) {
    out.push(index.search(q, { k: 10, now: T0 + 70 * DAY, explain: true }));
    out.push(index.search(q, { k: 5, now: T0 + 70 * DAY, sessionId: 'session_3' }));
    out.push(index.search(q, { k: 20, now: T0 + 70 * DAY, filter: (id) => id % 3 !== 0, requireEvidence: true }));
  }
  return out;
}

/** The same changes, applied to two indexes alike: removals, replacements and additions. */
function change(index: MemoryIndex, docs: EngineDoc[], seed: number): void {
  const rand = random(seed);
  for (const d of docs) if (rand() < 0.1) index.remove(d.id);
  const replaced = turns(40, seed + 1, 1);
  for (const d of replaced) index.upsert({ ...d, id: 1 + Math.floor(rand() * docs.length) });
  for (const d of turns(60, seed + 2, 10_000 + seed)) index.upsert(d);
}

describe('index snapshots', () => {
  it('restore answers every search as the index it was taken of, before and after further changes', () => {
    const docs = turns(1500, 7);
    const original = new MemoryIndex({ embedder: null });
    for (const d of docs) original.upsert(d);
    // A session emptied after restoring, then used again (below).
    const lone = turns(3, 5, 20_000).map((d) => ({ ...d, sessionId: 'session_lone' }));
    for (const d of lone) original.upsert(d);
    // Stale postings and reused slots are part of what a snapshot must carry.
    change(original, docs, 11);

    const bytes = original.snapshot();
    const restored = MemoryIndex.restore(bytes, { embedder: null });
    expect(restored.size).toBe(original.size);
    expect(answers(restored)).toEqual(answers(original));
    // Taken again, the snapshot is the same bytes.
    expect(Buffer.from(restored.snapshot()).equals(Buffer.from(bytes))).toBe(true);

    // Changes after restoring touch the restored (frozen) doc terms: removals, re-additions, new terms.
    change(original, docs, 23);
    change(restored, docs, 23);
    for (const index of [original, restored]) {
      for (const d of lone) index.remove(d.id);
      index.upsert({ ...turns(1, 9, 30_000)[0]!, sessionId: 'session_lone' });
    }
    expect(restored.size).toBe(original.size);
    expect(answers(restored)).toEqual(answers(original));
    expect(Buffer.from(restored.snapshot()).equals(Buffer.from(original.snapshot()))).toBe(true);
    const inLone = (index: MemoryIndex) =>
      index.search(turns(1, 9, 30_000)[0]!.text, { k: 5, now: T0, sessionId: 'session_lone' }).map((h) => h.id);
    expect(inLone(restored)).toEqual([30_000]);
    expect(inLone(original)).toEqual([30_000]);
    // A session the index never held matches no doc, not even those without a session.
    for (const index of [original, restored])
      expect(index.search('guitar lake', { k: 5, now: T0, sessionId: 'session_none' })).toEqual([]);
  });

  it('forgets the name of a session whose last doc is removed, in the index and its snapshot (issue 51)', () => {
    const index = new MemoryIndex({ embedder: null });
    for (const d of turns(60, 5)) index.upsert(d);
    for (const d of turns(3, 6, 500)) index.upsert({ ...d, sessionId: 'session_forgotten' });
    const held = (bytes: Uint8Array) => Buffer.from(bytes).includes('session_forgotten');
    expect(held(index.snapshot())).toBe(true);
    for (const id of [500, 501, 502]) index.remove(id);
    const bytes = index.snapshot();
    expect(held(bytes)).toBe(false);
    // Its number stays taken (placeholder): restored, the index answers as its original, and the session comes back anew.
    const restored = MemoryIndex.restore(bytes, { embedder: null });
    for (const one of [index, restored]) one.upsert({ ...turns(1, 7, 600)[0]!, sessionId: 'session_forgotten' });
    expect(answers(restored)).toEqual(answers(index));
    for (const one of [index, restored])
      expect(one.search(turns(1, 7, 600)[0]!.text, { k: 5, now: T0, sessionId: 'session_forgotten' })[0]?.id).toBe(600);
  });

  it("writes its header into the snapshot's own bytes, not through the thread's Buffer pool (issue 47)", () => {
    const index = new MemoryIndex({ embedder: null });
    for (const d of turns(3, 8)) index.upsert({ ...d, sessionId: 'session_zqmheader' });
    // Compared as bytes made outside the pool (`includes` of a string would cut it from the pool).
    const needle = Buffer.allocUnsafeSlow(17);
    needle.write('session_zqmheader');
    leaveBufferPool(); // a slab with room to spare: the header would not start a new one
    const bytes = index.snapshot();
    expect(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes(needle)).toBe(true);
    // Any Buffer cut from the current slab exposes all of it (`.buffer`).
    expect(Buffer.from(Buffer.allocUnsafe(1).buffer).includes(needle)).toBe(false);
  });

  it('carries sub-word and external vectors', () => {
    const docs = turns(200, 3);
    const vector = (id: number) => Float32Array.from({ length: 8 }, (_, i) => Math.sin(id * (i + 1)));
    const options = { weights: { ngram: 0.2 } };
    const original = new MemoryIndex(options);
    for (const d of docs) original.upsert(d, vector(d.id));
    const restored = MemoryIndex.restore(original.snapshot(), options);
    const search = (index: MemoryIndex) =>
      index.search('guitar lake', { k: 10, now: T0, explain: true, queryVector: vector(5) });
    expect(search(restored)).toEqual(search(original));
    expect(search(restored)[0]!.explanation!.semantic).toBeGreaterThan(0);
    expect(() => MemoryIndex.restore(original.snapshot(), { embedder: null })).toThrow(/sub-word/);
  });

  it('keeps a term counted past 16 bits at the cap, built and restored', () => {
    // Counts are 16-bit (TF_MAX): 65,536 would wrap to 0 and score the doc NaN without the cap.
    const index = new MemoryIndex({ embedder: null });
    index.upsert({
      id: 1,
      text: 'zebra '.repeat(TF_MAX + 1),
      sessionId: null,
      createdAt: T0,
      importance: 0.5,
      feedback: 0,
    });
    index.upsert({ id: 2, text: 'a zebra at the lake', sessionId: null, createdAt: T0, importance: 0.5, feedback: 0 });
    const hits = index.search('zebra', { k: 5, now: T0, explain: true });
    expect(hits.map((h) => h.id).sort()).toEqual([1, 2]);
    for (const hit of hits) expect(hit.explanation!.lexical).toBeGreaterThan(0);
    expect(
      MemoryIndex.restore(index.snapshot(), { embedder: null }).search('zebra', { k: 5, now: T0, explain: true }),
    ).toEqual(hits);
  });

  it('restores from pieces: cut where arrays begin (views), or anywhere (arrays across pieces copied)', () => {
    const original = new MemoryIndex({ embedder: null });
    for (const d of turns(600, 13)) original.upsert(d);
    const bytes = original.snapshot();
    const cuts = snapshotCuts(bytes, 4096);
    expect(cuts.length).toBeGreaterThan(2);
    for (const at of cuts) expect(at % 8).toBe(0);
    // The cuts are where arrays begin; the arrays, in order, aligned, end within the bytes.
    const arrays = snapshotArrays(bytes);
    for (const at of cuts) expect(arrays.some((a) => a.at === at)).toBe(true);
    for (const [i, a] of arrays.entries()) {
      expect(a.at % 8).toBe(0);
      if (i > 0) expect(a.at).toBeGreaterThanOrEqual(arrays[i - 1]!.at);
    }
    const last = arrays[arrays.length - 1]!;
    expect(last.at + last.length * { f64: 8, f32: 4, i32: 4, u16: 2, u8: 1, i8: 1 }[last.kind]).toBeLessThanOrEqual(
      bytes.length,
    );
    const arbitrary = Array.from({ length: Math.floor(bytes.length / 1001) }, (_, i) => (i + 1) * 1001);
    for (const at of [cuts, arbitrary]) {
      const bounds = [0, ...at, bytes.length];
      const pieces = bounds.slice(1).map((end, i) => Uint8Array.from(bytes.subarray(bounds[i]!, end)));
      const restored = MemoryIndex.restore(pieces, { embedder: null });
      expect(answers(restored)).toEqual(answers(original));
      expect(Buffer.from(restored.snapshot()).equals(Buffer.from(bytes))).toBe(true);
    }
  });

  it('an empty index round-trips, and bytes that are not a snapshot are refused', () => {
    const empty = MemoryIndex.restore(new MemoryIndex({ embedder: null }).snapshot(), { embedder: null });
    expect(empty.size).toBe(0);
    expect(empty.search('anything', { k: 5 })).toEqual([]);
    empty.upsert(turns(1, 1)[0]!);
    expect(empty.search(turns(1, 1)[0]!.text, { k: 5, now: T0 })).toHaveLength(1);

    const bytes = new MemoryIndex({ embedder: null }).snapshot();
    expect(() => MemoryIndex.restore(new Uint8Array(8), { embedder: null })).toThrow(/not an index snapshot/);
    const otherFormat = Uint8Array.from(bytes);
    otherFormat[4] = 99;
    expect(() => MemoryIndex.restore(otherFormat, { embedder: null })).toThrow(/another format/);
    expect(() => MemoryIndex.restore(bytes.subarray(0, bytes.length - 8), { embedder: null })).toThrow();
  });
});

/**
 * Changes to make one by one while a snapshot is being taken: removals (whole terms go with their
 * last doc), replacements (slots and sessions change), new docs (the slot arrays grow, new
 * sessions and terms appear), and removals of docs added since.
 */
function changes(docs: EngineDoc[], seed: number, removalFirst = true): Array<(index: MemoryIndex) => void> {
  const rand = random(seed);
  const added = turns(1500, seed + 1, 20_000).map((d, i) => ({
    ...d,
    sessionId: i % 3 === 0 ? `later_${i >> 4}` : d.sessionId,
    text: `${d.text} word${i}`,
  }));
  // The first changes after the first step: a removal and a doc added to another session the index holds.
  const removed = docs.find((d) => d.sessionId !== null)!;
  const session = docs.find((d) => d.sessionId !== null && d.sessionId !== removed.sessionId)!.sessionId;
  const first: Array<(index: MemoryIndex) => void> = [
    (index) => index.remove(removed.id),
    (index) => index.upsert({ ...added[0]!, id: 30_000, sessionId: session }),
  ];
  const out = removalFirst ? first : first.reverse();
  for (let i = 1; i < 1500; i++) {
    const r = rand();
    const old = docs[Math.floor(rand() * docs.length)]!;
    if (r < 0.25) out.push((index) => index.remove(old.id));
    else if (r < 0.5) out.push((index) => index.upsert({ ...added[i]!, id: old.id }));
    else if (r < 0.9) out.push((index) => index.upsert(added[i]!));
    else out.push((index) => index.remove(added[Math.floor(rand() * (i + 1))]!.id));
  }
  return out;
}

describe('a snapshot taken in steps', () => {
  /** A changed index (stale postings, reused slots), built or restored. */
  const indexOf = (restored: boolean) => {
    const docs = turns(6000, 5);
    const index = new MemoryIndex({ embedder: null });
    for (const d of docs) index.upsert(d);
    change(index, docs, 11);
    return { docs, index: restored ? MemoryIndex.restore(index.snapshot(), { embedder: null }) : index };
  };

  for (const restored of [false, true]) {
    it(`is the snapshot of the index at its first step, whatever changes between steps (${restored ? 'restored' : 'built'} index)`, () => {
      const { docs, index } = indexOf(restored);
      const expected = index.snapshot();
      const before = answers(index);
      const steps = index.snapshotSteps();
      const pending = changes(docs, 31, !restored);
      let step = steps.next();
      let between = 0;
      for (let i = 0; !step.done; i++) {
        // A few changes between two steps, none between others.
        for (let j = 2 - (i % 3); j > 0 && pending.length > 0; j--) pending.shift()!(index);
        between++;
        step = steps.next();
      }
      expect(between).toBeGreaterThan(20);
      expect(pending.length).toBeLessThan(1500);
      expect(Buffer.from(step.value).equals(Buffer.from(expected))).toBe(true);
      expect(answers(MemoryIndex.restore(step.value, { embedder: null }))).toEqual(before);

      // The changed index snapshots (and restores) as itself, the changes that came after included.
      for (const apply of pending) apply(index);
      const now = index.snapshot();
      expect(
        Buffer.from(MemoryIndex.restore(Uint8Array.from(now), { embedder: null }).snapshot()).equals(Buffer.from(now)),
      ).toBe(true);
      expect(answers(MemoryIndex.restore(now, { embedder: null }))).toEqual(answers(index));
    });
  }

  it('gives the event loop back between slices, and changes made meanwhile are not in it', async () => {
    const { docs, index } = indexOf(false);
    const expected = index.snapshot();
    const pending = changes(docs, 37);
    // Every turn of the event loop while it is being taken changes the index.
    let turns = 0;
    let done = false;
    const tick = () => {
      if (done) return;
      turns++;
      pending.shift()?.(index);
      setImmediate(tick);
    };
    setImmediate(tick);
    const bytes = await runInSlices(index.snapshotSteps(), 0);
    done = true;
    expect(turns).toBeGreaterThan(20);
    expect(Buffer.from(bytes).equals(Buffer.from(expected))).toBe(true);
  });

  it('is one at a time per index; snapshot() meanwhile is of the index as it is', () => {
    const { docs, index } = indexOf(false);
    const steps = index.snapshotSteps();
    steps.next();
    expect(() => index.snapshotSteps().next()).toThrow(/already being taken/);
    changes(docs, 41)
      .slice(0, 50)
      .forEach((apply) => apply(index));
    const changed = index.snapshot();
    expect(
      Buffer.from(MemoryIndex.restore(Uint8Array.from(changed), { embedder: null }).snapshot()).equals(
        Buffer.from(changed),
      ),
    ).toBe(true);
    while (!steps.next().done);
    // Over, the next one may begin.
    const next = index.snapshotSteps();
    expect(() => next.next()).not.toThrow();
    next.return(new Uint8Array(0));
  });
});

describe('an index fitted after its build', () => {
  it('answers as the index unfitted, holds and carries fewer bytes, and goes on taking docs alike', () => {
    const queries = ['hiking mountain', 'pottery class Caroline', 'When was the wedding?', 'guitar concert last week'];
    const search = (idx: MemoryIndex) =>
      queries.map((q, i) => idx.search(q, { k: 8, now: T0 + 90 * DAY, explain: true, queryVector: queryVectors[i] }));
    const queryVectors = queries.map((_, i) => Float32Array.from({ length: 16 }, (_, j) => Math.sin(i + j)));
    // 1,100 docs: the slots, the docs' lengths and terms and the postings grew by doubling past them.
    const [fitted, unfitted] = [new MemoryIndex({ embedder: null }), new MemoryIndex({ embedder: null })];
    const rand = random(9);
    const vector = () => Float32Array.from({ length: 16 }, () => rand() - 0.5);
    for (const d of turns(1_100, 5)) {
      const v = d.id % 3 === 0 ? vector() : undefined;
      for (const idx of [fitted, unfitted]) idx.upsert(d, v);
    }
    const [before, snapshotBefore] = [unfitted.approxBytes(), unfitted.snapshot().byteLength];
    fitted.fit();
    expect(fitted.approxBytes()).toBeLessThan(before * 0.9);
    expect(fitted.snapshot().byteLength).toBeLessThan(snapshotBefore);
    expect(search(fitted)).toEqual(search(unfitted));
    expect(search(MemoryIndex.restore(fitted.snapshot(), { embedder: null }))).toEqual(search(unfitted));
    // Grown again by new docs, changed and removed ones.
    for (const d of turns(300, 6, 1_001)) for (const idx of [fitted, unfitted]) idx.upsert(d);
    for (let id = 1; id <= 1_300; id += 7) for (const idx of [fitted, unfitted]) idx.remove(id);
    expect(search(fitted)).toEqual(search(unfitted));
  });
});
