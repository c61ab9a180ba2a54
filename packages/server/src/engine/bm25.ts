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
  beginTake,
  compactPostings,
  type FieldTake,
  layOutPostings,
  type Postings,
  readPostings,
  writeDocTerms,
  writePostings,
} from './bm25-snapshot.js';
import { ENTRY_BYTES, termBytes } from './bm25-bytes.js';
import {
  BM25_B,
  BM25_K1,
  type Deferred,
  markReach,
  prepareKept,
  saturateInPlace,
  saturateKept,
  spreadTerm,
} from './bm25-saturate.js';
import { DocTerms } from './doc-terms.js';
import { ARRAY_BYTES, ARRAY_SLOT_BYTES, TYPED_ARRAY_BYTES } from './heap-bytes.js';
import { nearestHeldTerm } from './nearest-term.js';
import type { SnapshotReader, SnapshotWriter, Steps } from './snapshot.js';

export type { FieldTake } from './bm25-snapshot.js';

/** The session links and context parameters scoreWithContext spreads with. */
type Links = { prev: Int32Array; next: Int32Array; window: number; weight: number; decay: number; backward?: number };

export { BM25_B, BM25_K1 };

/**
 * Term frequencies are kept as 16-bit counts (postings and restored doc terms: 6 bytes an entry,
 * not 12), a count in one doc capped here. A memory's text is at most 32,000 characters, so no
 * stored doc reaches the cap; BM25 has saturated long before it.
 */
export const TF_MAX = 0xffff;

/**
 * The statistics of the whole owner's field, where this field holds one shard of it (a session-disjoint part
 * of its docs): ranking then scores with the whole's doc count, lengths and document frequencies, so each
 * shard's scores are the whole index's.
 */
export interface FieldStats {
  readonly docs: number;
  readonly totalLen: number;
  df(term: string): number;
}

export class Bm25Field {
  /** The whole's statistics when this field is a shard; null: its own. */
  stats: FieldStats | null = null;
  private readonly postings = new Map<string, Postings>(); // term -> postings
  /** The postings by term id (what the docs' terms are); a term's id is reused once no doc holds it. */
  private byId: (Postings | undefined)[] = [];
  private freeIds: number[] = [];
  /** Ids of terms no doc holds any more, freed once the snapshot being taken ends (it may still read them). */
  private idsToFree: number[] = [];
  /** Each doc's terms by id (for removal, compaction, expansion). */
  private docTerms = new DocTerms();
  /** add's working arrays: a doc's distinct term ids and counts, and where each id is in them (by id). */
  private addIds = new Int32Array(64);
  private addTfs = new Uint16Array(64);
  private addAt = new Int32Array(64);
  /** add's terms as ids. */
  private termIds = new Int32Array(64);
  /** Docs added by addBuilt whose postings postBuilt has yet to lay out. */
  private unposted = false;
  private docLen: Float64Array = new Float64Array(64);
  private totalLen = 0;
  /** Bytes of the terms' postings besides their entries (termBytes). */
  private termBytes = 0;
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
  /**
   * Counts the times the cached length normalisations scoreWithContext reads were cleared or replaced: a kept
   * term whose norm epoch is this one has every entry's cached (saturateKept), so its loop need not check.
   */
  private normEpoch = 0;
  private normsOf: Float64Array | null = null;

  get docCount(): number {
    return this.docTerms.docs;
  }

  add(slot: number, terms: readonly string[]): void {
    if (this.unposted) throw new Error('a build from scratch is under way (postBuilt first)');
    this.remove(slot);
    this.version++;
    if (terms.length === 0) return;
    if (terms.length > this.termIds.length) this.termIds = new Int32Array(2 * terms.length);
    const termIds = this.termIds;
    for (let i = 0; i < terms.length; i++) termIds[i] = (this.postings.get(terms[i]!) ?? this.newTerm(terms[i]!)).id;
    const m = this.distinctTerms(termIds, 0, terms.length);
    const [ids, tfs] = [this.addIds, this.addTfs];
    if (this.taking) for (let i = 0; i < m; i++) this.keepTerm(this.byId[ids[i]!]!);
    for (let i = 0; i < m; i++) {
      const p = this.byId[ids[i]!]!;
      if (p.n === p.slots.length) {
        // Stale entries are dropped before the arrays grow for them.
        if (p.dirty && p.n >= 2 * p.live + 16) this.compact(p);
        if (p.n === p.slots.length) this.growPostings(p, Math.max(4, p.n * 2));
      }
      p.slots[p.n] = slot;
      p.tfs[p.n] = tfs[i]!;
      p.n++;
      p.live++;
    }
    this.docTerms.set(slot, ids, tfs, m);
    this.forgetContext(slot);
    this.setLength(slot, terms.length);
  }

