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

/**
 * A term's postings spread over the session neighbours (scoreWithContext, before saturation): each
 * slot the term touches, in first-touch order, with its own tf and its own + neighbours' weighted tf.
 * Kept across searches (Bm25Field.contextCacheShare) until a doc holding the term, or a doc next to
 * one, changes: what a search then does for the term is the saturation alone.
 */
export interface ContextPostings {
  slots: Int32Array;
  /** The slot's own tf (one compacted postings entry's, so within 16 bits: the same double read back). */
  own: Uint16Array;
  total: Float64Array;
}
/** Bytes of a context postings entry (slot i32, own u16, total f64) and of a kept term besides its entries (heap-bytes.ts). */
const CONTEXT_ENTRY_BYTES = 14;
const CONTEXT_TERM_BYTES = 3 * TYPED_ARRAY_BYTES + objectBytes(3) + MAP_ENTRY_BYTES;
/**
 * Terms with fewer postings are spread afresh each search: a short list costs little to spread, and
 * the long ones (a common word, ~10 % of the docs) are most of a search's time.
 */
export const CONTEXT_CACHE_MIN_POSTINGS = 64;

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
    this.bytes -= CONTEXT_TERM_BYTES + kept.slots.length * CONTEXT_ENTRY_BYTES;
  }

  /**
   * Keeps a term's context postings as just spread (gathered in first-touch order, leaving the
   * buffers zero); null (nothing gathered) when they do not fit in `budget` bytes in all.
   */
  keep(
    term: string,
    n: number,
    touchedSlots: Int32Array,
    tfSelf: Float64Array,
    tfCtx: Float64Array,
    budget: number,
  ): ContextPostings | null {
    const bytes = CONTEXT_TERM_BYTES + n * CONTEXT_ENTRY_BYTES;
    // Kept while they fit, and until a write changes them: no eviction, since a workload that asks
    // more terms than fit in turn (a benchmark's fixed list of questions) would evict each before its next use.
    if (this.bytes + bytes > budget) return null;
    const kept = { slots: touchedSlots.slice(0, n), own: new Uint16Array(n), total: new Float64Array(n) };
    for (let j = 0; j < n; j++) {
      const slot = touchedSlots[j]!;
      const ts = tfSelf[slot]!;
      kept.own[j] = ts;
      kept.total[j] = ts + tfCtx[slot]!;
      tfSelf[slot] = 0;
      tfCtx[slot] = 0;
    }
    this.terms.set(term, kept);
    this.bytes += bytes;
    return kept;
  }
}
