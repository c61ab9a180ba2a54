// One end user's in-memory retrieval index: lexical (BM25), sub-word (built-in
// hashed vectors), optional semantic vectors from a remote embedder, and structural
// features (session neighbours, time, recency, importance, feedback), fused into
// one explainable score.
import { Bm25Field } from './bm25.js';
import type { ContextScratch } from './bm25-context.js';
import { type IndexTake, readIds, STEP } from './index-take.js';
import { SessionMembers } from './session-members.js';
import { type BuiltDocs, TEXT_FLAGS } from './built-docs.js';
import { builtinEmbedder, type BuiltinEmbedder } from './embedder.js';
import { ARRAY_SLOT_BYTES, MAP_ENTRY_BYTES, stringBytes, TYPED_ARRAY_BYTES } from './heap-bytes.js';
import { rank } from './rank-search.js';
import type { NormKey, RankedIndex } from './ranked-index.js';
import { DEFAULT_WEIGHTS, type RankingWeights } from './ranking-weights.js';
import { SearchBuffers } from './search-buffers.js';
import { analyze, scanText, type TextScan } from './text.js';
import { VectorIndex } from './vectors.js';
import { runNow, SnapshotReader, SnapshotWriter, type Steps } from './snapshot.js';
import type { EngineDoc, SearchHit, SearchOptions } from './types.js';

export interface MemoryIndexOptions {
  /** Built-in embedder for the sub-word vector feature; null disables it. */
  embedder?: BuiltinEmbedder | null;
  weights?: Partial<RankingWeights>;
  /**
   * The common terms' context postings kept between searches, up to this share of the text's own
   * index bytes (0: none; default DEFAULT_CONTEXT_CACHE_SHARE): a search then saturates them without
   * spreading their postings over the neighbours again. Exact; a write drops the terms it changes.
   */
  contextCacheShare?: number;
  /** Remote vectors' cosines by the WebAssembly SIMD kernel (default, where it runs) or in JavaScript (vectors.ts). */
  vectorKernel?: 'wasm' | 'js';
}

/**
 * The server's default too (ENGRAM_INDEX_CONTEXT_CACHE_PERCENT, 300): since a build ends fitted (`fit`), 3 of
 * its bytes keep about what 2 of a build's spare-filled arrays kept (a search at 300,000 memories slower by a
 * third with 2).
 */
export const DEFAULT_CONTEXT_CACHE_SHARE = 3;

export class MemoryIndex {
  private readonly embedder: BuiltinEmbedder | null;
  readonly weights: RankingWeights;

  // Dense per-slot storage; a slot is reused after its doc is removed.
  private capacity = 0;
  private readonly slotsById = new Map<number, number>();
  /**
   * A restored index's docs' ids and slots in the order they were added, until something needs them
   * by id (`idToSlot`, built then, in that order): a first query after a restart needs none of them,
   * and a map of 100,000 entries costs it 30-45 ms.
   */
  private restoredIds: { ids: Float64Array; slots: Int32Array } | null = null;
  private readonly freeSlots: number[] = [];
  private slotId = new Float64Array(0);
  private live = new Uint8Array(0);
  private createdAt = new Float64Array(0);
  /** 1 when the doc's text names a time (namesTime, text.ts). */
  private namesTime = new Uint8Array(0);
  /** 1 when the doc's text has a first-person word (speaksInFirstPerson). */
  private firstPerson = new Uint8Array(0);
  /** 1 when the doc's text ends with a question (endsAsking). */
  private endsAsking = new Uint8Array(0);
  /** Upper bounds over every doc ever held (never lowered: a stale bound is still a bound), for pruning. */
  private maxCreatedAt = -Infinity;
  private maxImportanceDev = 0;
  private maxAbsFeedback = 0;
  private importance = new Float32Array(0);
  private feedback = new Float32Array(0);
  // Sessions interned to small integers so per-query session sums use a typed array; -1: no session.
  private sessionNo = new Int32Array(0);
  private readonly sessionNos = new Map<string, number>();
  /** The interned sessions by number. */
  private readonly sessionNames: string[] = [];
  private sessionBuf = new Float64Array(16);
  // Neighbouring slots in the same session (id order), -1 at the ends.
  private prevSlot = new Int32Array(0);
  private nextSlot = new Int32Array(0);
  private readonly sessions = new SessionMembers();
  /** Bytes of the interned sessions' names. */
  private sessionNameBytes = 0;
  /** A build from scratch's (addBuilt) docs (-1 once fitted), and its last slot of each session so far (-1: none). */
  private builtDocs = 0;
  private lastInSession = new Int32Array(0);

