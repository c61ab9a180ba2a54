// Bm25Field.scoreWithContext's working state: the caller's buffers, the touched lists, and the
// terms' context postings that a field keeps between searches.
import { MAP_ENTRY_BYTES, objectBytes, TYPED_ARRAY_BYTES } from './heap-bytes.js';

/** Reusable per-caller buffers for scoreWithContext; all indexed by slot (length >= slot capacity). */
export interface ContextScratch {
  tfSelf: Float64Array;
  tfCtx: Float64Array;
  /** Slots touched by the current term (length at least the slot capacity + 1). */
  termTouched: Int32Array;
  /** Per-slot cached length normalisation, 0 where not computed yet; valid while normStamp === stamp. */
  norm: Float64Array;
  /** The stamp the cached normalisations were computed under (0: none). */
  normStamp: number;
  /** Current stamp; the caller changes it whenever lengths, links or parameters may have changed. */
  stamp: number;
}

/** Slots appended in first-touch order. */
export interface SlotList {
  a: Int32Array;
  n: number;
}

/** The list's array, twice as long (its entries kept). */
export function growList(l: SlotList): Int32Array {
  const a = new Int32Array(Math.max(64, l.a.length * 2));
  a.set(l.a);
  return (l.a = a);
}

/** The list's array, with room for `more` entries after its `n`. */
export function listRoom(l: SlotList, more: number): Int32Array {
  let a = l.a;
  while (a.length < l.n + more) a = growList(l);
  return a;
}

/**
 * A term's postings spread over the session neighbours (scoreWithContext, before saturation): each
 * slot the term touches, in first-touch order, with its own tf and its own + neighbours' weighted tf.
 * Kept across searches (Bm25Field.contextCacheShare) until a doc holding the term, or a doc next to
 * one, changes: what a search then does for the term is the saturation alone.
 */
export interface ContextPostings {
  slots: Int32Array;
  /**
   * The slot's own tf and own + neighbours' tf, by their pair's number in `pairs`: a term's entries hold
   * few distinct pairs (a small own count beside sums of a few small counts at the context weights), so an
   * entry takes 6 bytes, not 14, and a budget keeps twice the terms.
   */
  pairNo: Uint16Array;
  /** The distinct pairs, own then total: the own tf (one compacted postings entry's) and the same total double the spread summed. */
  pairs: Float64Array;
  /** The field's norm epoch (Bm25Field) under which every entry's slot has its length normalisation cached; -1: not yet. */
  normEpoch: number;
  /**
   * Under that epoch, the largest t / (t + norm) of an entry with no own tf: what bounds the score the term gives
   * a slot by its context alone (a deferred slot's, bm25-saturate.ts's markReach).
   */
  ctxMost: number;
}
/** Bytes of a context postings entry (slot i32, pair's number u16) and of a kept term besides its entries (heap-bytes.ts). */
const CONTEXT_ENTRY_BYTES = 6;
const CONTEXT_TERM_BYTES = 3 * TYPED_ARRAY_BYTES + objectBytes(4) + MAP_ENTRY_BYTES;
/** Distinct (own, total) pairs a kept term may hold (a u16 number each); a term with more is spread each search. */
export const MAX_PAIRS = 0x10000;
/**
 * Terms with fewer postings are spread afresh each search: a short list costs little to spread, and
 * the long ones (a common word, ~10 % of the docs) are most of a search's time.
 */
export const CONTEXT_CACHE_MIN_POSTINGS = 64;

/** keep's hashing of a pair: its own tf and total, and their bits. */
const pairBits = new Float64Array(2);
const pairWords = new Int32Array(pairBits.buffer);

/** Kept context postings by term, all spread with the same context parameters. */
export class ContextCache {
  private readonly terms = new Map<string, ContextPostings>();
  /** Bytes of what is kept. */
  bytes = 0;
  /** The context parameters they were spread with. */
  private key = '';

  get size(): number {
    return this.terms.size;
  }

  get(term: string): ContextPostings | undefined {
    return this.terms.get(term);
  }

  /** Drops everything kept when the context parameters are not those it was spread with. */
  useParameters(key: string): void {
    if (key === this.key) return;
    this.terms.clear();
    this.bytes = 0;
    this.key = key;
  }

  drop(term: string): void {
    const kept = this.terms.get(term);
    if (!kept) return;
    this.terms.delete(term);
    this.bytes -= CONTEXT_TERM_BYTES + kept.slots.length * CONTEXT_ENTRY_BYTES + kept.pairs.byteLength;
  }

  /**
   * Keeps a term's context postings as just spread (gathered in first-touch order, leaving the
   * buffers zero); null (the buffers as they were) when they do not fit in `budget` bytes in all, or
   * hold more distinct (own, total) pairs than a u16 numbers.
   */
  keep(
    term: string,
    n: number,
    touchedSlots: Int32Array,
    tfSelf: Float64Array,
    tfCtx: Float64Array,
    budget: number,
  ): ContextPostings | null {
    const entryBytes = n * CONTEXT_ENTRY_BYTES;
    // Kept while they fit, and until a write changes them: no eviction, since a workload that asks
    // more terms than fit in turn (a benchmark's fixed list of questions) would evict each before its next use.
    if (this.bytes + CONTEXT_TERM_BYTES + entryBytes > budget) return null;
    const pairNo = new Uint16Array(n);
    // A pair's number (+ 1, 0: free) by a hash of its two values, open addressing at most half full: a
    // Map of Maps keyed by the values boxed a heap number for each entry's total, and keeping was a
    // third of a first search's time at 300,000 docs (bench/README.md, "The first query after a restart").
    const most = Math.min(n, MAX_PAIRS + 1);
    let mask = 63;
    while (mask < 2 * most) mask = mask * 2 + 1;
    const numbers = new Int32Array(mask + 1);
    const pairs: number[] = [];
    for (let j = 0; j < n; j++) {
      const slot = touchedSlots[j]!;
      const ts = tfSelf[slot]!;
      const total = ts + tfCtx[slot]!;
      pairBits[0] = ts;
      pairBits[1] = total;
      let at =
        Math.imul(pairWords[1]! ^ pairWords[0]!, 0x9e3779b1) ^ Math.imul(pairWords[3]! ^ pairWords[2]!, 0x85ebca6b);
      at = Math.imul(at ^ (at >>> 16), 0x7feb352d);
      at = (at ^ (at >>> 15)) & mask;
      let no = numbers[at]! - 1;
      while (no >= 0 && (pairs[2 * no] !== ts || pairs[2 * no + 1] !== total)) {
        at = (at + 1) & mask;
        no = numbers[at]! - 1;
      }
      if (no < 0) {
        no = pairs.length >> 1;
        if (no === MAX_PAIRS) return null;
        numbers[at] = no + 1;
        pairs.push(ts, total);
      }
      pairNo[j] = no;
    }
    const bytes = CONTEXT_TERM_BYTES + entryBytes + pairs.length * Float64Array.BYTES_PER_ELEMENT;
    if (this.bytes + bytes > budget) return null;
    for (let j = 0; j < n; j++) {
      const slot = touchedSlots[j]!;
      tfSelf[slot] = 0;
      tfCtx[slot] = 0;
    }
    const kept = {
      slots: touchedSlots.slice(0, n),
      pairNo,
      pairs: Float64Array.from(pairs),
      normEpoch: -1,
      ctxMost: 0,
    };
    this.terms.set(term, kept);
    this.bytes += bytes;
    return kept;
  }
}
