/**
 * The constants of packages/server/src/engine/heap-bytes.ts, measured: what V8 takes for each
 * structure the caches hold (heapUsed + arrayBuffers after two gc(), over many of it, less the
 * array slot that keeps each alive), then an end user's index counted against the heap it takes.
 * Prints JSON. Run again when Node's major version changes.
 *
 *   node --expose-gc --import tsx bench/heap-bytes.ts
 */
import { MemoryIndex } from '../packages/server/src/engine/index.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const held = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const SLOT = 8;
const round = (n: number) => Math.round(n * 10) / 10;

/** Bytes of one of what `make` returns `count` of (kept in an array: its slot taken off). */
function each(count: number, make: (i: number) => unknown): number {
  const before = held();
  const kept = Array.from({ length: count }, (_, i) => make(i));
  const bytes = (held() - before) / count - SLOT;
  kept.length = 0;
  return round(bytes);
}

const big = new Int32Array(1 << 20);
const mapOf = (n: number) => each(10_000, () => new Map(Array.from({ length: n }, (_, j) => [j, j])));
const largeMap = (() => {
  const before = held();
  const m = new Map<number, number>();
  for (let i = 0; i < 200_000; i++) m.set(i, i);
  const bytes = (held() - before) / 200_000;
  m.clear();
  return round(bytes);
})();

/** Words drawn from 5,000 made-up ones, the common ones far more often. */
let seed = 1;
const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
const text = () =>
  Array.from({ length: 8 + Math.floor(rand() * 23) }, () => `w${Math.floor(5000 * rand() ** 3).toString(36)}`).join(
    ' ',
  );
const texts = Array.from({ length: 8 }, () => Array.from({ length: 2000 }, text));
const before = held();
const indexes = texts.map((docs, u) => {
  const index = new MemoryIndex({ embedder: null });
  docs.forEach((t, i) =>
    index.upsert({
      id: u * 10_000 + i + 1,
      text: t,
      sessionId: `s${u}-${Math.floor(i / 20)}`,
      createdAt: 0,
      importance: 0.5,
      feedback: 0,
    }),
  );
  return index;
});
const indexHeld = held() - before;
const counted = indexes.reduce((sum, index) => sum + index.approxBytes(), 0);

process.stdout.write(
  `${JSON.stringify(
    {
      benchmark: 'heap-bytes',
      node: process.version,
      bytes: {
        map_of_size: { 1: mapOf(1), 4: mapOf(4), 5: mapOf(5), 8: mapOf(8), 16: mapOf(16), 32: mapOf(32) },
        large_map_entry: largeMap,
        typed_array_empty: each(100_000, () => new Int32Array(0)),
        typed_array_1024_i32: each(10_000, () => new Int32Array(1024)),
        typed_array_view: each(100_000, (i) => big.subarray(i, i + 4)),
        object_6_fields: each(100_000, () => ({ a: 1, b: null, c: null, d: 0, e: 0, f: false })),
        array_of_3_numbers: each(100_000, (i) => [i + 0.5, i + 1.5, i + 2.5]),
        string_3_chars: each(100_000, (i) => `abc${i}`.slice(0, 3)),
        string_12_chars: each(100_000, (i) => `abcdefghijklm${i}`.slice(0, 12)),
      },
      index_2000_docs: {
        indexes: indexes.length,
        held_per_index: Math.round(indexHeld / indexes.length),
        counted_per_index: Math.round(counted / indexes.length),
        counted_over_held: Math.round((counted / indexHeld) * 100) / 100,
      },
    },
    null,
    2,
  )}\n`,
);
