// MemoryIndex.search's ranking, phase by phase: the query's terms; the word evidence (BM25F with
// the session neighbours' words, speaker/tags); the first-pass sums (session evidence, the best
// docs, the normaliser); pseudo-relevance feedback; the fused features of a doc; the candidates
// offered to the top k (vector neighbours, every doc, or the docs with word evidence, exactly
// pruned); the hits and their explanations. A search leaves the thread's buffers zero.
import { addAnswerTypes } from './answer-types.js';
import { dot } from './embedder.js';
import { FEATURES, relevanceOf, type RankingWeights } from './ranking-weights.js';
import type { RankedIndex } from './ranked-index.js';
import { type SearchBuffers, TopK } from './search-buffers.js';
import { parseTemporal, type TemporalRange } from './temporal.js';
import { analyze } from './text.js';
import type { Explanation, SearchHit, SearchOptions } from './types.js';
import { unit } from './vectors.js';

/** Most unique query terms considered; keeps a pasted document from costing a full scan per term. */
const MAX_QUERY_TERMS = 64;
/**
 * Query terms read as typos: one edit from a shorter one is too often another word, and a longer
 * one is an id or junk (its edits would cost a search hundreds of lookups of long strings).
 */
const TYPO_MIN_CHARS = 5;
const TYPO_MAX_CHARS = 24;
const DAY = 86_400_000;
const WHEN_QUESTION = /^\s*(?:when|how long|what (?:date|time|year|month|day)|which (?:year|month|day))\b/i;
/** Vector candidates a query takes at least (4 k when more). */
const VECTOR_CANDIDATES = 50;

type Links = { prev: Int32Array; next: Int32Array; window: number; weight: number; decay: number; backward: number };
type Eligible = (slot: number) => boolean;

/** The query as searched. */
interface QueryTerms {
  temporal: TemporalRange | null;
  /** The query without its time phrase: what is matched as words. */
  lexQuery: string;
  /** Its unique terms and their counts (matched against speaker/tags). */
  qTerms: Map<string, number>;
  /** Terms searched in the text: the query's (a speaker/tag name weighted down), typo fixes, answer-type instances. */
  textTerms: Map<string, number>;
  /** The when-question lift (RankingWeights.whenNamesTime), 0 for another question. */
  whenLift: number;
}

/** What the first pass over the docs with word evidence found. */
interface FirstPass {
  maxLex: number;
  sessionNorm: number;
  sessionsTouched: number[];
  /** The best first-pass docs, for pseudo-relevance feedback (null: none wanted). */
  best: TopK | null;
}

/** Each feature's normaliser (and lifts) for this query. */
interface Norms {
  lexNorm: number;
  expNorm: number;
  sessionNorm: number;
  metaNorm: number;
  metaLift: number;
  whenLift: number;
}

/** The fused score of a doc, and the top k it is offered to. */
interface Fusion {
  top: TopK;
  offer: (slot: number) => void;
  explain: (slot: number) => Explanation;
}

/** search() with the thread's buffers, which it leaves zero. */
export function rank(ix: RankedIndex, query: string, opts: SearchOptions, k: number, b: SearchBuffers): SearchHit[] {
  const w = ix.weights;
  const now = opts.now ?? Date.now();
  const q = queryTerms(ix, query, opts, now);
  const eligible = eligibility(ix, opts, b);
  const links = contextLinks(ix);

  // Lexical evidence of the doc itself and of its session neighbours (BM25F-style).
  b.touched.n = b.metaTouched.n = b.expTouched.n = 0;
  ix.text.scoreWithContext(q.textTerms, links, ix.scratch, b.lex, b.ctx, b.touched);
  ix.meta.scoreInto(q.qTerms, b.meta, b.metaTouched);

  const first = firstPass(ix, b, opts, eligible);
  if (first.best !== null) expandQuery(ix, first.best, q.qTerms, links, b);

  // Vector features are scored for every live doc, so a doc can be found without sharing a word.
  const qvec = ix.embedder && w.ngram > 0 && q.qTerms.size > 0 ? ix.embedder.embedSync(q.lexQuery) : null;
  const vectors = ix.vectors;
  const extQ =
    opts.queryVector && vectors.count > 0 && vectors.dims === opts.queryVector.length && w.semantic > 0
      ? vectors.prepare(unit(opts.queryVector))
      : null;

  const norms = normalisers(w, b, first, q.whenLift, ix.capacity);
  const fused = fusion(ix, b, q, norms, qvec, extQ, opts, now, k);
  offerCandidates(ix, b, fused, norms, q, qvec, extQ, opts, now, k, eligible);

  const hits: SearchHit[] = fused.top.sorted().map(({ slot, score }) => {
    const hit: SearchHit = { id: ix.slotId[slot]!, score, relevance: relevanceOf(score) };
    if (opts.explain) hit.explanation = fused.explain(slot);
    return hit;
  });
  b.zero(ix.capacity, ix.sessionBuf, first.sessionsTouched);
  return hits;
}

