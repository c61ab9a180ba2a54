// Each doc's terms (as term ids, with their counts) for Bm25Field: what removing a doc, compacting a
// term's postings and the query expansion read. One arena for every doc, not a map per doc.
import { TYPED_ARRAY_BYTES } from './heap-bytes.js';

/**
 * The terms of slot s are terms[start[s]..end[s]) with their counts, in the order the doc first used
 * them; start -1: no doc. A doc added again is appended and its old range left behind: the arena is
 * compacted (every doc's range moved down, in slot order) once what is left behind outweighs what is
 * held. A map per doc took ~40 bytes a term besides its strings; this takes 6, and a restored
 * snapshot's arrays are the arena as they are.
 */
export class DocTerms {
  start: Int32Array = new Int32Array(0);
  end: Int32Array = new Int32Array(0);
  terms: Int32Array = new Int32Array(0);
  tfs: Uint16Array = new Uint16Array(0);
  /** Arena entries written (held and left behind). */
  used = 0;
  /** Entries of the docs held. */
  entries = 0;
  docs = 0;

  /** A restored snapshot's arrays (views of it: copied once they have to grow). */
  static of(start: Int32Array, end: Int32Array, terms: Int32Array, tfs: Uint16Array): DocTerms {
    const d = new DocTerms();
    [d.start, d.end, d.terms, d.tfs] = [start, end, terms, tfs];
    d.used = terms.length;
    for (let slot = 0; slot < start.length; slot++) {
      if (start[slot]! < 0) continue;
      d.docs++;
      d.entries += end[slot]! - start[slot]!;
    }
    return d;
  }

  has(slot: number): boolean {
    return slot < this.start.length && this.start[slot]! >= 0;
  }

  /** The doc's terms as ids and counts, the first n of each (replacing any it had). */
  set(slot: number, ids: Int32Array, tfs: Uint16Array, n: number): void {
    this.remove(slot);
    if (slot >= this.start.length) this.reserve(Math.max(slot + 1, this.start.length * 2, 64));
    if (this.used + n > this.terms.length) this.makeRoom(n);
    this.terms.set(ids.subarray(0, n), this.used);
    this.tfs.set(tfs.subarray(0, n), this.used);
    this.start[slot] = this.used;
    this.end[slot] = this.used += n;
    this.entries += n;
    this.docs++;
  }

  /** Room for slots below `slots`. */
  reserve(slots: number): void {
    if (slots <= this.start.length) return;
    const start = new Int32Array(slots).fill(-1);
    const end = new Int32Array(slots);
    start.set(this.start);
    end.set(this.end);
    [this.start, this.end] = [start, end];
  }

  remove(slot: number): void {
    if (!this.has(slot)) return;
    this.entries -= this.end[slot]! - this.start[slot]!;
    this.docs--;
    this.start[slot] = -1;
  }

  /**
   * Compacts the arena when half of it is left behind, else grows it: twice the room needed or, once a thousand docs
   * are held, to what their average would fill in every slot reserved (a build from scratch reserves its slots
   * first: doubling copied the arena of 300,000 docs ~16 times, ~0.2-0.4 s of a cold build under load), at most 8x.
   */
  private makeRoom(n: number): void {
    const garbage = this.used - this.entries;
    const need = this.entries + n;
    const projected =
      this.docs >= 1000 ? Math.min(Math.ceil((need / this.docs) * this.start.length * 1.05), 8 * need) : 0;
    const cap = garbage > this.entries ? Math.max(64, 2 * need) : Math.max(64, 2 * (this.used + n), projected);
    const terms = new Int32Array(cap);
    const tfs = new Uint16Array(cap);
    if (garbage > this.entries) {
      let at = 0;
      for (let slot = 0; slot < this.start.length; slot++) {
        const s = this.start[slot]!;
        if (s < 0) continue;
        const e = this.end[slot]!;
        terms.set(this.terms.subarray(s, e), at);
        tfs.set(this.tfs.subarray(s, e), at);
        this.start[slot] = at;
        this.end[slot] = at += e - s;
      }
      this.used = at;
    } else {
      terms.set(this.terms.subarray(0, this.used));
      tfs.set(this.tfs.subarray(0, this.used));
    }
    [this.terms, this.tfs] = [terms, tfs];
  }

  /** Its arrays cut to `slots` slots (none of them beyond in use) and the arena to what is in use. */
  fit(slots: number): void {
    if (this.start.length > slots) [this.start, this.end] = [this.start.slice(0, slots), this.end.slice(0, slots)];
    if (this.terms.length > this.used)
      [this.terms, this.tfs] = [this.terms.slice(0, this.used), this.tfs.slice(0, this.used)];
  }

  /** Whether the slot's doc holds the term id. */
  holds(slot: number, id: number): boolean {
    if (!this.has(slot)) return false;
    const terms = this.terms;
    for (let i = this.start[slot]!, e = this.end[slot]!; i < e; i++) if (terms[i] === id) return true;
    return false;
  }

  /** A copy of the slot's doc's ids and counts (null: no doc), which the arena's changes leave as it is. */
  copy(slot: number): { terms: Int32Array; tfs: Uint16Array } | null {
    if (!this.has(slot)) return null;
    const [s, e] = [this.start[slot]!, this.end[slot]!];
    return { terms: this.terms.slice(s, e), tfs: this.tfs.slice(s, e) };
  }

  /** Bytes held (heap-bytes.ts). */
  approxBytes(): number {
    return (
      4 * TYPED_ARRAY_BYTES + this.start.byteLength + this.end.byteLength + this.terms.byteLength + this.tfs.byteLength
    );
  }
}
