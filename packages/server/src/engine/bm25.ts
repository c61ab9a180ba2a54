// Incremental BM25 over an inverted index keyed by dense slots (see MemoryIndex).
// Adding or removing a document touches only that document's postings.
import type { SnapshotReader, SnapshotWriter, Steps } from './snapshot.js';

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

/**
 * Term frequencies are kept as 16-bit counts (postings and restored doc terms: 6 bytes an entry,
 * not 12), a count in one doc capped here. A memory's text is at most 32,000 characters, so no
 * stored doc reaches the cap; BM25 has saturated long before it.
 */
export const TF_MAX = 0xffff;
/** Bytes of a postings entry: its slot (i32) and tf (u16). */
const ENTRY_BYTES = 6;

/**
 * One term's postings: (slot, tf) appended in the order docs were added. Removing a doc leaves
 * its entries behind (dirty) and a slot added again appends a new entry; compacting keeps each
 * slot's last entry if its doc still holds the term, so the order is always that of the docs'
 * last additions (what an insertion-ordered map would give, without a map entry per posting).
 */
interface Postings {
  /** The term's number in the restored snapshot's dictionary (frozen doc terms), -1 for a term added since. */
  id: number;
  slots: Int32Array;
  tfs: Uint16Array;
  /** Entries in the arrays, stale ones included while dirty. */
  n: number;
  /** Docs holding the term (document frequency). */
  live: number;
  dirty: boolean;
}

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

/**
 * A term's postings spread over the session neighbours (scoreWithContext, before saturation): each
 * slot the term touches, in first-touch order, with its own tf and its own + neighbours' weighted tf.
 * Kept across searches (Bm25Field.contextCacheShare) until a doc holding the term, or a doc next to
 * one, changes: what a search then does for the term is the saturation alone.
 */
interface ContextPostings {
  slots: Int32Array;
  own: Float64Array;
  total: Float64Array;
}
/** Bytes of a context postings entry (slot i32, own and total f64) and of a kept term besides its entries. */
const CONTEXT_ENTRY_BYTES = 20;
const CONTEXT_TERM_BYTES = 96;
/**
 * Terms with fewer postings are spread afresh each search: a short list costs little to spread, and
 * the long ones (a common word, ~10 % of the docs) are most of a search's time.
 */
const CONTEXT_CACHE_MIN_POSTINGS = 64;

/** Slots appended in first-touch order. */
export interface SlotList {
  a: Int32Array;
  n: number;
}

/**
 * The doc terms of a restored snapshot, in one array (terms of slot s at start[s]..end[s], in the
 * order the doc first used them; start -1 once the doc is removed or added again): a map per doc
 * would cost what restoring saves.
 */
interface FrozenDocTerms {
  start: Int32Array;
  end: Int32Array;
  terms: Int32Array;
  tfs: Uint16Array;
  dictionary: string[];
}

/**
 * What a snapshot taken in steps (snapshotSteps) needs of a field as it was when it began: read
 * then, or kept by the changes since (before they change it) while it has yet to read it.
 */
export interface FieldTake {
  dictionary: string[];
  /** Each term's number in the dictionary. */
  ids: Map<string, number>;
  /** Postings entries (as many as doc terms) and slots when it began. */
  entries: number;
  capacity: number;
  /** The writer's parts it writes in place: counts, postings' slots and tfs, doc ranges' starts and ends, doc terms and tfs. */
  parts: number[];
  /** Entries written so far (of the postings, then of the doc terms). */
  at: number;
  /** Entries of terms changed since it began, as they were then (compacted). */
  terms: Map<string, { slots: Int32Array; tfs: Uint16Array; n: number }>;
  /** Terms of slots changed since it began, as they were then: see docAt. */
  docs: Map<number, DocAt>;
  /** Terms [0, termsRead) of the dictionary and slots [0, slotsRead) are written: changes to them need not be kept. */
  termsRead: number;
  slotsRead: number;
}