  /** The id of a term, a new one (with no postings yet) when no doc holds it: what addBuilt takes. */
  termId(term: string): number {
    return (this.postings.get(term) ?? this.newTerm(term)).id;
  }

  /**
   * A doc of a build from scratch (MemoryIndex.addBuilt) into an empty slot of a fresh field: its terms as ids
   * (termId) in its text's order at `termIds[from..to)`, kept as add keeps them; its postings are laid out with
   * every other doc's by postBuilt, which must run before the field is read or changed otherwise.
   */
  addBuilt(slot: number, termIds: Int32Array, from: number, to: number): void {
    if (!this.unposted && (this.docTerms.docs > 0 || this.taking))
      throw new Error('a build from scratch of a field in use');
    this.unposted = true;
    this.version++;
    if (to === from) return;
    const m = this.distinctTerms(termIds, from, to);
    this.docTerms.set(slot, this.addIds, this.addTfs, m);
    this.setLength(slot, to - from);
  }

  /**
   * The postings of the docs addBuilt added, laid out at once: a term's entries in slot order (as add appends
   * them, docs being added in slot order), each term's a view of one arena (as a restored field's are), sized
   * from the counts: no array grown entry by entry, none cut to size after.
   */
  postBuilt(): void {
    if (!this.unposted) return;
    this.unposted = false;
    const { ends, slots, tfs } = layOutPostings(this.docTerms, this.byId.length);
    for (let id = 0, from = 0; id < this.byId.length; id++) {
      const p = this.byId[id]!;
      const to = ends[id]!;
      [p.slots, p.tfs, p.n, p.live] = [slots.subarray(from, to), tfs.subarray(from, to), to - from, to - from];
      from = to;
    }
    this.arrayBytes += slots.length * ENTRY_BYTES;
  }

  /** The doc's distinct terms (of ids[from..to)) in the order it first uses them, with their counts: addIds, addTfs. */
  private distinctTerms(termIds: Int32Array, from: number, to: number): number {
    if (to - from > this.addIds.length) {
      this.addIds = new Int32Array(2 * (to - from));
      this.addTfs = new Uint16Array(2 * (to - from));
    }
    const [ids, tfs, addAt] = [this.addIds, this.addTfs, this.addAt];
    let m = 0;
    for (let j = from; j < to; j++) {
      const id = termIds[j]!;
      const at = addAt[id]!;
      if (at < m && ids[at] === id) {
        if (tfs[at]! < TF_MAX) tfs[at]!++;
      } else {
        addAt[id] = m;
        ids[m] = id;
        tfs[m++] = 1;
      }
    }
    return m;
  }

  private setLength(slot: number, length: number): void {
    if (slot >= this.docLen.length) this.docLen = grownTo(this.docLen, Math.max(slot + 1, this.docLen.length * 2));
    this.docLen[slot] = length;
    this.totalLen += length;
  }

  /** Room for docs in slots below `slots` (MemoryIndex.reserve). */
  reserve(slots: number): void {
    if (slots > this.docLen.length) this.docLen = grownTo(this.docLen, slots);
    this.docTerms.reserve(slots);
  }

  /**
   * Its arrays cut to what they hold (MemoryIndex.fit): the docs' lengths to `slots`, the docs' terms, each
   * term's postings to its entries (stale ones dropped first).
   */
  fit(slots: number): void {
    if (this.taking) return;
    if (this.docLen.length > slots) this.docLen = this.docLen.slice(0, slots);
    this.docTerms.fit(slots);
    for (const p of this.byId) {
      if (!p) continue;
      if (p.dirty) this.compact(p);
      if (p.slots.length > p.n) {
        this.arrayBytes -= (p.slots.length - p.n) * ENTRY_BYTES;
        [p.slots, p.tfs] = [p.slots.slice(0, p.n), p.tfs.slice(0, p.n)];
      }
    }
  }

