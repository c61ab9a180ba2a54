// What Bm25Field's postings and snapshots are made of, and the steps that write a snapshot of a field.
import type { SnapshotReader } from './snapshot.js';

/**
 * One term's postings: (slot, tf) appended in the order docs were added. Removing a doc leaves
 * its entries behind (dirty) and a slot added again appends a new entry; compacting keeps each
 * slot's last entry if its doc still holds the term, so the order is always that of the docs'
 * last additions (what an insertion-ordered map would give, without a map entry per posting).
 */
export interface Postings {
  /** The term's number in the restored snapshot's dictionary (frozen doc terms), -1 for a term added since. */
  id: number;
  slots: Int32Array;
  tfs: Uint16Array;
  /** Entries in the arrays, stale ones included while dirty. */
  n: number;
  /** Docs holding the term (document frequency). */
  live: number;
  dirty: boolean;
}

/**
 * The doc terms of a restored snapshot, in one array (terms of slot s at start[s]..end[s], in the
 * order the doc first used them; start -1 once the doc is removed or added again): a map per doc
 * would cost what restoring saves.
 */
export interface FrozenDocTerms {
  start: Int32Array;
  end: Int32Array;
  terms: Int32Array;
  tfs: Uint16Array;
  dictionary: string[];
}

/**
 * What a snapshot taken in steps (snapshotSteps) needs of a field as it was when it began: read
 * then, or kept by the changes since (before they change it) while it has yet to read it.
 */
export interface FieldTake {
  dictionary: string[];
  /** Each term's number in the dictionary. */
  ids: Map<string, number>;
  /** Postings entries (as many as doc terms) and slots when it began. */
  entries: number;
  capacity: number;
  /** The writer's parts it writes in place: counts, postings' slots and tfs, doc ranges' starts and ends, doc terms and tfs. */
  parts: number[];
  /** Entries written so far (of the postings, then of the doc terms). */
  at: number;
  /** Entries of terms changed since it began, as they were then (compacted). */
  terms: Map<string, { slots: Int32Array; tfs: Uint16Array; n: number }>;
  /** Terms of slots changed since it began, as they were then: see docAt. */
  docs: Map<number, DocAt>;
  /** Terms [0, termsRead) of the dictionary and slots [0, slotsRead) are written: changes to them need not be kept. */
  termsRead: number;
  slotsRead: number;
}

/** A doc's terms: its own map, the start of its frozen terms, or null (no doc in the slot). */
export type DocAt = ReadonlyMap<string, number> | number | null;

/** Work (postings entries, doc terms, slots) in a step of a snapshot: well under a millisecond. */
const STEP_WORK = 1 << 13;

/** A step of Bm25Field.snapshotSteps: the postings of the next terms (`compiled`: a term's as they are, compacted). */
export function writePostings(
  k: FieldTake,
  counts: Int32Array,
  slots: Int32Array,
  tfs: Uint16Array,
  compiled: (term: string) => Postings,
): void {
  let { termsRead: i, at } = k;
  for (let work = 0; i < k.dictionary.length && work < STEP_WORK; i++) {
    const term = k.dictionary[i]!;
    const p = k.terms.get(term) ?? compiled(term);
    if (at + p.n > k.entries) throw new Error('index snapshot does not add up');
    counts[i] = p.n;
    slots.set(p.slots.subarray(0, p.n), at);
    tfs.set(p.tfs.subarray(0, p.n), at);
    at += p.n;
    work += p.n + 16;
  }
  k.termsRead = i;
  k.at = at;
}

/** A step of Bm25Field.snapshotSteps: the terms of the docs in the next slots, as they were (`docAt`: as they are). */
export function writeDocTerms(
  k: FieldTake,
  f: FrozenDocTerms | null,
  docAt: (slot: number) => DocAt,
  renumber: Int32Array,
  start: Int32Array,
  end: Int32Array,
  docTerms: Int32Array,
  docTfs: Uint16Array,
): void {
  let { slotsRead: slot, at } = k;
  for (let work = 0; slot < k.capacity && work < STEP_WORK; slot++) {
    const kept = k.docs.get(slot);
    const doc = kept === undefined ? docAt(slot) : kept;
    work++;
    if (doc === null) continue;
    const from = at;
    if (at + (typeof doc === 'number' ? f!.end[slot]! - doc : doc.size) > k.entries)
      throw new Error('index snapshot does not add up');
    if (typeof doc === 'number') {
      for (let i = doc, e = f!.end[slot]!; i < e; i++) {
        docTerms[at] = renumber[f!.terms[i]!]!;
        docTfs[at++] = f!.tfs[i]!;
      }
    } else {
      for (const [t, n] of doc) {
        docTerms[at] = k.ids.get(t)!;
        docTfs[at++] = n;
      }
    }
    start[slot] = from;
    end[slot] = at;
    work += at - from;
  }
  k.slotsRead = slot;
  k.at = at;
}

/** The postings a snapshot wrote (writePostings), by term, their arrays views of the read ones. */
export function* readPostings(r: SnapshotReader, dictionary: string[]): Generator<[string, Postings]> {
  const counts = r.array('i32');
  const slots = r.array('i32');
  const tfs = r.array('u16');
  let at = 0;
  for (let id = 0; id < dictionary.length; id++) {
    const n = counts[id]!;
    yield [
      dictionary[id]!,
      { id, slots: slots.subarray(at, at + n), tfs: tfs.subarray(at, at + n), n, live: n, dirty: false },
    ];
    at += n;
  }
}

/** The doc terms a snapshot wrote (writeDocTerms), with the docs holding terms and their entries. */
export function readFrozenDocTerms(
  r: SnapshotReader,
  dictionary: string[],
): { terms: FrozenDocTerms; docs: number; entries: number } {
  const start = r.array('i32');
  const end = r.array('i32');
  const terms = { start, end, terms: r.array('i32'), tfs: r.array('u16'), dictionary };
  let docs = 0;
  let entries = 0;
  for (let slot = 0; slot < start.length; slot++) {
    if (start[slot]! < 0) continue;
    docs++;
    entries += end[slot]! - start[slot]!;
  }
  return { terms, docs, entries };
}