  private text = new Bm25Field();
  private meta = new Bm25Field();

  private readonly dims: number;
  private ngramVecs = new Float32Array(0);
  /** Remote-embedder vectors: int8 codes in lists, searched without reading every doc (vectors.ts). */
  private vectors: VectorIndex;

  /** The context scorer's state: its per-slot buffers are the thread's (SearchBuffers), its cached normalisations this index's. */
  private readonly scratch: ContextScratch = {
    tfSelf: new Float64Array(0),
    tfCtx: new Float64Array(0),
    termTouched: new Int32Array(0),
    norm: new Float64Array(0),
    normStamp: 0,
    stamp: 1,
  };
  private mutations = 0; // changes on every upsert/remove: cached length normalisations (scratch.norm) are then stale
  /** What scratch.stamp's cached norms were computed under. */
  private readonly normKey: NormKey = { mutations: -1, window: NaN, weight: NaN, decay: NaN, backward: NaN };
  /** A snapshot being taken in steps, for which changes keep what they change (snapshotSteps). */
  private taking: IndexTake | null = null;

  constructor(opts: MemoryIndexOptions = {}) {
    this.weights = { ...DEFAULT_WEIGHTS, ...opts.weights };
    // Vectors cost dims*4 bytes per doc; keep them only when the feature is weighted.
    const e = opts.embedder === undefined ? builtinEmbedder() : opts.embedder;
    this.embedder = this.weights.ngram > 0 ? e : null;
    this.dims = this.embedder?.dimensions ?? 0;
    this.text.contextCacheShare = opts.contextCacheShare ?? DEFAULT_CONTEXT_CACHE_SHARE;
    this.vectors = new VectorIndex({ kernel: opts.vectorKernel });
  }

  get size(): number {
    return this.restoredIds ? this.restoredIds.ids.length : this.slotsById.size;
  }

  /** Each doc's slot by its id. */
  private get idToSlot(): Map<number, number> {
    const restored = this.restoredIds;
    if (restored) {
      this.restoredIds = null;
      for (let i = 0; i < restored.ids.length; i++) this.slotsById.set(restored.ids[i]!, restored.slots[i]!);
    }
    return this.slotsById;
  }

  has(id: number): boolean {
    return this.idToSlot.has(id);
  }

  /** Room for `docs` docs in all: a build from rows knows how many come, and sizes its arrays once (not doubled as they do). */
  reserve(docs: number): void {
    if (docs > this.capacity) this.resize(docs);
    this.text.reserve(docs);
  }

  /** The per-slot arrays at `cap` slots (more, or as many as the slots in use). */
  private resize(cap: number): void {
    const g = <T extends Float64Array | Float32Array | Uint8Array | Int32Array | Uint32Array>(a: T, per = 1): T => {
      const n = new (a.constructor as new (len: number) => T)(cap * per);
      n.set(a.length > n.length ? a.subarray(0, n.length) : a);
      return n;
    };
    this.slotId = g(this.slotId);
    this.live = g(this.live);
    this.createdAt = g(this.createdAt);
    this.namesTime = g(this.namesTime);
    this.firstPerson = g(this.firstPerson);
    this.endsAsking = g(this.endsAsking);
    this.importance = g(this.importance);
    this.feedback = g(this.feedback);
    this.ngramVecs = g(this.ngramVecs, this.dims);
    this.vectors.resize(cap);
    // Cached length normalisations: all computed anew.
    this.scratch.norm = new Float64Array(cap);
    this.scratch.normStamp = 0;
    const oldCap = this.capacity;
    this.prevSlot = g(this.prevSlot);
    this.nextSlot = g(this.nextSlot);
    this.sessionNo = g(this.sessionNo);
    if (cap > oldCap) {
      this.sessionNo.fill(-1, oldCap);
      this.prevSlot.fill(-1, oldCap);
      this.nextSlot.fill(-1, oldCap);
    }
    this.capacity = cap;
  }

