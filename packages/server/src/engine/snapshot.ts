// The binary form of a built index (MemoryIndex.snapshot / MemoryIndex.restore): loading typed
// arrays back costs a copy, where building from texts costs tokenizing, stemming and a map entry
// per posting. Layout: magic, format version, header length, a JSON header (plain values in the
// order they were put, and each array's type and length), then the arrays, each 8-byte aligned.

const MAGIC = 0x58494d45; // "EMIX", little-endian
/** Changes whenever what an index stores changes; a snapshot of another format is not read. */
export const SNAPSHOT_FORMAT = 1;

type ArrayKind = 'f64' | 'f32' | 'i32' | 'u8';
type NumberArray = Float64Array | Float32Array | Int32Array | Uint8Array;
const CONSTRUCTORS = { f64: Float64Array, f32: Float32Array, i32: Int32Array, u8: Uint8Array } as const;

function kindOf(a: NumberArray): ArrayKind {
  if (a instanceof Float64Array) return 'f64';
  if (a instanceof Float32Array) return 'f32';
  if (a instanceof Int32Array) return 'i32';
  return 'u8';
}

const align8 = (n: number) => (n + 7) & ~7;

export class SnapshotWriter {
  private readonly values: unknown[] = [];
  private readonly arrays: NumberArray[] = [];

  value(v: unknown): this {
    this.values.push(v);
    return this;
  }

  array(a: NumberArray): this {
    this.arrays.push(a);
    return this;
  }

  finish(): Uint8Array {
    const header = Buffer.from(JSON.stringify({ values: this.values, arrays: this.arrays.map((a) => [kindOf(a), a.length]) }), 'utf8');
    const start = align8(12 + header.length);
    let size = start;
    for (const a of this.arrays) size = align8(size + a.byteLength);
    const out = new Uint8Array(size);
    const view = new DataView(out.buffer);
    view.setUint32(0, MAGIC, true);
    view.setUint32(4, SNAPSHOT_FORMAT, true);
    view.setUint32(8, header.length, true);
    out.set(header, 12);
    let at = start;
    for (const a of this.arrays) {
      out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
      at = align8(at + a.byteLength);
    }
    return out;
  }
}

export class SnapshotReader {
  private readonly values: unknown[];
  private readonly kinds: Array<[ArrayKind, number]>;
  private readonly buffer: ArrayBuffer;
  private at: number;
  private nextValue = 0;
  private nextArray = 0;

  /** Throws when the bytes are not a snapshot of this format. */
  constructor(bytes: Uint8Array) {
    // Every array is a view into one 8-byte-aligned buffer: the caller's, when it is one of its own.
    if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) {
      this.buffer = bytes.buffer;
    } else {
      this.buffer = new ArrayBuffer(bytes.byteLength);
      new Uint8Array(this.buffer).set(bytes);
    }
    const view = new DataView(this.buffer);
    if (bytes.byteLength < 12 || view.getUint32(0, true) !== MAGIC) throw new Error('not an index snapshot');
    if (view.getUint32(4, true) !== SNAPSHOT_FORMAT) throw new Error('index snapshot of another format');
    const headerLength = view.getUint32(8, true);
    const header = JSON.parse(Buffer.from(this.buffer, 12, headerLength).toString('utf8')) as { values: unknown[]; arrays: Array<[ArrayKind, number]> };
    this.values = header.values;
    this.kinds = header.arrays;
    this.at = align8(12 + headerLength);
  }

  value<T>(): T {
    if (this.nextValue >= this.values.length) throw new Error('index snapshot truncated');
    return this.values[this.nextValue++] as T;
  }

  array<K extends ArrayKind>(kind: K): InstanceType<(typeof CONSTRUCTORS)[K]> {
    const entry = this.kinds[this.nextArray++];
    if (!entry || entry[0] !== kind) throw new Error('index snapshot does not match its reader');
    const Ctor = CONSTRUCTORS[kind];
    if (this.at + entry[1] * Ctor.BYTES_PER_ELEMENT > this.buffer.byteLength) throw new Error('index snapshot truncated');
    const a = new Ctor(this.buffer, this.at, entry[1]);
    this.at = align8(this.at + a.byteLength);
    return a as InstanceType<(typeof CONSTRUCTORS)[K]>;
  }
}
