import type { FilterSubject, IndexedMemory } from '../memories/index.js';
import { SHARED, type PreparedPage, type PreparedRow } from './build-rows.js';
import { ARRAY_SLOT_BYTES, jsonBytes, MAP_ENTRY_BYTES, stringBytes, TYPED_ARRAY_BYTES } from '../../engine/index.js';

/** What filters need of a memory, kept beside the index so filtering costs no query. */
export interface DocMeta extends Omit<FilterSubject, 'text'> {
  /** When the text says it happened (a date in the text, read relative to created_at), if it names one. */
  event?: { from: number; to: number };
}

/** A live row's DocMeta, with its prepareRow. */
export const rowMeta = (row: IndexedMemory, { createdAt, updatedAt, event }: PreparedRow): DocMeta => ({
  tags: row.tags,
  source: row.source,
  createdAt,
  metadata: row.metadata,
  isSummary: row.is_summary,
  sessionId: row.session_id,
  importance: row.importance,
  updatedAt,
  ...(event ? { event } : {}),
});

/**
 * No tags and no metadata, what most docs have: one frozen value for every such doc (a DocMeta is
 * read-only), value number 0 of its table.
 */
export const NO_TAGS: string[] = Object.freeze([]) as unknown as string[];
export const NO_METADATA: Record<string, unknown> = Object.freeze({});

/**
 * Distinct values (strings, tag lists, metadata objects) by number, each held once however many docs
 * have it and dropped when the last one goes: a doc's column holds the number. Keyed by a string
 * (the value itself, or its JSON).
 */
class SharedValues<T> {
  readonly values: T[] = [];
  private readonly keys: string[] = [];
  private readonly refs: number[] = [];
  private readonly numbers = new Map<string, number>();
  private readonly free: number[] = [];
  bytes = 0;

  constructor(private readonly valueBytes: (value: T, key: string) => number) {}

  /** The number of this value (`holders` more docs hold it). */
  of(key: string, value: T, holders = 1): number {
    let n = this.numbers.get(key);
    if (n === undefined) {
      n = this.free.pop() ?? this.values.length;
      [this.values[n], this.keys[n], this.refs[n]] = [value, key, 0];
      this.numbers.set(key, n);
      this.bytes += MAP_ENTRY_BYTES + 3 * ARRAY_SLOT_BYTES + this.valueBytes(value, key);
    }
    this.refs[n]! += holders;
    return n;
  }

  /** One more doc holds value n. */
  hold(n: number): void {
    this.refs[n]!++;
  }

  /** A doc no longer holds value n. */
  release(n: number): void {
    if (--this.refs[n]! > 0) return;
    const key = this.keys[n]!;
    this.bytes -= MAP_ENTRY_BYTES + 3 * ARRAY_SLOT_BYTES + this.valueBytes(this.values[n]!, key);
    this.numbers.delete(key);
    [this.values[n], this.keys[n]] = [undefined as T, ''];
    this.free.push(n);
  }
}

const NONE = -1;
/** Numeric columns (id, created, updated, importance, event from and to), the flag, four value numbers. */
const ROW_BYTES = 6 * 8 + 1 + 4 * 4;
const COLUMNS = 11;

/**
 * The filter metadata of an index's docs by id, column by column (issue 51: a DocMeta object in a
 * Map took ~230 bytes a doc, 70 MB of a 300,000-memory end user's 330; a row here ~100). Strings,
 * tag lists and metadata objects are shared by value (SharedValues). Reads and writes as a
 * `Map<number, DocMeta>` does, in the same order (a doc set again keeps its place); `get` makes the
 * DocMeta it returns. A restored one (`restored`) finds docs by id once something first asks by id.
 */
export class DocMetas {
  private ids = new Float64Array(0);
  private createdAt = new Float64Array(0);
  private updatedAt = new Float64Array(0);
  private importance = new Float64Array(0);
  /** NaN: no event. */
  private eventFrom = new Float64Array(0);
  private eventTo = new Float64Array(0);
  private isSummary = new Uint8Array(0);
  /** Value numbers (NONE: null). */
  private source = new Int32Array(0);
  private session = new Int32Array(0);
  private tagList = new Int32Array(0);
  private metadataOf = new Int32Array(0);
  private readonly strings = new SharedValues<string>((_, key) => stringBytes(key));
  private readonly tags = new SharedValues<string[]>((v, key) => stringBytes(key) + jsonBytes(v));
  private readonly metadata = new SharedValues<Record<string, unknown>>((v, key) => stringBytes(key) + jsonBytes(v));
  /** Row by id; null until first needed (a restored one). */
  private rows: Map<number, number> | null = new Map();
  /** Rows in use, live or left by a deletion (NaN id) until compacted. */
  private end = 0;
  private count = 0;

