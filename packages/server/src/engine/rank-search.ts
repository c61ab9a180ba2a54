// A search, phase by phase (rank.ts's), over one index or over an owner's index held as session-disjoint
// shards (a session's docs, and so its sums and context neighbours, in one shard), each scoring with the
// whole's statistics (Bm25Field.stats). A shard's phases (ShardSearch) take and report plain data, so a shard
// may be searched on another thread; what is global is merged between them: the first pass's maxima, the
// feedback docs (and so the expansion terms picked from them), the speaker/tag and expansion maxima, the top
// k. So each shard's scores are the whole index's. Every shard's buffers are left zero.
// The slots one kept term reaches by its context alone (most of a long term's entries) are scored only when they
// might matter (bm25-saturate.ts's markReach): hold the largest first-pass score, enter the feedback docs or the top k.
import { type Deferred, scoreDeferred } from './bm25-saturate.js';
import { relevanceOf, type RankingWeights } from './ranking-weights.js';
import {
  contextLinks,
  type Eligible,
  eligibility,
  type FirstPass,
  type Fusion,
  fusion,
  type Links,
  maxima,
  type Norms,
  normalisers,
  type QueryTerms,
  queryTerms,
  firstPass,
} from './rank.js';
import { deferredMost, offerCandidates } from './rank-offer.js';
import type { RankedIndex } from './ranked-index.js';
import type { SearchBuffers } from './search-buffers.js';
import type { SearchHit, SearchOptions } from './types.js';
import { unit } from './vectors.js';

/** One shard of a search: an index and the buffers its phases fill (zero before and after). */
export interface Shard {
  ix: RankedIndex;
  b: SearchBuffers;
}

/** A doc of a shard's best list (`terms`: the doc's terms and counts, for a feedback doc). */
export interface Ranked {
  slot: number;
  id: number;
  score: number;
  terms?: [string, number][];
}

/** What a shard's first phase reports. */
export interface FirstReport {
  maxLex: number;
  maxSession: number;
  maxMeta: number;
  /** Whether any doc has word evidence of the query's terms. */
  words: boolean;
  /** Its best first-pass docs, best first, with their terms and counts (null: no feedback wanted or possible). */
  best: Ranked[] | null;
  /** The most a deferred slot's first-pass score may be (0: none deferred). */
  deferredMost: number;
}

/** What a shard's expansion phase reports. */
export interface ExpansionReport {
  maxExp: number;
  words: boolean;
  /** Whether it has remote vectors for the query. */
  ext: boolean;
}

/** What the whole decided for the last phase. */
export interface Whole {
  norms: Norms;
  /** The largest expansion score, normalised. */
  expMost: number;
  words: boolean;
  extAny: boolean;
}

/** One shard's part of a search. */
export class ShardSearch {
  private readonly eligible: Eligible;
  private readonly links: Links;
  private first: FirstPass | null = null;
  private extQ: Float32Array | null = null;
  private fused: Fusion | null = null;
  /** The slots whose words are not scored yet (markReach), until complete(). */
  private deferred: Deferred | null = null;
  private reachUsed = false;
  /** After offerPhase, the most a deferred slot may score (0: none deferred). */
  deferredScoreMost = 0;

  constructor(
    readonly ix: RankedIndex,
    readonly b: SearchBuffers,
    readonly q: QueryTerms,
    readonly opts: SearchOptions,
    readonly now: number,
    readonly k: number,
  ) {
    this.eligible = eligibility(ix, opts, b);
    this.links = contextLinks(ix);
  }

  /** Lexical evidence of the doc itself and of its session neighbours (BM25F-style), speaker/tags, the first pass. */
  firstPhase(): FirstReport {
    const { ix, b, q } = this;
    b.touched.n = b.metaTouched.n = b.expTouched.n = 0;
    this.reachUsed = mayDefer(ix, this.opts, q);
    const reach = this.reachUsed ? b.reach : null;
    this.deferred = ix.text.scoreWithContext(q.textTerms, this.links, ix.scratch, b.lex, b.ctx, b.touched, reach);
    ix.meta.scoreInto(q.qTerms, b.meta, b.metaTouched);
    return this.report();
  }

  /** Whether some of its slots' words are deferred still. */
  get pending(): boolean {
    return this.deferred !== null;
  }

  /** Its deferred slots scored, and the first pass again over every doc with word evidence. */
  complete(): FirstReport {
    const { ix, b } = this;
    scoreDeferred(this.deferred!, b.lex, b.ctx, b.touched, b.reach);
    this.deferred = null;
    // The session sums from zero again (the deferred slots add none: no own words).
    for (const sn of this.first!.sessionsTouched) ix.sessionBuf[sn] = 0;
    return this.report();
  }