  /**
   * Its arrays cut to what it holds, for after a build from rows: growing by doubling as docs arrive leaves up
   * to half of them spare (300,000 memories in 524,288 slots; postings and the docs' terms likewise), which
   * the index cache would count and a snapshot would carry. Not while a snapshot is being taken, nor with
   * slots left free by removals.
   */
  fit(): void {
    this.text.postBuilt();
    this.meta.postBuilt();
    [this.builtDocs, this.lastInSession] = [-1, new Int32Array(0)];
    if (this.taking || this.restoredIds || this.freeSlots.length > 0) return; // (else the docs hold slots 0 .. size - 1)
    const cap = Math.max(64, this.slotsById.size);
    if (cap < this.capacity) this.resize(cap);
    this.text.fit(cap);
    this.meta.fit(cap);
  }

  /** Adds or replaces one doc. vector: the doc's embedding from a remote embedder, if any; scan: scanText of its text. */
  upsert(doc: EngineDoc, vector?: Float32Array, scan: TextScan = scanText(doc.text)): void {
    if (this.taking) this.beforeChange(this.taking);
    this.mutations++;
    let slot = this.idToSlot.get(doc.id);
    if (slot === undefined) {
      slot = this.freeSlots.pop() ?? this.idToSlot.size;
      if (slot >= this.capacity) this.resize(Math.max(slot + 1, this.capacity * 2, 64));
      this.idToSlot.set(doc.id, slot);
    } else {
      this.forgetContextAround(slot);
      this.detachSession(slot);
    }
    this.slotId[slot] = doc.id;
    this.live[slot] = 1;
    this.createdAt[slot] = Number.isFinite(doc.createdAt) ? doc.createdAt : 0;
    this.importance[slot] = Number.isFinite(doc.importance) ? doc.importance : 0.5;
    this.feedback[slot] = Number.isFinite(doc.feedback) ? doc.feedback : 0;
    this.maxCreatedAt = Math.max(this.maxCreatedAt, this.createdAt[slot]!);
    this.namesTime[slot] = scan.namesTime ? 1 : 0;
    this.firstPerson[slot] = scan.firstPerson ? 1 : 0;
    this.endsAsking[slot] = scan.endsAsking ? 1 : 0;
    this.maxImportanceDev = Math.max(this.maxImportanceDev, Math.abs(this.importance[slot]! - 0.5));
    this.maxAbsFeedback = Math.max(this.maxAbsFeedback, Math.abs(this.feedback[slot]!));

    this.text.add(slot, scan.terms);
    const metaText = [doc.speaker ?? '', ...(doc.tags ?? [])].join(' ');
    this.meta.add(slot, analyze(metaText));

    if (this.embedder) this.ngramVecs.set(this.embedder.embedSync(doc.text), slot * this.dims);
    if (vector) this.vectors.set(slot, vector, this.capacity);
    else this.vectors.delete(slot);

    this.sessionNo[slot] =
      doc.sessionId === null || doc.sessionId === undefined ? -1 : this.internSession(doc.sessionId);
    if (doc.sessionId !== null && doc.sessionId !== undefined) {
      const no = this.sessionNo[slot]!;
      if (this.taking) this.sessions.keep(this.taking, doc.sessionId, no);
      const { ids, at: i } = this.sessions.add(doc.sessionId, no, doc.id);
      const p = i > 0 ? this.idToSlot.get(ids[i - 1]!)! : -1;
      const n = i + 1 < ids.length ? this.idToSlot.get(ids[i + 1]!)! : -1;
      this.prevSlot[slot] = p;
      this.nextSlot[slot] = n;
      if (p >= 0) this.nextSlot[p] = slot;
      if (n >= 0) this.prevSlot[n] = slot;
      this.forgetContextAround(slot);
    }
  }

