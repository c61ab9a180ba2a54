// What Bm25Field's postings and snapshots are made of, and the steps that write a snapshot of a field.
import type { DocTerms } from './doc-terms.js';
import { ENTRY_BYTES } from './bm25-bytes.js';
import type { SnapshotReader, SnapshotWriter } from './snapshot.js';

/**
 * One term's postings: (slot, tf) appended in the order docs were added. Removing a doc leaves
 * its entries behind (dirty) and a slot added again appends a new entry; compacting keeps each
 * slot's last entry if its doc still holds the term, so the order is always that of the docs'
 * last additions (what an insertion-ordered map would give, without a map entry per posting).
 */
export interface Postings {
  /** The term's id (what the docs' terms hold: DocTerms). */
  id: number;
  term: string;
  slots: Int32Array;
  tfs: Uint16Array;
  /** Entries in the arrays, stale ones included while dirty. */
  n: number;
  /** Docs holding the term (document frequency). */
  live: number;
  dirty: boolean;
}

/**
 * What a snapshot taken in steps (snapshotSteps) needs of a field as it was when it began: read
 * then, or kept by the changes since (before they change it) while it has yet to read it.
 */
export interface FieldTake {
  dictionary: string[];
  /** Each dictionary term's id, and each term id's number in the dictionary (-1: none). */
  termIds: Int32Array;
  renumber: Int32Array;
  /** Postings entries (as many as doc terms) and slots when it began. */
  entries: number;
  capacity: number;
  /** The writer's parts it writes in place: counts, postings' slots and tfs, doc ranges' starts and ends, doc terms and tfs. */
  parts: number[];
  /** Entries written so far (of the postings, then of the doc terms). */
  at: number;
  /** Entries of terms changed since it began (by number in the dictionary), as they were then (compacted). */
  terms: Map<number, { slots: Int32Array; tfs: Uint16Array; n: number }>;
  /** Terms of slots changed since it began, as they were then: see docAt. */
  docs: Map<number, DocAt>;
  /** Terms [0, termsRead) of the dictionary and slots [0, slotsRead) are written: changes to them need not be kept. */
  termsRead: number;
  slotsRead: number;
}

/** A doc's terms (ids and counts) as they were, or null (no doc in the slot). */
export type DocAt = { terms: Int32Array; tfs: Uint16Array } | null;

/**
 * A take of a field as it is now (Bm25Field.beginSnapshot): its dictionary, then `head` (the field's totals), written
 * to `w`, and the parts the steps write in place reserved; the docs' lengths written live.
 */
export function beginTake(
  w: SnapshotWriter,
  postings: ReadonlyMap<string, Postings>,
  ids: number,
  entries: number,
  docLen: Float64Array,
  head: readonly number[],
): FieldTake {
  const dictionary = [...postings.keys()];
  const termIds = new Int32Array(dictionary.length);
  const renumber = new Int32Array(ids).fill(-1);
  for (let i = 0; i < dictionary.length; i++) renumber[(termIds[i] = postings.get(dictionary[i]!)!.id)] = i;
  const capacity = docLen.length;
  w.value(dictionary);
  for (const v of head) w.value(v);
  const parts = [
    w.reserve('i32', dictionary.length),
    w.reserve('i32', entries),
    w.reserve('u16', entries),
    w.reserve('i32', capacity),
    w.reserve('i32', capacity),
    w.reserve('i32', entries),
    w.reserve('u16', entries),
  ];
  w.live(docLen);
  return {
    dictionary,
    termIds,
    renumber,
    entries,
    capacity,
    parts,
    at: 0,
    terms: new Map(),
    docs: new Map(),
    termsRead: 0,
    slotsRead: 0,
  };
}

/**
 * Drops a term's stale entries in place: each slot keeps its last entry, if its doc still holds the term (`d`).
 * Returns the bytes of entries given back (arrays cut once under a quarter full).
 */