/**
 * The query's terms. A time phrase becomes a created_at preference and is not matched as words
 * ("last week" should not favour texts containing "week").
 */
function queryTerms(ix: RankedIndex, query: string, opts: SearchOptions, now: number): QueryTerms {
  const w = ix.weights;
  const q = typeof query === 'string' ? query : '';
  const temporal = opts.temporal === false ? null : parseTemporal(q, now);
  const lexQuery = temporal ? q.replace(temporal.matched, ' ') : q;
  const whenLift = WHEN_QUESTION.test(q) ? Math.max(0, w.whenNamesTime) : 0;
  const qTerms = new Map<string, number>();
  const terms = analyze(lexQuery);
  for (const t of terms) {
    if (qTerms.size >= MAX_QUERY_TERMS && !qTerms.has(t)) continue;
    qTerms.set(t, (qTerms.get(t) ?? 0) + 1);
  }

  const textTerms = new Map<string, number>();
  for (const [t, n] of qTerms) textTerms.set(t, ix.meta.df(t) > 0 ? n * w.metaTermInText : n);
  if (w.typo > 0) {
    for (const [t, n] of qTerms) {
      if (t.length < TYPO_MIN_CHARS || t.length > TYPO_MAX_CHARS || ix.text.df(t) > 0 || ix.meta.df(t) > 0) continue;
      const fix = ix.text.nearestTerm(t);
      if (fix !== undefined && !qTerms.has(fix)) textTerms.set(fix, (textTerms.get(fix) ?? 0) + n * w.typo);
    }
  }

  if (w.answerType > 0 || w.answerTypeLexicon > 0) addAnswerTypes(ix.text, ix.mutations, w, terms, qTerms, textTerms);
  return { temporal, lexQuery, qTerms, textTerms, whenLift };
}

/**
 * Whether a slot may be a hit: live, and in the session and through the filter asked for. The filter (the
 * caller's, a map lookup and its predicate) is asked once per slot and search: the seed and pruning passes meet
 * the same slots again, twice as often as not under a filter that excludes the first docs they meet.
 */
function eligibility(ix: RankedIndex, opts: SearchOptions, b: SearchBuffers): Eligible {
  const live = ix.live;
  const sessionNo = ix.sessionNo;
  const slotId = ix.slotId;
  const filter = opts.filter;
  const onlySession = opts.sessionId;
  // The session's number (-2, which no doc has, for a session this index has never held).
  const onlyNo = onlySession === undefined ? -2 : (ix.sessionNos.get(onlySession) ?? -2);
  if (!filter)
    return (slot: number): boolean => live[slot] === 1 && (onlySession === undefined || sessionNo[slot] === onlyNo);
  const asked = b.filterAsked;
  const pass = b.filterPass;
  const stamp = b.nextFilterStamp();
  return (slot: number): boolean => {
    if (live[slot] !== 1 || (onlySession !== undefined && sessionNo[slot] !== onlyNo)) return false;
    if (asked[slot] === stamp) return pass[slot] === 1;
    const passes = filter(slotId[slot]!);
    asked[slot] = stamp;
    pass[slot] = passes ? 1 : 0;
    return passes;
  };
}

/**
 * The session links and context parameters. Expanded-length normalisations are cached per slot
 * across searches until the index or the context parameters change.
 */
