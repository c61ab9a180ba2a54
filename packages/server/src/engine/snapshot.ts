// The binary form of a built index (MemoryIndex.snapshot / MemoryIndex.restore): loading typed
// arrays back costs a copy, where building from texts costs tokenizing, stemming and a map entry
// per posting. Layout: magic, format version, header length, a JSON header (plain values in the
// order they were put, and each array's type and length), then the arrays, each 8-byte aligned.
import { performance } from 'node:perf_hooks';

const MAGIC = 0x58494d45; // "EMIX", little-endian
/** Changes whenever what an index stores changes; a snapshot of another format is not read. */
export const SNAPSHOT_FORMAT = 4;

export type ArrayKind = 'f64' | 'f32' | 'i32' | 'u16' | 'u8' | 'i8';
type NumberArray = Float64Array | Float32Array | Int32Array | Uint16Array | Uint8Array | Int8Array;
const CONSTRUCTORS = {
  f64: Float64Array,
  f32: Float32Array,
  i32: Int32Array,
  u16: Uint16Array,
  u8: Uint8Array,
  i8: Int8Array,
} as const;

function kindOf(a: NumberArray): ArrayKind {
  if (a instanceof Float64Array) return 'f64';
  if (a instanceof Float32Array) return 'f32';
  if (a instanceof Int32Array) return 'i32';
  if (a instanceof Uint16Array) return 'u16';
  if (a instanceof Int8Array) return 'i8';
  return 'u8';
}

const align8 = (n: number) => (n + 7) & ~7;

/**
 * Work done a step at a time (a generator that yields between steps and returns what it made), so
 * that a caller can run it at once (runNow) or give the event loop back between slices (runInSlices).
 */
export type Steps<T> = Generator<void, T, void>;

/** Runs steps to the end at once. */
export function runNow<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * How long a slice of runInSlices runs before it gives the event loop back. A query of a
 * 100,000-memory end user searches for ~4-5 ms: a request that arrives during a slice waits at most
 * about that much more (plus one step, well under a millisecond), and a 0.3 s snapshot is ~60 slices.
 */
export const SLICE_MS = 5;

/**
 * Runs steps a slice at a time: steps until `sliceMs` have passed, then the event loop's turn
 * (setImmediate: timers, I/O and other requests run in between), and so on to the end.
 */
export async function runInSlices<T>(steps: Steps<T>, sliceMs = SLICE_MS): Promise<T> {
  let until = performance.now() + sliceMs;
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() >= until) {
      await new Promise((resolve) => setImmediate(resolve));
      until = performance.now() + sliceMs;
    }
  }
}

/** Bytes of the arrays copied into the snapshot in a step of finishing it (fresh memory: ~1 ms here). */
const COPY_STEP = 1 << 18;

type Views = { f64: Float64Array; f32: Float32Array; i32: Int32Array; u16: Uint16Array; u8: Uint8Array; i8: Int8Array };

interface Part {
  kind: ArrayKind;
  length: number;
  /** The array to copy in when finishing; null once it is in (or for a part written in place). */
  from: NumberArray | null;
  /** The index's own array, which it goes on changing (see `live`). */
  live: boolean;
}

/**
 * Writes a snapshot: values and arrays in the order they are put. Once laid out (`layout`, or when
 * finishing) the bytes exist, and a part put with `reserve` is written in place through its `view`:
 * a large snapshot is made in its final buffer, not gathered and then copied.
 */
export class SnapshotWriter {
  private readonly values: unknown[] = [];
  private readonly parts: Part[] = [];
  private out: Uint8Array<ArrayBuffer> | null = null;
  private readonly offsets: number[] = [];
  /** Set by `keep`: the index has changed, so an array of its own is no longer the snapshot's. */
  private kept = false;

  value(v: unknown): this {
    this.values.push(v);
    return this;
  }

  /** An array copied in when finishing: one made for the snapshot, or one nothing changes before then. */
  array(a: NumberArray): this {
    this.parts.push({ kind: kindOf(a), length: a.length, from: a, live: false });
    return this;
  }

  /**
   * An array the index goes on changing: copied in when finishing, unless `keep` (before the index
   * first changes) has copied it in as it was.
   */
  live(a: NumberArray): this {
    if (this.kept) throw new Error('a live array put after the index changed');
    this.parts.push({ kind: kindOf(a), length: a.length, from: a, live: true });
    return this;
  }