  /** A text term's id, what BuiltDocs.terms hold. */
  textTermId(term: string): number {
    return this.text.termId(term);
  }

  /**
   * A page of a build from scratch: each doc as upsert adds it (the same index, bit for bit), from columns, into
   * the next slots. Its postings are laid out by `fit`, which must follow the last page before anything else.
   */
  addBuilt(docs: BuiltDocs): void {
    const n = docs.ids.length;
    let slot = this.slotsById.size;
    // Every doc so far one of this build's (and none after fit), the ids ascending.
    if (this.builtDocs !== slot || this.taking || this.restoredIds)
      throw new Error('a build from scratch of an index in use');
    if (slot + n > this.capacity) this.resize(Math.max(slot + n, this.capacity * 2, 64));
    const sessionNos = docs.sessionNames.map((name) => this.internSession(name));
    if (this.sessionNames.length > this.lastInSession.length)
      this.lastInSession = Int32Array.from(
        { length: 2 * this.sessionNames.length },
        (_, i) => this.lastInSession[i] ?? -1,
      );
    const metaIds = docs.speakerTags.map((text) => Int32Array.from(analyze(text), (term) => this.meta.termId(term)));
    for (let i = 0, from = 0; i < n; i++, slot++) {
      const id = docs.ids[i]!;
      if (!(id > (slot > 0 ? this.slotId[slot - 1]! : -Infinity))) throw new Error('a built doc out of order');
      this.slotsById.set(id, slot);
      this.slotId[slot] = id;
      this.live[slot] = 1;
      const [createdAt, importance, feedback] = [docs.createdAt[i]!, docs.importance[i]!, docs.feedback[i]!];
      this.createdAt[slot] = Number.isFinite(createdAt) ? createdAt : 0;
      this.importance[slot] = Number.isFinite(importance) ? importance : 0.5;
      this.feedback[slot] = Number.isFinite(feedback) ? feedback : 0;
      this.maxCreatedAt = Math.max(this.maxCreatedAt, this.createdAt[slot]!);
      const flags = docs.flags[i]!;
      this.namesTime[slot] = flags & TEXT_FLAGS.namesTime ? 1 : 0;
      this.firstPerson[slot] = flags & TEXT_FLAGS.firstPerson ? 1 : 0;
      this.endsAsking[slot] = flags & TEXT_FLAGS.endsAsking ? 1 : 0;
      this.maxImportanceDev = Math.max(this.maxImportanceDev, Math.abs(this.importance[slot]! - 0.5));
      this.maxAbsFeedback = Math.max(this.maxAbsFeedback, Math.abs(this.feedback[slot]!));
      this.text.addBuilt(slot, docs.terms, from, (from = docs.termEnds[i]!));
      const meta = metaIds[docs.speakerTagsOf[i]!]!;
      this.meta.addBuilt(slot, meta, 0, meta.length);
      if (this.embedder) this.ngramVecs.set(this.embedder.embedSync(docs.texts[i]!), slot * this.dims);
      const vector = docs.vectors.get(id);
      if (vector) this.vectors.set(slot, vector, this.capacity);
      const session = docs.sessions[i]!;
      if (session < 0) continue;
      // Ids ascending: the doc follows the session's last so far.
      const no = sessionNos[session]!;
      this.sessionNo[slot] = no;
      this.sessions.add(docs.sessionNames[session]!, no, id);
      const before = this.lastInSession[no]!;
      this.prevSlot[slot] = before;
      if (before >= 0) this.nextSlot[before] = slot;
      this.lastInSession[no] = slot;
    }
    this.mutations += n;
    this.builtDocs += n;
  }