  constructor() {
    this.tags.of('[]', NO_TAGS);
    this.metadata.of('{}', NO_METADATA);
  }

  get size(): number {
    return this.count;
  }

  /** What it holds in memory (engine heap-bytes' figures). */
  get bytes(): number {
    return (
      COLUMNS * TYPED_ARRAY_BYTES +
      this.ids.length * ROW_BYTES +
      (this.rows ? this.rows.size * MAP_ENTRY_BYTES : 0) +
      this.strings.bytes +
      this.tags.bytes +
      this.metadata.bytes
    );
  }

  private rowOf(id: number): number | undefined {
    if (!this.rows) {
      this.rows = new Map();
      for (let r = 0; r < this.end; r++) if (!Number.isNaN(this.ids[r]!)) this.rows.set(this.ids[r]!, r);
    }
    return this.rows.get(id);
  }

  has(id: number): boolean {
    return this.rowOf(id) !== undefined;
  }

  get(id: number): DocMeta | undefined {
    const r = this.rowOf(id);
    return r === undefined ? undefined : this.at(r);
  }

  private at(r: number): DocMeta {
    const [source, session] = [this.source[r]!, this.session[r]!];
    const doc: DocMeta = {
      tags: this.tags.values[this.tagList[r]!]!,
      source: source === NONE ? null : this.strings.values[source]!,
      createdAt: this.createdAt[r]!,
      metadata: this.metadata.values[this.metadataOf[r]!]!,
      isSummary: this.isSummary[r] === 1,
      sessionId: session === NONE ? null : this.strings.values[session]!,
      importance: this.importance[r]!,
      updatedAt: this.updatedAt[r]!,
    };
    if (!Number.isNaN(this.eventFrom[r]!)) doc.event = { from: this.eventFrom[r]!, to: this.eventTo[r]! };
    return doc;
  }

  set(id: number, doc: DocMeta): void {
    let r = this.rowOf(id);
    if (r === undefined) {
      if (this.end === this.ids.length) this.makeRoom();
      r = this.end++;
      this.rows!.set(id, r);
      this.count++;
    } else this.release(r);
    this.ids[r] = id;
    this.createdAt[r] = doc.createdAt;
    this.updatedAt[r] = doc.updatedAt;
    this.importance[r] = doc.importance;
    this.eventFrom[r] = doc.event ? doc.event.from : NaN;
    this.eventTo[r] = doc.event ? doc.event.to : NaN;
    this.isSummary[r] = doc.isSummary ? 1 : 0;
    this.source[r] = doc.source === null ? NONE : this.strings.of(doc.source, doc.source);
    this.session[r] = doc.sessionId === null ? NONE : this.strings.of(doc.sessionId, doc.sessionId);
    this.tagList[r] =
      doc.tags.length === 0 ? this.tags.of('[]', NO_TAGS) : this.tags.of(JSON.stringify(doc.tags), doc.tags);
    const empty = Object.keys(doc.metadata).length === 0;
    this.metadataOf[r] = this.metadata.of(
      empty ? '{}' : JSON.stringify(doc.metadata),
      empty ? NO_METADATA : doc.metadata,
    );
  }