  /** An array of `length` written in place (through `view` once laid out); its number. */
  reserve(kind: ArrayKind, length: number): number {
    this.parts.push({ kind, length, from: null, live: false });
    return this.parts.length - 1;
  }

  /** The bytes, zeroed, with the header written: every value and part has been put. */
  layout(): void {
    if (this.out) return;
    // Written straight into the snapshot's bytes: Buffer.from would copy a header under 4 KiB (an index's terms, a
    // memory's tags and session) into the thread's shared Buffer pool, which keeps it while the pool is current.
    const header = JSON.stringify({ values: this.values, arrays: this.parts.map((p) => [p.kind, p.length]) });
    const headerLength = Buffer.byteLength(header);
    let at = align8(12 + headerLength);
    for (const p of this.parts) {
      this.offsets.push(at);
      at = align8(at + p.length * CONSTRUCTORS[p.kind].BYTES_PER_ELEMENT);
    }
    const out = new Uint8Array(at);
    const view = new DataView(out.buffer);
    view.setUint32(0, MAGIC, true);
    view.setUint32(4, SNAPSHOT_FORMAT, true);
    view.setUint32(8, headerLength, true);
    Buffer.from(out.buffer).write(header, 12);
    this.out = out;
  }

  /** Where a reserved part is written (laid out). */
  view<K extends ArrayKind>(part: number, kind: K): Views[K] {
    const p = this.parts[part]!;
    if (!this.out || p.kind !== kind) throw new Error('not a reserved part of this kind, laid out');
    return new CONSTRUCTORS[kind](this.out.buffer, this.offsets[part]!, p.length) as Views[K];
  }

  /** Before the index first changes: its own arrays not yet in the snapshot, as they are (laid out: copied in). */
  keep(): void {
    if (this.kept) return;
    this.kept = true;
    this.parts.forEach((p, i) => {
      if (!p.live || !p.from) return;
      if (this.out) this.copyIn(i, 0, p.from.byteLength);
      else p.from = p.from.slice();
    });
  }

  private copyIn(i: number, from: number, to: number): void {
    const a = this.parts[i]!.from!;
    this.out!.set(new Uint8Array(a.buffer, a.byteOffset + from, to - from), this.offsets[i]! + from);
    if (to === a.byteLength) this.parts[i]!.from = null;
  }

  /** The snapshot's bytes, a step at a time: laid out, then the arrays to copy in, COPY_STEP bytes a step. */
  *finishSteps(): Steps<Uint8Array> {
    this.layout();
    for (let i = 0; i < this.parts.length; i++) {
      // (Read again after every step: `keep` may have copied it in meanwhile.)
      for (let done = 0; this.parts[i]!.from; done += COPY_STEP) {
        yield;
        const a = this.parts[i]!.from;
        if (a) this.copyIn(i, done, Math.min(done + COPY_STEP, a.byteLength));
      }
    }
    return this.out!;
  }
}

/** The bytes' header: where its values end and each array's kind and length. */
function headerOf(
  first: Uint8Array,
  total: number,
): { values: unknown[]; arrays: Array<[ArrayKind, number]>; end: number } {
  const view = new DataView(first.buffer, first.byteOffset, first.byteLength);
  if (first.byteLength < 12 || view.getUint32(0, true) !== MAGIC) throw new Error('not an index snapshot');
  if (view.getUint32(4, true) !== SNAPSHOT_FORMAT) throw new Error('index snapshot of another format');
  const headerLength = view.getUint32(8, true);
  if (12 + headerLength > first.byteLength || 12 + headerLength > total) throw new Error('index snapshot truncated');
  const header = JSON.parse(Buffer.from(first.buffer, first.byteOffset + 12, headerLength).toString('utf8')) as {
    values: unknown[];
    arrays: Array<[ArrayKind, number]>;
  };
  return { ...header, end: align8(12 + headerLength) };
}

/** A snapshot's arrays in order: each one's kind, where its bytes begin, and its length in elements. */
export function snapshotArrays(bytes: Uint8Array): Array<{ kind: ArrayKind; at: number; length: number }> {
  const { arrays, end } = headerOf(bytes, bytes.byteLength);
  let at = end;
  return arrays.map(([kind, length]) => {
    const array = { kind, at, length };
    at = align8(at + length * CONSTRUCTORS[kind].BYTES_PER_ELEMENT);
    return array;
  });
}

/**
 * Where to cut a snapshot into pieces of at least `piece` bytes (the last may be shorter), each
 * holding whole arrays: the offsets at which the second and later pieces begin. Pieces cut there and
 * given to `SnapshotReader` as they are become the arrays' memory without being joined first.
 */
