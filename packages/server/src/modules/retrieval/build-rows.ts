import {
  parseTemporal,
  scanNumbered,
  scanText,
  TEXT_FLAGS,
  type TermNumbering,
  type TextScan,
} from '../../engine/index.js';
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
  /** The rows' texts and times as read (empty in a prepared page withoutRows). */
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
 * Live rows of one owner (liveOwnerPage's values, LIVE_PAGE_COLUMNS in order) as a PreparedPage, each prepared if
 * `numbering` (else by pageRows): the build's numbers of the terms of the pages prepared so far, which this page's
 * new terms join. Numbered once a build, a term goes in the first page that has it (a dictionary a page cost the
 * reader ~0.5 s of 300,000 rows).
 */
export function preparedPage(rows: readonly (readonly unknown[])[], numbering?: TermNumbering): PreparedPage {
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
    // As stored (SQLite: the JSON text it was written as); most rows have no tags and no metadata.
    const json =
      typeof value === 'string'
        ? value
        : typeof value === 'object' && value !== null && isEmpty(value)
          ? Array.isArray(value)
            ? '[]'
            : '{}'
          : JSON.stringify(value);
    let no = jsonNo.get(json);
    if (no === undefined) jsonNo.set(json, (no = page.sharedJson.push(json) - 1));
    return no;
  };
  const shareText = (value: unknown) => {
    let no = textNo.get(value as string | null);
    if (no === undefined) textNo.set(value as string | null, (no = page.sharedText.push(value as string | null) - 1));
    return no;
  };
  for (let i = 0; i < n; i++) {
    const [id, text, tags, source, importance, metadata, session, speaker, isSummary, created, updated, seq, by] =
      rows[i]!;
    page.ids[i] = id as number;
    page.texts[i] = text as string;
    page.createdAt[i] = created as string;
    page.updatedAt[i] = updated as string;
    page.numbers[3 * i] = importance as number;
    page.numbers[3 * i + 1] = seq as number;
    page.numbers[3 * i + 2] = (by as number | null) ?? NaN;
    page.isSummary[i] = isSummary ? 1 : 0;
    page.sharedIndexes[SHARED * i] = shareJson(tags);
    page.sharedIndexes[SHARED * i + 1] = shareJson(metadata);
    page.sharedIndexes[SHARED * i + 2] = shareText(source);
    page.sharedIndexes[SHARED * i + 3] = shareText(session);
    page.sharedIndexes[SHARED * i + 4] = shareText(speaker);
  }
  if (numbering) prepareInto(page, numbering);
  return page;
}

function isEmpty(value: object): boolean {
  for (const _ in value) return false;
  return true;
}

/**
 * Fills in the prepareRow of the page's rows (on either thread), its terms numbered by `numbering`: the build's
 * numbers (on the thread that prepares) of the terms of the pages prepared so far, which this page's new terms join.
 */
export function prepareInto(page: PreparedPage, numbering: TermNumbering): void {
  const n = page.ids.length;
  page.termsFrom = numbering.terms.length;
  numbering.length = 0;
  const parse = timeParser();
  for (let i = 0; i < n; i++) {
    const text = page.texts[i]!;
    const flags = scanNumbered(text, numbering);
    const createdAt = parse(page.createdAt[i]!);
    const event = parseTemporal(text, createdAt, (flags & TEXT_FLAGS.mayNameTime) !== 0);
    page.termEnds[i] = numbering.length;
    page.flags[i] = flags;
    page.times[4 * i] = createdAt;
    page.times[4 * i + 1] = parse(page.updatedAt[i]!);
    page.times[4 * i + 2] = event?.from ?? NaN;
    page.times[4 * i + 3] = event?.to ?? NaN;
  }
  page.terms = numbering.terms.slice(page.termsFrom);
  page.termIndexes = numbering.numbers.slice(0, numbering.length);
  page.prepared = true;
}

/**
 * A prepared page without what only rowAt reads (its texts, its times as text), for a build that reads no rows back:
 * the texts were most of what the build reader's message copied (twice, on each thread).
 */
export const withoutRows = (page: PreparedPage): PreparedPage => ({ ...page, texts: [], createdAt: [], updatedAt: [] });

/** Row i of `owner`'s PreparedPage, as it was read (not of a page withoutRows). */
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