/** A doc's terms: its own map, the start of its frozen terms, or null (no doc in the slot). */
type DocAt = ReadonlyMap<string, number> | number | null;

/** Work (postings entries, doc terms, slots) in a step of a snapshot: well under a millisecond. */
const STEP_WORK = 1 << 13;

export class Bm25Field {
  private readonly postings = new Map<string, Postings>(); // term -> postings
  private readonly docTerms = new Map<number, Map<string, number>>(); // slot -> term -> tf (for removal)
  private frozen: FrozenDocTerms | null = null;
  private frozenDocs = 0;
  private docLen = new Float64Array(64);
  private totalLen = 0;
  private approxTermBytes = 0;
  private entries = 0;
  private arrayBytes = 0;
  /** Changes on every add/remove (lengths, df and N may have changed). */
  version = 0;
  /** A snapshot being taken in steps, for which changes keep what they change (beginSnapshot). */
  private taking: FieldTake | null = null;
  /**
   * What the terms' context postings kept across searches may take, as a share of the field's own
   * bytes (0: none kept). Counted in approxBytes, so the index cache's budget includes them.
   */
  contextCacheShare = 0;
  /** Kept context postings by term. */
  private readonly contextCache = new Map<string, ContextPostings>();
  private contextCacheBytes = 0;
  /** The context parameters they were spread with. */
  private contextCacheKey = '';

  get docCount(): number {
    return this.docTerms.size + this.frozenDocs;
  }

  add(slot: number, terms: readonly string[]): void {
    this.remove(slot);
    this.version++;
    if (terms.length === 0) return;
    const tf = new Map<string, number>();
    for (const t of terms) tf.set(t, Math.min(TF_MAX, (tf.get(t) ?? 0) + 1));
    if (this.taking) for (const t of tf.keys()) this.keepTerm(t);
    for (const [t, n] of tf) {
      let p = this.postings.get(t);
      if (!p) {
        p = { id: -1, slots: new Int32Array(0), tfs: new Uint16Array(0), n: 0, live: 0, dirty: false };
        this.postings.set(t, p);
        this.approxTermBytes += 64 + t.length * 2;
      }
      if (p.n === p.slots.length) {
        // Stale entries are dropped before the arrays grow for them.
        if (p.dirty && p.n >= 2 * p.live + 16) this.compact(p, t);
        if (p.n === p.slots.length) this.growPostings(p, Math.max(4, p.n * 2));
      }
      p.slots[p.n] = slot;
      p.tfs[p.n] = n;
      p.n++;
      p.live++;
    }
    this.docTerms.set(slot, tf);
    this.entries += tf.size;
    this.forgetContext(slot);
    if (slot >= this.docLen.length) {
      const grown = new Float64Array(Math.max(slot + 1, this.docLen.length * 2));
      grown.set(this.docLen);
      this.docLen = grown;
    }
    this.docLen[slot] = terms.length;
    this.totalLen += terms.length;
  }

  private growPostings(p: Postings, cap: number): void {
    const slots = new Int32Array(cap);
    const tfs = new Uint16Array(cap);
    slots.set(p.slots.subarray(0, p.n));
    tfs.set(p.tfs.subarray(0, p.n));
    this.arrayBytes += (cap - p.slots.length) * ENTRY_BYTES;
    p.slots = slots;
    p.tfs = tfs;
  }

  /** The term's postings without stale entries. */
  private compiled(term: string): Postings | undefined {
    const p = this.postings.get(term);
    if (p?.dirty) this.compact(p, term);
    return p;
  }