function contextLinks(ix: RankedIndex): Links {
  const w = ix.weights;
  const scratch = ix.scratch;
  const nk = ix.normKey;
  if (
    nk.mutations !== ix.mutations ||
    nk.window !== w.contextWindow ||
    nk.weight !== w.context ||
    nk.decay !== w.contextDecay ||
    nk.backward !== w.contextBackward
  ) {
    scratch.stamp = (scratch.stamp + 1) >>> 0;
    if (scratch.stamp === 0) {
      scratch.normStamp = 0;
      scratch.stamp = 1;
    }
    nk.mutations = ix.mutations;
    nk.window = w.contextWindow;
    nk.weight = w.context;
    nk.decay = w.contextDecay;
    nk.backward = w.contextBackward;
  }
  return {
    prev: ix.prevSlot,
    next: ix.nextSlot,
    window: w.contextWindow,
    weight: w.context,
    decay: w.contextDecay,
    backward: w.contextBackward,
  };
}

/**
 * One pass over the first-pass docs: the best ones for feedback, session sums, the normaliser
 * (none of these depends on the expansion scores), and each doc's weighted own + context words,
 * kept by its index in the touched list for the ranking pass (read in order there, not from three
 * per-slot arrays). Session-level evidence: a topic discussed across a session lifts all of its
 * turns a little.
 */
function firstPass(ix: RankedIndex, b: SearchBuffers, opts: SearchOptions, eligible: Eligible): FirstPass {
  const w = ix.weights;
  const ta = b.touched.a;
  const tn = b.touched.n;
  const doExpansion = w.expansion > 0 && w.expansionDocs > 0 && tn > 0;
  const best = doExpansion ? new TopK(w.expansionDocs) : null;
  const doSession = w.session > 0;
  const sessionsTouched: number[] = [];
  let maxSession = 0;
  let maxLex = 0;
  const lex = b.lex,
    ctx = b.ctx,
    sessionNo = ix.sessionNo,
    sessionScore = ix.sessionBuf;
  const restricted = !!opts.filter || opts.sessionId !== undefined;
  const wordsPart = b.known,
    endsAsking = ix.endsAsking;
  const wLex = w.lexical,
    wLexAsking = w.lexical * w.asking,
    wCtx = w.context;
  for (let i = 0; i < tn; i++) {
    const s = ta[i]!;
    const l = lex[s]!;
    const c = ctx[s]!;
    wordsPart[i] = (endsAsking[s] ? wLexAsking : wLex) * l + wCtx * c;
    const lc = l + c;
    if (lc > maxLex) maxLex = lc;
    if (best !== null && lc > best.floor && eligible(s)) best.offer(s, lc);
    if (!doSession) continue;
    const sn = sessionNo[s]!;
    // A touched slot is live (postings and session links hold live slots only): only a filter can exclude it.
    if (sn < 0 || l === 0 || (restricted && !eligible(s))) continue;
    if (sessionScore[sn] === 0) sessionsTouched.push(sn);
    const v = (sessionScore[sn]! += l);
    if (v > maxSession) maxSession = v;
  }
  return { maxLex, sessionNorm: maxSession > 0 ? 1 / maxSession : 0, sessionsTouched, best };
}

/**
 * Pseudo-relevance feedback: the best first-pass docs suggest vocabulary the query lacked (the
 * answer turn often shares words with the turns that match the question); scored into `b.exp`.
 */
function expandQuery(ix: RankedIndex, best: TopK, qTerms: Map<string, number>, links: Links, b: SearchBuffers): void {
  const w = ix.weights;
  const cand = new Map<string, number>();
  for (const { slot } of best.sorted()) {
    const terms = ix.text.termsOf(slot);
    if (!terms) continue;
    let len = 0;
    for (const n of terms.values()) len += n;
    for (const [t, n] of terms) {
      if (qTerms.has(t)) continue;
      cand.set(t, (cand.get(t) ?? 0) + (n / len) * ix.text.idf(t));
    }
  }
  const picked = [...cand].sort((a, b) => b[1] - a[1]).slice(0, w.expansionTerms);
  const top = picked[0]?.[1] ?? 0;
  if (top > 0) {
    const expTerms = new Map<string, number>(picked.map(([t, v]) => [t, v / top]));
    // Context evidence for expansion terms lands in the same buffer: one feature.
    ix.text.scoreWithContext(expTerms, links, ix.scratch, b.exp, b.exp, b.expTouched);
  }
}

