// Remote-embedder vectors of one index, compact and searched without scanning every doc (issue 53).
// Each unit vector is kept as int8 codes and a scale (a quarter of float32's bytes; the int8 dot
// product is the cosine to within ~0.5 %), and assigned to the nearest of `lists` centroids
// (spherical k-means on a sample, retrained each time the count has grown fourfold). A query scores
// the centroids, then the docs of the nearest lists until about `probeShare` of the docs (at least
// `probeMin`) have been read: those are its candidates, scored exactly on their codes.

/** Below this many vectors a query reads them all (cheap), and no centroids are trained. */
export const VECTOR_TRAIN_MIN = 2048;
/** The share of the vectors a query reads past VECTOR_TRAIN_MIN, and its floor. */
const PROBE_SHARE = 0.03;
const PROBE_MIN = 1024;
const KMEANS_ROUNDS = 6;

export interface VectorCandidates {
  slots: number[];
  /** Cosines of `slots` (same order, best first). */
  cosines: number[];
}

export class VectorIndex {
  dims = 0;
  /** Per slot: `dims` int8 codes. */
  codes = new Int8Array(0);
  /** Per slot: the code's unit (cosine = dot(query, codes) * scale). */
  scale = new Float32Array(0);
  /** Per slot: 1 when it holds a vector. */
  has = new Uint8Array(0);
  /** Per slot: its list (-1 before centroids are trained). */
  list = new Int32Array(0);
  /** `lists` unit centroids of `dims`. */
  centroids = new Float32Array(0);
  lists = 0;
  count = 0;
  /** The count at the last training (0: never). */
  trainedAt = 0;
  /** Per list, the slots assigned to it (a slot reassigned or removed is skipped when read). */
  private members: number[][] = [];

  grow(capacity: number): void {
    const g = <T extends Int8Array | Float32Array | Uint8Array | Int32Array>(a: T, per = 1): T => {
      const n = new (a.constructor as new (len: number) => T)(capacity * per);
      n.set(a);
      return n;
    };
    if (this.dims) this.codes = g(this.codes, this.dims);
    this.scale = g(this.scale);
    this.has = g(this.has);
    const old = this.list.length;
    this.list = g(this.list);
    this.list.fill(-1, old);
  }

  /** Stores a slot's vector (any length-`dims` vector; kept unit-length). */
  set(slot: number, vector: Float32Array, capacity: number): void {
    if (this.dims === 0) {
      this.dims = vector.length;
      this.codes = new Int8Array(capacity * this.dims);
    }
    if (vector.length !== this.dims)
      throw new Error(`vector has ${vector.length} dimensions, index holds ${this.dims}`);
    let n = 0;
    let max = 0;
    for (let i = 0; i < vector.length; i++) {
      n += vector[i]! * vector[i]!;
      max = Math.max(max, Math.abs(vector[i]!));
    }
    const norm = Math.sqrt(n);
    const unit = norm > 0 ? max / norm : 0;
    const scale = unit > 0 ? unit / 127 : 0;
    const base = slot * this.dims;
    const q = scale > 0 ? 1 / (scale * norm) : 0;
    for (let i = 0; i < vector.length; i++) this.codes[base + i] = Math.round(vector[i]! * q);
    this.scale[slot] = scale;
    if (!this.has[slot]) this.count++;
    this.has[slot] = 1;
    if (this.trainedAt > 0) this.assign(slot);
    if (this.count >= Math.max(VECTOR_TRAIN_MIN, 4 * this.trainedAt)) this.train();
  }

  delete(slot: number): void {
    if (!this.has[slot]) return;
    this.has[slot] = 0;
    this.list[slot] = -1;
    this.count--;
  }

  /** The cosine of a unit query with a slot's vector. */
  cosine(q: Float32Array, slot: number): number {
    const d = this.dims;
    const codes = this.codes;
    // Four sums, not one: the multiplications no longer wait for each other's additions (1.4x on 512 dimensions).
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    const b = slot * d;
    const whole = d & ~3;
    let i = 0;
    for (; i < whole; i += 4) {
      s0 += q[i]! * codes[b + i]!;
      s1 += q[i + 1]! * codes[b + i + 1]!;
      s2 += q[i + 2]! * codes[b + i + 2]!;
      s3 += q[i + 3]! * codes[b + i + 3]!;
    }
    for (; i < d; i++) s0 += q[i]! * codes[b + i]!;
    return (s0 + s1 + s2 + s3) * this.scale[slot]!;
  }