  /** Drops stale entries in place: each slot keeps its last entry, if its doc still holds the term. */
  private compact(p: Postings, term: string): void {
    const seen = new Set<number>();
    const kept: number[] = [];
    for (let i = p.n - 1; i >= 0; i--) {
      const slot = p.slots[i]!;
      if (seen.has(slot)) continue;
      seen.add(slot);
      if (this.holds(slot, term, p.id)) kept.push(i);
    }
    // Kept indices are written forward, each to a position at or before its own.
    for (let j = 0, m = kept.length; j < m; j++) {
      const i = kept[m - 1 - j]!;
      p.slots[j] = p.slots[i]!;
      p.tfs[j] = p.tfs[i]!;
    }
    p.n = kept.length;
    p.dirty = false;
    if (p.n < p.slots.length / 4) {
      this.arrayBytes -= (p.slots.length - p.n) * ENTRY_BYTES;
      p.slots = p.slots.slice(0, p.n);
      p.tfs = p.tfs.slice(0, p.n);
    }
  }

  private holds(slot: number, term: string, termId: number): boolean {
    const own = this.docTerms.get(slot);
    if (own) return own.has(term);
    const f = this.frozen;
    if (!f || termId < 0 || slot >= f.start.length || f.start[slot]! < 0) return false;
    for (let i = f.start[slot]!, end = f.end[slot]!; i < end; i++) if (f.terms[i] === termId) return true;
    return false;
  }

  /** A restored doc's terms as a map (in the order the doc first used them), or undefined. */
  private frozenTerms(slot: number): Map<string, number> | undefined {
    const f = this.frozen;
    if (!f || slot >= f.start.length || f.start[slot]! < 0) return undefined;
    const terms = new Map<string, number>();
    for (let i = f.start[slot]!, end = f.end[slot]!; i < end; i++) terms.set(f.dictionary[f.terms[i]!]!, f.tfs[i]!);
    return terms;
  }

  remove(slot: number): void {
    // (add removes first: a snapshot being taken keeps the slot as it was, doc or none, from here.)
    if (this.taking) this.keepDoc(slot);
    const own = this.docTerms.get(slot);
    const tf = own ?? this.frozenTerms(slot);
    if (!tf) return;
    this.forgetContext(slot);
    if (this.taking) for (const t of tf.keys()) this.keepTerm(t);
    if (!own) {
      this.frozen!.start[slot] = -1;
      this.frozenDocs--;
    }
    this.version++;
    for (const t of tf.keys()) {
      const p = this.postings.get(t);
      if (!p) continue;
      p.live--;
      p.dirty = true;
      if (p.live === 0) {
        this.postings.delete(t);
        this.approxTermBytes -= 64 + t.length * 2;
        this.arrayBytes -= p.slots.length * ENTRY_BYTES;
      }
    }
    this.entries -= tf.size;
    this.docTerms.delete(slot);
    this.totalLen -= this.docLen[slot] ?? 0;
    this.docLen[slot] = 0;
  }

  /** The doc's terms with their frequencies (read-only view). */
  termsOf(slot: number): ReadonlyMap<string, number> | undefined {
    return this.docTerms.get(slot) ?? this.frozenTerms(slot);
  }

  /**
   * Drops the kept context postings of the slot's terms: their spread changes when the doc does, and
   * when the doc's neighbours do (MemoryIndex calls this for the docs around a change of links).
   */
  forgetContext(slot: number): void {
    if (this.contextCache.size === 0) return;
    const tf = this.termsOf(slot);
    if (tf) for (const t of tf.keys()) this.dropContext(t);
  }

  private dropContext(term: string): void {
    const kept = this.contextCache.get(term);
    if (!kept) return;
    this.contextCache.delete(term);
    this.contextCacheBytes -= CONTEXT_TERM_BYTES + kept.slots.length * CONTEXT_ENTRY_BYTES;
  }

