// One WebAssembly memory per thread, holding the int8 codes of every vector index of the thread,
// and the SIMD dot kernel over it (wasm-dot.ts; issue 53). One, not one per index: a memory
// reserves ~8 GB of address space, and Node refuses the ~16,360th of a process, while the index
// cache may hold more end users than that. The memory is shared (a SharedArrayBuffer): growing it
// then detaches no view, so an index's codes stay one Int8Array for as long as it holds them.
//
// Blocks are carved from the top of the memory in sizes on a grid (4 KiB, then four sizes an
// octave: at most a quarter wasted) and kept in a free list per size when given back; a block is
// zeroed when it is given back, so nothing of a dropped index or an older copy of one (before it
// grew) survives in the memory. An index gives back its old block when it grows, and a block whose
// view is no longer reachable anywhere (the index dropped, no snapshot reading it) is given back by
// a FinalizationRegistry. Without WebAssembly SIMD, or past the memory's 4 GiB, codes are a plain
// Int8Array and the dot product is JavaScript's (vectors.ts).

import { dotModuleBytes } from './wasm-dot.js';

const PAGE = 65536;
const MAX_PAGES = 65536;
const QUERY_BYTES = 2;
/** Zeros after the query's parts: `signSums` reads sixteen at a time. */
const QUERY_PAD = 16;
/** The query's int16 parts are at most this: 14 bits, so a pair's sum of products stays far inside int32. */
export const QUERY_UNIT = 8191;

