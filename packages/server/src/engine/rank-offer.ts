// The candidates a search offers to its top k (rank.ts): vector neighbours, every doc, or the docs with
// word evidence, exactly pruned.
import { DAY, type Eligible, type Fusion, type Norms, type QueryTerms } from './rank.js';
import type { RankedIndex } from './ranked-index.js';
import { type SearchBuffers, TopK } from './search-buffers.js';
import type { TemporalRange } from './temporal.js';
import type { SearchOptions } from './types.js';

/** Vector candidates a query takes at least (4 k when more). */
const VECTOR_CANDIDATES = 50;

/**
 * The candidates offered to the top k. Remote vectors: the nearest docs by vector (vectors.ts: a
 * bounded read of the nearest lists) are candidates beside those with word evidence; any other doc's semantic
 * part is at most the best cosine found (`semantic.most`), and exactly its own (`semantic.of`, the tighter).
 * Which candidates is decided by the whole index (`whole`: whether any shard has word evidence, or remote
 * vectors for the query), so each shard offers what the whole would of its docs.
 */
export function offerCandidates(
  ix: RankedIndex,
  b: SearchBuffers,
  fused: Fusion,
  norms: Norms,
  q: QueryTerms,
  qvec: Float32Array | null,
  extQ: Float32Array | null,
  whole: { words: boolean; extAny: boolean },
  opts: SearchOptions,
  now: number,
  k: number,
  eligible: Eligible,
): void {
  const w = ix.weights;
  const { offer } = fused;
  const ma = b.metaTouched.a;
  const mn = b.metaTouched.n;
  const { words, extAny } = whole;
  const semantic = { most: 0, of: (_slot: number) => 0 };
  if (extAny && !opts.exactVectors) {
    if (extQ) {
      const near = ix.vectors.nearest(extQ, Math.max(4 * k, VECTOR_CANDIDATES), ix.capacity, eligible);
      for (const slot of near.slots) offer(slot);
      semantic.most = Math.max(0, w.semantic) * Math.max(0, near.cosines[0] ?? 0);
      semantic.of = (s) => (ix.vectors.has[s] ? Math.max(0, w.semantic * ix.vectors.cosine(extQ, s)) : 0);
    }
    if (!words) for (let i = 0; i < mn; i++) if (eligible(ma[i]!)) offer(ma[i]!);
  }
  if (qvec || (extAny && opts.exactVectors) || (!extAny && !words)) {
    // Built-in vectors can find a doc that shares no word with the query, and a query
    // without content words ("what's new?") ranks every doc by its priors.
    if (!qvec && !extAny && q.qTerms.size > 0) {
      // Query words matched nothing but speaker/tags (possibly nothing at all).
      for (let i = 0; i < mn; i++) if (eligible(ma[i]!)) offer(ma[i]!);
    } else {
      const live = ix.live;
      for (let s = 0; s < ix.capacity; s++) if (live[s] && eligible(s)) offer(s);
    }
  } else {
    offerWithWordEvidence(ix, b, fused, norms, q.temporal, semantic, now, k, eligible);
  }
}

/** The most a doc's period named, recency, importance and feedback may add (what this index holds). */
function priors(ix: RankedIndex, temporal: TemporalRange | null, now: number): number {
  const w = ix.weights;
  const halfLife = w.recencyHalfLifeDays * DAY;
  return (
    (temporal ? Math.max(0, w.time) : 0) +
    Math.max(0, w.recency) * 0.5 ** (Math.max(0, now - ix.maxCreatedAt) / halfLife) +
    Math.abs(w.importance) * ix.maxImportanceDev +
    Math.abs(w.feedback) * Math.tanh(ix.maxAbsFeedback / 2)
  );
}

/**
 * The most a slot whose words were deferred (bm25-saturate.ts's markReach: one kept term's context alone, scoring at
 * most `most`; no own words) may score, for a search with no vectors (rank-search.ts's mayDefer). Without a
 * speaker/tag match it has no evidence of its own: its context and expansion words, the when-lift on them, no
 * priors. With one, what offerWithWordEvidence bounds a doc by. `expMost`: the largest normalised expansion score.
 */