export function snapshotCuts(bytes: Uint8Array, piece: number): number[] {
  const cuts: number[] = [];
  let from = 0;
  for (const { at } of snapshotArrays(bytes)) if (at - from >= piece) cuts.push((from = at));
  return cuts;
}

/**
 * Bytes a piece may leave unused at the end of its buffer and still be kept as it is: a piece is
 * inflated into a buffer a byte longer than it (zlib, having filled its output buffer, allocates
 * another of the same size to look for more: 65 MB of garbage for a 300,000-memory index).
 */
export const PIECE_SLACK = 8;

export class SnapshotReader {
  private readonly values: unknown[];
  private readonly kinds: Array<[ArrayKind, number]>;
  /** The snapshot's bytes in order, each piece a whole buffer of its own, and where each begins. */
  private readonly pieces: Array<{ start: number; bytes: Uint8Array<ArrayBuffer> }> = [];
  private readonly total: number;
  private at: number;
  private nextValue = 0;
  private nextArray = 0;

  /**
   * Throws when the bytes are not a snapshot of this format. The bytes, or its pieces in order (as
   * `snapshotCuts` cuts them), each become the index's memory when it fills its own buffer (all but
   * PIECE_SLACK bytes at most): an array is a view into it. A piece that shares its buffer is copied
   * first, and an array that a piece does not hold whole, or not aligned, is copied on its own.
   */
  constructor(input: Uint8Array | readonly Uint8Array[]) {
    let start = 0;
    for (const bytes of input instanceof Uint8Array ? [input] : input) {
      const own =
        bytes.byteOffset === 0 &&
        bytes.buffer.byteLength - bytes.byteLength <= PIECE_SLACK &&
        bytes.buffer instanceof ArrayBuffer;
      this.pieces.push({ start, bytes: own ? (bytes as Uint8Array<ArrayBuffer>) : Uint8Array.from(bytes) });
      start += bytes.byteLength;
    }
    this.total = start;
    if (this.pieces.length === 0 || this.total < 12) throw new Error('not an index snapshot');
    // The header from the first piece, or gathered from as many as hold it.
    const first = this.pieces[0]!.bytes;
    const headerEnd = 12 + new DataView(this.bytesAt(0, 12).buffer).getUint32(8, true);
    const header = headerOf(
      first.byteLength >= headerEnd ? first : this.bytesAt(0, Math.min(headerEnd, this.total)),
      this.total,
    );
    this.values = header.values;
    this.kinds = header.arrays;
    this.at = header.end;
  }

  value<T>(): T {
    if (this.nextValue >= this.values.length) throw new Error('index snapshot truncated');
    return this.values[this.nextValue++] as T;
  }

  array<K extends ArrayKind>(kind: K): InstanceType<(typeof CONSTRUCTORS)[K]> {
    const entry = this.kinds[this.nextArray++];
    if (!entry || entry[0] !== kind) throw new Error('index snapshot does not match its reader');
    const Ctor = CONSTRUCTORS[kind];
    const byteLength = entry[1] * Ctor.BYTES_PER_ELEMENT;
    if (this.at + byteLength > this.total) throw new Error('index snapshot truncated');
    const from = this.at;
    this.at = align8(this.at + byteLength);
    const piece = this.pieces[this.pieceAt(from)]!;
    const offset = from - piece.start;
    const inPlace = offset + byteLength <= piece.bytes.byteLength && offset % Ctor.BYTES_PER_ELEMENT === 0;
    return new Ctor(
      inPlace ? piece.bytes.buffer : this.bytesAt(from, byteLength).buffer,
      inPlace ? offset : 0,
      entry[1],
    ) as InstanceType<(typeof CONSTRUCTORS)[K]>;
  }

  /** The piece holding the byte at `at`. */
  private pieceAt(at: number): number {
    let i = this.pieces.length - 1;
    while (i > 0 && this.pieces[i]!.start > at) i--;
    return i;
  }

  /** A copy of `length` bytes from `from`, gathered across pieces. */
  private bytesAt(from: number, length: number): Uint8Array<ArrayBuffer> {
    const copy = new Uint8Array(length);
    for (let i = this.pieceAt(from), done = 0; done < length; i++) {
      const p = this.pieces[i]!;
      const part = p.bytes.subarray(from + done - p.start, Math.min(p.bytes.byteLength, from + length - p.start));
      copy.set(part, done);
      done += part.byteLength;
    }
    return copy;
  }
}
