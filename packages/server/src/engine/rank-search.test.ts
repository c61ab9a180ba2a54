import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryIndex } from './memory-index.js';
import { ShardSearch } from './rank-search.js';
import type { SearchOptions } from './types.js';

const T0 = Date.UTC(2023, 4, 8);
const FILLER = 'river stone cloud window bridge candle forest mirror garden ladder'.split(' ');

/**
 * 80 sessions of a long turn naming `apple` then a one-word turn: the term is kept (more postings than a term needs),
 * and each one-word turn is reached by its context alone, so a search defers it (bm25-saturate.ts's markReach).
 * Beside it the same docs in an index that keeps nothing, so defers nothing.
 */
function pair(): { kept: MemoryIndex; none: MemoryIndex } {
  const kept = new MemoryIndex({ embedder: null, contextCacheShare: 4 });
  const none = new MemoryIndex({ embedder: null, contextCacheShare: 0 });
  for (let s = 0; s < 80; s++) {
    const long = `apple ${FILLER.slice(0, 3 + (s % 7)).join(' ')} ${s % 3 === 0 ? 'apple' : ''}`;
    const docs = [long, 'lovely'].map((text, i) => ({
      id: 2 * s + i + 1,
      text,
      sessionId: `s${s}`,
      createdAt: T0 + (2 * s + i) * 60_000,
      importance: 0.5,
      feedback: 0,
    }));
    for (const d of docs) for (const idx of [kept, none]) idx.upsert(d);
  }
  return { kept, none };
}

describe('slots reached by one kept term’s context alone', () => {
  afterEach(() => vi.restoreAllMocks());

  it.each<[string, SearchOptions]>([
    // Only the one-word turns pass: the feedback docs are deferred ones, scored before feedback is read.
    ['the feedback docs', { k: 10, now: T0, explain: true, filter: (id) => id % 2 === 0 }],
    // More hits wanted than docs with their own words: deferred ones enter the top k, scored after the offers.
    ['the top k', { k: 150, now: T0, explain: true }],
  ])('are scored when they might enter %s: the answers of a search that defers none', (_what, opts) => {
    const { kept, none } = pair();
    const complete = vi.spyOn(ShardSearch.prototype, 'complete');
    for (let round = 0; round < 2; round++) expect(kept.search('apple', opts)).toEqual(none.search('apple', opts));
    // The second search reads the term kept by the first, and defers.
    expect(complete).toHaveBeenCalledTimes(1);
  });
});
