// A search's working state: the thread's per-slot buffers and the bounded best-k list.
import type { SlotList } from './bm25-context.js';

/**
 * A search's per-slot working buffers, one set per thread and shared by every index it holds (a
 * search runs to its end before another begins), grown to the largest index searched and zero
 * between searches. Each index had its own (~70 bytes a slot, 9 MB at 100,000 memories, held by
 * every index in the cache, and touched afresh by the first search of a restored one).
 */
export class SearchBuffers {
  private static shared: SearchBuffers | null = null;
  lex = new Float64Array(0);
  meta = new Float64Array(0);
  ctx = new Float64Array(0);
  exp = new Float64Array(0);
  /** Per first-pass candidate (by its index in the touched list): its known score part, for ranking. */
  known = new Float64Array(0);
  /**
   * Per first-pass candidate: a value a pass's loop over the per-slot arrays leaves for a second loop that offers it
   * to a best-k list (a call in the first loop made V8 check every array again each slot). Not zeroed: each pass
   * writes the entries it reads.
   */
  offered = new Float64Array(0);
  /** The sessions a first pass summed, each once (room for every slot's, so its loop makes none). */
  sessionList = new Int32Array(0);
  /** 1 for the slots whose speaker/tags matched the current query (a byte a slot: cheaper to scan than `meta`). */
  metaHit = new Uint8Array(0);
  /** How a slot's query words are scored, by bm25-saturate.ts's markReach (zero between searches). */
  reach = new Uint8Array(0);
  tfSelf = new Float64Array(0);
  tfCtx = new Float64Array(0);
  // One more than the slots: a slot is written at the end of the list before it is known to be new.
  termTouched = new Int32Array(1);
  readonly touched: SlotList = { a: new Int32Array(0), n: 0 };
  readonly metaTouched: SlotList = { a: new Int32Array(0), n: 0 };
  readonly expTouched: SlotList = { a: new Int32Array(0), n: 0 };
  /**
   * The caller's filter asked once per slot and search: the stamp of the search that last asked it of a slot,
   * and its answer. A search takes a new stamp (nextFilterStamp), so nothing needs zeroing between searches.
   */
  filterAsked = new Uint32Array(0);
  filterPass = new Uint8Array(0);
  private filterStamp = 0;
  private slots = 0;
  /** Every page of the buffers written (prepare): nothing to do until they grow again. */
  private written = false;

  /** The thread's buffers, for an index of `slots` slots. */
  static forSlots(slots: number): SearchBuffers {
    const b = (SearchBuffers.shared ??= new SearchBuffers());
    if (slots > b.slots) b.grow(Math.max(slots, b.slots * 2));
    return b;
  }

  /**
   * The thread's buffers grown for an index of `slots` slots ahead of its first search, their pages
   * written now: a search of fresh buffers takes a page fault at each 4 KB it first touches, scattered
   * (~28 MB at 300,000 slots: 0.1-0.3 s of a first search after a restart, bench/README.md "The first
   * query after a restart, session 19"), which a caller does while it waits anyway (a snapshot's
   * decompression, snapshots.ts).
   */
  static prepare(slots: number): void {
    const b = SearchBuffers.forSlots(slots);
    if (b.written) return;
    b.written = true;
    for (const a of [b.lex, b.meta, b.ctx, b.exp, b.known, b.offered, b.tfSelf, b.tfCtx, b.termTouched]) a.fill(0);
    for (const a of [b.sessionList, b.touched.a, b.metaTouched.a, b.expTouched.a, b.filterAsked]) a.fill(0);
    for (const a of [b.metaHit, b.reach, b.filterPass]) a.fill(0);
  }

  /** Buffers of their own (shards of one search ranked on one thread each need theirs). */
  static own(slots: number): SearchBuffers {
    const b = new SearchBuffers();
    b.grow(Math.max(1, slots));
    return b;
  }