  /** A term no doc holds yet: its postings, empty, under a free id. */
  private newTerm(term: string): Postings {
    const id = this.freeIds.pop() ?? this.byId.length;
    const p: Postings = { id, term, slots: new Int32Array(0), tfs: new Uint16Array(0), n: 0, live: 0, dirty: false };
    this.byId[id] = p;
    this.postings.set(term, p);
    this.termBytes += termBytes(term);
    if (id >= this.addAt.length) {
      const at = new Int32Array(2 * this.addAt.length);
      at.set(this.addAt);
      this.addAt = at;
    }
    return p;
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
    if (p?.dirty) this.compact(p);
    return p;
  }

  /** Drops stale entries in place (compactPostings). */
  private compact(p: Postings): void {
    this.arrayBytes -= compactPostings(p, this.docTerms);
  }

  remove(slot: number): void {
    // (add removes first: a snapshot being taken keeps the slot as it was, doc or none, from here.)
    if (this.taking) this.keepDoc(slot);
    const d = this.docTerms;
    if (!d.has(slot)) return;
    this.forgetContext(slot);
    const [from, to] = [d.start[slot]!, d.end[slot]!];
    if (this.taking) for (let i = from; i < to; i++) this.keepTerm(this.byId[d.terms[i]!]!);
    this.version++;
    for (let i = from; i < to; i++) {
      const p = this.byId[d.terms[i]!]!;
      p.live--;
      p.dirty = true;
      if (p.live === 0) {
        this.postings.delete(p.term);
        this.byId[p.id] = undefined;
        (this.taking ? this.idsToFree : this.freeIds).push(p.id);
        this.termBytes -= termBytes(p.term);
        this.arrayBytes -= p.slots.length * ENTRY_BYTES;
      }
    }
    d.remove(slot);
    this.totalLen -= this.docLen[slot] ?? 0;
    this.docLen[slot] = 0;
  }

  /** The doc's terms with their frequencies, in the order the doc first used them (a map made for the caller). */
  termsOf(slot: number): ReadonlyMap<string, number> | undefined {
    const d = this.docTerms;
    if (!d.has(slot)) return undefined;
    const terms = new Map<string, number>();
    for (let i = d.start[slot]!, end = d.end[slot]!; i < end; i++) terms.set(this.byId[d.terms[i]!]!.term, d.tfs[i]!);
    return terms;
  }

  /**
   * Drops the kept context postings of the slot's terms: their spread changes when the doc does, and
   * when the doc's neighbours do (MemoryIndex calls this for the docs around a change of links).
   */
  forgetContext(slot: number): void {
    const d = this.docTerms;
    if (this.contextCache.size === 0 || !d.has(slot)) return;
    for (let i = d.start[slot]!, end = d.end[slot]!; i < end; i++) this.contextCache.drop(this.byId[d.terms[i]!]!.term);
  }

  /** Number of docs containing the term (the whole's, for a shard). */
  df(term: string): number {
    return this.stats ? this.stats.df(term) : (this.postings.get(term)?.live ?? 0);
  }

  /** Number of this field's own docs containing the term. */
  ownDf(term: string): number {
    return this.postings.get(term)?.live ?? 0;
  }

  /** Each term and how many of this field's own docs hold it (a shard's statistics, for the other shards). */
  *ownDfs(): IterableIterator<[string, number]> {
    for (const [term, p] of this.postings) yield [term, p.live];
  }

  /** This field's own total length (FieldStats of a whole made of shards). */
  get ownTotalLen(): number {
    return this.totalLen;
  }

  /** The average doc length scoring normalises by: the whole's, for a shard. */
  private avgLen(): number {
    const s = this.stats;
    return s ? s.totalLen / s.docs || 1 : this.totalLen / this.docCount || 1;
  }

  /** The held term nearest to `term`, a typo (nearest-term.ts); undefined when none. */
  nearestTerm(term: string): string | undefined {
    return nearestHeldTerm(term, (t) => this.df(t));
  }