  private report(): FirstReport {
    const { ix, b } = this;
    const first = (this.first = firstPass(ix, b, this.opts, this.eligible));
    let maxMeta = 0;
    for (let i = 0, ma = b.metaTouched.a, metaS = b.meta; i < b.metaTouched.n; i++)
      if (metaS[ma[i]!]! > maxMeta) maxMeta = metaS[ma[i]!]!;
    const best =
      first.best === null
        ? null
        : first.best.sorted().map(({ slot, score }) => ({
            slot,
            id: ix.slotId[slot]!,
            score,
            terms: [...(ix.text.termsOf(slot) ?? [])],
          }));
    const deferredMost = this.deferred?.most ?? 0;
    return { maxLex: first.maxLex, maxSession: first.maxSession, maxMeta, words: b.touched.n > 0, best, deferredMost };
  }

  /** The expansion terms' evidence (pseudo-relevance feedback), into `b.exp`; the query's remote vector prepared. */
  expansionPhase(expTerms: ReadonlyMap<string, number> | null): ExpansionReport {
    const { ix, b, opts } = this;
    // Context evidence for expansion terms lands in the same buffer: one feature.
    if (expTerms !== null) ix.text.scoreWithContext(expTerms, this.links, ix.scratch, b.exp, b.exp, b.expTouched);
    const vectors = ix.vectors;
    this.extQ =
      opts.queryVector && vectors.count > 0 && vectors.dims === opts.queryVector.length && ix.weights.semantic > 0
        ? vectors.prepare(unit(opts.queryVector))
        : null;
    return { maxExp: maxima(b, ix.capacity).maxExp, words: b.expTouched.n > 0, ext: this.extQ !== null };
  }

  /** The shard's best k by the fused score, best first. */
  offerPhase(whole: Whole): Ranked[] {
    const { ix, b, q, opts, now, k } = this;
    const w = ix.weights;
    // Vector features are scored for every live doc, so a doc can be found without sharing a word.
    const qvec = ix.embedder && w.ngram > 0 && q.qTerms.size > 0 ? ix.embedder.embedSync(q.lexQuery) : null;
    const fused = (this.fused = fusion(ix, b, q, whole.norms, qvec, this.extQ, opts, now, k));
    offerCandidates(ix, b, fused, whole.norms, q, qvec, this.extQ, whole, opts, now, k, this.eligible);
    const most = this.deferred?.most ?? 0;
    this.deferredScoreMost = most > 0 ? deferredMost(ix, b, whole.norms, whole.expMost, q.temporal, now, most) : 0;
    return fused.top.sorted().map(({ slot, score }) => ({ slot, id: ix.slotId[slot]!, score }));
  }

  /** One of its docs as a hit (after offerPhase). */
  hit(slot: number, score: number): SearchHit {
    const hit: SearchHit = { id: this.ix.slotId[slot]!, score, relevance: relevanceOf(score) };
    if (this.opts.explain) hit.explanation = this.fused!.explain(slot);
    return hit;
  }

  /** Its buffers zero again. */
  end(): void {
    this.b.zero(this.ix.capacity, this.ix.sessionBuf, this.first?.sessionsTouched ?? []);
    if (this.reachUsed) this.b.reach.fill(0, 0, this.ix.capacity);
  }
}

/**
 * Whether a search may defer slots (markReach): one with query words, no vectors (a deferred slot offered among a
 * vector's neighbours would be scored without its context) and weights of the usual signs (its bounds add them).
 */
function mayDefer(ix: RankedIndex, opts: SearchOptions, q: QueryTerms): boolean {
  const w = ix.weights;
  return (
    q.qTerms.size > 0 &&
    opts.queryVector === undefined &&
    !(ix.embedder && w.ngram > 0) &&
    w.context > 0 &&
    w.expansion >= 0 &&
    w.session >= 0 &&
    w.meta >= 0 &&
    w.metaEvidence >= 0 &&
    w.metaNotSelf >= 0
  );
}

/**
 * The first reports again where a shard's deferred slots might hold the largest first-pass score or enter the
 * feedback docs (strictly below both, they change neither: ties go by id).
 */
function completedWhereNeeded(w: RankingWeights, runs: ShardSearch[], first: FirstReport[]): FirstReport[] {
  let maxLex = 0;
  for (const r of first) maxLex = Math.max(maxLex, r.maxLex);
  let floor = Infinity;
  if (first.some((r) => r.best !== null)) {
    const best = merged(
      first.map((r) => r.best ?? []),
      w.expansionDocs,
    );
    floor = best.length >= w.expansionDocs ? best[best.length - 1]!.score : -Infinity;
  }
  return first.map((r, i) =>
    r.deferredMost > 0 && !(r.deferredMost < maxLex && r.deferredMost < floor) ? runs[i]!.complete() : r,
  );
}