function normalisers(w: RankingWeights, b: SearchBuffers, first: FirstPass, whenLift: number, cap: number): Norms {
  const ma = b.metaTouched.a;
  const mn = b.metaTouched.n;
  const ea = b.expTouched.a;
  const en = b.expTouched.n;
  let maxMeta = 0;
  for (let i = 0, metaS = b.meta; i < mn; i++) if (metaS[ma[i]!]! > maxMeta) maxMeta = metaS[ma[i]!]!;
  const metaNorm = maxMeta > 0 ? 1 / maxMeta : 0;
  const maxLex = first.maxLex;
  const lexNorm = maxLex > 0 ? 1 / maxLex : 0;
  // Expansion is normalised like the first pass unless its own best is stronger (a first pass
  // that matched only a weak word, e.g. a name): then by its own best, so it never outweighs `expansion`.
  let maxExp = 0;
  const exp = b.exp;
  // Most of a large index touched: read in order (a scan the cache reads ahead), not by the touched list.
  if (en > cap >>> 3) {
    for (let s = 0; s < cap; s++) if (exp[s]! > maxExp) maxExp = exp[s]!;
  } else for (let i = 0; i < en; i++) if (exp[ea[i]!]! > maxExp) maxExp = exp[ea[i]!]!;
  const expNorm = maxExp > maxLex ? 1 / maxExp : lexNorm;
  const metaLift = Math.max(0, w.metaEvidence) * metaNorm;
  return { lexNorm, expNorm, sessionNorm: first.sessionNorm, metaNorm, metaLift, whenLift };
}

/**
 * One fixed-order feature vector per doc; the score is its sum and the explanation lists the same
 * numbers, so contributions always add up to the score.
 */
function fusion(
  ix: RankedIndex,
  b: SearchBuffers,
  q: QueryTerms,
  norms: Norms,
  qvec: Float32Array | null,
  extQ: Float32Array | null,
  opts: SearchOptions,
  now: number,
  k: number,
): Fusion {
  const w = ix.weights;
  const { lexNorm, expNorm, sessionNorm, metaNorm, metaLift, whenLift } = norms;
  const { temporal, qTerms } = q;
  const lex = b.lex;
  const metaS = b.meta;
  const ctx = b.ctx;
  const exp = b.exp;
  const sessionNo = ix.sessionNo;
  const sessionScore = ix.sessionBuf;
  const vectors = ix.vectors;
  const firstPerson = ix.firstPerson;
  const endsAsking = ix.endsAsking;
  const metaOf = (slot: number): number => (firstPerson[slot] ? metaS[slot]! : metaS[slot]! * w.metaNotSelf);
  const askingOf = (slot: number): number => (endsAsking[slot] ? w.asking : 1);
  const halfLife = w.recencyHalfLifeDays * DAY;

  const f = new Float64Array(FEATURES.length);
  let supported = false;
  const hasContent = qTerms.size > 0 || temporal !== null;
  const features = (slot: number): number => {
    f[0] = w.lexical * lex[slot]! * lexNorm * askingOf(slot);
    f[1] = w.context * ctx[slot]! * lexNorm;
    f[2] = w.expansion * exp[slot]! * expNorm;
    const words = f[0] + f[1] + f[2];
    const sn = sessionNo[slot]!;
    f[3] = sn < 0 ? 0 : w.session * sessionScore[sn]! * sessionNorm;
    const m = metaOf(slot);
    f[4] = w.meta * m * metaNorm + metaLift * m * words;
    f[5] = qvec ? w.ngram * Math.max(0, dot(qvec, ix.ngramVecs, slot * ix.dims)) : 0;
    f[6] = extQ && vectors.has[slot] ? w.semantic * Math.max(0, vectors.cosine(extQ, slot)) : 0;
    const t = ix.createdAt[slot]!;
    const inPeriod = temporal && t >= temporal.from && t < temporal.to ? w.time : 0;
    const whenTime = ix.namesTime[slot] ? whenLift * words : 0;
    f[7] = inPeriod + whenTime;
    f[8] = w.recency * 0.5 ** (Math.max(0, now - t) / halfLife);
    f[9] = w.importance * (ix.importance[slot]! - 0.5);
    f[10] = w.feedback * Math.tanh(ix.feedback[slot]! / 2);
    // A doc's own evidence: the query's words, speaker/tags, vectors; the period named counts only
    // when the query names nothing else. Its neighbouring turns' words support it too (an answer
    // follows its question). Structural features and priors (session, period, recency, importance,
    // feedback) only reorder docs with evidence of their own; the when-lift is a fraction of the
    // doc's word evidence, so it already does. A query with nothing to be evidence of ("what's
    // new?") is ranked by the priors alone.
    const own = f[0]! + f[4]! + f[5]! + f[6]! + (qTerms.size === 0 ? inPeriod : 0) > 0;
    supported = own || f[1]! > 0;
    if (!own && hasContent) {
      f[3] = f[8] = f[9] = f[10] = 0;
      f[7] = whenTime;
    }
    let s = 0;
    for (let i = 0; i < f.length; i++) s += f[i]!;
    return s;
  };
  const explain = (slot: number): Explanation => {
    features(slot);
    const e: Explanation = {};
    for (let i = 0; i < FEATURES.length; i++) if (f[i] !== 0) e[FEATURES[i]!] = f[i]!;
    return e;
  };

  const top = new TopK(k);
  const requireEvidence = opts.requireEvidence === true;
  const minRelevance = opts.minRelevance ?? 0;
  const offer = (slot: number): void => {
    const score = features(slot);
    if (requireEvidence && !supported) return;
    if (minRelevance > 0 && relevanceOf(score) < minRelevance) return;
    top.offer(slot, score);
  };
  return { top, offer, explain };
}

