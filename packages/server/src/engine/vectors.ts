// Remote-embedder vectors of one index, compact and searched without scanning every doc (issue 53).
// Each unit vector is kept as int8 codes and a scale (a quarter of float32's bytes; the int8 dot
// product is the cosine to within ~0.5 %), its sign bits (a 32nd), and assigned to the nearest of
// `lists` centroids (spherical k-means on a sample, retrained each time the count has grown
// fourfold). A query scores the centroids, then reads the docs of the nearest lists until about
// `probeShare` of the docs (at least `probeMin`) have been read, by their sign bits only: each
// doc's estimate is the query's (float) components summed where its bits are set, read eight
// dimensions at a time from a table of the query's 256 sums a byte. The best RESCORE of those
// estimates are scored exactly on their codes; they are the candidates. The codes, sign bits (and the
// centroids, as int8) live in the thread's WebAssembly memory and are scored by a SIMD kernel
// (vector-arena.ts, wasm-dot.ts), as are the sign bits (sixteen dimensions an instruction
// sequence); in JavaScript where it cannot run. A forgotten vector is zeroed.

import { TYPED_ARRAY_BYTES } from './heap-bytes.js';
import { type ArenaBlock, arena } from './vector-arena.js';

/** Below this many vectors a query reads them all (cheap), and no centroids are trained. */
export const VECTOR_TRAIN_MIN = 2048;
/** The share of the vectors a query reads past VECTOR_TRAIN_MIN, and its floor. */
const PROBE_SHARE = 0.015;
const PROBE_MIN = 1024;
const KMEANS_ROUNDS = 6;
/** Docs read by their sign bits that are scored exactly on their codes: this many, or 8 per candidate asked. */
export const RESCORE_MIN = 200;
const RESCORE_PER_CANDIDATE = 4;
/** Slots scored against every centroid per kernel call when lists are assigned (the arena's batch scratch holds twice as many). */
const CENTROID_BATCH = 4096;

export interface VectorCandidates {
  slots: number[];
  /** Cosines of `slots` (same order, best first). */
  cosines: number[];
}

/**
 * A fixed orthogonal map of `dims` (random signs, a random permutation, then a Walsh-Hadamard
 * transform of each block of the largest power of two dividing `dims`), the same for every index
 * and process. Vectors are kept, and queries scored, after it: cosines are unchanged, and a vector
 * with few non-zero parts (a short text's, a sparse model's) is spread over all of them, so that
 * its sign bits describe it (without it, every zero reads as a negative part).
 */
export function rotation(dims: number): (v: Float32Array) => Float32Array {
  let seed = 0x9e3779b9 ^ dims;
  const next = () => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const perm = Int32Array.from({ length: dims }, (_, i) => i);
  for (let i = dims - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [perm[i], perm[j]] = [perm[j]!, perm[i]!];
  }
  const sign = Float32Array.from({ length: dims }, () => (next() < 0.5 ? -1 : 1));
  const block = Math.min(dims & -dims, 4096);
  const norm = 1 / Math.sqrt(block);
  return (v) => {
    const out = new Float32Array(dims);
    for (let i = 0; i < dims; i++) out[i] = sign[i]! * v[perm[i]!]!;
    for (let b = 0; b < dims; b += block)
      for (let h = 1; h < block; h *= 2)
        for (let i = b; i < b + block; i += 2 * h)
          for (let j = i; j < i + h; j++) {
            const x = out[j]!;
            const y = out[j + h]!;
            out[j] = x + y;
            out[j + h] = x - y;
          }
    for (let i = 0; i < dims; i++) out[i]! *= norm;
    return out;
  };
}

