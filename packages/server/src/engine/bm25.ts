// Incremental BM25 over an inverted index keyed by dense slots (see MemoryIndex).
// Adding or removing a document touches only that document's postings.
import {
  CONTEXT_CACHE_MIN_POSTINGS,
  ContextCache,
  type ContextScratch,
  growList,
  type SlotList,
} from './bm25-context.js';
import {
  type DocAt,
  type FieldTake,
  type FrozenDocTerms,
  type Postings,
  readFrozenDocTerms,
  readPostings,
  writeDocTerms,
  writePostings,
} from './bm25-snapshot.js';
import { docMapBytes, ENTRY_BYTES, frozenBytes, termBytes } from './bm25-bytes.js';
import { TYPED_ARRAY_BYTES } from './heap-bytes.js';
import { nearestHeldTerm } from './nearest-term.js';
import type { SnapshotReader, SnapshotWriter, Steps } from './snapshot.js';

export type { FieldTake } from './bm25-snapshot.js';

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

/**
 * Term frequencies are kept as 16-bit counts (postings and restored doc terms: 6 bytes an entry,
 * not 12), a count in one doc capped here. A memory's text is at most 32,000 characters, so no
 * stored doc reaches the cap; BM25 has saturated long before it.
 */
export const TF_MAX = 0xffff;

export class Bm25Field {
  private readonly postings = new Map<string, Postings>(); // term -> postings
  private readonly docTerms = new Map<number, Map<string, number>>(); // slot -> term -> tf (for removal)
  private frozen: FrozenDocTerms | null = null;
  private frozenDocs = 0;
  private docLen = new Float64Array(64);
  private totalLen = 0;
  /** Bytes of the terms' postings besides their entries (termBytes), of the docs' own term maps (docMapBytes). */
  private termBytes = 0;
  private docMapBytes = 0;
  private entries = 0;
  /** Bytes of the postings' entries, spare capacity included. */
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
  private readonly contextCache = new ContextCache();

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
        this.termBytes += termBytes(t);
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
    this.docMapBytes += docMapBytes(tf);
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
        this.termBytes -= termBytes(t);
        this.arrayBytes -= p.slots.length * ENTRY_BYTES;
      }
    }
    this.entries -= tf.size;
    if (own) this.docMapBytes -= docMapBytes(own);
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
    if (tf) for (const t of tf.keys()) this.contextCache.drop(t);
  }

  /** Number of docs containing the term. */
  df(term: string): number {
    return this.postings.get(term)?.live ?? 0;
  }

  /** The held term nearest to `term`, a typo (nearest-term.ts); undefined when none. */
  nearestTerm(term: string): string | undefined {
    return nearestHeldTerm(term, (t) => this.df(t));
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
    this.contextCache.useParameters(contextKey);
    // Length normalisation uses the expanded length (own + weighted neighbours), so a
    // one-word turn does not get the full neighbour score for free.
    let spread = 0;
    for (let d = 1, v = weight; d <= window; d++, v *= decay) spread += (1 + back) * v;
    const avgExpanded = avgLen * (1 + spread);
    for (const [term, qtf] of query) {
      const p = this.compiled(term);
      if (!p) continue;
      const idf = this.idf(term) * qtf;
      // The term's spread over the neighbours: kept by an earlier search, or spread now (and kept if it fits).
      let kept = this.contextCache.get(term) ?? null;
      if (kept === null) {
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
        kept =
          this.contextCacheShare > 0 && p.live >= CONTEXT_CACHE_MIN_POSTINGS
            ? this.contextCache.keep(term, nt, termTouched, tfSelf, tfCtx, this.contextBudget())
            : null;
        if (kept === null) {
          // The spread read where it lies (the buffers left zero), not gathered first: gathering cost a
          // search 15-30 % at 100,000 docs.
          this.saturate(
            termTouched,
            tfSelf,
            tfCtx,
            nt,
            true,
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
      }
      const n = kept.slots.length;
      this.saturate(
        kept.slots,
        kept.own,
        kept.total,
        n,
        false,
        idf,
        links,
        normCache,
        avgExpanded,
        outSelf,
        outCtx,
        touched,
      );
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

  /**
   * One term's BM25F score of each slot it touches, split between own and context evidence: from
   * its kept context postings (`own` and `total` by entry), or, `inPlace`, from the spread that
   * scoreWithContext left in the buffers (`own` and context tf by slot), set back to zero as read.
   */
  private saturate(
    slots: Int32Array,
    own: Float64Array,
    totalOrCtx: Float64Array,
    nt: number,
    inPlace: boolean,
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
      const at = inPlace ? slot : j;
      const ts = own[at]!;
      const t = inPlace ? ts + totalOrCtx[at]! : totalOrCtx[at]!;
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
      if (inPlace) {
        own[slot] = 0;
        totalOrCtx[slot] = 0;
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
      writePostings(k, counts, slots, tfs, (term) => this.compiled(term)!);
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
      writeDocTerms(k, f, (slot) => this.docAt(slot), renumber, start, end, docTerms, docTfs);
      yield;
    }
    if (k.at !== k.entries) throw new Error('index snapshot does not add up');
    this.endSnapshot(k);
  }

  /** A field as snapshot() wrote it. */
  static restore(r: SnapshotReader): Bm25Field {
    const field = new Bm25Field();
    const dictionary = r.value<string[]>();
    field.totalLen = r.value<number>();
    field.version = r.value<number>();
    for (const [term, postings] of readPostings(r, dictionary)) {
      field.postings.set(term, postings);
      field.termBytes += termBytes(term);
      field.arrayBytes += postings.n * ENTRY_BYTES;
    }
    const frozen = readFrozenDocTerms(r, dictionary);
    field.frozen = frozen.terms;
    field.frozenDocs = frozen.docs;
    field.entries = frozen.entries;
    field.docLen = r.array('f64');
    return field;
  }

  /** What the kept context postings may take in all: the share of the field's own bytes. */
  private contextBudget(): number {
    return this.contextCacheShare * (this.approxBytes() - this.contextCache.bytes);
  }

  /** Bytes held (heap-bytes.ts): postings, the docs' terms (own maps, or a restored snapshot's arrays), lengths, kept context postings. */
  approxBytes(): number {
    return (
      this.termBytes +
      this.arrayBytes +
      this.docMapBytes +
      frozenBytes(this.frozen) +
      TYPED_ARRAY_BYTES +
      this.docLen.byteLength +
      this.contextCache.bytes
    );
  }
}
