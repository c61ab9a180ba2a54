// What the JavaScript structures an index holds take in memory, for the caches' budgets (issue 46,
// defect 8: guesses of 40-64 bytes an entry counted 2-10x less than the process held). Measured by
// `node --expose-gc --import tsx bench/heap-bytes.ts` on Node 24 (x64, no pointer compression):
// process.memoryUsage() heapUsed + arrayBuffers after gc(), over 10,000-100,000 of each structure.

/** A Map besides its table (JSMap and OrderedHashMap header). */
const MAP_BYTES = 72;
/** A slot of a Map's table: an entry's key, value and chain (3 words) and its bucket's share. */
const MAP_SLOT_BYTES = 28;
/** A typed array with an ArrayBuffer of its own, besides its elements (JSTypedArray, JSArrayBuffer, its extension). */
export const TYPED_ARRAY_BYTES = 200;
/** A typed array that views another's buffer (a restored snapshot's postings). */
export const TYPED_ARRAY_VIEW_BYTES = 104;
/** An array besides its elements (JSArray and its backing store's header). */
export const ARRAY_BYTES = 48;
/** An element of an array (a tagged word; numbers that are not small integers are boxed, `ARRAY_NUMBER_BYTES`). */
export const ARRAY_SLOT_BYTES = 8;
/** An object of `fields` properties of its own (JSObject header: map, properties, elements). */
export const objectBytes = (fields: number): number => 24 + 8 * fields;

/**
 * A Map of `size` entries: its table holds a power of two of slots, at least 4 (V8 doubles it when
 * full and halves it below a quarter). A Map of 16 entries takes 520 bytes, of 100,000 about 37 a entry.
 */
export function mapBytes(size: number): number {
  let slots = 4;
  while (slots < size) slots *= 2;
  return MAP_BYTES + MAP_SLOT_BYTES * slots;
}

/** The entries' share of a large Map (its table grows by doubling: 1.33 slots an entry on average). */
export const MAP_ENTRY_BYTES = 37;

/** A string of its own (a header of 16 bytes, one byte a Latin-1 character or two otherwise, rounded to 8). */
export function stringBytes(s: string): number {
  let perChar = 1;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) > 0xff) {
      perChar = 2;
      break;
    }
  }
  return 16 + ((s.length * perChar + 7) & ~7);
}

/** A number held in an object's field or an array that is not a small integer: a heap number. */
export const HEAP_NUMBER_BYTES = 16;

/**
 * A value as JSON.parse makes it (metadata): objects and arrays with their fields and elements,
 * strings, heap numbers; nested deeper than 8 levels counted as a word.
 */
export function jsonBytes(value: unknown, depth = 0): number {
  if (typeof value === 'string') return stringBytes(value);
  if (typeof value === 'number') return Number.isInteger(value) && Math.abs(value) < 2 ** 31 ? 0 : HEAP_NUMBER_BYTES;
  if (value === null || typeof value !== 'object' || depth > 8) return 0;
  let bytes = 0;
  if (Array.isArray(value)) {
    bytes = ARRAY_BYTES + ARRAY_SLOT_BYTES * value.length;
    for (const v of value) bytes += jsonBytes(v, depth + 1);
    return bytes;
  }
  const keys = Object.keys(value);
  // Keys are not counted: JSON.parse and object literals share them (internalized, one copy each).
  bytes = objectBytes(keys.length);
  for (const k of keys) bytes += jsonBytes((value as Record<string, unknown>)[k], depth + 1);
  return bytes;
}