export function deferredMost(
  ix: RankedIndex,
  b: SearchBuffers,
  norms: Norms,
  expMost: number,
  temporal: TemporalRange | null,
  now: number,
  most: number,
): number {
  const w = ix.weights;
  const words = w.context * most * norms.lexNorm + w.expansion * expMost;
  let top = words * (1 + norms.whenLift) + 1e-9;
  const { a: ma, n: mn } = b.metaTouched;
  const bound = mn > 0 ? priors(ix, temporal, now) + 1e-9 : 0;
  for (let i = 0; i < mn; i++) {
    const s = ma[i]!;
    if (b.reach[s] !== 1) continue;
    const ms = b.meta[s]!;
    const m = ms === 0 || ix.firstPerson[s] ? ms : ms * w.metaNotSelf;
    const sn = ix.sessionNo[s]!;
    const known =
      words * (1 + norms.metaLift * m + (ix.namesTime[s] ? norms.whenLift : 0)) +
      (sn < 0 ? 0 : w.session * ix.sessionBuf[sn]! * norms.sessionNorm) +
      w.meta * m * norms.metaNorm;
    top = Math.max(top, known + bound);
  }
  return top;
}

/**
 * Candidates are the docs with word evidence (own, neighbours', expansion). Pruning: every other feature is
 * bounded, so a doc whose word evidence plus that bound cannot beat the current k-th score is skipped without
 * computing the rest. The parts already computed per doc (words, session, meta) are taken exactly; the rest is
 * bounded by what this index holds (a time phrase, its newest doc, its importance and feedback extremes), so the
 * bound is tight and the pruning exact; a doc that passes it with the best cosine found is then tried with its own.
 */
