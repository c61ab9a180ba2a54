import { parseTemporal, scanText, type TextScan } from '../../engine/index.js';
import type { IndexedMemory } from '../memories/index.js';

/** What the index cache works out of a live row before it indexes it (prepareRow). */
export interface PreparedRow {
  /** The text read once for the index and for the time it names. */
  scan: TextScan;
  createdAt: number;
  updatedAt: number;
  /** The time the text names (parseTemporal), if any. */
  event: { from: number; to: number } | null;
}

export function prepareRow(row: IndexedMemory): PreparedRow {
  const createdAt = Date.parse(row.created_at);
  const scan = scanText(row.text);
  const event = parseTemporal(row.text, createdAt, scan.mayNameTime);
  return {
    scan,
    createdAt,
    updatedAt: Date.parse(row.updated_at),
    event: event ? { from: event.from, to: event.to } : null,
  };
}

/**
 * A page of one owner's live rows and their prepareRow, as the build reader (build-reader.ts) hands it to the thread
 * that indexes it: column by column, numbers in typed arrays and the values many rows share (tags, source, metadata,
 * session, speaker; the terms) once a page, which a message copies several times faster than the rows as objects
 * (~1 s of the indexing thread's CPU for 300,000 rows as arrays, in a first version).
 */
export interface PreparedPage {
  /** Whether the rows were prepared (the fields from `terms` on are empty when not). */
  prepared: boolean;
  ids: Float64Array;
  texts: string[];
  createdAt: string[];
  updatedAt: string[];
  /** importance, seq and superseded_by (NaN: null), three a row. */
  numbers: Float64Array;
  isSummary: Uint8Array;
  /** The distinct tags and metadata of the page, as JSON text. */
  sharedJson: string[];
  /** The distinct sources, sessions and speakers of the page. */
  sharedText: (string | null)[];
  /** Each row's tags and metadata (into sharedJson), source, session and speaker (into sharedText), five a row. */
  sharedIndexes: Int32Array;
  /** The terms this page is the first (of the build's prepared pages) to have: numbers termsFrom, termsFrom + 1, ... */
  terms: string[];
  termsFrom: number;
  /** Each row's terms, as their numbers: row i's from termEnds[i - 1] (0 for the first) to termEnds[i]. */
  termIndexes: Int32Array;
  termEnds: Int32Array;
  /** Each row's scan flags (FLAGS' bits). */
  flags: Uint8Array;
  /** Each row's createdAt, updatedAt and event (from, to; NaN: none), four a row. */
  times: Float64Array;
}

const FLAGS = { namesTime: 1, firstPerson: 2, mayNameTime: 4, endsAsking: 8 } as const;
const SHARED = 5;

/**
 * Live rows (not `deleted`) of one owner as a PreparedPage, each prepared if `termNumbers` (else by pageRows):
 * the build's numbers of the terms of the pages prepared so far, which this page's new terms join. Numbered once a
 * build, a term goes in the first page that has it (a dictionary a page cost the reader ~0.5 s of 300,000 rows).
 */
export function preparedPage(rows: readonly IndexedMemory[], termNumbers?: Map<string, number>): PreparedPage {
  const n = rows.length;
  const page: PreparedPage = {
    prepared: false,
    ids: new Float64Array(n),
    texts: new Array<string>(n),
    createdAt: new Array<string>(n),
    updatedAt: new Array<string>(n),
    numbers: new Float64Array(3 * n),
    isSummary: new Uint8Array(n),
    sharedJson: [],
    sharedText: [],
    sharedIndexes: new Int32Array(SHARED * n),
    terms: [],
    termsFrom: 0,
    termIndexes: new Int32Array(0),
    termEnds: new Int32Array(n),
    flags: new Uint8Array(n),
    times: new Float64Array(4 * n),
  };
  const jsonNo = new Map<string, number>();
  const textNo = new Map<string | null, number>();
  const shareJson = (value: unknown) => {
    // Most rows have no tags and no metadata.
    const empty = typeof value === 'object' && value !== null && isEmpty(value);
    const json = empty ? (Array.isArray(value) ? '[]' : '{}') : JSON.stringify(value);
    let no = jsonNo.get(json);
    if (no === undefined) jsonNo.set(json, (no = page.sharedJson.push(json) - 1));
    return no;
  };
  const shareText = (value: string | null) => {
    let no = textNo.get(value);
    if (no === undefined) textNo.set(value, (no = page.sharedText.push(value) - 1));
    return no;
  };
  for (let i = 0; i < n; i++) {
    const row = rows[i]!;
    page.ids[i] = row.id;
    page.texts[i] = row.text;
    page.createdAt[i] = row.created_at;
    page.updatedAt[i] = row.updated_at;
    page.numbers[3 * i] = row.importance;
    page.numbers[3 * i + 1] = row.seq;
    page.numbers[3 * i + 2] = row.superseded_by ?? NaN;
    page.isSummary[i] = row.is_summary ? 1 : 0;
    page.sharedIndexes[SHARED * i] = shareJson(row.tags);
    page.sharedIndexes[SHARED * i + 1] = shareJson(row.metadata);
    page.sharedIndexes[SHARED * i + 2] = shareText(row.source);
    page.sharedIndexes[SHARED * i + 3] = shareText(row.session_id);
    page.sharedIndexes[SHARED * i + 4] = shareText(row.speaker);
  }
  if (termNumbers) prepareInto(page, rows, termNumbers);
  return page;
}

function isEmpty(value: object): boolean {
  for (const _ in value) return false;
  return true;
}