  /**
   * The docs of a prepared page of a build from scratch (ids ascending, above any held), as `set` adds each (the
   * same columns and tables), from its columns: a distinct value of the page is looked up once, the first time.
   */
  addBuilt(page: PreparedPage): void {
    const n = page.ids.length;
    if (n > 0 && this.end > 0 && !(page.ids[0]! > this.ids[this.end - 1]!))
      throw new Error('a built page out of order');
    // Rows by id: made when something first asks by id (a first query without filters does not; as a restored one's).
    const rows = this.end === 0 ? (this.rows = null) : this.rows;
    if (this.end + n > this.ids.length) this.grow(Math.max(this.end + n, 2 * this.ids.length));
    const { sharedText, sharedJson, sharedIndexes, numbers, times } = page;
    // A page value's number in each table (-1: not looked up yet).
    const [strings, tags, metadata] = [sharedText, sharedJson, sharedJson].map((values) =>
      new Int32Array(values.length).fill(-1),
    ) as [Int32Array, Int32Array, Int32Array];
    const string = (v: number): number => {
      const text = sharedText[v]!;
      if (text === null) return NONE;
      if (strings[v]! >= 0) this.strings.hold(strings[v]!);
      else strings[v] = this.strings.of(text, text);
      return strings[v]!;
    };
    const json = <T>(table: SharedValues<T>, numbered: Int32Array, v: number, empty: string, none: T): number => {
      if (numbered[v]! >= 0) table.hold(numbered[v]!);
      else
        numbered[v] =
          sharedJson[v] === empty ? table.of(empty, none) : table.of(sharedJson[v]!, JSON.parse(sharedJson[v]!) as T);
      return numbered[v]!;
    };
    for (let i = 0; i < n; i++) {
      const r = this.end++;
      const id = page.ids[i]!;
      rows?.set(id, r);
      this.ids[r] = id;
      this.createdAt[r] = times[4 * i]!;
      this.updatedAt[r] = times[4 * i + 1]!;
      this.importance[r] = numbers[3 * i]!;
      this.eventFrom[r] = times[4 * i + 2]!;
      this.eventTo[r] = times[4 * i + 3]!;
      this.isSummary[r] = page.isSummary[i]!;
      const at = SHARED * i;
      this.source[r] = string(sharedIndexes[at + 2]!);
      this.session[r] = string(sharedIndexes[at + 3]!);
      this.tagList[r] = json(this.tags, tags, sharedIndexes[at]!, '[]', NO_TAGS);
      this.metadataOf[r] = json(this.metadata, metadata, sharedIndexes[at + 1]!, '{}', NO_METADATA);
    }
    this.count += n;
  }

  /** The row's shared values, one holder fewer. */
  private release(r: number): void {
    if (this.source[r] !== NONE) this.strings.release(this.source[r]!);
    if (this.session[r] !== NONE) this.strings.release(this.session[r]!);
    this.tags.release(this.tagList[r]!);
    this.metadata.release(this.metadataOf[r]!);
  }

  delete(id: number): boolean {
    const r = this.rowOf(id);
    if (r === undefined) return false;
    this.release(r);
    this.rows!.delete(id);
    this.ids[r] = NaN;
    this.count--;
    return true;
  }

  clear(): void {
    for (let r = 0; r < this.end; r++) if (!Number.isNaN(this.ids[r]!)) this.release(r);
    this.rows = new Map();
    this.end = this.count = 0;
  }

  /** Room for `more` rows (a build from rows knows how many come): the columns grown once, not doubled. */
  reserve(more: number): void {
    if (this.end + more > this.ids.length) this.grow(this.end + more);
  }

  /** Room for one more row: the deleted ones' rows compacted away when they are half, else the columns doubled. */
  private makeRoom(): void {
    if (this.end - this.count >= Math.max(64, this.count)) {
      let to = 0;
      for (let r = 0; r < this.end; r++) {
        if (Number.isNaN(this.ids[r]!)) continue;
        if (to !== r) for (const column of this.columns()) column[to] = column[r]!;
        this.rows?.set(this.ids[to]!, to);
        to++;
      }
      this.end = to;
      return;
    }
    this.grow(Math.max(64, 2 * this.ids.length));
  }

  private grow(capacity: number): void {
    this.ids = grown(this.ids, capacity);
    this.createdAt = grown(this.createdAt, capacity);
    this.updatedAt = grown(this.updatedAt, capacity);
    this.importance = grown(this.importance, capacity);
    this.eventFrom = grown(this.eventFrom, capacity);
    this.eventTo = grown(this.eventTo, capacity);
    this.isSummary = grown(this.isSummary, capacity);
    this.source = grown(this.source, capacity);
    this.session = grown(this.session, capacity);
    this.tagList = grown(this.tagList, capacity);
    this.metadataOf = grown(this.metadataOf, capacity);
  }

