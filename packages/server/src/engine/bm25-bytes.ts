/** What a Bm25Field's structures hold, in the sizes heap-bytes.ts measured (its approxBytes adds them up). */
import { MAP_ENTRY_BYTES, objectBytes, stringBytes, TYPED_ARRAY_BYTES } from './heap-bytes.js';

/** Bytes of a postings entry: its slot (i32) and tf (u16). */
export const ENTRY_BYTES = 6;

/** A term's postings besides their entries: its key in the map, the Postings object, its two arrays. */
export function termBytes(term: string): number {
  return MAP_ENTRY_BYTES + stringBytes(term) + objectBytes(7) + 2 * TYPED_ARRAY_BYTES;
}