/** Fills in the page's prepareRow of its rows. */
function prepareInto(page: PreparedPage, rows: readonly IndexedMemory[], termNumbers: Map<string, number>): void {
  const n = rows.length;
  page.termsFrom = termNumbers.size;
  let indexes = new Int32Array(16 * n);
  let m = 0;
  for (let i = 0; i < n; i++) {
    const { scan, createdAt, updatedAt, event } = prepareRow(rows[i]!);
    if (m + scan.terms.length > indexes.length) {
      const grown = new Int32Array(2 * (m + scan.terms.length));
      grown.set(indexes.subarray(0, m));
      indexes = grown;
    }
    for (const term of scan.terms) {
      let no = termNumbers.get(term);
      if (no === undefined) {
        termNumbers.set(term, (no = termNumbers.size));
        page.terms.push(term);
      }
      indexes[m++] = no;
    }
    page.termEnds[i] = m;
    page.flags[i] =
      (scan.namesTime ? FLAGS.namesTime : 0) |
      (scan.firstPerson ? FLAGS.firstPerson : 0) |
      (scan.mayNameTime ? FLAGS.mayNameTime : 0) |
      (scan.endsAsking ? FLAGS.endsAsking : 0);
    page.times[4 * i] = createdAt;
    page.times[4 * i + 1] = updatedAt;
    page.times[4 * i + 2] = event?.from ?? NaN;
    page.times[4 * i + 3] = event?.to ?? NaN;
  }
  page.termIndexes = indexes.slice(0, m);
  page.prepared = true;
}

/**
 * The terms of the pages a build has taken, each as one string, which every page's rows are given: the index finds
 * a term in its maps at once when it is the very string the term was added as, and compares the characters of a
 * copy (a page's terms come as new strings), which cost the indexing ~0.5 s of 300,000 memories' terms.
 * `numbered`: by the build reader's numbers (preparedPage); `held`: each by its text.
 */
export interface BuildTerms {
  numbered: string[];
  held: Map<string, string>;
}

export const buildTerms = (): BuildTerms => ({ numbered: [], held: new Map() });

const heldTerm = (terms: BuildTerms, term: string): string => {
  const held = terms.held.get(term);
  if (held !== undefined) return held;
  terms.held.set(term, term);
  return term;
};

/** The rows' prepareRow, worked out on the indexing thread, with the build's terms. */
export function preparedHere(rows: readonly IndexedMemory[], terms: BuildTerms): PreparedRow[] {
  const prepared = rows.map(prepareRow);
  for (const { scan } of prepared) scan.terms = scan.terms.map((term) => heldTerm(terms, term));
  return prepared;
}

/** The rows of `owner`'s PreparedPage and their prepareRow, as they were (prepared here when the page was not). */
export function pageRows(
  page: PreparedPage,
  endUserId: string,
  terms: BuildTerms,
): { rows: IndexedMemory[]; prepared: PreparedRow[] } {
  const { ids, texts, numbers, sharedText, sharedIndexes } = page;
  // Rows with equal tags or metadata share one value, as DocMetas holds them.
  const json = page.sharedJson.map((text) => JSON.parse(text) as unknown);
  const n = ids.length;
  const rows = new Array<IndexedMemory>(n);
  for (let i = 0; i < n; i++) {
    const at = SHARED * i;
    const supersededBy = numbers[3 * i + 2]!;
    rows[i] = {
      id: ids[i]!,
      text: texts[i]!,
      tags: json[sharedIndexes[at]!] as string[],
      source: sharedText[sharedIndexes[at + 2]!]!,
      importance: numbers[3 * i]!,
      metadata: json[sharedIndexes[at + 1]!] as Record<string, unknown>,
      session_id: sharedText[sharedIndexes[at + 3]!]!,
      speaker: sharedText[sharedIndexes[at + 4]!]!,
      is_summary: page.isSummary[i] === 1,
      created_at: page.createdAt[i]!,
      updated_at: page.updatedAt[i]!,
      end_user_id: endUserId,
      deleted: false,
      seq: numbers[3 * i + 1]!,
      superseded_by: Number.isNaN(supersededBy) ? null : supersededBy,
    };
  }
  if (!page.prepared) return { rows, prepared: preparedHere(rows, terms) };
  const { numbered } = terms;
  if (numbered.length !== page.termsFrom) throw new Error('the build reader sent a page out of order');
  for (const term of page.terms) numbered.push(heldTerm(terms, term));
  const { termIndexes, termEnds, flags, times } = page;
  const prepared = new Array<PreparedRow>(n);
  for (let i = 0, from = 0; i < n; i++) {
    const to = termEnds[i]!;
    const rowTerms = new Array<string>(to - from);
    for (let j = from; j < to; j++) rowTerms[j - from] = numbered[termIndexes[j]!]!;
    from = to;
    const f = flags[i]!;
    const eventFrom = times[4 * i + 2]!;
    prepared[i] = {
      scan: {
        terms: rowTerms,
        namesTime: (f & FLAGS.namesTime) !== 0,
        firstPerson: (f & FLAGS.firstPerson) !== 0,
        mayNameTime: (f & FLAGS.mayNameTime) !== 0,
        endsAsking: (f & FLAGS.endsAsking) !== 0,
      },
      createdAt: times[4 * i]!,
      updatedAt: times[4 * i + 1]!,
      event: Number.isNaN(eventFrom) ? null : { from: eventFrom, to: times[4 * i + 3]! },
    };
  }
  return { rows, prepared };
}