  /**
   * Keeps a term's context postings as just spread (gathered in first-touch order, leaving the
   * buffers zero); null (nothing gathered) when they do not fit in what is left of the share.
   */
  private keepContext(
    term: string,
    n: number,
    touchedSlots: Int32Array,
    tfSelf: Float64Array,
    tfCtx: Float64Array,
  ): ContextPostings | null {
    const bytes = CONTEXT_TERM_BYTES + n * CONTEXT_ENTRY_BYTES;
    // Kept while they fit, and until a write changes them: no eviction, since a workload that asks
    // more terms than fit in turn (a benchmark's fixed list of questions) would evict each before its next use.
    if (this.contextCacheBytes + bytes > this.contextCacheShare * (this.approxBytes() - this.contextCacheBytes))
      return null;
    const kept = { slots: touchedSlots.slice(0, n), own: new Float64Array(n), total: new Float64Array(n) };
    for (let j = 0; j < n; j++) {
      const slot = touchedSlots[j]!;
      const ts = tfSelf[slot]!;
      kept.own[j] = ts;
      kept.total[j] = ts + tfCtx[slot]!;
      tfSelf[slot] = 0;
      tfCtx[slot] = 0;
    }
    this.contextCache.set(term, kept);
    this.contextCacheBytes += bytes;
    return kept;
  }

  /** Number of docs containing the term. */
  df(term: string): number {
    return this.postings.get(term)?.live ?? 0;
  }

  /**
   * The held term one edit from `term` (a letter dropped, added or replaced, or two neighbours
   * swapped) that the most docs hold, the first in code-unit order among equals; failing that, the
   * longest held term of at least 5 characters that begins `term` and is at most 3 shorter (a typo
   * in a suffix keeps the stemmer from removing it: "vacaton" stays whole, "vacation" is "vacat");
   * undefined when none. Letters are tried from a-z and the term's own, so a term of any script
   * gets its own edits.
   */
  nearestTerm(term: string): string | undefined {
    const edited = this.nearestEdit(term);
    if (edited !== undefined) return edited;
    for (let n = term.length - 1; n >= Math.max(5, term.length - 3); n--)
      if (this.df(term.slice(0, n)) > 0) return term.slice(0, n);
    return undefined;
  }

  private nearestEdit(term: string): string | undefined {
    let best: string | undefined;
    let bestDf = 0;
    const consider = (candidate: string) => {
      const df = this.df(candidate);
      if (df > bestDf || (df === bestDf && df > 0 && candidate < best!)) [best, bestDf] = [candidate, df];
    };
    const letters = new Set([...'abcdefghijklmnopqrstuvwxyz', ...term]);
    const chars = [...term];
    for (let i = 0; i <= chars.length; i++) {
      const head = chars.slice(0, i).join('');
      const tail = chars.slice(i).join('');
      const rest = chars.slice(i + 1).join('');
      for (const c of letters) consider(head + c + tail);
      if (i === chars.length) break;
      consider(head + rest);
      for (const c of letters) if (c !== chars[i]) consider(head + c + rest);
      if (i + 1 < chars.length && chars[i] !== chars[i + 1])
        consider(head + chars[i + 1] + chars[i] + chars.slice(i + 2).join(''));
    }
    return best;
  }

  /** Robertson/Sparck-Jones idf, floored at a small positive value so very common terms still count a little. */
  idf(term: string): number {
    const n = this.postings.get(term)?.live ?? 0;
    if (n === 0) return 0;
    const N = this.docCount;
    return Math.max(0.01, Math.log(1 + (N - n + 0.5) / (n + 0.5)));
  }

  /**
   * Adds weight * BM25(term, doc) into out[slot] for every posting of every query term.
   * Slots seen for the first time (out[slot] was 0) are appended to touched.
   */
  scoreInto(query: ReadonlyMap<string, number>, out: Float64Array, touched: SlotList, weight = 1): void {
    const N = this.docCount;
    if (N === 0) return;
    const avgLen = this.totalLen / N || 1;
    const docLen = this.docLen;
    let ta = touched.a;
    for (const [term, qtf] of query) {
      const p = this.compiled(term);
      if (!p) continue;
      const idf = this.idf(term) * qtf * weight;
      const slots = p.slots;
      const tfs = p.tfs;
      for (let i = 0, n = p.n; i < n; i++) {
        const slot = slots[i]!;
        const tf = tfs[i]!;
        const norm = BM25_K1 * (1 - BM25_B + (BM25_B * (docLen[slot] ?? 0)) / avgLen);
        const s = (idf * tf * (BM25_K1 + 1)) / (tf + norm);
        if (out[slot] === 0) {
          if (touched.n === ta.length) ta = growList(touched);
          ta[touched.n++] = slot;
        }
        out[slot]! += s;
      }
    }
  }

