/** What a Bm25Field's structures hold, in the sizes heap-bytes.ts measured (its approxBytes adds them up). */
import type { FrozenDocTerms } from './bm25-snapshot.js';
import {
  ARRAY_BYTES,
  ARRAY_SLOT_BYTES,
  MAP_ENTRY_BYTES,
  mapBytes,
  objectBytes,
  stringBytes,
  TYPED_ARRAY_BYTES,
} from './heap-bytes.js';

/** Bytes of a postings entry: its slot (i32) and tf (u16). */
export const ENTRY_BYTES = 6;

/** A term's postings besides their entries: its key in the map, the Postings object, its two arrays. */
export function termBytes(term: string): number {
  return MAP_ENTRY_BYTES + stringBytes(term) + objectBytes(6) + 2 * TYPED_ARRAY_BYTES;
}

/** A doc's own term map (and its entry in docTerms): the terms are strings of its own text's analysis. */
export function docMapBytes(tf: ReadonlyMap<string, number>): number {
  let bytes = MAP_ENTRY_BYTES + mapBytes(tf.size);
  for (const t of tf.keys()) bytes += stringBytes(t);
  return bytes;
}

/** A restored snapshot's doc terms, kept as its arrays and dictionary. */
export function frozenBytes(f: FrozenDocTerms | null): number {
  if (!f) return 0;
  return (
    f.start.byteLength +
    f.end.byteLength +
    f.terms.byteLength +
    f.tfs.byteLength +
    ARRAY_BYTES +
    ARRAY_SLOT_BYTES * f.dictionary.length
  );
}