/**
 * The candidates offered to the top k. Remote vectors: the nearest docs by vector (vectors.ts: a
 * bounded read of the nearest lists) are candidates beside those with word evidence; any other doc's semantic
 * part is at most the best cosine found (`semantic.most`), and exactly its own (`semantic.of`, the tighter).
 */
function offerCandidates(
  ix: RankedIndex,
  b: SearchBuffers,
  fused: Fusion,
  norms: Norms,
  q: QueryTerms,
  qvec: Float32Array | null,
  extQ: Float32Array | null,
  opts: SearchOptions,
  now: number,
  k: number,
  eligible: Eligible,
): void {
  const w = ix.weights;
  const { offer } = fused;
  const tn = b.touched.n;
  const ma = b.metaTouched.a;
  const mn = b.metaTouched.n;
  const en = b.expTouched.n;
  const semantic = { most: 0, of: (_slot: number) => 0 };
  if (extQ && !opts.exactVectors) {
    const near = ix.vectors.nearest(extQ, Math.max(4 * k, VECTOR_CANDIDATES), ix.capacity, eligible);
    for (const slot of near.slots) offer(slot);
    semantic.most = Math.max(0, w.semantic) * Math.max(0, near.cosines[0] ?? 0);
    semantic.of = (s) => (ix.vectors.has[s] ? Math.max(0, w.semantic * ix.vectors.cosine(extQ, s)) : 0);
    if (tn === 0 && en === 0) for (let i = 0; i < mn; i++) if (eligible(ma[i]!)) offer(ma[i]!);
  }
  if (qvec || (extQ && opts.exactVectors) || (!extQ && tn === 0 && en === 0)) {
    // Built-in vectors can find a doc that shares no word with the query, and a query
    // without content words ("what's new?") ranks every doc by its priors.
    if (!qvec && !extQ && q.qTerms.size > 0) {
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
  const halfLife = w.recencyHalfLifeDays * DAY;
  const wLex = w.lexical;
  const wLexAsking = w.lexical * w.asking;
  const notSelf = w.metaNotSelf;
  const wCtx = w.context;
  const wExp = w.expansion;
  const wSession = w.session;
  const wMeta = w.meta;
  const bound =
    (temporal ? Math.max(0, w.time) : 0) +
    Math.max(0, w.recency) * 0.5 ** (Math.max(0, now - ix.maxCreatedAt) / halfLife) +
    Math.abs(w.importance) * ix.maxImportanceDev +
    Math.abs(w.feedback) * Math.tanh(ix.maxAbsFeedback / 2) +
    semantic.most +
    1e-9;
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
  for (let i = 0; i < tn; i++) {
    const s = ta[i]!;
    // knownOf[i] holds the doc's (asking-weighted) lexical + context words from the first pass.
    const words = knownOf[i]! * lexNormL + wExp * exp[s]! * expNormL;
    if (words > seed.floor && eligible(s)) seed.offer(s, words);
    const ms = anyMeta ? metaS[s]! : 0;
    const sn = sessionNo[s]!;
    const m = ms === 0 || firstPerson[s] ? ms : ms * notSelf;
    knownOf[i] =
      words * (1 + metaLiftL * m + (whenQuestion && namesTime[s] ? whenLiftL : 0)) +
      (sn < 0 ? 0 : wSession * sessionScore[sn]! * sessionNormL) +
      wMeta * m * metaNormL;
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