  /**
   * BM25F-style scoring where each doc also carries its session neighbours' terms at a
   * lower weight: tf' = tf(self) + ctxWeight * sum_d decay^(d-1) * tf(neighbour at d).
   * Computed at query time from the postings and the neighbour links, so an upsert never
   * has to re-index its neighbours. The saturated per-term score is split between
   * outSelf and outCtx in proportion to where its tf came from (keeps explanations additive).
   */
  scoreWithContext(
    query: ReadonlyMap<string, number>,
    links: { prev: Int32Array; next: Int32Array; window: number; weight: number; decay: number; backward?: number },
    scratch: ContextScratch,
    outSelf: Float64Array,
    outCtx: Float64Array,
    touched: SlotList,
  ): void {
    const N = this.docCount;
    if (N === 0) return;
    const avgLen = this.totalLen / N || 1;
    const { prev, next, window, weight, decay } = links;
    const back = links.backward ?? 1;
    const { tfSelf, tfCtx, termTouched, norm: normCache } = scratch;
    if (scratch.normStamp !== scratch.stamp) {
      normCache.fill(0);
      scratch.normStamp = scratch.stamp;
    }
    const contextKey = `${window} ${weight} ${decay} ${back}`;
    if (contextKey !== this.contextCacheKey) {
      this.contextCache.clear();
      this.contextCacheBytes = 0;
      this.contextCacheKey = contextKey;
    }
    const same = outSelf === outCtx;
    // Length normalisation uses the expanded length (own + weighted neighbours), so a
    // one-word turn does not get the full neighbour score for free.
    let spread = 0;
    for (let d = 1, v = weight; d <= window; d++, v *= decay) spread += (1 + back) * v;
    const avgExpanded = avgLen * (1 + spread);
    for (const [term, qtf] of query) {
      const p = this.compiled(term);
      if (!p) continue;
      const idf = this.idf(term) * qtf;
      const held = this.contextCache.get(term);
      if (held) {
        this.saturate(
          held.slots,
          held.own,
          held.total,
          held.slots.length,
          idf,
          links,
          normCache,
          avgExpanded,
          outSelf,
          outCtx,
          touched,
        );
        continue;
      }
      const slots = p.slots;
      const tfs = p.tfs;
      let nt = 0;
      for (let i = 0, n = p.n; i < n; i++) {
        const slot = slots[i]!;
        const tf = tfs[i]!;
        // First touch of a slot for this term: appended without a branch (written always, counted once).
        termTouched[nt] = slot;
        nt += +(tfSelf[slot] === 0) & +(tfCtx[slot] === 0);
        tfSelf[slot]! += tf;
        if (weight > 0) {
          let v = tf * weight;
          let a = prev[slot]!;
          let b = next[slot]!;
          for (let d = 1; d <= window && (a >= 0 || b >= 0); d++) {
            if (a >= 0) {
              if (back > 0) {
                termTouched[nt] = a;
                nt += +(tfSelf[a] === 0) & +(tfCtx[a] === 0);
                tfCtx[a]! += v * back;
              }
              a = prev[a]!;
            }
            if (b >= 0) {
              termTouched[nt] = b;
              nt += +(tfSelf[b] === 0) & +(tfCtx[b] === 0);
              tfCtx[b]! += v;
              b = next[b]!;
            }
            v *= decay;
          }
        }
      }
      const kept =
        this.contextCacheShare > 0 && p.live >= CONTEXT_CACHE_MIN_POSTINGS
          ? this.keepContext(term, nt, termTouched, tfSelf, tfCtx)
          : null;
      if (kept) {
        this.saturate(
          kept.slots,
          kept.own,
          kept.total,
          nt,
          idf,
          links,
          normCache,
          avgExpanded,
          outSelf,
          outCtx,
          touched,
        );
        continue;
      }
      // saturate's loop, kept apart: reading the spread where it lies (and leaving the buffers zero)
      // instead of gathering it first for saturate, which cost a search 15-30 % at 100,000 docs.
      let ta = touched.a;
      let tn = touched.n;
      for (let j = 0; j < nt; j++) {
        const slot = termTouched[j]!;
        const ts = tfSelf[slot]!;
        const t = ts + tfCtx[slot]!;
        let norm = normCache[slot]!;
        if (norm === 0) norm = normCache[slot] = this.expandedNorm(slot, links, avgExpanded);
        const sc = (idf * t * (BM25_K1 + 1)) / (t + norm);
        const selfPart = (sc * ts) / t;
        if (tn === ta.length) {
          touched.n = tn;
          ta = growList(touched);
        }
        ta[tn] = slot;
        if (same) {
          // One buffer for both parts: read once, the two parts added in the same order.
          const o = outSelf[slot]!;
          tn += +(o === 0);
          outSelf[slot] = o + selfPart + (sc - selfPart);
        } else {
          tn += +(outSelf[slot] === 0) & +(outCtx[slot] === 0);
          outSelf[slot]! += selfPart;
          outCtx[slot]! += sc - selfPart;
        }
        tfSelf[slot] = 0;
        tfCtx[slot] = 0;
      }
      touched.n = tn;
    }
  }

