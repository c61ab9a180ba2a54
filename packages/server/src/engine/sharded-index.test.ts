import { describe, expect, it } from 'vitest';
import { MemoryIndex } from './memory-index.js';
import { TopK } from './search-buffers.js';
import { ShardedIndex } from './sharded-index.js';
import type { EngineDoc, SearchOptions } from './types.js';

const T0 = Date.UTC(2023, 4, 8);
const WORDS = (
  'painting lake sunrise hiking mountain kids swimming dog adopt shelter guitar concert friday ' +
  'restaurant italian kitchen table garden roses camping tent sister birthday cake marathon ' +
  'running shoes pottery class museum trip paris vacation book novel library coffee morning'
).split(' ');
const FILLER = 'I we you really think that was so the a and it my yesterday today'.split(' ');

/** A seeded corpus of sessions of 12 turns (some without a session), speakers and tags included. */
function corpus(n: number, seed = 11): EngineDoc[] {
  let x = seed;
  const rand = () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
  const pick = <T>(a: T[]) => a[Math.floor(rand() * a.length)]!;
  return Array.from({ length: n }, (_, i) => {
    const words = Array.from({ length: 3 + Math.floor(rand() * 9) }, () =>
      rand() < 0.45 ? pick(WORDS) : pick(FILLER),
    );
    const session = Math.floor(i / 12);
    return {
      id: i + 1,
      text: `${words.join(' ')}${rand() < 0.2 ? '?' : '.'}`,
      sessionId: session % 7 === 6 ? null : `s${session}`,
      createdAt: T0 + i * 60_000,
      importance: rand() < 0.1 ? 0.9 : 0.5,
      feedback: rand() < 0.05 ? 1 : 0,
      speaker: pick(['Caroline', 'Melanie', null]),
      tags: rand() < 0.1 ? ['travel'] : [],
    };
  });
}
/** Shard of a doc: by its session (a session's docs in one shard), by id without one. */
const shardOf = (d: EngineDoc) => (d.sessionId === null ? d.id : Number(d.sessionId.slice(1))) % 2;

const QUERIES = [
  'When did Caroline go hiking in the mountains?',
  'What did Melanie paint last summer?',
  'kids swimming lake',
  'Which restaurant on friday',
  'resturant kitchn', // typos: the whole's held terms
  'travel plans for paris',
  'What book is she reading in the morning?',
  'adopt a dog from the shelter',
  'zebra', // no doc holds it
  "what's new?",
];
const OPTIONS: SearchOptions[] = [
  { k: 10, now: T0 },
  { k: 10, now: T0, explain: true },
  { k: 3, now: T0 },
  { k: 10, now: T0, filter: (id) => id % 3 !== 0 },
  { k: 10, now: T0, sessionId: 's4' },
  { k: 10, now: T0, requireEvidence: true, minRelevance: 0.1 },
  { k: 500, now: T0 },
];

function both(docs: EngineDoc[]): { whole: MemoryIndex; parts: MemoryIndex[]; sharded: ShardedIndex } {
  const whole = new MemoryIndex({ embedder: null });
  const parts = [new MemoryIndex({ embedder: null }), new MemoryIndex({ embedder: null })];
  for (const d of docs) {
    whole.upsert(d);
    parts[shardOf(d)]!.upsert(d);
  }
  return { whole, parts, sharded: new ShardedIndex(parts) };
}
function differing(whole: MemoryIndex, sharded: ShardedIndex): number {
  let n = 0;
  for (const q of QUERIES)
    for (const o of OPTIONS) if (JSON.stringify(whole.search(q, o)) !== JSON.stringify(sharded.search(q, o))) n++;
  return n;
}

describe('TopK with ids', () => {
  it('orders equal scores by id, the lower first, whatever the order of the offers', () => {
    const ids = Float64Array.from([40, 10, 30, 20, 50]);
    const offers: [number, number][] = [
      [0, 1],
      [1, 1],
      [2, 2],
      [3, 1],
      [4, 1],
    ];
    const lists = [offers, [...offers].reverse()].map((o) => {
      const top = new TopK(3, ids);
      for (const [slot, score] of o) top.offer(slot, score);
      return top.sorted().map((e) => ids[e.slot]);
    });
    expect(lists).toEqual([
      [30, 10, 20],
      [30, 10, 20],
    ]);
  });
});

describe('ShardedIndex', () => {
  it('answers every kind of search as one index holding every doc: ids, scores, order, explanations', () => {
    const { whole, sharded } = both(corpus(1500));
    expect(whole.search(QUERIES[0]!, OPTIONS[0]!).length).toBe(10);
    expect(differing(whole, sharded)).toBe(0);
  });

  it('stays so through writes: updates, a doc moved to another session, removals', () => {
    const docs = corpus(1200);
    const { whole, parts, sharded } = both(docs);
    sharded.search(QUERIES[0]!, OPTIONS[0]!); // normalisations cached, then stale
    const apply = (d: EngineDoc | number) => {
      if (typeof d === 'number') {
        whole.remove(d);
        for (const p of parts) p.remove(d);
        return;
      }
      whole.upsert(d);
      for (const p of parts) p.remove(d.id);
      parts[shardOf(d)]!.upsert(d);
    };
    apply({ ...docs[5]!, text: 'hiking the mountains with the kids at sunrise' });
    apply({ ...docs[30]!, sessionId: 's5' }); // from session 2 (shard 0) into session 5 (shard 1)
    for (let id = 100; id < 160; id += 3) apply(id);
    apply({ ...docs[0]!, id: 5000, text: 'a new painting of the lake', sessionId: 's1' });
    expect(differing(whole, sharded)).toBe(0);
  });

  it("differs when each shard scores with its own statistics, not the whole's", () => {
    const { whole, parts, sharded } = both(corpus(1500));
    for (const p of parts) p.fields.text.stats = p.fields.meta.stats = null;
    expect(differing(whole, sharded)).toBeGreaterThan(0);
  });
});
