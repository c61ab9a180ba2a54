// Bm25Field.scoreWithContext's last step: a term's BM25F score of each slot it touches, from its
// spread over the session neighbours, with each slot's length normalised with its neighbours'.
import { type ContextPostings, growList, listRoom, type SlotList } from './bm25-context.js';

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

type Links = { prev: Int32Array; next: Int32Array; window: number; weight: number; decay: number };

/** What a search's saturation reads besides a term's spread: lengths, links, the cached normalisations. */
export interface Saturation {
  docLen: Float64Array;
  links: Links;
  normCache: Float64Array;
  /** Bm25Field's norm epoch (ContextPostings.normEpoch). */
  normEpoch: number;
  avgExpanded: number;
}

/**
 * A term's postings spread over the session neighbours into the buffers (own tf, context tf by slot), the slots
 * in first-touch order in `termTouched`; their number.
 */
export function spreadTerm(
  slots: Int32Array,
  tfs: Uint16Array,
  n: number,
  links: Links,
  back: number,
  tfSelf: Float64Array,
  tfCtx: Float64Array,
  termTouched: Int32Array,
): number {
  const { prev, next, window, weight, decay } = links;
  let nt = 0;
  for (let i = 0; i < n; i++) {
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
  return nt;
}

/**
 * The length normalisation of a slot with its neighbours (computed once per slot until the index
 * changes): its own length plus the neighbours' at their context weights, so that a one-word turn
 * does not get the full neighbour score for free. (A normalisation that is 0 is computed again
 * each time: the same value.)
 */
export function expandedNorm(docLen: Float64Array, slot: number, links: Links, avgExpanded: number): number {
  const { prev, next, window, weight, decay } = links;
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
 * One term's BM25F score of each slot it touches, split between own and context evidence, from the
 * spread that scoreWithContext left in the buffers (own and context tf by slot), set back to zero as
 * read. (saturateKept does the same from kept context postings: two loops, each reading one kind of array.)
 */
export function saturateInPlace(
  sat: Saturation,
  slots: Int32Array,
  own: Float64Array,
  ctx: Float64Array,
  nt: number,
  idf: number,
  outSelf: Float64Array,
  outCtx: Float64Array,
  touched: SlotList,
): void {
  const { docLen, links, normCache, avgExpanded } = sat;
  const same = outSelf === outCtx;
  let ta = touched.a;
  let tn = touched.n;
  for (let j = 0; j < nt; j++) {
    const slot = slots[j]!;
    const ts = own[slot]!;
    const t = ts + ctx[slot]!;
    let norm = normCache[slot]!;
    if (norm === 0) norm = normCache[slot] = expandedNorm(docLen, slot, links, avgExpanded);
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
    own[slot] = 0;
    ctx[slot] = 0;
  }
  touched.n = tn;
}

/**
 * The kept term's entries with their slots' length normalisations cached (once per norm epoch), and the largest
 * t / (t + norm) of its context-only entries.
 */
export function prepareKept(sat: Saturation, kept: ContextPostings): void {
  const { docLen, links, normCache, normEpoch, avgExpanded } = sat;
  if (kept.normEpoch === normEpoch) return;
  const { slots, pairNo, pairs } = kept;
  let most = 0;
  for (let j = 0, nt = slots.length; j < nt; j++) {
    const slot = slots[j]!;
    let norm = normCache[slot]!;
    if (norm === 0) norm = normCache[slot] = expandedNorm(docLen, slot, links, avgExpanded);
    const p = 2 * pairNo[j]!;
    const t = pairs[p + 1]!;
    if (pairs[p] === 0 && t / (t + norm) > most) most = t / (t + norm);
  }
  kept.ctxMost = most;
  kept.normEpoch = normEpoch;
}

/**
 * A search's slots by how their query words are scored (SearchBuffers.reach): 0 untouched; 1 touched by one kept
 * term's context alone, its score deferred (a single entry: no own tf, nothing else added to it, so scored alone
 * later it is the same number); 2 scored in full. Counts each kept term's entries (1 on the first, 2 on a second),
 * then sets 2 on every slot holding a query term (postings) and on every slot an unkept term's spread reaches.
 */
export function markReach(
  reach: Uint8Array,
  kept: ContextPostings | null,
  postings: Int32Array,
  n: number,
  links: Links,
  backward: number,
): void {
  if (kept !== null) {
    const slots = kept.slots;
    for (let j = 0, nt = slots.length; j < nt; j++) {
      const slot = slots[j]!;
      const x = reach[slot]!;
      reach[slot] = x + +(x < 2);
    }
    for (let i = 0; i < n; i++) reach[postings[i]!] = 2;
    return;
  }
  // As scoreWithContext spreads it: the slot, and its neighbours within the window (before it only with backward > 0).
  const { prev, next, window, weight } = links;
  for (let i = 0; i < n; i++) {
    const slot = postings[i]!;
    reach[slot] = 2;
    if (weight <= 0) continue;
    let a = prev[slot]!;
    let b = next[slot]!;
    for (let d = 1; d <= window && (a >= 0 || b >= 0); d++) {
      if (a >= 0) {
        if (backward > 0) reach[a] = 2;
        a = prev[a]!;
      }
      if (b >= 0) {
        reach[b] = 2;
        b = next[b]!;
      }
    }
  }
}

/** A search's deferred slots (markReach): the kept terms reaching them, with their idf, and the most one may score. */
export interface Deferred {
  terms: Map<ContextPostings, number>;
  most: number;
  sat: Saturation;
}

/** saturateKept's table of a term's pairs with their numerators (the thread's; grown, never shrunk). */
let pairScratch = new Float64Array(0);
/** saturateKept's list of the entries it scores under `reach` (the thread's; grown, never shrunk). */
let entryScratch = new Int32Array(0);

/**
 * saturateInPlace from a term's kept context postings (the number of its own tf and total's pair by entry).
 * The loop calls nothing (the entries' normalisations cached first, once per norm epoch; the touched list's
 * room made first): a call in it, even one not taken, made V8 check every array again each entry.
 * With `reach` (separate outputs only): the entries whose slot's reach is `only` (markReach), the others skipped.
 */
export function saturateKept(
  sat: Saturation,
  kept: ContextPostings,
  idf: number,
  outSelf: Float64Array,
  outCtx: Float64Array,
  touched: SlotList,
  reach: Uint8Array | null = null,
  only = 0,
): void {
  const { slots, pairNo, pairs } = kept;
  const nt = slots.length;
  prepareKept(sat, kept);
  const normCache = sat.normCache;
  const ta = listRoom(touched, nt);
  let tn = touched.n;
  // Each pair's numerator idf * t * (k1 + 1) once per call (the same product in the same order: exact), so an entry
  // multiplies nothing before its division. A pair is read as three doubles: own tf, total, numerator.
  const pn = pairs.length >>> 1;
  if (pairScratch.length < pn * 3) pairScratch = new Float64Array(Math.max(pn * 3, pairScratch.length * 2));
  const pt = pairScratch;
  const idfV = idf * 1;
  const k1p1 = BM25_K1 + 1;
  for (let p = 0; p < pn; p++) {
    const t = pairs[2 * p + 1]!;
    pt[3 * p] = pairs[2 * p]!;
    pt[3 * p + 1] = t;
    pt[3 * p + 2] = idfV * t * k1p1;
  }
  // Two loops, one per kind of output, their first lines alike: the branch inside one loop cost back most of
  // what calling nothing saves (in process 0.95 of main's CPU a search against 0.80, bench/README.md session 14).
  if (outSelf === outCtx) {
    // One buffer for both parts (the expansion pass): read once, the two parts added in the same order.
    for (let j = 0; j < nt; j++) {
      const slot = slots[j]!;
      const p = pairNo[j]! * 3;
      const ts = pt[p]!;
      const t = pt[p + 1]!;
      const sc = pt[p + 2]! / (t + normCache[slot]!);
      const selfPart = (sc * ts) / t;
      ta[tn] = slot;
      const o = outSelf[slot]!;
      tn += +(o === 0);
      outSelf[slot] = o + selfPart + (sc - selfPart);
    }
  } else {
    // The entries to score listed first: under `reach` those whose slot's reach is `only`, without a branch (about
    // half are skipped, in no order a branch predicts: a skip in the scoring loop cost what the skipped entries
    // saved); else all of them.
    if (entryScratch.length < nt) entryScratch = new Int32Array(Math.max(nt, entryScratch.length * 2));
    const at = entryScratch;
    let m = 0;
    if (reach === null) for (; m < nt; m++) at[m] = m;
    else
      for (let j = 0; j < nt; j++) {
        at[m] = j;
        m += +(reach[slots[j]!] === only);
      }
    for (let i = 0; i < m; i++) {
      const j = at[i]!;
      const slot = slots[j]!;
      const p = pairNo[j]! * 3;
      const ts = pt[p]!;
      const t = pt[p + 1]!;
      const sc = pt[p + 2]! / (t + normCache[slot]!);
      const selfPart = (sc * ts) / t;
      ta[tn] = slot;
      tn += +(outSelf[slot] === 0) & +(outCtx[slot] === 0);
      outSelf[slot]! += selfPart;
      outCtx[slot]! += sc - selfPart;
    }
  }
  touched.n = tn;
}

/** The slots scoreWithContext deferred, scored now (a single entry each: the numbers a full scoring gives them). */
export function scoreDeferred(
  d: Deferred,
  lex: Float64Array,
  ctx: Float64Array,
  touched: SlotList,
  reach: Uint8Array,
): void {
  for (const [kept, idf] of d.terms) saturateKept(d.sat, kept, idf, lex, ctx, touched, reach, 1);
}