  /**
   * The length normalisation of a slot with its neighbours (computed once per slot until the index
   * changes): its own length plus the neighbours' at their context weights, so that a one-word turn
   * does not get the full neighbour score for free. (A normalisation that is 0 is computed again
   * each time: the same value.)
   */
  private expandedNorm(
    slot: number,
    links: { prev: Int32Array; next: Int32Array; window: number; weight: number; decay: number },
    avgExpanded: number,
  ): number {
    const { prev, next, window, weight, decay } = links;
    const docLen = this.docLen;
    let len = docLen[slot] ?? 0;
    if (weight > 0) {
      let a = prev[slot]!;
      let b = next[slot]!;
      for (let d = 1, v = weight; d <= window && (a >= 0 || b >= 0); d++, v *= decay) {
        if (a >= 0) {
          len += v * docLen[a]!;
          a = prev[a]!;
        }
        if (b >= 0) {
          len += v * docLen[b]!;
          b = next[b]!;
        }
      }
    }
    return BM25_K1 * (1 - BM25_B + (BM25_B * len) / avgExpanded);
  }

  /** One term's BM25F score of each slot it touches (its context postings), split between own and context evidence. */
  private saturate(
    slots: Int32Array,
    own: Float64Array,
    total: Float64Array,
    nt: number,
    idf: number,
    links: { prev: Int32Array; next: Int32Array; window: number; weight: number; decay: number },
    normCache: Float64Array,
    avgExpanded: number,
    outSelf: Float64Array,
    outCtx: Float64Array,
    touched: SlotList,
  ): void {
    const same = outSelf === outCtx;
    let ta = touched.a;
    let tn = touched.n;
    for (let j = 0; j < nt; j++) {
      const slot = slots[j]!;
      const ts = own[j]!;
      const t = total[j]!;
      let norm = normCache[slot]!;
      if (norm === 0) norm = normCache[slot] = this.expandedNorm(slot, links, avgExpanded);
      const sc = (idf * t * (BM25_K1 + 1)) / (t + norm);
      const selfPart = (sc * ts) / t;
      if (tn === ta.length) {
        touched.n = tn;
        ta = growList(touched);
      }
      ta[tn] = slot;
      if (same) {
        // One buffer for both parts: read once, the two parts added in the same order.
        const o = outSelf[slot]!;
        tn += +(o === 0);
        outSelf[slot] = o + selfPart + (sc - selfPart);
      } else {
        tn += +(outSelf[slot] === 0) & +(outCtx[slot] === 0);
        outSelf[slot]! += selfPart;
        outCtx[slot]! += sc - selfPart;
      }
    }
    touched.n = tn;
  }

