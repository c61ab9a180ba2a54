// Snapshot arrays stored as byte planes (issue 51, bench/README.md "The first query after a restart, session 20"):
// an array of 2-, 4- or 8-byte elements is stored as its elements' first bytes, then their second bytes, and so on,
// and an array of int32 that mostly ascends (postings' slots, term by term) as its differences first. zstd finds far
// more to repeat in planes of small, similar bytes than in the elements themselves: the 300,000-memory snapshot is
// stored in fewer than half the bytes, which SQLite reads page by page and PostgreSQL sends as hex.
import { type ArrayKind, snapshotArrays } from '../../engine/index.js';

/** A run of a piece's bytes stored as planes: where it begins in the piece, its bytes, its elements' width, delta-coded. */
export interface Planes {
  at: number;
  bytes: number;
  width: number;
  delta: boolean;
}

const WIDTH: Record<ArrayKind, number> = { f64: 8, f32: 4, i32: 4, u16: 2, u8: 1, i8: 1 };
/** Arrays shorter than this are stored as they are: too small to matter. */
const LEAST_BYTES = 4096;
/** An int32 array is delta-coded when at least this share of its elements is not below the one before. */
const ASCENDING = 0.75;
/** The bytes of an array (its first) compressed both ways to choose. */
const SAMPLE_BYTES = 1 << 18;
/**
 * An array is stored as planes when they save at least this share of its bytes (uncompressed) on its sample: turning
 * them back costs about a millisecond a MB on the loading thread, where SQLite reads ~7 ms a MB stored (bench/README.md
 * "The first query after a restart, session 20"). Most arrays gain nothing (docs' term ids, term counts, floats):
 * postings' slots, ids and the docs' terms' bounds do.
 */
const LEAST_SAVED = 1 / 16;

/**
 * The arrays of a snapshot (engine/snapshot.ts) to store as planes, and how: each one's sample compressed both ways
 * (`compress`), kept as planes where that saves enough.
 */
export async function planesOf(
  snapshot: Uint8Array,
  compress: (bytes: Uint8Array) => Promise<Buffer>,
): Promise<Planes[]> {
  const planes: Planes[] = [];
  for (const { kind, at, length } of snapshotArrays(snapshot)) {
    const width = WIDTH[kind];
    const bytes = length * width;
    if (width === 1 || bytes < LEAST_BYTES) continue;
    const sample = Math.min(bytes, SAMPLE_BYTES);
    const run = { at: 0, bytes: sample, width, delta: false };
    run.delta = kind === 'i32' && ascends(int32s(snapshot, at, sample / 4));
    const asIs = snapshot.subarray(at, at + sample);
    // One after the other, as storing compresses its pieces (background work: not both cores).
    const plain = await compress(asIs);
    const planed = await compress(toPlanes(asIs, [run]));
    if (plain.length - planed.length >= sample * LEAST_SAVED) planes.push({ ...run, at, bytes });
  }
  return planes;
}

function ascends(values: Int32Array): boolean {
  let up = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! >= values[i - 1]!) up++;
  return up >= ASCENDING * (values.length - 1);
}

/** Int32s at a byte offset of `bytes` (a copy when not aligned). */
function int32s(bytes: Uint8Array, at: number, length: number): Int32Array {
  const from = bytes.byteOffset + at;
  if (from % 4 === 0) return new Int32Array(bytes.buffer, from, length);
  return new Int32Array(Uint8Array.from(bytes.subarray(at, at + length * 4)).buffer);
}

/** Those of `planes` within [from, to), relative to `from`. */
export function planesWithin(planes: readonly Planes[], from: number, to: number): Planes[] {
  return planes.filter((p) => p.at >= from && p.at + p.bytes <= to).map((p) => ({ ...p, at: p.at - from }));
}

/** A copy of a piece with these runs as planes (the piece itself when none). */
export function toPlanes(piece: Uint8Array, planes: readonly Planes[]): Uint8Array {
  if (planes.length === 0) return piece;
  const out = Uint8Array.from(piece);
  for (const { at, bytes, width, delta } of planes) {
    // 8-byte elements as two int32s: planes 0-3 from the first, 4-7 from the second.
    const words = width === 8 ? 2 : 1;
    const n = bytes / width;
    if (width === 2) {
      const values = aligned(piece, at, bytes, 2) ? new Uint16Array(piece.buffer, piece.byteOffset + at, n) : null;
      for (let i = 0; i < n; i++) {
        const v = values ? values[i]! : piece[at + 2 * i]! | (piece[at + 2 * i + 1]! << 8);
        out[at + i] = v;
        out[at + n + i] = v >>> 8;
      }
      continue;
    }
    const values = int32s(piece, at, n * words);
    for (let w = 0; w < words; w++) {
      const plane = at + 4 * w * n;
      for (let i = 0, before = 0; i < n; i++) {
        const x = values[i * words + w]!;
        const v = delta ? (x - before) | 0 : x;
        before = x;
        out[plane + i] = v;
        out[plane + n + i] = v >>> 8;
        out[plane + 2 * n + i] = v >>> 16;
        out[plane + 3 * n + i] = v >>> 24;
      }
    }
  }
  return out;
}

