// FROZEN REFERENCE for bench/engine-exactness.ts: the engine's bm25.ts as of commit 1d9825b. Do not edit.
// Incremental BM25 over an inverted index keyed by dense slots (see MemoryIndex).
// Adding or removing a document touches only that document's postings.

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

export class Bm25Field {
  private readonly postings = new Map<string, Map<number, number>>(); // term -> slot -> tf
  private readonly docTerms = new Map<number, Map<string, number>>(); // slot -> term -> tf (for removal)
  private docLen = new Float64Array(64);
  private totalLen = 0;
  private approxTermBytes = 0;
  private entries = 0;

  get docCount(): number {
    return this.docTerms.size;
  }

  add(slot: number, terms: readonly string[]): void {
    this.remove(slot);
    if (terms.length === 0) return;
    const tf = new Map<string, number>();
    for (const t of terms) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [t, n] of tf) {
      let p = this.postings.get(t);
      if (!p) {
        p = new Map();
        this.postings.set(t, p);
        this.approxTermBytes += 64 + t.length * 2;
      }
      p.set(slot, n);
    }
    this.docTerms.set(slot, tf);
    this.entries += tf.size;
    if (slot >= this.docLen.length) {
      const grown = new Float64Array(Math.max(slot + 1, this.docLen.length * 2));
      grown.set(this.docLen);
      this.docLen = grown;
    }
    this.docLen[slot] = terms.length;
    this.totalLen += terms.length;
  }

  remove(slot: number): void {
    const tf = this.docTerms.get(slot);
    if (!tf) return;
    for (const t of tf.keys()) {
      const p = this.postings.get(t);
      if (!p) continue;
      p.delete(slot);
      if (p.size === 0) {
        this.postings.delete(t);
        this.approxTermBytes -= 64 + t.length * 2;
      }
    }
    this.entries -= tf.size;
    this.docTerms.delete(slot);
    this.totalLen -= this.docLen[slot] ?? 0;
    this.docLen[slot] = 0;
  }

  /** The doc's terms with their frequencies (read-only view). */
  termsOf(slot: number): ReadonlyMap<string, number> | undefined {
    return this.docTerms.get(slot);
  }

  /** Number of docs containing the term. */
  df(term: string): number {
    return this.postings.get(term)?.size ?? 0;
  }

  /** Robertson/Sparck-Jones idf, floored at a small positive value so very common terms still count a little. */
  idf(term: string): number {
    const n = this.postings.get(term)?.size ?? 0;
    if (n === 0) return 0;
    const N = this.docCount;
    return Math.max(0.01, Math.log(1 + (N - n + 0.5) / (n + 0.5)));
  }

  /**
   * Adds weight * BM25(term, doc) into out[slot] for every posting of every query term.
   * Slots seen for the first time (out[slot] was 0) are appended to touched.
   */
  scoreInto(query: ReadonlyMap<string, number>, out: Float64Array, touched: number[], weight = 1): void {
    const N = this.docCount;
    if (N === 0) return;
    const avgLen = this.totalLen / N || 1;
    for (const [term, qtf] of query) {
      const p = this.postings.get(term);
      if (!p) continue;
      const idf = this.idf(term) * qtf * weight;
      for (const [slot, tf] of p) {
        const norm = BM25_K1 * (1 - BM25_B + (BM25_B * (this.docLen[slot] ?? 0)) / avgLen);
        const s = (idf * tf * (BM25_K1 + 1)) / (tf + norm);
        if (out[slot] === 0) touched.push(slot);
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
    scratch: { tfSelf: Float64Array; tfCtx: Float64Array },
    outSelf: Float64Array,
    outCtx: Float64Array,
    touched: number[],
  ): void {
    const N = this.docCount;
    if (N === 0) return;
    const avgLen = this.totalLen / N || 1;
    const { prev, next, window, weight, decay } = links;
    const back = links.backward ?? 1;
    const { tfSelf, tfCtx } = scratch;
    const termTouched: number[] = [];
    // Length normalisation uses the expanded length (own + weighted neighbours), so a
    // one-word turn does not get the full neighbour score for free.
    let spread = 0;
    for (let d = 1, v = weight; d <= window; d++, v *= decay) spread += (1 + back) * v;
    const avgExpanded = avgLen * (1 + spread);
    const expandedLen = (slot: number): number => {
      let len = this.docLen[slot] ?? 0;
      if (weight <= 0) return len;
      let a = prev[slot]!;
      let b = next[slot]!;
      for (let d = 1, v = weight; d <= window && (a >= 0 || b >= 0); d++, v *= decay) {
        if (a >= 0) {
          len += v * this.docLen[a]!;
          a = prev[a]!;
        }
        if (b >= 0) {
          len += v * this.docLen[b]!;
          b = next[b]!;
        }
      }
      return len;
    };
    const bump = (slot: number, v: number): void => {
      if (tfSelf[slot] === 0 && tfCtx[slot] === 0) termTouched.push(slot);
      tfCtx[slot]! += v;
    };
    for (const [term, qtf] of query) {
      const p = this.postings.get(term);
      if (!p) continue;
      const idf = this.idf(term) * qtf;
      for (const [slot, tf] of p) {
        if (tfSelf[slot] === 0 && tfCtx[slot] === 0) termTouched.push(slot);
        tfSelf[slot]! += tf;
        if (weight > 0) {
          let v = tf * weight;
          let a = prev[slot]!;
          let b = next[slot]!;
          for (let d = 1; d <= window && (a >= 0 || b >= 0); d++) {
            if (a >= 0) {
              if (back > 0) bump(a, v * back);
              a = prev[a]!;
            }
            if (b >= 0) {
              bump(b, v);
              b = next[b]!;
            }
            v *= decay;
          }
        }
      }
      for (const slot of termTouched) {
        const ts = tfSelf[slot]!;
        const t = ts + tfCtx[slot]!;
        const norm = BM25_K1 * (1 - BM25_B + (BM25_B * expandedLen(slot)) / avgExpanded);
        const sc = (idf * t * (BM25_K1 + 1)) / (t + norm);
        const selfPart = (sc * ts) / t;
        if (outSelf[slot] === 0 && outCtx[slot] === 0) touched.push(slot);
        outSelf[slot]! += selfPart;
        outCtx[slot]! += sc - selfPart;
        tfSelf[slot] = 0;
        tfCtx[slot] = 0;
      }
      termTouched.length = 0;
    }
  }

  approxBytes(): number {
    // Posting entry in a Map ~ 40 bytes; per-doc term map roughly the same again.
    return this.approxTermBytes + this.entries * 80 + this.docLen.byteLength;
  }
}