  /** The doc in the slot (DocAt), as it is now. */
  private docAt(slot: number): DocAt {
    const own = this.docTerms.get(slot);
    if (own) return own;
    const f = this.frozen;
    return f && slot < f.start.length && f.start[slot]! >= 0 ? f.start[slot]! : null;
  }

  /** Before the slot's doc changes: what a snapshot being taken has yet to read of it, as it is. */
  private keepDoc(slot: number): void {
    const k = this.taking!;
    if (slot < k.capacity && slot >= k.slotsRead && !k.docs.has(slot)) k.docs.set(slot, this.docAt(slot));
  }

  /**
   * Before a term's postings change (a doc holding it is added or removed): the entries, compacted
   * as they are (no doc holding the term has changed since the snapshot began, or this ran then).
   */
  private keepTerm(term: string): void {
    const k = this.taking!;
    if (k.terms.has(term)) return;
    const id = k.ids.get(term);
    if (id === undefined || id < k.termsRead) return;
    const p = this.compiled(term)!;
    k.terms.set(term, { slots: p.slots.slice(0, p.n), tfs: p.tfs.slice(0, p.n), n: p.n });
  }

  /**
   * Begins a snapshot of the field as it is now, put into `w` (snapshotSteps writes its parts once
   * laid out). `track`: until it ends (endSnapshot), changes keep what they change of what it has
   * yet to read; untracked, nothing may change before it is written.
   */
  beginSnapshot(w: SnapshotWriter, track: boolean): FieldTake {
    const dictionary = [...this.postings.keys()];
    const { entries } = this;
    const capacity = this.docLen.length;
    w.value(dictionary).value(this.totalLen).value(this.version);
    const parts = [
      w.reserve('i32', dictionary.length),
      w.reserve('i32', entries),
      w.reserve('u16', entries),
      w.reserve('i32', capacity),
      w.reserve('i32', capacity),
      w.reserve('i32', entries),
      w.reserve('u16', entries),
    ];
    w.live(this.docLen);
    const take: FieldTake = {
      dictionary,
      ids: new Map(dictionary.map((t, i) => [t, i])),
      entries,
      capacity,
      parts,
      at: 0,
      terms: new Map(),
      docs: new Map(),
      termsRead: 0,
      slotsRead: 0,
    };
    if (track) this.taking = take;
    return take;
  }

  endSnapshot(take: FieldTake): void {
    if (this.taking === take) this.taking = null;
  }

  /**
   * Writes the field as it was when the take began (`w` laid out): each term's postings compacted
   * (so the restored order is the order scoring sees), then every doc's terms. The loops are in
   * plain methods, a step's worth a call (V8 optimizes a long loop of a plain function as it runs).
   */
  *snapshotSteps(k: FieldTake, w: SnapshotWriter): Steps<void> {
    const [counts, slots, tfs] = [w.view(k.parts[0]!, 'i32'), w.view(k.parts[1]!, 'i32'), w.view(k.parts[2]!, 'u16')];
    while (k.termsRead < k.dictionary.length) {
      this.writePostings(k, counts, slots, tfs);
      yield;
    }
    if (k.at !== k.entries) throw new Error('index snapshot does not add up');
    const [start, end, docTerms, docTfs] = [
      w.view(k.parts[3]!, 'i32'),
      w.view(k.parts[4]!, 'i32'),
      w.view(k.parts[5]!, 'i32'),
      w.view(k.parts[6]!, 'u16'),
    ];
    // A slot holding no doc has an empty range.
    start.fill(-1);
    // A restored doc's terms are numbers of the restored dictionary: renumbered by one table, not looked up term by term.
    const f = this.frozen;
    const renumber = Int32Array.from(f ? f.dictionary : [], (t) => k.ids.get(t) ?? -1);
    yield;
    k.at = 0;
    while (k.slotsRead < k.capacity) {
      this.writeDocTerms(k, renumber, start, end, docTerms, docTfs);
      yield;
    }
    if (k.at !== k.entries) throw new Error('index snapshot does not add up');
    this.endSnapshot(k);
  }