/**
 * The expansion terms (pseudo-relevance feedback): the best first-pass docs of the whole suggest vocabulary the
 * query lacked (the answer turn often shares words with the turns that match the question). `idf`: the whole's.
 */
export function expansionTerms(
  w: RankingWeights,
  reports: readonly FirstReport[],
  qTerms: ReadonlyMap<string, number>,
  idf: (term: string) => number,
): Map<string, number> | null {
  // The whole's best docs: the best of each shard's best.
  const best = merged(
    reports.map((r) => r.best ?? []),
    w.expansionDocs,
  );
  if (reports.every((r) => r.best === null)) return null;
  const cand = new Map<string, number>();
  for (const { terms = [] } of best) {
    let len = 0;
    for (const [, c] of terms) len += c;
    for (const [t, c] of terms) {
      if (qTerms.has(t)) continue;
      cand.set(t, (cand.get(t) ?? 0) + (c / len) * idf(t));
    }
  }
  const picked = [...cand].sort((a, b) => b[1] - a[1]).slice(0, w.expansionTerms);
  const top = picked[0]?.[1] ?? 0;
  return top > 0 ? new Map<string, number>(picked.map(([t, v]) => [t, v / top])) : null;
}

/** The normalisers and candidate rules of the whole, from every shard's reports. */
export function wholeOf(
  w: RankingWeights,
  first: readonly FirstReport[],
  expansion: readonly ExpansionReport[],
  whenLift: number,
): Whole {
  let maxLex = 0;
  let maxSession = 0;
  let maxMeta = 0;
  let maxExp = 0;
  let words = false;
  let extAny = false;
  for (const r of first) {
    maxLex = Math.max(maxLex, r.maxLex);
    maxSession = Math.max(maxSession, r.maxSession);
    maxMeta = Math.max(maxMeta, r.maxMeta);
    words ||= r.words;
  }
  for (const r of expansion) {
    maxExp = Math.max(maxExp, r.maxExp);
    words ||= r.words;
    extAny ||= r.ext;
  }
  const norms = normalisers(w, maxLex, maxSession, maxMeta, maxExp, whenLift);
  return { norms, expMost: maxExp * norms.expNorm, words, extAny };
}

/**
 * The whole's best k from each shard's best k, each entry tagged with its shard: by score, equal scores by id
 * (as TopK orders them), so the same as one list of every shard's docs.
 */
export function merged(lists: readonly Ranked[][], k: number): (Ranked & { shard: number })[] {
  const all = lists.flatMap((list, shard) => list.map((r) => ({ ...r, shard })));
  if (lists.length > 1) all.sort((a, b) => b.score - a.score || a.id - b.id);
  return all.slice(0, k);
}

/** search() with the thread's buffers, which it leaves zero. */
export function rank(ix: RankedIndex, query: string, opts: SearchOptions, k: number, b: SearchBuffers): SearchHit[] {
  return rankShards([{ ix, b }], query, opts, k);
}

/** A search of the shards in turn on this thread (the first shard's fields hold the whole's statistics). */
export function rankShards(shards: readonly Shard[], query: string, opts: SearchOptions, k: number): SearchHit[] {
  const ix0 = shards[0]!.ix;
  const w = ix0.weights;
  const now = opts.now ?? Date.now();
  const q = queryTerms(ix0, query, opts, now);
  const runs = shards.map(({ ix, b }) => new ShardSearch(ix, b, q, opts, now, k));
  try {
    const first = completedWhereNeeded(
      w,
      runs,
      runs.map((r) => r.firstPhase()),
    );
    const expTerms = expansionTerms(w, first, q.qTerms, (t) => ix0.text.idf(t));
    const whole = wholeOf(
      w,
      first,
      runs.map((r) => r.expansionPhase(expTerms)),
      q.whenLift,
    );
    const tops = runs.map((r) => r.offerPhase(whole));
    let top = merged(tops, k);
    // A shard whose deferred slots might enter the top k (strictly below its k-th they cannot: ties go by id):
    // scored, and its offers again.
    const floor = top.length >= k ? top[k - 1]!.score : -Infinity;
    let again = false;
    runs.forEach((r, i) => {
      if (!r.pending || r.deferredScoreMost < floor) return;
      r.complete();
      tops[i] = r.offerPhase(whole);
      again = true;
    });
    if (again) top = merged(tops, k);
    return top.map(({ shard, slot, score }) => runs[shard]!.hit(slot, score));
  } finally {
    for (const r of runs) r.end();
  }
}
