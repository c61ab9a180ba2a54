// Bm25Field.scoreWithContext's last step: a term's BM25F score of each slot it touches, from its
// spread over the session neighbours, with each slot's length normalised with its neighbours'.
import { type ContextPostings, growList, listRoom, type SlotList } from './bm25-context.js';

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

type Links = { prev: Int32Array; next: Int32Array; window: number; weight: number; decay: number };

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
  docLen: Float64Array,
  slots: Int32Array,
  own: Float64Array,
  ctx: Float64Array,
  nt: number,
  idf: number,
  links: Links,
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

/** saturateKept's table of a term's pairs with their numerators (the thread's; grown, never shrunk). */
let pairScratch = new Float64Array(0);

/**
 * saturateInPlace from a term's kept context postings (the number of its own tf and total's pair by entry).
 * The loop calls nothing (the entries' normalisations cached first, once per norm epoch; the touched list's
 * room made first): a call in it, even one not taken, made V8 check every array again each entry.
 */
export function saturateKept(
  docLen: Float64Array,
  kept: ContextPostings,
  idf: number,
  links: Links,
  normCache: Float64Array,
  normEpoch: number,
  avgExpanded: number,
  outSelf: Float64Array,
  outCtx: Float64Array,
  touched: SlotList,
): void {
  const { slots, pairNo, pairs } = kept;
  const nt = slots.length;
  if (kept.normEpoch !== normEpoch) {
    for (let j = 0; j < nt; j++) {
      const slot = slots[j]!;
      if (normCache[slot] === 0) normCache[slot] = expandedNorm(docLen, slot, links, avgExpanded);
    }
    kept.normEpoch = normEpoch;
  }
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
    for (let j = 0; j < nt; j++) {
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
