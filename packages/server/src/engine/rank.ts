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
import type { Explanation, SearchOptions } from './types.js';

/** Most unique query terms considered; keeps a pasted document from costing a full scan per term. */
const MAX_QUERY_TERMS = 64;
/**
 * Query terms read as typos: one edit from a shorter one is too often another word, and a longer
 * one is an id or junk (its edits would cost a search hundreds of lookups of long strings).
 */
const TYPO_MIN_CHARS = 5;
const TYPO_MAX_CHARS = 24;
export const DAY = 86_400_000;
const WHEN_QUESTION = /^\s*(?:when|how long|what (?:date|time|year|month|day)|which (?:year|month|day))\b/i;

export type Links = {
  prev: Int32Array;
  next: Int32Array;
  window: number;
  weight: number;
  decay: number;
  backward: number;
};
export type Eligible = (slot: number) => boolean;

/** The query as searched. */
export interface QueryTerms {
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
export interface FirstPass {
  maxLex: number;
  /** The largest session sum. */
  maxSession: number;
  sessionsTouched: Iterable<number>;
  /** The best first-pass docs, for pseudo-relevance feedback (null: none wanted). */
  best: TopK | null;
}

/** Each feature's normaliser (and lifts) for this query. */
export interface Norms {
  lexNorm: number;
  expNorm: number;
  sessionNorm: number;
  metaNorm: number;
  metaLift: number;
  whenLift: number;
}

/** The fused score of a doc, and the top k it is offered to. */
export interface Fusion {
  top: TopK;
  offer: (slot: number) => void;
  explain: (slot: number) => Explanation;
}

/**
 * The query's terms. A time phrase becomes a created_at preference and is not matched as words
 * ("last week" should not favour texts containing "week").
 */
export function queryTerms(ix: RankedIndex, query: string, opts: SearchOptions, now: number): QueryTerms {
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
export function eligibility(ix: RankedIndex, opts: SearchOptions, b: SearchBuffers): Eligible {
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
export function contextLinks(ix: RankedIndex): Links {
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
export function firstPass(ix: RankedIndex, b: SearchBuffers, opts: SearchOptions, eligible: Eligible): FirstPass {
  const w = ix.weights;
  const ta = b.touched.a;
  const tn = b.touched.n;
  const doExpansion = w.expansion > 0 && w.expansionDocs > 0 && tn > 0;
  const best = doExpansion ? new TopK(w.expansionDocs, ix.slotId) : null;
  const doSession = w.session > 0;
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
  // The per-slot reads in a loop that calls nothing (a call in it made V8 check every array again each slot): each
  // slot's l + c is left in `offered` for the feedback docs' loop after it, offered in the same order (so the same
  // ties); the sessions touched listed with room made first. Under a filter or a session, the session sums are
  // a loop of their own (in the same touched order: the same sums).
  const lcOf = b.offered;
  const touchedSessions = b.sessionList;
  const sumHere = doSession && !restricted;
  let sessions = 0;
  for (let i = 0; i < tn; i++) {
    const s = ta[i]!;
    const l = lex[s]!;
    const c = ctx[s]!;
    wordsPart[i] = (endsAsking[s] ? wLexAsking : wLex) * l + wCtx * c;
    const lc = l + c;
    lcOf[i] = lc;
    if (lc > maxLex) maxLex = lc;
    if (!sumHere) continue;
    const sn = sessionNo[s]!;
    if (sn < 0 || l === 0) continue;
    const before = sessionScore[sn]!;
    touchedSessions[sessions] = sn;
    sessions += +(before === 0);
    const v = (sessionScore[sn] = before + l);
    if (v > maxSession) maxSession = v;
  }
  if (doSession && restricted)
    for (let i = 0; i < tn; i++) {
      const s = ta[i]!;
      const l = lex[s]!;
      const sn = sessionNo[s]!;
      // A touched slot is live (postings and session links hold live slots only): only a filter can exclude it.
      if (sn < 0 || l === 0 || !eligible(s)) continue;
      if (sessionScore[sn] === 0) touchedSessions[sessions++] = sn;
      const v = (sessionScore[sn]! += l);
      if (v > maxSession) maxSession = v;
    }
  if (best !== null)
    for (let i = 0; i < tn; i++) {
      const lc = lcOf[i]!;
      if (lc >= best.floor && eligible(ta[i]!)) best.offer(ta[i]!, lc);
    }
  return { maxLex, maxSession, sessionsTouched: touchedSessions.subarray(0, sessions), best };
}

/** A shard's largest speaker/tag score and expansion score. */
export function maxima(b: SearchBuffers, cap: number): { maxMeta: number; maxExp: number } {
  const ma = b.metaTouched.a;
  const mn = b.metaTouched.n;
  const ea = b.expTouched.a;
  const en = b.expTouched.n;
  let maxMeta = 0;
  for (let i = 0, metaS = b.meta; i < mn; i++) if (metaS[ma[i]!]! > maxMeta) maxMeta = metaS[ma[i]!]!;
  let maxExp = 0;
  const exp = b.exp;
  // Most of a large index touched: read in order (a scan the cache reads ahead), not by the touched list.
  if (en > cap >>> 3) {
    for (let s = 0; s < cap; s++) if (exp[s]! > maxExp) maxExp = exp[s]!;
  } else for (let i = 0; i < en; i++) if (exp[ea[i]!]! > maxExp) maxExp = exp[ea[i]!]!;
  return { maxMeta, maxExp };
}

export function normalisers(
  w: RankingWeights,
  maxLex: number,
  maxSession: number,
  maxMeta: number,
  maxExp: number,
  whenLift: number,
): Norms {
  const metaNorm = maxMeta > 0 ? 1 / maxMeta : 0;
  const lexNorm = maxLex > 0 ? 1 / maxLex : 0;
  // Expansion is normalised like the first pass unless its own best is stronger (a first pass
  // that matched only a weak word, e.g. a name): then by its own best, so it never outweighs `expansion`.
  const expNorm = maxExp > maxLex ? 1 / maxExp : lexNorm;
  const metaLift = Math.max(0, w.metaEvidence) * metaNorm;
  const sessionNorm = maxSession > 0 ? 1 / maxSession : 0;
  return { lexNorm, expNorm, sessionNorm, metaNorm, metaLift, whenLift };
}

/**
 * One fixed-order feature vector per doc; the score is its sum and the explanation lists the same
 * numbers, so contributions always add up to the score.
 */
export function fusion(
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

  const top = new TopK(k, ix.slotId);
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