/** The part of the WebAssembly API used here (the project's TypeScript libraries declare none of it). */
interface WasmMemory {
  readonly buffer: SharedArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Memory: new (d: { initial: number; maximum: number; shared: boolean }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

interface Kernel {
  memory: WasmMemory;
  dot: (q: number, c: number, n: number) => number;
  dots: (q: number, base: number, stride: number, slots: number, count: number, out: number) => void;
  signSums: (q: number, base: number, bytes: number, slots: number, count: number, out: number) => void;
}

/** A block of the arena: its view (int8 codes or uint8 sign bits) and where it lies. */
export interface ArenaBlock<V extends Int8Array | Uint8Array = Int8Array | Uint8Array> {
  view: V;
  at: number;
  bytes: number;
}

function loadKernel(): Kernel | null {
  if (!wasm) return null;
  try {
    const memory = new wasm.Memory({ initial: 1, maximum: MAX_PAGES, shared: true });
    const instance = new wasm.Instance(new wasm.Module(dotModuleBytes(MAX_PAGES)), { e: { m: memory } });
    const { dot, dots, signSums } = instance.exports as unknown as Omit<Kernel, 'memory'>;
    return { memory, dot, dots, signSums };
  } catch {
    return null; // no WebAssembly SIMD, or no address space for the memory
  }
}

/** A block's size: whole 4 KiB, then rounded up to a quarter octave. */
function blockSize(bytes: number): number {
  const pages = Math.max(1, Math.ceil(bytes / 4096));
  if (pages <= 4) return pages * 4096;
  const step = 2 ** (Math.floor(Math.log2(pages)) - 2);
  return Math.ceil(pages / step) * step * 4096;
}

export class VectorArena {
  private kernel: Kernel | null | undefined;
  private top = 0;
  private readonly free = new Map<number, number[]>();
  private readonly unreachable = new FinalizationRegistry<{ at: number; bytes: number }>(({ at, bytes }) =>
    this.giveBack(at, bytes),
  );
  /** Scratch: the query as int16 (`QUERY_UNIT` its largest part). */
  private scratch: { at: number; bytes: number; view: Int16Array } | null = null;
  private query: Float32Array | null = null;
  /** Scratch of a batch: the slots asked (int32) and their results (int32). */
  private batch: { block: ArenaBlock; slots: Int32Array; out: Int32Array } | null = null;
  /** The query's int16 parts are its float parts times this. */
  queryScale = 0;

  private get k(): Kernel | null {
    if (this.kernel === undefined) this.kernel = loadKernel();
    return this.kernel;
  }

  /** Whether codes can live here and be scored by the kernel. */
  get available(): boolean {
    return this.k !== null;
  }

  /**
   * A zeroed block of `bytes` (and `spare` more after them) seen through a view of `kind` (the view is what
   * keeps the block: once it is unreachable, the block is given back), null when the kernel is missing or the
   * memory cannot grow.
   */
  allocate<V extends Int8Array | Uint8Array>(
    bytes: number,
    kind: new (b: SharedArrayBuffer, at: number, n: number) => V,
    spare = 0,
  ): ArenaBlock<V> | null {
    const k = this.k;
    if (!k) return null;
    const size = blockSize(bytes + spare);
    let at = this.free.get(size)?.pop();
    if (at === undefined) {
      const need = this.top + size;
      const have = k.memory.buffer.byteLength;
      if (need > have) {
        try {
          k.memory.grow(Math.ceil((need - have) / PAGE));
        } catch {
          return null;
        }
      }
      at = this.top;
      this.top = need;
    }
    const view = new kind(k.memory.buffer, at, bytes);
    this.unreachable.register(view, { at, bytes: size }, view);
    return { view, at, bytes: size };
  }

  /** Gives a block back at once (zeroed); its view must not be used again. */
  release(block: ArenaBlock): void {
    this.unreachable.unregister(block.view);
    this.giveBack(block.at, block.bytes);
  }

  private giveBack(at: number, bytes: number): void {
    new Uint8Array(this.k!.memory.buffer, at, bytes).fill(0);
    let list = this.free.get(bytes);
    if (!list) this.free.set(bytes, (list = []));
    list.push(at);
  }

  /**
   * The query quantised into the scratch (once per query: a prepared query is never changed), `dims`
   * int16 parts and then zeros (`signSums` reads past an odd count of bytes); returns its byte offset.
   */
  private queryAt(q: Float32Array): number {
    const s = this.scratchFor(q.length);
    if (this.query === q) return s.at;
    let max = 0;
    for (let i = 0; i < q.length; i++) max = Math.max(max, Math.abs(q[i]!));
    this.queryScale = max > 0 ? QUERY_UNIT / max : 0;
    const v = s.view;
    for (let i = 0; i < q.length; i++) v[i] = Math.round(q[i]! * this.queryScale);
    v.fill(0, q.length);
    this.query = q;
    return s.at;
  }

  private scratchFor(dims: number): { at: number; bytes: number; view: Int16Array } {
    const need = (dims + QUERY_PAD) * QUERY_BYTES;
    if (this.scratch && this.scratch.view.length === dims + QUERY_PAD) return this.scratch;
    const block = this.allocate(need, Int8Array);
    if (!block) throw new Error('vector arena: no room for a query');
    this.unreachable.unregister(block.view); // kept until a query of more dimensions comes
    if (this.scratch) this.giveBack(this.scratch.at, this.scratch.bytes);
    this.scratch = {
      at: block.at,
      bytes: block.bytes,
      view: new Int16Array(block.view.buffer, block.at, dims + QUERY_PAD),
    };
    this.query = null;
    return this.scratch;
  }

  /**
   * The dot products of a query with the codes of `slots[0..n)` (a slot's codes at byte base + slot *
   * dims), in units of 1 / queryScale: a view valid until the next batch.
   */
  dots(q: Float32Array, base: number, dims: number, slots: Int32Array, n: number): Int32Array {
    const qAt = this.queryAt(q);
    const b = this.batchOf(slots, n);
    this.k!.dots(qAt, base, dims, b.slots.byteOffset, n, b.out.byteOffset);
    return b.out;
  }

  /**
   * Per slot of `slots[0..n)`, the sum of the query's parts where the slot's sign bits (`bytes` a slot,
   * from byte `base`) are set, in units of 1 / queryScale: a view valid until the next batch.
   */
  signSums(q: Float32Array, base: number, bytes: number, slots: Int32Array, n: number): Int32Array {
    const qAt = this.queryAt(q);
    const b = this.batchOf(slots, n);
    this.k!.signSums(qAt, base, bytes, b.slots.byteOffset, n, b.out.byteOffset);
    return b.out;
  }

  private batchOf(slots: Int32Array, n: number): { slots: Int32Array; out: Int32Array } {
    let b = this.batch;
    if (!b || b.slots.length < n) {
      const length = Math.max(1024, 2 * n);
      const block = this.allocate(8 * length, Int8Array);
      if (!block) throw new Error('vector arena: no room for a batch');
      this.unreachable.unregister(block.view); // kept until a larger batch comes
      if (b) this.giveBack(b.block.at, b.block.bytes);
      const { buffer } = block.view;
      b = this.batch = {
        block,
        slots: new Int32Array(buffer, block.at, length),
        out: new Int32Array(buffer, block.at + 4 * length, length),
      };
    }
    b.slots.set(slots.subarray(0, n));
    return b;
  }

  /** The dot product of a query with the `dims` codes at byte `at`, in units of 1 / queryScale. */
  dot(q: Float32Array, at: number, dims: number): number {
    const qAt = this.queryAt(q);
    return this.k!.dot(qAt, at, dims);
  }
}

/** The thread's arena (a module's state is per thread). */
export const arena = new VectorArena();