export class VectorIndex {
  dims = 0;
  /** Per slot: `dims` int8 codes (in the thread's arena when `block` is set, vector-arena.ts). */
  codes: Int8Array<ArrayBufferLike> = new Int8Array(0);
  /** The arena's blocks holding `codes` and `signs`; null: a plain array, scored in JavaScript. */
  private block: ArenaBlock<Int8Array> | null = null;
  private signsBlock: ArenaBlock<Uint8Array> | null = null;
  /** Whether codes go to the arena (false: JavaScript only, to compare the two). */
  private readonly useArena: boolean;
  /** Per slot: the code's unit (cosine = dot(query, codes) * scale). */
  scale = new Float32Array(0);
  /** Per slot: `signBytes` bytes of sign bits (bit b of byte j: dimension 8j + b is positive). */
  signs: Uint8Array<ArrayBufferLike> = new Uint8Array(0);
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
  /** Per query, reused: the slots read, their estimates, and the query's sums per sign byte. */
  private readSlots = new Int32Array(0);
  private estimates = new Float32Array(0);
  private sums = new Float32Array(0);
  /** The query `sums` were built for. */
  private sumsOf: Float32Array | null = null;
  private rotate: ((v: Float32Array) => Float32Array) | null = null;
  /** `listIds`' array. */
  private allLists = new Int32Array(0);
  /** The centroids as int8 codes in the arena, for the kernel (made at the first query after a training or restore). */
  private centroidCodes: { of: Float32Array; block: ArenaBlock; scale: Float32Array } | null = null;

  constructor(opts: { kernel?: 'wasm' | 'js' } = {}) {
    this.useArena = opts.kernel !== 'js';
  }

  /** Whether cosines are computed by the WebAssembly kernel. */
  get simd(): boolean {
    return this.block !== null;
  }

  /** Codes of `length` holding `from` (at most as long): vectors.ts `moved`. */
  private replaceCodes(length: number, from: Int8Array): void {
    [this.codes, this.block] = this.moved(this.codes, this.block, length, from, Int8Array);
  }

  /** Sign bits likewise (a byte spare after them: the kernel reads two bytes at a time). */
  private replaceSigns(length: number, from: Uint8Array): void {
    [this.signs, this.signsBlock] = this.moved(this.signs, this.signsBlock, length, from, Uint8Array, 1);
  }

  /**
   * A new array of `length` holding `from` (at most as long): a block of the arena when it has room, else
   * plain. The array it replaces is zeroed (an arena block given back is zeroed by the arena).
   */
  private moved<V extends Int8Array | Uint8Array>(
    old: V,
    oldBlock: ArenaBlock<V> | null,
    length: number,
    from: V,
    kind: new (b: SharedArrayBuffer, at: number, n: number) => V,
    spare = 0,
  ): [V, ArenaBlock<V> | null] {
    const block = this.useArena ? arena.allocate(length, kind, spare) : null;
    const fresh = block ? block.view : (new (kind as unknown as new (n: number) => V)(length) as V);
    fresh.set(from);
    if (oldBlock) arena.release(oldBlock);
    else old.fill(0);
    return [fresh, block];
  }

  /** Codes and sign bits read from a snapshot: copied into the arena when it has room, else kept as they are. */
  adopt(codes: Int8Array, signs: Uint8Array): void {
    if (this.useArena && arena.available) {
      this.replaceCodes(codes.length, codes);
      this.replaceSigns(signs.length, signs);
    }
    if (!this.block) this.codes = codes;
    if (!this.signsBlock) this.signs = signs;
  }

  get signBytes(): number {
    return (this.dims + 7) >> 3;
  }

  /** Room for `capacity` slots (more, or as many as the slots in use). */
  resize(capacity: number): void {
    const g = <T extends Int8Array | Float32Array | Uint8Array | Int32Array>(a: T, per = 1): T => {
      const n = new (a.constructor as new (len: number) => T)(capacity * per);
      n.set(a.length > n.length ? a.subarray(0, n.length) : a);
      return n;
    };
    if (this.dims) {
      this.replaceCodes(capacity * this.dims, this.codes.subarray(0, capacity * this.dims));
      this.replaceSigns(capacity * this.signBytes, this.signs.subarray(0, capacity * this.signBytes));
    }
    this.scale = g(this.scale);
    this.has = g(this.has);
    const old = this.list.length;
    this.list = g(this.list);
    this.list.fill(-1, old);
  }

  /** A unit query as this index scores it (rotated: `rotation`); for `cosine` and `nearest`. */
  prepare(q: Float32Array): Float32Array {
    this.rotate ??= rotation(this.dims);
    return this.rotate(q);
  }

