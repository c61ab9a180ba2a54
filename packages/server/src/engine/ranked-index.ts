// What ranking (rank.ts) reads of an index, and the key of its cached normalisations: MemoryIndex
// hands over its own fields for one search.
import type { Bm25Field } from './bm25.js';
import type { ContextScratch } from './bm25-context.js';
import type { BuiltinEmbedder } from './embedder.js';
import type { RankingWeights } from './ranking-weights.js';
import type { VectorIndex } from './vectors.js';

/** What the cached length normalisations (ContextScratch.norm) were computed under. */
export interface NormKey {
  mutations: number;
  window: number;
  weight: number;
  decay: number;
  backward: number;
}

/** What ranking reads of an index: MemoryIndex.search hands over its own fields for one search. */
export interface RankedIndex {
  readonly weights: RankingWeights;
  readonly capacity: number;
  readonly live: Uint8Array;
  readonly slotId: Float64Array;
  readonly createdAt: Float64Array;
  readonly namesTime: Uint8Array;
  readonly firstPerson: Uint8Array;
  readonly endsAsking: Uint8Array;
  readonly importance: Float32Array;
  readonly feedback: Float32Array;
  readonly maxCreatedAt: number;
  readonly maxImportanceDev: number;
  readonly maxAbsFeedback: number;
  readonly sessionNo: Int32Array;
  readonly sessionNos: ReadonlyMap<string, number>;
  /** Per-session sums of a search, by session number (zero between searches). */
  readonly sessionBuf: Float64Array;
  readonly prevSlot: Int32Array;
  readonly nextSlot: Int32Array;
  readonly text: Bm25Field;
  readonly meta: Bm25Field;
  readonly embedder: BuiltinEmbedder | null;
  readonly dims: number;
  readonly ngramVecs: Float32Array;
  readonly vectors: VectorIndex;
  readonly scratch: ContextScratch;
  readonly mutations: number;
  readonly normKey: NormKey;
}