  /**
   * Before and after the session links around a slot change: the kept context postings of every
   * term of the docs within the context window of it, whose spread over their neighbours may change.
   */
  private forgetContextAround(slot: number): void {
    const window = this.weights.contextWindow;
    this.text.forgetContext(slot);
    for (let d = 1, a = this.prevSlot[slot]!, b = this.nextSlot[slot]!; d <= window && (a >= 0 || b >= 0); d++) {
      if (a >= 0) {
        this.text.forgetContext(a);
        a = this.prevSlot[a]!;
      }
      if (b >= 0) {
        this.text.forgetContext(b);
        b = this.nextSlot[b]!;
      }
    }
  }

  private internSession(sid: string): number {
    let n = this.sessionNos.get(sid);
    if (n === undefined) {
      // Never reused: a number costs a few bytes after its session is gone (and its name forgotten: detachSession).
      n = this.sessionNames.length;
      this.sessionNos.set(sid, n);
      this.sessionNames.push(sid);
      this.sessionNameBytes += stringBytes(sid);
      if (n >= this.sessionBuf.length) {
        const g = new Float64Array(this.sessionBuf.length * 2);
        g.set(this.sessionBuf);
        this.sessionBuf = g;
      }
    }
    return n;
  }

  /** `removing`: the doc is forgotten, and with its session's last doc the session's name (user content) goes. */
  private detachSession(slot: number, removing = false): void {
    const no = this.sessionNo[slot]!;
    if (no < 0) return;
    const s = this.sessionNames[no]!;
    if (this.taking) this.sessions.keep(this.taking, s, no);
    if (this.sessions.delete(s, no, this.slotId[slot]!) && removing) {
      this.sessionNos.delete(s);
      this.sessionNameBytes -= stringBytes(s);
      this.sessionNames[no] = `\u0000${no}`;
    }
    this.sessionNo[slot] = -1;
    const p = this.prevSlot[slot]!;
    const n = this.nextSlot[slot]!;
    if (p >= 0) this.nextSlot[p] = n;
    if (n >= 0) this.prevSlot[n] = p;
    this.prevSlot[slot] = -1;
    this.nextSlot[slot] = -1;
  }

  remove(id: number): void {
    const slot = this.idToSlot.get(id);
    if (slot === undefined) return;
    if (this.taking) this.beforeChange(this.taking);
    this.mutations++;
    this.forgetContextAround(slot);
    this.detachSession(slot, true);
    this.text.remove(slot);
    this.meta.remove(slot);
    this.live[slot] = 0;
    this.vectors.delete(slot);
    this.idToSlot.delete(id);
    this.freeSlots.push(slot);
  }

  /** Attaches (or replaces) a held doc's vector, as an upsert with it would; false when the doc is not held. */
  setVector(id: number, vector: Float32Array): boolean {
    const slot = this.idToSlot.get(id);
    if (slot === undefined) return false;
    if (this.taking) this.beforeChange(this.taking);
    this.mutations++;
    this.vectors.set(slot, vector, this.capacity);
    return true;
  }

  /**
   * The index in binary form (engine/snapshot.ts), for `MemoryIndex.restore`: what it holds and
   * how it is laid out, so that a restored index answers every search exactly as this one does.
   */
  snapshot(): Uint8Array {
    return runNow(this.snapshotSteps(false));
  }