  /** New, zero buffers (the old ones are zero: nothing to carry over). */
  private grow(slots: number): void {
    this.slots = slots;
    this.written = false;
    this.lex = new Float64Array(slots);
    this.meta = new Float64Array(slots);
    this.ctx = new Float64Array(slots);
    this.exp = new Float64Array(slots);
    this.known = new Float64Array(slots);
    this.offered = new Float64Array(slots);
    this.sessionList = new Int32Array(slots);
    this.metaHit = new Uint8Array(slots);
    this.reach = new Uint8Array(slots);
    this.tfSelf = new Float64Array(slots);
    this.tfCtx = new Float64Array(slots);
    this.termTouched = new Int32Array(slots + 1);
    for (const l of [this.touched, this.metaTouched, this.expTouched]) l.a = new Int32Array(slots);
    this.filterAsked = new Uint32Array(slots);
    this.filterPass = new Uint8Array(slots);
  }

  /** A stamp no slot holds yet, for the filter answers of one search. */
  nextFilterStamp(): number {
    this.filterStamp = (this.filterStamp + 1) >>> 0;
    if (this.filterStamp === 0) {
      this.filterAsked.fill(0);
      this.filterStamp = 1;
    }
    return this.filterStamp;
  }

  /**
   * Zero again after a search of an index of `cap` slots, from its touched lists: slot by slot, or
   * whole when most of it was touched (a sequential fill is cheaper). The index's per-session sums too.
   */
  zero(cap: number, sessionScore: Float64Array, sessionsTouched: Iterable<number>): void {
    const { lex, ctx, exp } = this;
    const metaS = this.meta;
    const ta = this.touched.a;
    const tn = this.touched.n;
    const ma = this.metaTouched.a;
    const mn = this.metaTouched.n;
    const ea = this.expTouched.a;
    const en = this.expTouched.n;
    if (tn > cap >>> 3) {
      lex.fill(0, 0, cap);
      ctx.fill(0, 0, cap);
    } else {
      for (let i = 0; i < tn; i++) lex[ta[i]!] = ctx[ta[i]!] = 0;
    }
    for (let i = 0; i < mn; i++) metaS[ma[i]!] = 0;
    if (en > cap >>> 3) exp.fill(0, 0, cap);
    else for (let i = 0; i < en; i++) exp[ea[i]!] = 0;
    for (const sn of sessionsTouched) sessionScore[sn] = 0;
  }

  /** Zero again over the first `slots`, whatever a search left. */
  clear(slots: number): void {
    for (const a of [this.lex, this.meta, this.ctx, this.exp, this.tfSelf, this.tfCtx]) a.fill(0, 0, slots);
    this.metaHit.fill(0, 0, slots);
    this.reach.fill(0, 0, slots);
    this.touched.n = this.metaTouched.n = this.expTouched.n = 0;
  }
}

/**
 * Bounded best-k list, best first. Offering the same slot twice keeps one entry. With `ids` (the slots' ids),
 * equal scores are ordered by id, the lower (older) first, so the list does not depend on the order of the
 * offers: shards of an owner's index (rank-search.ts) then merge their lists into the whole's.
 */
export class TopK {
  // Parallel arrays (no object per offer): slots[i] scored scores[i], best first.
  private readonly slots: number[] = [];
  private readonly scores: number[] = [];
  /** The score an offer must reach: the k-th best once full, -Infinity before (kept in a field: read per candidate). */
  floor = -Infinity;
  constructor(
    private readonly k: number,
    private readonly ids: Float64Array | null = null,
  ) {}
  offer(slot: number, score: number): void {
    const slots = this.slots;
    const scores = this.scores;
    const ids = this.ids;
    let n = slots.length;
    if (score <= this.floor && (score < this.floor || ids === null || !(ids[slot]! < ids[slots[n - 1]!]!))) return;
    for (let j = 0; j < n; j++) if (slots[j] === slot) return;
    let i = n;
    if (ids === null) while (i > 0 && scores[i - 1]! < score) i--;
    else while (i > 0 && (scores[i - 1]! < score || (scores[i - 1] === score && ids[slots[i - 1]!]! > ids[slot]!))) i--;
    slots.push(slot);
    scores.push(score);
    for (let j = n; j > i; j--) {
      slots[j] = slots[j - 1]!;
      scores[j] = scores[j - 1]!;
    }
    slots[i] = slot;
    scores[i] = score;
    n++;
    if (n > this.k) {
      slots.pop();
      scores.pop();
      n--;
    }
    if (n >= this.k) this.floor = scores[n - 1]!;
  }
  sorted(): { slot: number; score: number }[] {
    return this.slots.map((slot, i) => ({ slot, score: this.scores[i]! }));
  }
}
