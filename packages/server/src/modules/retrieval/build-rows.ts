import { parseTemporal, scanText, TEXT_FLAGS, type TextScan } from '../../engine/index.js';
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

export const prepareRow = (row: IndexedMemory): PreparedRow =>
  prepareText(row.text, row.created_at, row.updated_at, Date.parse);

function prepareText(
  text: string,
  createdAtIso: string,
  updatedAtIso: string,
  parse: (iso: string) => number,
): PreparedRow {
  const createdAt = parse(createdAtIso);
  const scan = scanText(text);
  const event = parseTemporal(text, createdAt, scan.mayNameTime);
  return {
    scan,
    createdAt,
    updatedAt: parse(updatedAtIso),
    event: event ? { from: event.from, to: event.to } : null,
  };
}

/** Date.parse, the last time parsed again kept: rows written together (an import, a turn and its update) share times. */
function timeParser(): (iso: string) => number {
  let [last, parsed] = ['', NaN];
  return (iso) => (iso === last ? parsed : (parsed = Date.parse((last = iso))));
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
  /** Each row's scan flags (TEXT_FLAGS' bits). */
  flags: Uint8Array;
  /** Each row's createdAt, updatedAt and event (from, to; NaN: none), four a row. */
  times: Float64Array;
}

export const SHARED = 5;

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
  if (termNumbers) prepareInto(page, termNumbers);
  return page;
}

function isEmpty(value: object): boolean {
  for (const _ in value) return false;
  return true;
}

/**
 * Fills in the prepareRow of the page's rows (on either thread), its terms numbered by `termNumbers`: the build's
 * numbers (on the thread that prepares) of the terms of the pages prepared so far, which this page's new terms join.
 */
export function prepareInto(page: PreparedPage, termNumbers: Map<string, number>): void {
  const n = page.ids.length;
  page.termsFrom = termNumbers.size;
  let indexes = new Int32Array(16 * n);
  let m = 0;
  const parse = timeParser();
  for (let i = 0; i < n; i++) {
    const { scan, createdAt, updatedAt, event } = prepareText(
      page.texts[i]!,
      page.createdAt[i]!,
      page.updatedAt[i]!,
      parse,
    );
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
      (scan.namesTime ? TEXT_FLAGS.namesTime : 0) |
      (scan.firstPerson ? TEXT_FLAGS.firstPerson : 0) |
      (scan.mayNameTime ? TEXT_FLAGS.mayNameTime : 0) |
      (scan.endsAsking ? TEXT_FLAGS.endsAsking : 0);
    page.times[4 * i] = createdAt;
    page.times[4 * i + 1] = updatedAt;
    page.times[4 * i + 2] = event?.from ?? NaN;
    page.times[4 * i + 3] = event?.to ?? NaN;
  }
  page.termIndexes = indexes.slice(0, m);
  page.prepared = true;
}

/** Row i of `owner`'s PreparedPage, as it was read. */
export function rowAt(page: PreparedPage, i: number, endUserId: string): IndexedMemory {
  const { numbers, sharedText, sharedIndexes } = page;
  const at = SHARED * i;
  const supersededBy = numbers[3 * i + 2]!;
  const json = (v: number) => JSON.parse(page.sharedJson[v]!) as unknown;
  return {
    id: page.ids[i]!,
    text: page.texts[i]!,
    tags: json(sharedIndexes[at]!) as string[],
    source: sharedText[sharedIndexes[at + 2]!]!,
    importance: numbers[3 * i]!,
    metadata: json(sharedIndexes[at + 1]!) as Record<string, unknown>,
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