  /** Its columns cut to the rows in use (after a build: growing by doubling leaves up to half of them spare). */
  fit(): void {
    const capacity = Math.max(64, this.end);
    if (capacity >= this.ids.length) return;
    this.ids = this.ids.slice(0, capacity);
    this.createdAt = this.createdAt.slice(0, capacity);
    this.updatedAt = this.updatedAt.slice(0, capacity);
    this.importance = this.importance.slice(0, capacity);
    this.eventFrom = this.eventFrom.slice(0, capacity);
    this.eventTo = this.eventTo.slice(0, capacity);
    this.isSummary = this.isSummary.slice(0, capacity);
    this.source = this.source.slice(0, capacity);
    this.session = this.session.slice(0, capacity);
    this.tagList = this.tagList.slice(0, capacity);
    this.metadataOf = this.metadataOf.slice(0, capacity);
  }

  private columns(): Array<Float64Array | Uint8Array | Int32Array> {
    return [
      this.ids,
      this.createdAt,
      this.updatedAt,
      this.importance,
      this.eventFrom,
      this.eventTo,
      this.isSummary,
      this.source,
      this.session,
      this.tagList,
      this.metadataOf,
    ];
  }

  *keys(): IterableIterator<number> {
    for (let r = 0; r < this.end; r++) if (!Number.isNaN(this.ids[r]!)) yield this.ids[r]!;
  }

  *entries(): IterableIterator<[number, DocMeta]> {
    for (let r = 0; r < this.end; r++) if (!Number.isNaN(this.ids[r]!)) yield [this.ids[r]!, this.at(r)];
  }

  *values(): IterableIterator<DocMeta> {
    for (const [, doc] of this.entries()) yield doc;
  }

  [Symbol.iterator](): IterableIterator<[number, DocMeta]> {
    return this.entries();
  }

  /**
   * Docs decoded from a snapshot's columns (snapshots.ts), taken as they are; `strings`, `tags` and `metadata`
   * the distinct values the value numbers name, tags and metadata as JSON.
   */
  static restored(columns: {
    ids: Float64Array;
    createdAt: Float64Array;
    updatedAt: Float64Array;
    importance: Float64Array;
    eventFrom: Float64Array;
    eventTo: Float64Array;
    isSummary: Uint8Array;
    source: Int32Array;
    session: Int32Array;
    tagList: Int32Array;
    metadataOf: Int32Array;
    strings: string[];
    tags: string[];
    metadata: string[];
  }): DocMetas {
    const metas = new DocMetas();
    const n = columns.ids.length;
    Object.assign(metas, {
      ids: columns.ids,
      createdAt: columns.createdAt,
      updatedAt: columns.updatedAt,
      importance: columns.importance,
      eventFrom: columns.eventFrom,
      eventTo: columns.eventTo,
      isSummary: columns.isSummary,
      rows: null,
      end: n,
      count: n,
    });
    // The snapshot's tables renumbered as this one's, each value held by as many docs as name it.
    const renumber = (from: Int32Array, tableSize: number, hold: (v: number, holders: number) => number) => {
      const holders = new Int32Array(tableSize);
      for (let r = 0; r < n; r++) if (from[r] !== NONE) holders[from[r]!]!++;
      const number = new Int32Array(tableSize);
      for (let v = 0; v < tableSize; v++) if (holders[v]! > 0) number[v] = hold(v, holders[v]!);
      const to = new Int32Array(n);
      for (let r = 0; r < n; r++) to[r] = from[r] === NONE ? NONE : number[from[r]!]!;
      return to;
    };
    const { strings, tags, metadata } = columns;
    const string = (v: number, holders: number) => metas.strings.of(strings[v]!, strings[v]!, holders);
    metas.source = renumber(columns.source, strings.length, string);
    metas.session = renumber(columns.session, strings.length, string);
    metas.tagList = renumber(columns.tagList, tags.length, (v, holders) =>
      metas.tags.of(tags[v]!, tags[v] === '[]' ? NO_TAGS : (JSON.parse(tags[v]!) as string[]), holders),
    );
    metas.metadataOf = renumber(columns.metadataOf, metadata.length, (v, holders) =>
      metas.metadata.of(
        metadata[v]!,
        metadata[v] === '{}' ? NO_METADATA : (JSON.parse(metadata[v]!) as Record<string, unknown>),
        holders,
      ),
    );
    return metas;
  }
}

function grown<T extends Float64Array | Uint8Array | Int32Array>(array: T, capacity: number): T {
  const bigger = new (array.constructor as new (n: number) => T)(capacity);
  bigger.set(array);
  return bigger;
}
