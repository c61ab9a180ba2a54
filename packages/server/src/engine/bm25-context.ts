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
  /**
   * The slot's own + neighbours' tf, by its number in `totals`: a term's entries hold few distinct ones
   * (sums of a few small counts at the context weights), so an entry takes 8 bytes, not 14, and a budget
   * keeps nearly twice the terms.
   */
  totalNo: Uint16Array;
  /** The distinct totals, each the same double the spread summed. */
  totals: Float64Array;
}
/** Bytes of a context postings entry (slot i32, own u16, total's number u16) and of a kept term besides its entries (heap-bytes.ts). */
const CONTEXT_ENTRY_BYTES = 8;
const CONTEXT_TERM_BYTES = 4 * TYPED_ARRAY_BYTES + objectBytes(4) + MAP_ENTRY_BYTES;
/** Distinct totals a kept term may hold (a u16 number each); a term with more is spread each search. */
export const MAX_TOTALS = 0x10000;
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
  /** keep's working map: a total's number by its value. */
  private readonly totalNumbers = new Map<number, number>();

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
    this.bytes -= CONTEXT_TERM_BYTES + kept.slots.length * CONTEXT_ENTRY_BYTES + kept.totals.byteLength;
  }

  /**
   * Keeps a term's context postings as just spread (gathered in first-touch order, leaving the
   * buffers zero); null (the buffers as they were) when they do not fit in `budget` bytes in all, or
   * hold more distinct totals than a u16 numbers.
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
    const own = new Uint16Array(n);
    const totalNo = new Uint16Array(n);
    const numbers = this.totalNumbers;
    numbers.clear();
    for (let j = 0; j < n; j++) {
      const slot = touchedSlots[j]!;
      const ts = tfSelf[slot]!;
      const total = ts + tfCtx[slot]!;
      let no = numbers.get(total);
      if (no === undefined) numbers.set(total, (no = numbers.size));
      own[j] = ts;
      totalNo[j] = no;
    }
    const bytes = CONTEXT_TERM_BYTES + entryBytes + numbers.size * Float64Array.BYTES_PER_ELEMENT;
    if (numbers.size > MAX_TOTALS || this.bytes + bytes > budget) {
      numbers.clear();
      return null;
    }
    for (let j = 0; j < n; j++) {
      const slot = touchedSlots[j]!;
      tfSelf[slot] = 0;
      tfCtx[slot] = 0;
    }
    const kept = { slots: touchedSlots.slice(0, n), own, totalNo, totals: Float64Array.from(numbers.keys()) };
    numbers.clear();
    this.terms.set(term, kept);
    this.bytes += bytes;
    return kept;
  }
}