const aligned = (piece: Uint8Array, at: number, bytes: number, width: number) =>
  (piece.byteOffset + at) % width === 0 && bytes % width === 0;

/**
 * Turns a piece's runs stored as planes back into their elements, in place (through a copy of the largest run,
 * garbage once done). Little-endian, as the snapshot's arrays are.
 */
export function fromPlanes(piece: Uint8Array, planes: readonly Planes[]): void {
  if (planes.length === 0) return;
  const copy = new Uint8Array(Math.max(...planes.map((p) => p.bytes)));
  for (const { at, bytes, width, delta } of planes) {
    if (!aligned(piece, at, bytes, Math.min(width, 4))) {
      // (Not in a stored snapshot, whose arrays are 8-byte aligned: through an aligned copy.)
      const run = Uint8Array.from(piece.subarray(at, at + bytes));
      fromPlanes(run, [{ at: 0, bytes, width, delta }]);
      piece.set(run, at);
      continue;
    }
    copy.set(piece.subarray(at, at + bytes));
    const n = bytes / width;
    if (width === 2) {
      const out = new Uint16Array(piece.buffer, piece.byteOffset + at, n);
      for (let i = 0; i < n; i++) out[i] = copy[i]! | (copy[n + i]! << 8);
    } else {
      const out = new Int32Array(piece.buffer, piece.byteOffset + at, bytes / 4);
      if (width === 4) words(copy, 0, n, out, 0, 1, delta);
      else for (let w = 0; w < 2; w++) words(copy, 4 * w * n, n, out, w, 2, false);
    }
  }
}

/**
 * `n` int32s from 4 planes at `from` into out[at], out[at + step], ..., summed when delta-coded (one pass: the hot
 * case, ~3.3 M postings' slots at 300,000 memories).
 */
function words(planes: Uint8Array, from: number, n: number, out: Int32Array, at: number, step: number, delta: boolean) {
  const [b0, b1, b2, b3] = [from, from + n, from + 2 * n, from + 3 * n];
  let sum = 0;
  for (let i = 0, o = at; i < n; i++, o += step) {
    const v = planes[b0 + i]! | (planes[b1 + i]! << 8) | (planes[b2 + i]! << 16) | (planes[b3 + i]! << 24);
    sum = delta ? (sum + v) | 0 : v;
    out[o] = sum;
  }
}

/** Bytes of a table of runs: a count, then each run's start, bytes and width (+256 when delta-coded), uint32 each. */
const tableBytes = (planes: readonly Planes[]) => 4 + planes.length * 12;

/** A piece's table of runs, to store before its compressed bytes. */
export function planesTable(planes: readonly Planes[]): Buffer {
  const table = Buffer.alloc(tableBytes(planes));
  table.writeUInt32LE(planes.length, 0);
  planes.forEach(({ at, bytes, width, delta }, i) => {
    table.writeUInt32LE(at, 4 + i * 12);
    table.writeUInt32LE(bytes, 8 + i * 12);
    table.writeUInt32LE(width | (delta ? 256 : 0), 12 + i * 12);
  });
  return table;
}

/** A stored piece's table of runs and the compressed bytes after it; throws if it does not add up to `length`. */
export function readPlanesTable(data: Buffer, length: number): { planes: Planes[]; rest: Buffer } {
  const count = data.length >= 4 ? data.readUInt32LE(0) : -1;
  if (count < 0 || data.length < 4 + count * 12) throw new Error('an index snapshot piece without its table');
  const planes = Array.from({ length: count }, (_, i) => {
    const code = data.readUInt32LE(12 + i * 12);
    return {
      at: data.readUInt32LE(4 + i * 12),
      bytes: data.readUInt32LE(8 + i * 12),
      width: code & 255,
      delta: code > 255,
    };
  });
  for (const { at, bytes, width, delta } of planes)
    if (![2, 4, 8].includes(width) || bytes % width !== 0 || at + bytes > length || (delta && width !== 4))
      throw new Error('an index snapshot piece with a table that does not fit it');
  return { planes, rest: data.subarray(tableBytes(planes)) };
}