  /** Stores a slot's vector (any length-`dims` vector; kept unit-length). */
  set(slot: number, given: Float32Array, capacity: number): void {
    if (this.dims === 0) {
      this.dims = given.length;
      this.replaceCodes(capacity * this.dims, new Int8Array(0));
      this.replaceSigns(capacity * this.signBytes, new Uint8Array(0));
    }
    if (given.length !== this.dims) throw new Error(`vector has ${given.length} dimensions, index holds ${this.dims}`);
    const vector = this.prepare(given);
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
    const sb = this.signBytes;
    const at = slot * sb;
    this.signs.fill(0, at, at + sb);
    for (let i = 0; i < vector.length; i++) if (this.codes[base + i]! > 0) this.signs[at + (i >> 3)]! |= 1 << (i & 7);
    this.scale[slot] = scale;
    if (!this.has[slot]) this.count++;
    this.has[slot] = 1;
    if (this.trainedAt > 0) this.assign(slot, vector);
    if (this.count >= Math.max(VECTOR_TRAIN_MIN, 4 * this.trainedAt)) this.train();
  }

  /** Forgets a slot's vector: its codes, signs and scale are zeroed (nothing of it stays in memory). */
  delete(slot: number): void {
    if (!this.has[slot]) return;
    const d = this.dims;
    this.codes.fill(0, slot * d, (slot + 1) * d);
    this.signs.fill(0, slot * this.signBytes, (slot + 1) * this.signBytes);
    this.scale[slot] = 0;
    this.has[slot] = 0;
    this.list[slot] = -1;
    this.count--;
  }