  /** Robertson/Sparck-Jones idf, floored at a small positive value so very common terms still count a little. */
  idf(term: string): number {
    const n = this.df(term);
    if (n === 0) return 0;
    const N = this.stats ? this.stats.docs : this.docCount;
    return Math.max(0.01, Math.log(1 + (N - n + 0.5) / (n + 0.5)));
  }

  /**
   * Adds weight * BM25(term, doc) into out[slot] for every posting of every query term.
   * Slots seen for the first time (out[slot] was 0) are appended to touched.
   */
  scoreInto(query: ReadonlyMap<string, number>, out: Float64Array, touched: SlotList, weight = 1): void {
    if (this.docCount === 0) return;
    const avgLen = this.avgLen();
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
   * With `reach` (SearchBuffers.reach, zero): the slots one kept term reaches by context alone are deferred
   * (bm25-saturate.ts's markReach), left unscored and untouched for bm25-saturate.ts's scoreDeferred; what they may score is returned.
   */
  scoreWithContext(
    query: ReadonlyMap<string, number>,
    links: Links,
    scratch: ContextScratch,
    outSelf: Float64Array,
    outCtx: Float64Array,
    touched: SlotList,
    reach: Uint8Array | null = null,
  ): Deferred | null {
    if (this.docCount === 0) return null;
    const avgLen = this.avgLen();
    const { window, weight, decay } = links;
    const back = links.backward ?? 1;
    const { tfSelf, tfCtx, termTouched, norm: normCache } = scratch;
    if (scratch.normStamp !== scratch.stamp) {
      normCache.fill(0);
      scratch.normStamp = scratch.stamp;
      this.normEpoch++;
    }
    if (normCache !== this.normsOf) {
      this.normsOf = normCache;
      this.normEpoch++;
    }
    const contextKey = `${window} ${weight} ${decay} ${back}`;
    this.contextCache.useParameters(contextKey);
    // Length normalisation uses the expanded length (own + weighted neighbours), so a
    // one-word turn does not get the full neighbour score for free.
    let spread = 0;
    for (let d = 1, v = weight; d <= window; d++, v *= decay) spread += (1 + back) * v;
    const avgExpanded = avgLen * (1 + spread);
    const sat = { docLen: this.docLen, links, normCache, normEpoch: this.normEpoch, avgExpanded };
    const deferred: Deferred | null = reach === null ? null : { terms: new Map(), most: 0, sat };
    if (deferred !== null) {
      for (const [term, qtf] of query) {
        const p = this.compiled(term);
        if (!p) continue;
        const idf = this.idf(term) * qtf;
        const kept = idf > 0 ? (this.contextCache.get(term) ?? null) : null;
        if (kept !== null) {
          prepareKept(sat, kept);
          deferred.terms.set(kept, idf);
          deferred.most = Math.max(deferred.most, idf * (BM25_K1 + 1) * kept.ctxMost * (1 + 1e-9));
        }
        markReach(reach!, kept, p.slots, p.n, links, back);
      }
    }
    for (const [term, qtf] of query) {
      const p = this.compiled(term);
      if (!p) continue;
      const idf = this.idf(term) * qtf;
      // The term's spread over the neighbours: kept by an earlier search, or spread now (and kept if it fits).
      let kept = this.contextCache.get(term) ?? null;
      if (kept === null) {
        const nt = spreadTerm(p.slots, p.tfs, p.n, links, back, tfSelf, tfCtx, termTouched);
        kept =
          this.contextCacheShare > 0 && p.live >= CONTEXT_CACHE_MIN_POSTINGS
            ? this.contextCache.keep(term, nt, termTouched, tfSelf, tfCtx, this.contextBudget())
            : null;
        if (kept === null) {
          // The spread read where it lies (the buffers left zero), not gathered first: gathering cost a
          // search 15-30 % at 100,000 docs.
          saturateInPlace(sat, termTouched, tfSelf, tfCtx, nt, idf, outSelf, outCtx, touched);
          continue;
        }
      }
      const only = deferred?.terms.has(kept) ? 2 : 0;
      const r = only ? reach : null;
      saturateKept(sat, kept, idf, outSelf, outCtx, touched, r, only);
    }
    return deferred;
  }

  /** Before the slot's doc changes: what a snapshot being taken has yet to read of it, as it is. */
  private keepDoc(slot: number): void {
    const k = this.taking!;
    if (slot < k.capacity && slot >= k.slotsRead && !k.docs.has(slot)) k.docs.set(slot, this.docTerms.copy(slot));
  }

  /**
   * Before a term's postings change (a doc holding it is added or removed): the entries, compacted
   * as they are (no doc holding the term has changed since the snapshot began, or this ran then).
   */
  private keepTerm(p: Postings): void {
    const k = this.taking!;
    const i = p.id < k.renumber.length ? k.renumber[p.id]! : -1;
    if (i < k.termsRead || k.terms.has(i)) return;
    if (p.dirty) this.compact(p);
    k.terms.set(i, { slots: p.slots.slice(0, p.n), tfs: p.tfs.slice(0, p.n), n: p.n });
  }

  /**
   * Begins a snapshot of the field as it is now, put into `w` (snapshotSteps writes its parts once
   * laid out). `track`: until it ends (endSnapshot), changes keep what they change of what it has
   * yet to read; untracked, nothing may change before it is written.
   */
  beginSnapshot(w: SnapshotWriter, track: boolean): FieldTake {
    const take = beginTake(w, this.postings, this.byId.length, this.docTerms.entries, this.docLen, [
      this.totalLen,
      this.version,
    ]);
    if (track) this.taking = take;
    return take;
  }

  endSnapshot(take: FieldTake): void {
    if (this.taking !== take) return;
    this.taking = null;
    this.freeIds.push(...this.idsToFree);
    this.idsToFree = [];
  }

  /**
   * Writes the field as it was when the take began (`w` laid out): each term's postings compacted
   * (so the restored order is the order scoring sees), then every doc's terms. The loops are in
   * plain methods, a step's worth a call (V8 optimizes a long loop of a plain function as it runs).
   */
  *snapshotSteps(k: FieldTake, w: SnapshotWriter): Steps<void> {
    const [counts, slots, tfs] = [w.view(k.parts[0]!, 'i32'), w.view(k.parts[1]!, 'i32'), w.view(k.parts[2]!, 'u16')];
    while (k.termsRead < k.dictionary.length) {
      writePostings(k, counts, slots, tfs, (id) => {
        const p = this.byId[id]!;
        if (p.dirty) this.compact(p);
        return p;
      });
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
    yield;
    k.at = 0;
    while (k.slotsRead < k.capacity) {
      writeDocTerms(k, this.docTerms, start, end, docTerms, docTfs);
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
      field.byId.push(postings);
      field.termBytes += termBytes(term);
      field.arrayBytes += postings.n * ENTRY_BYTES;
    }
    field.addAt = new Int32Array(Math.max(64, dictionary.length));
    // The dictionary's numbers are the terms' ids.
    field.docTerms = DocTerms.of(r.array('i32'), r.array('i32'), r.array('i32'), r.array('u16'));
    field.docLen = r.array('f64');
    return field;
  }

  /** What the kept context postings may take in all: the share of the field's own bytes. */
  private contextBudget(): number {
    return this.contextCacheShare * (this.approxBytes() - this.contextCache.bytes);
  }

  /** Bytes held (heap-bytes.ts): postings, the terms by id, the docs' terms, lengths, kept context postings. */
  approxBytes(): number {
    return (
      this.termBytes +
      this.arrayBytes +
      ARRAY_BYTES +
      ARRAY_SLOT_BYTES * (this.byId.length + this.freeIds.length + this.idsToFree.length) +
      TYPED_ARRAY_BYTES * 3 +
      this.addAt.byteLength +
      this.addIds.byteLength +
      this.addTfs.byteLength +
      this.docTerms.approxBytes() +
      TYPED_ARRAY_BYTES +
      this.docLen.byteLength +
      this.contextCache.bytes
    );
  }
}

function grownTo(array: Float64Array, length: number): Float64Array<ArrayBuffer> {
  const grown = new Float64Array(length);
  grown.set(array);
  return grown;
}