export function compactPostings(p: Postings, d: DocTerms): number {
  const seen = new Set<number>();
  const kept: number[] = [];
  for (let i = p.n - 1; i >= 0; i--) {
    const slot = p.slots[i]!;
    if (seen.has(slot)) continue;
    seen.add(slot);
    if (d.holds(slot, p.id)) kept.push(i);
  }
  // Kept indices are written forward, each to a position at or before its own.
  for (let j = 0, m = kept.length; j < m; j++) {
    const i = kept[m - 1 - j]!;
    p.slots[j] = p.slots[i]!;
    p.tfs[j] = p.tfs[i]!;
  }
  p.n = kept.length;
  p.dirty = false;
  if (p.n >= p.slots.length / 4) return 0;
  const freed = (p.slots.length - p.n) * ENTRY_BYTES;
  p.slots = p.slots.slice(0, p.n);
  p.tfs = p.tfs.slice(0, p.n);
  return freed;
}

/** Work (postings entries, doc terms, slots) in a step of a snapshot: well under a millisecond. */
const STEP_WORK = 1 << 13;

/** A step of Bm25Field.snapshotSteps: the postings of the next terms (`compiled`: a term id's as they are, compacted). */
export function writePostings(
  k: FieldTake,
  counts: Int32Array,
  slots: Int32Array,
  tfs: Uint16Array,
  compiled: (id: number) => Postings,
): void {
  let { termsRead: i, at } = k;
  for (let work = 0; i < k.dictionary.length && work < STEP_WORK; i++) {
    const p = k.terms.get(i) ?? compiled(k.termIds[i]!);
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

/** A step of Bm25Field.snapshotSteps: the terms of the docs in the next slots, as they were (`d`: as they are). */
export function writeDocTerms(
  k: FieldTake,
  d: DocTerms,
  start: Int32Array,
  end: Int32Array,
  docTerms: Int32Array,
  docTfs: Uint16Array,
): void {
  let { slotsRead: slot, at } = k;
  const renumber = k.renumber;
  for (let work = 0; slot < k.capacity && work < STEP_WORK; slot++) {
    const kept = k.docs.get(slot);
    work++;
    if (kept === null || (kept === undefined && !d.has(slot))) continue;
    const [terms, tfs, s, e] = kept
      ? [kept.terms, kept.tfs, 0, kept.terms.length]
      : [d.terms, d.tfs, d.start[slot]!, d.end[slot]!];
    const from = at;
    if (at + e - s > k.entries) throw new Error('index snapshot does not add up');
    for (let i = s; i < e; i++) {
      docTerms[at] = renumber[terms[i]!]!;
      docTfs[at++] = tfs[i]!;
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
    const term = dictionary[id]!;
    yield [
      term,
      { id, term, slots: slots.subarray(at, at + n), tfs: tfs.subarray(at, at + n), n, live: n, dirty: false },
    ];
    at += n;
  }
}

/**
 * Every term's postings from the docs' terms (Bm25Field.postBuilt): each term's entries in slot order, term id by term
 * id in one arena; term id i's end at ends[i] (and begin where id i - 1's end).
 */
export function layOutPostings(d: DocTerms, terms: number): { ends: Int32Array; slots: Int32Array; tfs: Uint16Array } {
  const counts = new Int32Array(terms + 1);
  for (let slot = 0; slot < d.start.length; slot++)
    for (let i = d.start[slot]!, end = i < 0 ? i : d.end[slot]!; i < end; i++) counts[d.terms[i]! + 1]!++;
  for (let id = 1; id < counts.length; id++) counts[id]! += counts[id - 1]!;
  // counts[id]: where the term's entries begin; once written, where they end.
  const total = counts[terms]!;
  const [slots, tfs] = [new Int32Array(total), new Uint16Array(total)];
  for (let slot = 0; slot < d.start.length; slot++) {
    for (let i = d.start[slot]!, end = i < 0 ? i : d.end[slot]!; i < end; i++) {
      const at = counts[d.terms[i]!]!++;
      slots[at] = slot;
      tfs[at] = d.tfs[i]!;
    }
  }
  return { ends: counts, slots, tfs };
}