  /** The cosine of a unit query with a slot's vector (a prepared query is never changed: the kernel keeps it quantised). */
  cosine(q: Float32Array, slot: number): number {
    const d = this.dims;
    if (this.block) return (arena.dot(q, this.block.at + slot * d, d) * this.scale[slot]!) / arena.queryScale;
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

  /**
   * The `k` best docs for a unit query among those read (all of them below VECTOR_TRAIN_MIN), best
   * first: the docs read are ranked by their sign bits, and the best RESCORE of them by their codes.
   */
  nearest(q: Float32Array, k: number, capacity: number, eligible: (slot: number) => boolean): VectorCandidates {
    let n = 0;
    const take = (s: number) => {
      if (n === this.readSlots.length) {
        const more = new Int32Array(Math.max(1024, 2 * n));
        more.set(this.readSlots);
        this.readSlots = more;
      }
      this.readSlots[n++] = s;
    };
    if (this.trainedAt === 0) {
      for (let s = 0; s < capacity; s++) if (this.has[s] && eligible(s)) take(s);
    } else {
      const budget = Math.max(PROBE_MIN, Math.ceil(this.count * PROBE_SHARE));
      let listed = 0;
      for (const l of this.nearestLists(q)) {
        if (listed >= budget) break;
        for (const s of this.members[l]!) {
          if (this.list[s] !== l) continue;
          listed++;
          if (eligible(s)) take(s);
        }
      }
    }
    const slots = this.readSlots;
    const rescore = Math.max(RESCORE_MIN, RESCORE_PER_CANDIDATE * k);
    if (n > rescore) {
      // The best `rescore` by their sign bits, moved to the front (the slots read are this query's scratch).
      const est = this.estimate(q, n);
      const floor = kthLargest(est, n, rescore);
      let m = 0;
      for (let i = 0; i < n; i++) if (est[i]! >= floor) slots[m++] = slots[i]!;
      n = m;
    }
    const dots = this.block ? arena.dots(q, this.block.at, this.dims, slots, n) : null;
    const unit = 1 / arena.queryScale;
    const best: Array<[number, number]> = [];
    let least = -Infinity;
    for (let i = 0; i < n; i++) {
      const slot = slots[i]!;
      const c = dots ? dots[i]! * this.scale[slot]! * unit : this.cosine(q, slot);
      if (best.length >= k && c <= least) continue;
      best.push([slot, c]);
      if (best.length > 2 * k) {
        best.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
        best.length = k;
        least = best[k - 1]![1];
      }
    }
    best.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    best.length = Math.min(best.length, k);
    return { slots: best.map((b) => b[0]), cosines: best.map((b) => b[1]) };
  }

  /**
   * Each read slot's sign-bit estimate of its dot product with the query: the query's components
   * summed where the slot's bits are set (the query stays float: a better order than the Hamming
   * distance of two sign vectors, measured in engine/README.md), a table lookup per byte.
   */
  private estimate(q: Float32Array, n: number): Float32Array {
    const sb = this.signBytes;
    if (this.estimates.length < n) this.estimates = new Float32Array(this.readSlots.length);
    const est = this.estimates;
    if (this.signsBlock) {
      // The kernel's sums are in the quantised query's units: the same order.
      est.set(arena.signSums(q, this.signsBlock.at, sb, this.readSlots, n).subarray(0, n));
      return est;
    }
    const t = this.sumsFor(q);
    const signs = this.signs;
    const slots = this.readSlots;
    const whole = sb & ~3;
    for (let i = 0; i < n; i++) {
      const o = slots[i]! * sb;
      let e0 = 0;
      let e1 = 0;
      let j = 0;
      for (; j < whole; j += 4) {
        e0 += t[j * 256 + signs[o + j]!]! + t[(j + 2) * 256 + signs[o + j + 2]!]!;
        e1 += t[(j + 1) * 256 + signs[o + j + 1]!]! + t[(j + 3) * 256 + signs[o + j + 3]!]!;
      }
      for (; j < sb; j++) e0 += t[j * 256 + signs[o + j]!]!;
      est[i] = e0 + e1;
    }
    return est;
  }

  /** The query's sums of parts per sign byte (a table of 256 a byte), built once per query. */
  private sumsFor(q: Float32Array): Float32Array {
    if (this.sumsOf === q) return this.sums;
    const d = this.dims;
    const sb = this.signBytes;
    if (this.sums.length < sb * 256) this.sums = new Float32Array(sb * 256);
    const t = this.sums;
    for (let j = 0; j < sb; j++) {
      const base = j * 256;
      t[base] = 0;
      for (let m = 1; m < 256; m++) {
        const low = m & -m;
        const i = 8 * j + 31 - Math.clz32(low);
        t[base + m] = t[base + (m ^ low)]! + (i < d ? q[i]! : 0);
      }
    }
    this.sumsOf = q;
    return t;
  }

  /** After a restore: the lists' members from each slot's list. */
  rebuildLists(capacity: number): void {
    this.members = Array.from({ length: this.lists }, () => []);
    for (let s = 0; s < capacity; s++) if (this.has[s] && this.list[s]! >= 0) this.members[this.list[s]!]!.push(s);
  }

  private nearestLists(q: Float32Array): number[] {
    const d = this.dims;
    const scores = new Float64Array(this.lists);
    const quantised = this.quantisedCentroids();
    for (let l = 0; l < this.lists; l++) {
      if (quantised) {
        scores[l] = arena.dot(q, quantised.block.at + l * d, d) * quantised.scale[l]!;
        continue;
      }
      let s = 0;
      for (let i = 0, b = l * d; i < d; i++) s += q[i]! * this.centroids[b + i]!;
      scores[l] = s;
    }
    return [...scores.keys()].sort((a, b) => scores[b]! - scores[a]! || a - b);
  }

  /** The centroids as int8 codes (a scale each) in the arena; null when the codes are not there. */
  private quantisedCentroids(): { of: Float32Array; block: ArenaBlock; scale: Float32Array } | null {
    const had = this.centroidCodes;
    if (had?.of === this.centroids) return had;
    if (had) arena.release(had.block);
    this.centroidCodes = null;
    const d = this.dims;
    const block = this.block && this.lists > 0 ? arena.allocate(this.lists * d, Int8Array) : null;
    if (!block) return null;
    const scale = new Float32Array(this.lists);
    for (let l = 0; l < this.lists; l++) {
      let max = 0;
      for (let i = 0; i < d; i++) max = Math.max(max, Math.abs(this.centroids[l * d + i]!));
      scale[l] = max / 127;
      const inv = max > 0 ? 127 / max : 0;
      for (let i = 0; i < d; i++) block.view[l * d + i] = Math.round(this.centroids[l * d + i]! * inv);
    }
    this.centroidCodes = { of: this.centroids, block, scale };
    return this.centroidCodes;
  }

  /** Puts a slot in the list of its nearest centroid (`vector`: its vector as `set` was given it, prepared). */
  private assign(slot: number, vector: Float32Array): void {
    const quantised = this.quantisedCentroids();
    let best = 0;
    if (quantised) {
      // The vector as a query of the int8 centroids, as `nearestLists` scores a query: one kernel call.
      const dots = arena.dots(vector, quantised.block.at, this.dims, this.listIds(), this.lists);
      let bestScore = -Infinity;
      for (let l = 0; l < this.lists; l++) {
        const s = dots[l]! * quantised.scale[l]!;
        if (s > bestScore) {
          bestScore = s;
          best = l;
        }
      }
    } else {
      best = this.nearestCentroids(this.centroids, this.lists, Int32Array.of(slot))[0]!;
    }
    this.list[slot] = best;
    this.members[best]!.push(slot);
  }

  /** 0 .. lists - 1, the slots of the centroids' codes. */
  private listIds(): Int32Array {
    if (this.allLists.length !== this.lists) this.allLists = Int32Array.from({ length: this.lists }, (_, l) => l);
    return this.allLists;
  }

  /**
   * For each of `slots`, the list whose centroid has the largest dot product with the slot's codes (a slot's
   * scale changes no slot's choice). With the kernel, each centroid is a query of the slots' codes, a few
   * thousand slots a call; in JavaScript, every product (at 100,000 vectors that was ~16 s of a build from
   * stored vectors).
   */
  private nearestCentroids(centroids: Float32Array, lists: number, slots: Int32Array): Int32Array {
    const d = this.dims;
    const best = new Int32Array(slots.length);
    const bestScore = new Float64Array(slots.length).fill(-Infinity);
    for (let from = 0; from < slots.length; from += CENTROID_BATCH) {
      const part = slots.subarray(from, Math.min(slots.length, from + CENTROID_BATCH));
      for (let l = 0; l < lists; l++) {
        // A view of its own each time: the arena quantises a query once per array it is given.
        const centroid = centroids.subarray(l * d, (l + 1) * d);
        const dots = this.block ? arena.dots(centroid, this.block.at, d, part, part.length) : null;
        const unit = dots && arena.queryScale > 0 ? 1 / arena.queryScale : 0;
        for (let j = 0; j < part.length; j++) {
          let s = 0;
          if (dots) s = dots[j]! * unit;
          else for (let i = 0, c = part[j]! * d; i < d; i++) s += centroid[i]! * this.codes[c + i]!;
          if (s > bestScore[from + j]!) {
            bestScore[from + j] = s;
            best[from + j] = l;
          }
        }
      }
    }
    return best;
  }

  /** Spherical k-means on an even sample of the vectors (deterministic), then every vector assigned. */
  private train(): void {
    const d = this.dims;
    const slots: number[] = [];
    for (let s = 0; s < this.has.length; s++) if (this.has[s]) slots.push(s);
    const lists = Math.max(8, Math.round(Math.sqrt(slots.length)));
    const sampleSize = Math.min(slots.length, lists * 24);
    const sample = Int32Array.from(
      { length: sampleSize },
      (_, i) => slots[Math.floor((i * slots.length) / sampleSize)]!,
    );
    const centroids = new Float32Array(lists * d);
    for (let l = 0; l < lists; l++) {
      const s = sample[Math.floor((l * sample.length) / lists)]!;
      for (let i = 0; i < d; i++) centroids[l * d + i] = this.codes[s * d + i]! * this.scale[s]!;
    }
    for (let round = 0; round < KMEANS_ROUNDS; round++) {
      const of = this.nearestCentroids(centroids, lists, sample);
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
    const of = this.nearestCentroids(centroids, lists, Int32Array.from(slots));
    slots.forEach((s, j) => {
      this.list[s] = of[j]!;
      this.members[of[j]!]!.push(s);
    });
  }

  approxBytes(): number {
    return (
      this.codes.byteLength +
      this.signs.byteLength +
      this.scale.byteLength +
      this.has.byteLength +
      this.list.byteLength +
      this.centroids.byteLength +
      6 * TYPED_ARRAY_BYTES +
      this.count * 8
    );
  }
}

/** v scaled to length 1 (v itself when it is all zeros). */
export function unit(v: Float32Array): Float32Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += v[i]! * v[i]!;
  if (n === 0) return v;
  const inv = 1 / Math.sqrt(n);
  return v.map((x) => x * inv);
}

/** The k-th largest of the first n values (a quickselect on a copy: a full sort cost a sixth of `nearest`). */
export function kthLargest(values: Float32Array, n: number, k: number): number {
  const a = values.slice(0, n);
  let lo = 0;
  let hi = n - 1;
  const want = n - k;
  while (lo < hi) {
    const pivot = a[(lo + hi) >> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (want <= j) hi = j;
    else if (want >= i) lo = i;
    else break;
  }
  return a[want]!;
}