  /** A step of snapshotSteps: the postings of the next terms. */
  private writePostings(k: FieldTake, counts: Int32Array, slots: Int32Array, tfs: Uint16Array): void {
    let { termsRead: i, at } = k;
    for (let work = 0; i < k.dictionary.length && work < STEP_WORK; i++) {
      const term = k.dictionary[i]!;
      const p = k.terms.get(term) ?? this.compiled(term)!;
      if (at + p.n > k.entries) throw new Error('index snapshot does not add up');
      counts[i] = p.n;
      slots.set(p.slots.subarray(0, p.n), at);
      tfs.set(p.tfs.subarray(0, p.n), at);
      at += p.n;
      work += p.n + 16;
    }
    k.termsRead = i;
    k.at = at;
  }

  /** A step of snapshotSteps: the terms of the docs in the next slots, as they were. */
  private writeDocTerms(
    k: FieldTake,
    renumber: Int32Array,
    start: Int32Array,
    end: Int32Array,
    docTerms: Int32Array,
    docTfs: Uint16Array,
  ): void {
    const f = this.frozen;
    let { slotsRead: slot, at } = k;
    for (let work = 0; slot < k.capacity && work < STEP_WORK; slot++) {
      const kept = k.docs.get(slot);
      const doc = kept === undefined ? this.docAt(slot) : kept;
      work++;
      if (doc === null) continue;
      const from = at;
      if (at + (typeof doc === 'number' ? f!.end[slot]! - doc : doc.size) > k.entries)
        throw new Error('index snapshot does not add up');
      if (typeof doc === 'number') {
        for (let i = doc, e = f!.end[slot]!; i < e; i++) {
          docTerms[at] = renumber[f!.terms[i]!]!;
          docTfs[at++] = f!.tfs[i]!;
        }
      } else {
        for (const [t, n] of doc) {
          docTerms[at] = k.ids.get(t)!;
          docTfs[at++] = n;
        }
      }
      start[slot] = from;
      end[slot] = at;
      work += at - from;
    }
    k.slotsRead = slot;
    k.at = at;
  }

  /** A field as snapshot() wrote it. */
  static restore(r: SnapshotReader): Bm25Field {
    const field = new Bm25Field();
    const dictionary = r.value<string[]>();
    field.totalLen = r.value<number>();
    field.version = r.value<number>();
    const counts = r.array('i32');
    const slots = r.array('i32');
    const tfs = r.array('u16');
    let at = 0;
    dictionary.forEach((term, id) => {
      const n = counts[id]!;
      field.postings.set(term, {
        id,
        slots: slots.subarray(at, at + n),
        tfs: tfs.subarray(at, at + n),
        n,
        live: n,
        dirty: false,
      });
      field.approxTermBytes += 64 + term.length * 2;
      at += n;
    });
    field.arrayBytes = at * ENTRY_BYTES;
    const start = r.array('i32');
    const end = r.array('i32');
    field.frozen = { start, end, terms: r.array('i32'), tfs: r.array('u16'), dictionary };
    for (let slot = 0; slot < start.length; slot++) {
      if (start[slot]! < 0) continue;
      field.frozenDocs++;
      field.entries += end[slot]! - start[slot]!;
    }
    field.docLen = r.array('f64');
    return field;
  }

  approxBytes(): number {
    // A per-doc term map entry ~ 40 bytes, plus the posting arrays (ENTRY_BYTES an entry).
    return this.approxTermBytes + this.entries * 40 + this.arrayBytes + this.docLen.byteLength + this.contextCacheBytes;
  }
}

function growList(l: SlotList): Int32Array {
  const a = new Int32Array(Math.max(64, l.a.length * 2));
  a.set(l.a);
  return (l.a = a);
}