  /** The `k` best docs for a unit query among those read (all of them below VECTOR_TRAIN_MIN), best first. */
  nearest(q: Float32Array, k: number, capacity: number, eligible: (slot: number) => boolean): VectorCandidates {
    const best: Array<[number, number]> = [];
    let floor = -Infinity;
    const consider = (slot: number) => {
      if (!this.has[slot] || !eligible(slot)) return;
      const c = this.cosine(q, slot);
      if (best.length >= k && c <= floor) return;
      best.push([slot, c]);
      if (best.length > 2 * k) {
        best.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
        best.length = k;
        floor = best[k - 1]![1];
      }
    };
    if (this.trainedAt === 0) {
      for (let s = 0; s < capacity; s++) consider(s);
    } else {
      const order = this.nearestLists(q);
      const budget = Math.max(PROBE_MIN, Math.ceil(this.count * PROBE_SHARE));
      let read = 0;
      for (const l of order) {
        if (read >= budget) break;
        for (const s of this.members[l]!) {
          if (this.list[s] !== l) continue;
          consider(s);
          read++;
        }
      }
    }
    best.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    best.length = Math.min(best.length, k);
    return { slots: best.map((b) => b[0]), cosines: best.map((b) => b[1]) };
  }

  /** After a restore: the lists' members from each slot's list. */
  rebuildLists(capacity: number): void {
    this.members = Array.from({ length: this.lists }, () => []);
    for (let s = 0; s < capacity; s++) if (this.has[s] && this.list[s]! >= 0) this.members[this.list[s]!]!.push(s);
  }

  private nearestLists(q: Float32Array): number[] {
    const d = this.dims;
    const scores = new Float64Array(this.lists);
    for (let l = 0; l < this.lists; l++) {
      let s = 0;
      for (let i = 0, b = l * d; i < d; i++) s += q[i]! * this.centroids[b + i]!;
      scores[l] = s;
    }
    return [...scores.keys()].sort((a, b) => scores[b]! - scores[a]! || a - b);
  }

  private assign(slot: number): void {
    const d = this.dims;
    const codes = this.codes;
    let best = 0;
    let bestScore = -Infinity;
    for (let l = 0; l < this.lists; l++) {
      let s = 0;
      for (let i = 0, b = l * d, c = slot * d; i < d; i++) s += this.centroids[b + i]! * codes[c + i]!;
      if (s > bestScore) {
        bestScore = s;
        best = l;
      }
    }
    this.list[slot] = best;
    this.members[best]!.push(slot);
  }

  /** Spherical k-means on an even sample of the vectors (deterministic), then every vector assigned. */
  private train(): void {
    const d = this.dims;
    const slots: number[] = [];
    for (let s = 0; s < this.has.length; s++) if (this.has[s]) slots.push(s);
    const lists = Math.max(8, Math.round(Math.sqrt(slots.length)));
    const sampleSize = Math.min(slots.length, lists * 24);
    const sample = Array.from({ length: sampleSize }, (_, i) => slots[Math.floor((i * slots.length) / sampleSize)]!);
    const centroids = new Float32Array(lists * d);
    for (let l = 0; l < lists; l++) {
      const s = sample[Math.floor((l * sample.length) / lists)]!;
      for (let i = 0; i < d; i++) centroids[l * d + i] = this.codes[s * d + i]! * this.scale[s]!;
    }
    const of = new Int32Array(sample.length);
    for (let round = 0; round < KMEANS_ROUNDS; round++) {
      this.centroids = centroids;
      this.lists = lists;
      for (let j = 0; j < sample.length; j++) {
        let best = 0;
        let bestScore = -Infinity;
        const c = sample[j]! * d;
        for (let l = 0; l < lists; l++) {
          let s = 0;
          for (let i = 0, b = l * d; i < d; i++) s += centroids[b + i]! * this.codes[c + i]!;
          if (s > bestScore) {
            bestScore = s;
            best = l;
          }
        }
        of[j] = best;
      }
      const sums = new Float64Array(lists * d);
      for (let j = 0; j < sample.length; j++) {
        const s = sample[j]!;
        const b = of[j]! * d;
        for (let i = 0; i < d; i++) sums[b + i] = sums[b + i]! + this.codes[s * d + i]! * this.scale[s]!;
      }
      for (let l = 0; l < lists; l++) {
        let n = 0;
        for (let i = 0; i < d; i++) n += sums[l * d + i]! * sums[l * d + i]!;
        if (n === 0) continue; // an empty list keeps its centroid
        const inv = 1 / Math.sqrt(n);
        for (let i = 0; i < d; i++) centroids[l * d + i] = sums[l * d + i]! * inv;
      }
    }
    this.centroids = centroids;
    this.lists = lists;
    this.members = Array.from({ length: lists }, () => []);
    this.trainedAt = slots.length;
    for (const s of slots) this.assign(s);
  }

  approxBytes(): number {
    return (
      this.codes.byteLength +
      this.scale.byteLength +
      this.has.byteLength +
      this.list.byteLength +
      this.centroids.byteLength +
      this.count * 8
    );
  }
}