  /**
   * snapshot() a step at a time (engine/snapshot.ts, runInSlices): the same bytes, of the index as
   * it was at the first step, however it changes between steps. Until the last step, a change first
   * keeps what it is about to change of what the snapshot has yet to read: the slot arrays (copied
   * in once), the docs' order, a session's ids, a term's postings, a doc's terms. One at a time per
   * index. `track` false: nothing changes between steps (snapshot()), so nothing is kept.
   */
  *snapshotSteps(track = true): Steps<Uint8Array> {
    if (track && this.taking) throw new Error('a snapshot of this index is already being taken');
    const w = new SnapshotWriter();
    const [ids, slots] = [new Float64Array(this.idToSlot.size), new Int32Array(this.idToSlot.size)];
    const names = [...this.sessionNames];
    const v = this.vectors;
    w.value(this.capacity).value(this.dims).value([v.dims, v.lists, v.count, v.trainedAt]).value(names);
    w.value([this.maxCreatedAt, this.maxImportanceDev, this.maxAbsFeedback]);
    w.array(ids).array(slots).array(Int32Array.from(this.freeSlots));
    w.live(this.slotId)
      .live(this.live)
      .live(this.createdAt)
      .live(this.namesTime)
      .live(this.firstPerson)
      .live(this.endsAsking);
    w.live(this.importance).live(this.feedback).live(this.sessionNo).live(this.prevSlot).live(this.nextSlot);
    w.live(this.ngramVecs).live(v.codes).live(v.signs).live(v.scale).live(v.has).live(v.list).live(v.centroids);
    const take: IndexTake = {
      writer: w,
      ids,
      slots,
      idsRead: 0,
      entries: this.idToSlot.entries(),
      names,
      sessions: new Map(),
      sessionsRead: 0,
      // Each interned session's ids, ascending (empty for a session with no doc left).
      offsets: w.reserve('i32', names.length + 1),
      members: w.reserve('f64', this.sessions.count),
      text: this.text.beginSnapshot(w, track),
      meta: this.meta.beginSnapshot(w, track),
    };
    if (track) this.taking = take;
    try {
      yield;
      while (take.entries) {
        readIds(take, STEP);
        yield;
      }
      // The snapshot's bytes (their allocation may start a collection: a step of its own), its parts written in place.
      w.layout();
      yield;
      const [offsets, members] = [w.view(take.offsets, 'i32'), w.view(take.members, 'f64')];
      while (take.sessionsRead < names.length) {
        this.sessions.write(take, offsets, members);
        yield;
      }
      if (offsets[names.length] !== members.length) throw new Error('index snapshot does not add up');
      yield* this.text.snapshotSteps(take.text, w);
      yield* this.meta.snapshotSteps(take.meta, w);
      return yield* w.finishSteps();
    } finally {
      if (this.taking === take) this.taking = null;
      this.text.endSnapshot(take.text);
      this.meta.endSnapshot(take.meta);
    }
  }

  /** Before the index changes, with a snapshot being taken: what it has yet to read of what may change (maps: now, at once). */
  private beforeChange(take: IndexTake): void {
    take.writer.keep();
    if (take.entries) readIds(take, Infinity);
  }

  /**
   * An index from `snapshot()` bytes, or from those bytes in pieces cut by `snapshotCuts`, with these
   * options (they must be those it was built with: the vector dimensions are checked). Throws on
   * bytes of another format. Bytes (each piece) that fill their own buffer become the index's memory
   * (no copy): the caller must not use them afterwards.
   */
  static restore(bytes: Uint8Array | readonly Uint8Array[], opts: MemoryIndexOptions = {}): MemoryIndex {
    const index = new MemoryIndex(opts);
    const r = new SnapshotReader(bytes);
    const capacity = r.value<number>();
    if (r.value<number>() !== index.dims) throw new Error('index snapshot of other sub-word vectors');
    const [vectorDims, lists, vectorCount, trainedAt] = r.value<[number, number, number, number]>();
    const sessionNames = r.value<string[]>();
    [index.maxCreatedAt, index.maxImportanceDev, index.maxAbsFeedback] = r
      .value<[number, number, number]>()
      .map((v) => v ?? -Infinity) as [number, number, number];
    index.capacity = capacity;
    index.scratch.norm = new Float64Array(capacity);
    const ids = r.array('f64');
    const slots = r.array('i32');
    index.restoredIds = { ids, slots };
    for (const slot of r.array('i32')) index.freeSlots.push(slot);
    index.slotId = r.array('f64');
    index.live = r.array('u8');
    index.createdAt = r.array('f64');
    index.namesTime = r.array('u8');
    index.firstPerson = r.array('u8');
    index.endsAsking = r.array('u8');
    index.importance = r.array('f32');
    index.feedback = r.array('f32');
    index.sessionNo = r.array('i32');
    index.prevSlot = r.array('i32');
    index.nextSlot = r.array('i32');
    index.ngramVecs = r.array('f32');
    const v = index.vectors;
    [v.dims, v.lists, v.count, v.trainedAt] = [vectorDims, lists, vectorCount, trainedAt];
    v.adopt(r.array('i8'), r.array('u8'));
    v.scale = r.array('f32');
    v.has = r.array('u8');
    v.list = r.array('i32');
    v.centroids = r.array('f32');
    v.rebuildLists(capacity);
    const offsets = r.array('i32');
    const members = r.array('f64');
    index.sessions.count = members.length;
    for (const name of sessionNames) index.internSession(name);
    index.sessions.frozen = { offsets, members, taken: new Uint8Array(sessionNames.length) };
    index.text = Bm25Field.restore(r);
    index.text.contextCacheShare = opts.contextCacheShare ?? DEFAULT_CONTEXT_CACHE_SHARE;
    index.meta = Bm25Field.restore(r);
    return index;
  }