function offerWithWordEvidence(
  ix: RankedIndex,
  b: SearchBuffers,
  fused: Fusion,
  norms: Norms,
  temporal: TemporalRange | null,
  semantic: { most: number; of: (slot: number) => number },
  now: number,
  k: number,
  eligible: Eligible,
): void {
  const w = ix.weights;
  const { top, offer } = fused;
  const ta = b.touched.a;
  const tn = b.touched.n;
  const ma = b.metaTouched.a;
  const mn = b.metaTouched.n;
  const ea = b.expTouched.a;
  const en = b.expTouched.n;
  const wLex = w.lexical;
  const wLexAsking = w.lexical * w.asking;
  const notSelf = w.metaNotSelf;
  const wCtx = w.context;
  const wExp = w.expansion;
  const wSession = w.session;
  const wMeta = w.meta;
  const bound = priors(ix, temporal, now) + semantic.most + 1e-9;
  const mayEnter = (known: number, s: number, floor: number) => known + bound - semantic.most + semantic.of(s) > floor;
  const namesTime = ix.namesTime;
  // One pass over the first-pass docs: each one's known part (below) is kept by its index in the
  // touched list, and the docs with the best word evidence seed the top k.
  const knownOf = b.known;
  const seed = new TopK(k);
  // (Hot loops read local names, not a closure's or an object's: a load and an unboxing per use.)
  const lex = b.lex,
    ctx = b.ctx,
    exp = b.exp,
    metaS = b.meta,
    sessionNo = ix.sessionNo,
    sessionScore = ix.sessionBuf;
  const firstPerson = ix.firstPerson,
    endsAsking = ix.endsAsking;
  const lexNormL = norms.lexNorm,
    expNormL = norms.expNorm,
    sessionNormL = norms.sessionNorm,
    metaNormL = norms.metaNorm,
    metaLiftL = norms.metaLift,
    whenLiftL = norms.whenLift;
  // Per-slot arrays read only when they can matter (a search at 300,000 memories is bound by these reads):
  // speaker/tag scores are zero unless the query matched some, and the when-lift is zero for another question.
  const anyMeta = mn > 0;
  const whenQuestion = whenLiftL !== 0;
  // The per-slot reads in a loop that calls nothing; each doc's words are left in `offered` for the seeding loop
  // after it, offered in the same order.
  const wordsOf = b.offered;
  for (let i = 0; i < tn; i++) {
    const s = ta[i]!;
    // knownOf[i] holds the doc's (asking-weighted) lexical + context words from the first pass.
    const words = knownOf[i]! * lexNormL + wExp * exp[s]! * expNormL;
    wordsOf[i] = words;
    const ms = anyMeta ? metaS[s]! : 0;
    const sn = sessionNo[s]!;
    const m = ms === 0 || firstPerson[s] ? ms : ms * notSelf;
    knownOf[i] =
      words * (1 + metaLiftL * m + (whenQuestion && namesTime[s] ? whenLiftL : 0)) +
      (sn < 0 ? 0 : wSession * sessionScore[sn]! * sessionNormL) +
      wMeta * m * metaNormL;
  }
  for (let i = 0; i < tn; i++) {
    const words = wordsOf[i]!;
    if (words > seed.floor && eligible(ta[i]!)) seed.offer(ta[i]!, words);
  }
  for (const { slot } of seed.sorted()) offer(slot);
  let min = top.floor;
  for (let i = 0; i < tn; i++) {
    if (knownOf[i]! + bound <= min) continue;
    const s = ta[i]!;
    if (mayEnter(knownOf[i]!, s, min) && eligible(s)) {
      offer(s);
      min = top.floor;
    }
  }
  // A doc with expansion evidence only and no speaker/tag match has no evidence of its own, so
  // it scores its expansion words plus the when-lift on them and no priors: at most this.
  const bareExpansionCap = Math.abs(wExp) * (1 + whenLiftL) + 1e-9;
  // And none of them scores more than this (its words are expansion's alone; words, meta and
  // session are each normalised to at most 1): once the k-th score is above it, the scan below
  // cannot offer anything, and is not run (a name in the question matches half the turns).
  const metaMost = Math.max(1, notSelf);
  const expansionOnlyCap =
    Math.abs(wExp) * (1 + Math.max(0, w.metaEvidence) * metaMost + whenLiftL) +
    Math.max(0, wSession) +
    Math.max(0, wMeta) * metaMost +
    1e-9;
  if ((mn > 0 || bareExpansionCap > min) && expansionOnlyCap + bound > min) {
    const metaHit = b.metaHit;
    for (let i = 0; i < mn; i++) metaHit[ma[i]!] = 1;
    for (let i = 0; i < en; i++) {
      const s = ea[i]!;
      // No speaker/tag match (metaS[s] is 0) once bare expansion cannot reach the top k: skipped below.
      if (metaHit[s] === 0 && bareExpansionCap <= min) continue;
      const ms = metaS[s]!;
      // A doc with first-pass evidence was already offered in the first pass; offering it
      // again cannot change the top k.
      if ((ms === 0 && bareExpansionCap <= min) || lex[s] !== 0 || ctx[s] !== 0) continue;
      const sn = sessionNo[s]!;
      const words =
        ((endsAsking[s] ? wLexAsking : wLex) * lex[s]! + wCtx * ctx[s]!) * lexNormL + wExp * exp[s]! * expNormL;
      const m = ms === 0 || firstPerson[s] ? ms : ms * notSelf;
      const known =
        words * (1 + metaLiftL * m + (namesTime[s] ? whenLiftL : 0)) +
        (sn < 0 ? 0 : wSession * sessionScore[sn]! * sessionNormL) +
        wMeta * m * metaNormL;
      if (known + bound <= min || !mayEnter(known, s, min)) continue;
      if (eligible(s)) {
        offer(s);
        min = top.floor;
      }
    }
    for (let i = 0; i < mn; i++) metaHit[ma[i]!] = 0;
  }
}
