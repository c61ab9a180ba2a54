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

  approxBytes(): number {
    // Posting entry in a Map ~ 40 bytes; per-doc term map roughly the same again.
    return this.approxTermBytes + this.entries * 80 + this.docLen.byteLength;
  }
}