  /** Bytes held (heap-bytes.ts), for the server's LRU-by-bytes: per-slot arrays, maps, sessions, both fields. */
  approxBytes(): number {
    const slotArrays = [
      this.slotId,
      this.live,
      this.createdAt,
      this.namesTime,
      this.firstPerson,
      this.endsAsking,
      this.importance,
      this.feedback,
      this.ngramVecs,
      this.scratch.norm,
      this.prevSlot,
      this.nextSlot,
      this.sessionNo,
      this.sessionBuf,
    ];
    let arrays = this.vectors.approxBytes();
    for (const a of slotArrays) arrays += TYPED_ARRAY_BYTES + a.byteLength;
    const restored = this.restoredIds;
    const ids = restored
      ? restored.ids.byteLength + restored.slots.byteLength
      : this.slotsById.size * MAP_ENTRY_BYTES + ARRAY_SLOT_BYTES * this.freeSlots.length;
    // Interned names (their map, their list); each session's ids.
    const sessions =
      this.sessionNameBytes + this.sessionNos.size * (MAP_ENTRY_BYTES + ARRAY_SLOT_BYTES) + this.sessions.approxBytes();
    return arrays + ids + sessions + this.text.approxBytes() + this.meta.approxBytes();
  }

  search(query: string, opts: SearchOptions): SearchHit[] {
    const k = Math.floor(opts.k);
    if (!(k > 0) || this.size === 0) return [];
    const b = SearchBuffers.forSlots(this.capacity);
    try {
      return rank(this.ranked(b), query, opts, k, b);
    } catch (error) {
      // (A caller's filter that throws.) The buffers are the thread's: zero again for the next search, whatever index.
      b.clear(this.capacity);
      this.sessionBuf.fill(0);
      throw error;
    }
  }

  /** Its fields for the ranking phases (rank.ts), `b` its context scorer's buffers; `mutations`: a shard's whole's. */
  ranked(b: SearchBuffers, mutations = this.mutations): RankedIndex {
    const scratch = this.scratch;
    [scratch.tfSelf, scratch.tfCtx, scratch.termTouched] = [b.tfSelf, b.tfCtx, b.termTouched];
    return {
      weights: this.weights,
      capacity: this.capacity,
      live: this.live,
      slotId: this.slotId,
      createdAt: this.createdAt,
      namesTime: this.namesTime,
      firstPerson: this.firstPerson,
      endsAsking: this.endsAsking,
      importance: this.importance,
      feedback: this.feedback,
      maxCreatedAt: this.maxCreatedAt,
      maxImportanceDev: this.maxImportanceDev,
      maxAbsFeedback: this.maxAbsFeedback,
      sessionNo: this.sessionNo,
      sessionNos: this.sessionNos,
      sessionBuf: this.sessionBuf,
      prevSlot: this.prevSlot,
      nextSlot: this.nextSlot,
      text: this.text,
      meta: this.meta,
      embedder: this.embedder,
      dims: this.dims,
      ngramVecs: this.ngramVecs,
      vectors: this.vectors,
      scratch,
      mutations,
      normKey: this.normKey,
    };
  }

  /** Its fields and count of changes (a sharded owner's statistics sum its shards'). */
  get fields(): { text: Bm25Field; meta: Bm25Field; mutations: number } {
    return { text: this.text, meta: this.meta, mutations: this.mutations };
  }
}
