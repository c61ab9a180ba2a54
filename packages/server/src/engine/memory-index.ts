// One end user's in-memory retrieval index: lexical (BM25), sub-word (built-in
// hashed vectors), optional semantic vectors from a remote embedder, and structural
// features (session neighbours, time, recency, importance, feedback), fused into
// one explainable score.
import { Bm25Field, type ContextScratch, type FieldTake, type SlotList } from './bm25.js';
import { builtinEmbedder, dot, type BuiltinEmbedder } from './embedder.js';
import { parseTemporal } from './temporal.js';
import { analyze } from './text.js';
import { VectorIndex } from './vectors.js';
import { ANSWER_TYPES } from './answer-types.js';
import { runNow, SnapshotReader, SnapshotWriter, type Steps } from './snapshot.js';
import type { EngineDoc, Explanation, SearchHit, SearchOptions } from './types.js';

/**
 * Fusion weights. Lexical-type features are divided by the best lexical score of the
 * query so they live on [0, 1] like cosine similarities. Few weights on purpose:
 * each one was chosen on one LoCoMo conversation and checked on the other.
 */
export interface RankingWeights {
  lexical: number;
  /** Lexical evidence of the turns next to a doc in its session (question -> answer pairs). */
  context: number;
  /** Decay of context evidence per turn of distance. */
  contextDecay: number;
  /** How many turns on each side count as context. */
  contextWindow: number;
  /**
   * Weight of context evidence a doc receives from the turns *after* it, relative to the
   * turns before it (1 = symmetric). In dialogue an answer follows its question, so a turn
   * is better explained by what was said just before it than by what came next.
   */
  contextBackward: number;
  /** Lexical evidence of the doc's whole session (summed, normalised by the best session). */
  session: number;
  /** Query terms that match the doc's speaker or tags (normalised by the best match). */
  meta: number;
  /**
   * A doc whose speaker/tags match the query also has its word evidence lifted by this
   * fraction (in `meta`): "what has John done" is answered by what John said. Unlike the
   * flat `meta`, it only reorders docs that have word evidence of their own.
   */
  metaEvidence: number;
  /**
   * Text-match weight of a query term that is a speaker name or tag of this index. In
   * conversation, a name inside a turn is mostly the addressee ("Thanks, Caroline!"),
   * so "what did Caroline say" is better judged by who spoke than by who was named.
   */
  metaTermInText: number;
  /**
   * Speaker/tag match of a doc with no first-person word, as a fraction of a full match: in
   * conversation such a turn speaks of the other person ("That's great, Joanna!"), not of
   * its speaker.
   */
  metaNotSelf: number;
  /**
   * A doc's own word evidence when its text ends with a question, as a fraction: the turn
   * that asks is less often the one that tells (the answer follows; `context` carries the
   * question's words to it).
   */
  asking: number;
  /**
   * Pseudo-relevance feedback: terms characteristic of the best first-pass docs are
   * searched as a second query at this weight (0 disables).
   */
  expansion: number;
  expansionDocs: number;
  expansionTerms: number;
  /**
   * A query word no memory holds (a typo, most often) is also searched as its nearest held word
   * (`Bm25Field.nearestTerm`), at this fraction of its weight (0 disables).
   */
  typo: number;
  /**
   * A question word naming a kind of thing ("instruments", "countries") is also searched as the
   * instances of it this index holds (answer-types.ts), each at this fraction of its weight (0 disables).
   */
  answerType: number;
  /** Cosine of built-in hashed vectors (sub-word overlap). */
  ngram: number;
  /** Cosine of remote embedder vectors, when the caller supplies them. */
  semantic: number;
  /** Doc created inside a time range named by the query. */
  time: number;
  /**
   * A "when ..." / "how long ..." question lifts the word evidence of docs whose text names
   * a time ("last week", "in May", "2019") by this fraction (in `time`): the answer to when
   * is usually a turn that says when.
   */
  whenNamesTime: number;
  recency: number;
  recencyHalfLifeDays: number;
  importance: number;
  feedback: number;
}

export const DEFAULT_WEIGHTS: RankingWeights = {
  lexical: 1,
  context: 0.7,
  contextDecay: 0.5,
  contextWindow: 2,
  contextBackward: 0.5,
  session: 0.2,
  meta: 0.3,
  metaEvidence: 0.3,
  metaTermInText: 0.25,
  metaNotSelf: 0.7,
  asking: 0.8,
  expansion: 0.1,
  expansionDocs: 3,
  expansionTerms: 10,
  typo: 0.5,
  answerType: 0.2,
  ngram: 0,
  semantic: 0.6,
  time: 0.6,
  whenNamesTime: 0.4,
  recency: 0.05,
  recencyHalfLifeDays: 30,
  importance: 0.1,
  feedback: 0.1,
};

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
}

/** The server's default too (ENGRAM_INDEX_CONTEXT_CACHE_PERCENT, 200). */
export const DEFAULT_CONTEXT_CACHE_SHARE = 2;

/** Most unique query terms considered; keeps a pasted document from costing a full scan per term. */
const MAX_QUERY_TERMS = 64;
/**
 * Query terms read as typos: one edit from a shorter one is too often another word, and a longer
 * one is an id or junk (its edits would cost a search hundreds of lookups of long strings).
 */
const TYPO_MIN_CHARS = 5;
const TYPO_MAX_CHARS = 24;
const DAY = 86_400_000;
/** Words that place a text in time (for `whenNamesTime`); English, like the temporal parser. */
const TIME_WORDS =
  /\b(?:yesterday|tomorrow|tonight|today|ago|last|next|weeks?|weekend|months?|years?|(?:mon|tues|wednes|thurs|fri|satur|sun)day|january|february|march|april|may|june|july|august|september|october|november|december|\d{4})\b/i;
/** First-person words (English, like TIME_WORDS). */
const FIRST_PERSON = /\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves)\b/i;
/** Text ending with a question mark, an image caption the server appended ignored. */
const ENDS_ASKING = /[?？]\s*(?:\[image:[^\]]*\])?\s*$/;
const WHEN_QUESTION = /^\s*(?:when|how long|what (?:date|time|year|month|day)|which (?:year|month|day))\b/i;
/** Entries (docs' ids, sessions' ids) read or written in a step of a snapshot: well under a millisecond. */
const STEP = 1 << 13;

/** A snapshot being taken in steps (MemoryIndex.snapshotSteps): what changes keep for it. */
interface IndexTake {
  writer: SnapshotWriter;
  /** The docs' ids and slots in the order they were added, read a step at a time (by `idToSlot`'s iterator until done). */
  ids: Float64Array;
  slots: Int32Array;
  idsRead: number;
  entries: Iterator<[number, number]> | null;
  /** Sessions interned when it began, in order. */
  names: string[];
  /** Ids of sessions [0, names.length) changed since it began, as they were then (undefined: none). */
  sessions: Map<number, SessionIds | undefined>;
  /** Sessions [0, sessionsRead) are written. */
  sessionsRead: number;
  /** The writer's parts for the sessions' ids: where each session's begin (one more), the ids. */
  offsets: number;
  members: number;
  text: FieldTake;
  meta: FieldTake;
}

/** A session's ids, ascending: its own array, or a restored index's view of them. */
type SessionIds = readonly number[] | Float64Array;

/** Explanation keys, in the order features are summed. */
export const FEATURES = [
  'lexical',
  'context',
  'expansion',
  'session',
  'meta',
  'ngram',
  'semantic',
  'time',
  'recency',
  'importance',
  'feedback',
] as const;

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
  /** 1 when the doc's text names a time (TIME_WORDS). */
  private namesTime = new Uint8Array(0);
  /** 1 when the doc's text has a first-person word (FIRST_PERSON). */
  private firstPerson = new Uint8Array(0);
  /** 1 when the doc's text ends with a question (ENDS_ASKING). */
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
  private readonly sessions = new Map<string, number[]>(); // session -> ids ascending
  /**
   * A restored index's sessions' ids (session n's at offsets[n]..offsets[n + 1]), each moved into
   * `sessions` when it first changes (taken[n]): a first query after a restart changes none of them.
   */
  private frozenSessions: { offsets: Int32Array; members: Float64Array; taken: Uint8Array } | null = null;
  /** Ids in `sessions`, all sessions together (what a snapshot's list of them holds). */
  private sessionMembers = 0;

  private text = new Bm25Field();
  private meta = new Bm25Field();

  private readonly dims: number;
  private ngramVecs = new Float32Array(0);
  /** Remote-embedder vectors: int8 codes in lists, searched without reading every doc (vectors.ts). */
  private vectors = new VectorIndex();

  /** The context scorer's state: its per-slot buffers are the thread's (SearchBuffers), its cached normalisations this index's. */
  private readonly scratch: ContextScratch = {
    tfSelf: new Float64Array(0),
    tfCtx: new Float64Array(0),
    termTouched: new Int32Array(0),
    norm: new Float64Array(0),
    normStamp: 0,
    stamp: 1,
  };
  /** Changes on every upsert/remove: cached length normalisations (scratch.norm) are then stale. */
  private mutations = 0;
  /** What scratch.stamp's cached norms were computed under. */
  private normKey = { mutations: -1, window: NaN, weight: NaN, decay: NaN, backward: NaN };
  /** A snapshot being taken in steps, for which changes keep what they change (snapshotSteps). */
  private taking: IndexTake | null = null;

  constructor(opts: MemoryIndexOptions = {}) {
    this.weights = { ...DEFAULT_WEIGHTS, ...opts.weights };
    // Vectors cost dims*4 bytes per doc; keep them only when the feature is weighted.
    const e = opts.embedder === undefined ? builtinEmbedder() : opts.embedder;
    this.embedder = this.weights.ngram > 0 ? e : null;
    this.dims = this.embedder?.dimensions ?? 0;
    this.text.contextCacheShare = opts.contextCacheShare ?? DEFAULT_CONTEXT_CACHE_SHARE;
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

  private grow(min: number): void {
    const cap = Math.max(min, this.capacity * 2, 64);
    const g = <T extends Float64Array | Float32Array | Uint8Array | Int32Array | Uint32Array>(a: T, per = 1): T => {
      const n = new (a.constructor as new (len: number) => T)(cap * per);
      n.set(a);
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
    this.vectors.grow(cap);
    // Cached length normalisations: all computed anew.
    this.scratch.norm = new Float64Array(cap);
    this.scratch.normStamp = 0;
    const oldCap = this.capacity;
    this.prevSlot = g(this.prevSlot);
    this.nextSlot = g(this.nextSlot);
    this.sessionNo = g(this.sessionNo);
    this.sessionNo.fill(-1, oldCap);
    this.prevSlot.fill(-1, oldCap);
    this.nextSlot.fill(-1, oldCap);
    this.capacity = cap;
  }

  /** Adds or replaces one doc. vector: the doc's embedding from a remote embedder, if any. */
  upsert(doc: EngineDoc, vector?: Float32Array): void {
    if (this.taking) this.beforeChange(this.taking);
    this.mutations++;
    let slot = this.idToSlot.get(doc.id);
    if (slot === undefined) {
      slot = this.freeSlots.pop() ?? this.idToSlot.size;
      if (slot >= this.capacity) this.grow(slot + 1);
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
    this.namesTime[slot] = TIME_WORDS.test(doc.text) ? 1 : 0;
    this.firstPerson[slot] = FIRST_PERSON.test(doc.text) ? 1 : 0;
    this.endsAsking[slot] = ENDS_ASKING.test(doc.text) ? 1 : 0;
    this.maxImportanceDev = Math.max(this.maxImportanceDev, Math.abs(this.importance[slot]! - 0.5));
    this.maxAbsFeedback = Math.max(this.maxAbsFeedback, Math.abs(this.feedback[slot]!));

    this.text.add(slot, analyze(doc.text));
    const metaText = [doc.speaker ?? '', ...(doc.tags ?? [])].join(' ');
    this.meta.add(slot, analyze(metaText));

    if (this.embedder) this.ngramVecs.set(this.embedder.embedSync(doc.text), slot * this.dims);
    if (vector) this.vectors.set(slot, vector, this.capacity);
    else this.vectors.delete(slot);

    this.sessionNo[slot] =
      doc.sessionId === null || doc.sessionId === undefined ? -1 : this.internSession(doc.sessionId);
    if (doc.sessionId !== null && doc.sessionId !== undefined) {
      if (this.taking) this.keepSession(doc.sessionId);
      let ids = this.ownSessionIds(doc.sessionId);
      if (!ids) this.sessions.set(doc.sessionId, (ids = []));
      // Ids usually arrive in increasing order, so appending is the common case.
      let i = ids.length;
      if (i === 0 || ids[i - 1]! < doc.id) ids.push(doc.id);
      else ids.splice((i = lowerBound(ids, doc.id)), 0, doc.id);
      this.sessionMembers++;
      const p = i > 0 ? this.idToSlot.get(ids[i - 1]!)! : -1;
      const n = i + 1 < ids.length ? this.idToSlot.get(ids[i + 1]!)! : -1;
      this.prevSlot[slot] = p;
      this.nextSlot[slot] = n;
      if (p >= 0) this.nextSlot[p] = slot;
      if (n >= 0) this.prevSlot[n] = slot;
      this.forgetContextAround(slot);
    }
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
      // Never forgotten: an interned number costs a few bytes even after its session is gone.
      n = this.sessionNos.size;
      this.sessionNos.set(sid, n);
      this.sessionNames.push(sid);
      if (n >= this.sessionBuf.length) {
        const g = new Float64Array(this.sessionBuf.length * 2);
        g.set(this.sessionBuf);
        this.sessionBuf = g;
      }
    }
    return n;
  }

  private detachSession(slot: number): void {
    const no = this.sessionNo[slot]!;
    if (no < 0) return;
    const s = this.sessionNames[no]!;
    if (this.taking) this.keepSession(s);
    const ids = this.ownSessionIds(s);
    if (ids) {
      const i = lowerBound(ids, this.slotId[slot]!);
      if (ids[i] === this.slotId[slot]) {
        ids.splice(i, 1);
        this.sessionMembers--;
      }
      if (ids.length === 0) this.sessions.delete(s);
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
    this.detachSession(slot);
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
    const names = [...this.sessionNos.keys()];
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
      members: w.reserve('f64', this.sessionMembers),
      text: this.text.beginSnapshot(w, track),
      meta: this.meta.beginSnapshot(w, track),
    };
    if (track) this.taking = take;
    try {
      yield;
      while (take.entries) {
        this.readIds(take, STEP);
        yield;
      }
      // The snapshot's bytes (their allocation may start a collection: a step of its own), its parts written in place.
      w.layout();
      yield;
      const [offsets, members] = [w.view(take.offsets, 'i32'), w.view(take.members, 'f64')];
      while (take.sessionsRead < names.length) {
        this.writeSessions(take, offsets, members);
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

  /** Before the index changes, with a snapshot being taken: what it has yet to read of what may change. */
  private beforeChange(take: IndexTake): void {
    take.writer.keep();
    // (Reading a map that changes would be wrong: done now, at once.)
    if (take.entries) this.readIds(take, Infinity);
  }

  /** A step of snapshotSteps: the next docs' ids and slots, in the order they were added. */
  private readIds(take: IndexTake, most: number): void {
    const { ids, slots, entries } = take;
    let i = take.idsRead;
    for (const end = Math.min(ids.length, i + most); i < end; i++) {
      const [id, slot] = entries!.next().value!;
      ids[i] = id;
      slots[i] = slot;
    }
    take.idsRead = i;
    if (i === ids.length) take.entries = null;
  }

  /** A step of snapshotSteps: the ids of the next sessions, as they were. */
  private writeSessions(take: IndexTake, offsets: Int32Array, members: Float64Array): void {
    let n = take.sessionsRead;
    for (let work = 0; n < take.names.length && work < STEP; n++) {
      const ids = this.sessionAt(take, n) ?? [];
      if (offsets[n]! + ids.length > members.length) throw new Error('index snapshot does not add up');
      members.set(ids, offsets[n]!);
      offsets[n + 1] = offsets[n]! + ids.length;
      work += 1 + ids.length;
    }
    take.sessionsRead = n;
  }

  /** The ids of the take's n-th session when it began. */
  private sessionAt(take: IndexTake, n: number): SessionIds | undefined {
    return take.sessions.has(n) ? take.sessions.get(n) : this.sessionIds(take.names[n]!);
  }

  /** A session's ids as they are (none: undefined). */
  private sessionIds(name: string): SessionIds | undefined {
    const own = this.sessions.get(name);
    if (own) return own;
    const f = this.frozenSessions;
    const n = this.sessionNos.get(name);
    if (!f || n === undefined || n >= f.taken.length || f.taken[n] || f.offsets[n + 1] === f.offsets[n])
      return undefined;
    return f.members.subarray(f.offsets[n]!, f.offsets[n + 1]!);
  }

  /** A session's ids as an array of its own, to change (none: undefined). */
  private ownSessionIds(name: string): number[] | undefined {
    const own = this.sessions.get(name);
    if (own) return own;
    const frozen = this.sessionIds(name);
    if (!frozen) return undefined;
    this.frozenSessions!.taken[this.sessionNos.get(name)!] = 1;
    const ids = Array.from(frozen);
    this.sessions.set(name, ids);
    return ids;
  }

  /** Before a session's ids change: a snapshot being taken keeps them as they are, if it has yet to read them. */
  private keepSession(name: string): void {
    const take = this.taking!;
    const n = this.sessionNos.get(name);
    if (n === undefined || n >= take.names.length || n < take.sessionsRead || take.sessions.has(n)) return;
    take.sessions.set(n, this.sessionIds(name)?.slice());
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
    v.codes = r.array('i8');
    v.signs = r.array('u8');
    v.scale = r.array('f32');
    v.has = r.array('u8');
    v.list = r.array('i32');
    v.centroids = r.array('f32');
    v.rebuildLists(capacity);
    const offsets = r.array('i32');
    const members = r.array('f64');
    index.sessionMembers = members.length;
    for (const name of sessionNames) index.internSession(name);
    index.frozenSessions = { offsets, members, taken: new Uint8Array(sessionNames.length) };
    index.text = Bm25Field.restore(r);
    index.text.contextCacheShare = opts.contextCacheShare ?? DEFAULT_CONTEXT_CACHE_SHARE;
    index.meta = Bm25Field.restore(r);
    return index;
  }

  /** Approximate heap bytes held, for the server's LRU-by-bytes. */
  approxBytes(): number {
    const arrays =
      this.slotId.byteLength +
      this.live.byteLength +
      this.createdAt.byteLength +
      this.namesTime.byteLength +
      this.firstPerson.byteLength +
      this.endsAsking.byteLength +
      this.importance.byteLength +
      this.feedback.byteLength +
      this.ngramVecs.byteLength +
      this.vectors.approxBytes() +
      this.scratch.norm.byteLength +
      this.prevSlot.byteLength +
      this.nextSlot.byteLength +
      this.sessionNo.byteLength;
    const maps = this.size * 48 + this.sessionNos.size * 64;
    return arrays + maps + this.text.approxBytes() + this.meta.approxBytes();
  }

  search(query: string, opts: SearchOptions): SearchHit[] {
    const k = Math.floor(opts.k);
    if (!(k > 0) || this.size === 0) return [];
    const b = SearchBuffers.forSlots(this.capacity);
    const scratch = this.scratch;
    scratch.tfSelf = b.tfSelf;
    scratch.tfCtx = b.tfCtx;
    scratch.termTouched = b.termTouched;
    try {
      return this.rank(query, opts, k, b);
    } catch (error) {
      // (A caller's filter that throws.) The buffers are the thread's: zero again for the next search, whatever index.
      b.clear(this.capacity);
      this.sessionBuf.fill(0);
      throw error;
    }
  }

  /** search() with the thread's buffers, which it leaves zero. */
  private rank(query: string, opts: SearchOptions, k: number, b: SearchBuffers): SearchHit[] {
    const w = this.weights;
    const now = opts.now ?? Date.now();
    const q = typeof query === 'string' ? query : '';

    // A time phrase becomes a created_at preference and is not matched as words
    // ("last week" should not favour texts containing "week").
    const temporal = opts.temporal === false ? null : parseTemporal(q, now);
    const lexQuery = temporal ? q.replace(temporal.matched, ' ') : q;
    const whenLift = WHEN_QUESTION.test(q) ? Math.max(0, w.whenNamesTime) : 0;
    const qTerms = new Map<string, number>();
    for (const t of analyze(lexQuery)) {
      if (qTerms.size >= MAX_QUERY_TERMS && !qTerms.has(t)) continue;
      qTerms.set(t, (qTerms.get(t) ?? 0) + 1);
    }

    const lex = b.lex;
    const metaS = b.meta;
    const ctx = b.ctx;
    const exp = b.exp;
    const live = this.live;
    const sessionNo = this.sessionNo;
    const filter = opts.filter;
    const onlySession = opts.sessionId;
    const restricted = !!filter || onlySession !== undefined;
    // The session's number (-2, which no doc has, for a session this index has never held).
    const onlyNo = onlySession === undefined ? -2 : (this.sessionNos.get(onlySession) ?? -2);
    const eligible = (slot: number): boolean =>
      live[slot] === 1 &&
      (!restricted ||
        ((onlySession === undefined || sessionNo[slot] === onlyNo) && (!filter || filter(this.slotId[slot]!))));

    const textTerms = new Map<string, number>();
    for (const [t, n] of qTerms) textTerms.set(t, this.meta.df(t) > 0 ? n * w.metaTermInText : n);
    if (w.typo > 0) {
      for (const [t, n] of qTerms) {
        if (t.length < TYPO_MIN_CHARS || t.length > TYPO_MAX_CHARS || this.text.df(t) > 0 || this.meta.df(t) > 0)
          continue;
        const fix = this.text.nearestTerm(t);
        if (fix !== undefined && !qTerms.has(fix)) textTerms.set(fix, (textTerms.get(fix) ?? 0) + n * w.typo);
      }
    }

    if (w.answerType > 0) {
      for (const [t, n] of qTerms) {
        for (const instance of ANSWER_TYPES.get(t) ?? []) {
          if (!qTerms.has(instance) && this.text.df(instance) > 0)
            textTerms.set(instance, (textTerms.get(instance) ?? 0) + n * w.answerType);
        }
      }
    }

    // Expanded-length normalisations are cached per slot across searches until the index
    // or the context parameters change.
    const scratch = this.scratch;
    const nk = this.normKey;
    if (
      nk.mutations !== this.mutations ||
      nk.window !== w.contextWindow ||
      nk.weight !== w.context ||
      nk.decay !== w.contextDecay ||
      nk.backward !== w.contextBackward
    ) {
      scratch.stamp = (scratch.stamp + 1) >>> 0;
      if (scratch.stamp === 0) {
        scratch.normStamp = 0;
        scratch.stamp = 1;
      }
      nk.mutations = this.mutations;
      nk.window = w.contextWindow;
      nk.weight = w.context;
      nk.decay = w.contextDecay;
      nk.backward = w.contextBackward;
    }
    const links = {
      prev: this.prevSlot,
      next: this.nextSlot,
      window: w.contextWindow,
      weight: w.context,
      decay: w.contextDecay,
      backward: w.contextBackward,
    };

    // Lexical evidence of the doc itself and of its session neighbours (BM25F-style).
    const touched = b.touched;
    const metaTouched = b.metaTouched;
    const expTouched = b.expTouched;
    touched.n = metaTouched.n = expTouched.n = 0;
    this.text.scoreWithContext(textTerms, links, scratch, lex, ctx, touched);
    this.meta.scoreInto(qTerms, metaS, metaTouched);
    const ta = touched.a;
    const tn = touched.n;
    const ma = metaTouched.a;
    const mn = metaTouched.n;

    // One pass over the first-pass docs: the best ones for feedback, session sums, the
    // normaliser (none of these depends on the expansion scores).
    const doExpansion = w.expansion > 0 && w.expansionDocs > 0 && tn > 0;
    const best = doExpansion ? new TopK(w.expansionDocs) : null;
    // Session-level evidence: a topic discussed across a session lifts all of its turns a little.
    const doSession = w.session > 0;
    const sessionScore = this.sessionBuf;
    const sessionsTouched: number[] = [];
    let maxSession = 0;
    let maxLex = 0;
    {
      // (Hot loops read block-local names: the closures below capture the function's own, which
      // then live in a heap context, a load per use, and numbers an unboxing as well.)
      const lex = b.lex,
        ctx = b.ctx,
        sessionNo = this.sessionNo,
        sessionScore = this.sessionBuf;
      const restricted = !!filter || onlySession !== undefined;
      // Each doc's weighted own + context words, kept by its index in the touched list for the ranking
      // pass (read in order there, not from three per-slot arrays).
      const wordsPart = b.known,
        endsAsking = this.endsAsking;
      const wLex = w.lexical,
        wLexAsking = w.lexical * w.asking,
        wCtx = w.context;
      for (let i = 0; i < tn; i++) {
        const s = ta[i]!;
        const l = lex[s]!;
        const c = ctx[s]!;
        wordsPart[i] = (endsAsking[s] ? wLexAsking : wLex) * l + wCtx * c;
        const lc = l + c;
        if (lc > maxLex) maxLex = lc;
        if (best !== null && lc > best.floor && eligible(s)) best.offer(s, lc);
        if (!doSession) continue;
        const sn = sessionNo[s]!;
        // A touched slot is live (postings and session links hold live slots only): only a filter can exclude it.
        if (sn < 0 || l === 0 || (restricted && !eligible(s))) continue;
        if (sessionScore[sn] === 0) sessionsTouched.push(sn);
        const v = (sessionScore[sn]! += l);
        if (v > maxSession) maxSession = v;
      }
    }
    const sessionNorm = maxSession > 0 ? 1 / maxSession : 0;

    // Pseudo-relevance feedback: the best first-pass docs suggest vocabulary the query
    // lacked (the answer turn often shares words with the turns that match the question).
    if (best !== null) {
      const cand = new Map<string, number>();
      for (const { slot } of best.sorted()) {
        const terms = this.text.termsOf(slot);
        if (!terms) continue;
        let len = 0;
        for (const n of terms.values()) len += n;
        for (const [t, n] of terms) {
          if (qTerms.has(t)) continue;
          cand.set(t, (cand.get(t) ?? 0) + (n / len) * this.text.idf(t));
        }
      }
      const picked = [...cand].sort((a, b) => b[1] - a[1]).slice(0, w.expansionTerms);
      const top = picked[0]?.[1] ?? 0;
      if (top > 0) {
        const expTerms = new Map<string, number>(picked.map(([t, v]) => [t, v / top]));
        // Context evidence for expansion terms lands in the same buffer: one feature.
        this.text.scoreWithContext(expTerms, links, scratch, exp, exp, expTouched);
      }
    }
    const ea = expTouched.a;
    const en = expTouched.n;

    let maxMeta = 0;
    for (let i = 0, metaS = b.meta; i < mn; i++) if (metaS[ma[i]!]! > maxMeta) maxMeta = metaS[ma[i]!]!;
    const metaNorm = maxMeta > 0 ? 1 / maxMeta : 0;

    // Vector features are scored for every live doc, so a doc can be found without sharing a word.
    const qvec = this.embedder && w.ngram > 0 && qTerms.size > 0 ? this.embedder.embedSync(lexQuery) : null;
    const vectors = this.vectors;
    const extQ =
      opts.queryVector && vectors.count > 0 && vectors.dims === opts.queryVector.length && w.semantic > 0
        ? vectors.prepare(unit(opts.queryVector))
        : null;

    const lexNorm = maxLex > 0 ? 1 / maxLex : 0;
    // Expansion is normalised like the first pass unless its own best is stronger (a first pass
    // that matched only a weak word, e.g. a name): then by its own best, so it never outweighs `expansion`.
    let maxExp = 0;
    for (let i = 0, exp = b.exp; i < en; i++) if (exp[ea[i]!]! > maxExp) maxExp = exp[ea[i]!]!;
    const expNorm = maxExp > maxLex ? 1 / maxExp : lexNorm;
    const metaLift = Math.max(0, w.metaEvidence) * metaNorm;
    const firstPerson = this.firstPerson;
    const endsAsking = this.endsAsking;
    const metaOf = (slot: number): number => (firstPerson[slot] ? metaS[slot]! : metaS[slot]! * w.metaNotSelf);
    const askingOf = (slot: number): number => (endsAsking[slot] ? w.asking : 1);
    const halfLife = w.recencyHalfLifeDays * DAY;

    // One fixed-order feature vector per doc; the score is its sum and the explanation
    // lists the same numbers, so contributions always add up to the score.
    const f = new Float64Array(FEATURES.length);
    let supported = false;
    const hasContent = qTerms.size > 0 || temporal !== null;
    const features = (slot: number): number => {
      f[0] = w.lexical * lex[slot]! * lexNorm * askingOf(slot);
      f[1] = w.context * ctx[slot]! * lexNorm;
      f[2] = w.expansion * exp[slot]! * expNorm;
      const words = f[0] + f[1] + f[2];
      const sn = sessionNo[slot]!;
      f[3] = sn < 0 ? 0 : w.session * sessionScore[sn]! * sessionNorm;
      const m = metaOf(slot);
      f[4] = w.meta * m * metaNorm + metaLift * m * words;
      f[5] = qvec ? w.ngram * Math.max(0, dot(qvec, this.ngramVecs, slot * this.dims)) : 0;
      f[6] = extQ && vectors.has[slot] ? w.semantic * Math.max(0, vectors.cosine(extQ, slot)) : 0;
      const t = this.createdAt[slot]!;
      const inPeriod = temporal && t >= temporal.from && t < temporal.to ? w.time : 0;
      const whenTime = this.namesTime[slot] ? whenLift * words : 0;
      f[7] = inPeriod + whenTime;
      f[8] = w.recency * 0.5 ** (Math.max(0, now - t) / halfLife);
      f[9] = w.importance * (this.importance[slot]! - 0.5);
      f[10] = w.feedback * Math.tanh(this.feedback[slot]! / 2);
      // A doc's own evidence: the query's words, speaker/tags, vectors; the period named counts only
      // when the query names nothing else. Its neighbouring turns' words support it too (an answer
      // follows its question). Structural features and priors (session, period, recency, importance,
      // feedback) only reorder docs with evidence of their own; the when-lift is a fraction of the
      // doc's word evidence, so it already does. A query with nothing to be evidence of ("what's
      // new?") is ranked by the priors alone.
      const own = f[0]! + f[4]! + f[5]! + f[6]! + (qTerms.size === 0 ? inPeriod : 0) > 0;
      supported = own || f[1]! > 0;
      if (!own && hasContent) {
        f[3] = f[8] = f[9] = f[10] = 0;
        f[7] = whenTime;
      }
      let s = 0;
      for (let i = 0; i < f.length; i++) s += f[i]!;
      return s;
    };
    const explain = (slot: number): Explanation => {
      features(slot);
      const e: Explanation = {};
      for (let i = 0; i < FEATURES.length; i++) if (f[i] !== 0) e[FEATURES[i]!] = f[i]!;
      return e;
    };

    const top = new TopK(k);
    const requireEvidence = opts.requireEvidence === true;
    const minRelevance = opts.minRelevance ?? 0;
    const offer = (slot: number): void => {
      const score = features(slot);
      if (requireEvidence && !supported) return;
      if (minRelevance > 0 && relevanceOf(score) < minRelevance) return;
      top.offer(slot, score);
    };
    // Remote vectors: the nearest docs by vector (vectors.ts: a bounded read of the nearest lists) are
    // candidates beside those with word evidence; any other doc's semantic part is at most the best
    // cosine found, which the pruning bound below then allows for.
    let semanticBound = 0;
    if (extQ && !opts.exactVectors) {
      const near = vectors.nearest(extQ, Math.max(4 * k, VECTOR_CANDIDATES), this.capacity, eligible);
      for (const slot of near.slots) offer(slot);
      semanticBound = Math.max(0, w.semantic) * Math.max(0, near.cosines[0] ?? 0);
      if (tn === 0 && en === 0) for (let i = 0; i < mn; i++) if (eligible(ma[i]!)) offer(ma[i]!);
    }
    if (qvec || (extQ && opts.exactVectors) || (!extQ && tn === 0 && en === 0)) {
      // Built-in vectors can find a doc that shares no word with the query, and a query
      // without content words ("what's new?") ranks every doc by its priors.
      if (!qvec && !extQ && qTerms.size > 0) {
        // Query words matched nothing but speaker/tags (possibly nothing at all).
        for (let i = 0; i < mn; i++) if (eligible(ma[i]!)) offer(ma[i]!);
      } else {
        for (let s = 0; s < this.capacity; s++) if (live[s] && eligible(s)) offer(s);
      }
    } else {
      // Candidates are the docs with word evidence (own, neighbours', expansion). Exact
      // pruning: every other feature is bounded, so a doc whose word evidence plus that
      // bound cannot beat the current k-th score is skipped without computing the rest.
      // The parts already computed per doc (words, session, meta) are taken exactly; the rest
      // is bounded by what this index holds (a time phrase, its newest doc, its importance
      // and feedback extremes), so the bound is tight and the pruning still exact.
      const wLex = w.lexical;
      const wLexAsking = w.lexical * w.asking;
      const notSelf = w.metaNotSelf;
      const wCtx = w.context;
      const wExp = w.expansion;
      const wSession = w.session;
      const wMeta = w.meta;
      const bound =
        (temporal ? Math.max(0, w.time) : 0) +
        Math.max(0, w.recency) * 0.5 ** (Math.max(0, now - this.maxCreatedAt) / halfLife) +
        Math.abs(w.importance) * this.maxImportanceDev +
        Math.abs(w.feedback) * Math.tanh(this.maxAbsFeedback / 2) +
        semanticBound +
        1e-9;
      const namesTime = this.namesTime;
      // One pass over the first-pass docs: each one's known part (below) is kept by its index in the
      // touched list, and the docs with the best word evidence seed the top k.
      const knownOf = b.known;
      const seed = new TopK(k);
      // Block-local names (see the session pass).
      const lex = b.lex,
        ctx = b.ctx,
        exp = b.exp,
        metaS = b.meta,
        sessionNo = this.sessionNo,
        sessionScore = this.sessionBuf;
      const firstPerson = this.firstPerson,
        endsAsking = this.endsAsking;
      const lexNormL = lexNorm,
        expNormL = expNorm,
        sessionNormL = sessionNorm,
        metaNormL = metaNorm,
        metaLiftL = metaLift,
        whenLiftL = whenLift;
      for (let i = 0; i < tn; i++) {
        const s = ta[i]!;
        // knownOf[i] holds the doc's (asking-weighted) lexical + context words from the session pass.
        const words = knownOf[i]! * lexNormL + wExp * exp[s]! * expNormL;
        if (words > seed.floor && eligible(s)) seed.offer(s, words);
        const ms = metaS[s]!;
        const sn = sessionNo[s]!;
        const m = ms === 0 || firstPerson[s] ? ms : ms * notSelf;
        knownOf[i] =
          words * (1 + metaLiftL * m + (namesTime[s] ? whenLiftL : 0)) +
          (sn < 0 ? 0 : wSession * sessionScore[sn]! * sessionNormL) +
          wMeta * m * metaNormL;
      }
      for (const { slot } of seed.sorted()) offer(slot);
      let min = top.floor;
      for (let i = 0; i < tn; i++) {
        if (knownOf[i]! + bound <= min) continue;
        const s = ta[i]!;
        if (eligible(s)) {
          offer(s);
          min = top.floor;
        }
      }
      // A doc with expansion evidence only and no speaker/tag match has no evidence of its own, so
      // it scores its expansion words plus the when-lift on them and no priors: at most this.
      const bareExpansionCap = Math.abs(wExp) * (1 + whenLiftL) + 1e-9;
      // And none of them scores more than this (its words are expansion's alone; words, meta and
      // session are each normalised to at most 1): once the k-th score is above it, the scan below
      // cannot offer anything, and is not run (a name in the question matches half the turns).
      const metaMost = Math.max(1, notSelf);
      const expansionOnlyCap =
        Math.abs(wExp) * (1 + Math.max(0, w.metaEvidence) * metaMost + whenLiftL) +
        Math.max(0, wSession) +
        Math.max(0, wMeta) * metaMost +
        1e-9;
      if ((mn > 0 || bareExpansionCap > min) && expansionOnlyCap + bound > min) {
        const metaHit = b.metaHit;
        for (let i = 0; i < mn; i++) metaHit[ma[i]!] = 1;
        for (let i = 0; i < en; i++) {
          const s = ea[i]!;
          // No speaker/tag match (metaS[s] is 0) once bare expansion cannot reach the top k: skipped below.
          if (metaHit[s] === 0 && bareExpansionCap <= min) continue;
          const ms = metaS[s]!;
          // A doc with first-pass evidence was already offered in the first pass; offering it
          // again cannot change the top k.
          if ((ms === 0 && bareExpansionCap <= min) || lex[s] !== 0 || ctx[s] !== 0) continue;
          const sn = sessionNo[s]!;
          const words =
            ((endsAsking[s] ? wLexAsking : wLex) * lex[s]! + wCtx * ctx[s]!) * lexNormL + wExp * exp[s]! * expNormL;
          const m = ms === 0 || firstPerson[s] ? ms : ms * notSelf;
          const known =
            words * (1 + metaLiftL * m + (namesTime[s] ? whenLiftL : 0)) +
            (sn < 0 ? 0 : wSession * sessionScore[sn]! * sessionNormL) +
            wMeta * m * metaNormL;
          if (known + bound <= min) continue;
          if (eligible(s)) {
            offer(s);
            min = top.floor;
          }
        }
        for (let i = 0; i < mn; i++) metaHit[ma[i]!] = 0;
      }
    }

    const hits: SearchHit[] = top.sorted().map(({ slot, score }) => {
      const hit: SearchHit = { id: this.slotId[slot]!, score, relevance: relevanceOf(score) };
      if (opts.explain) hit.explanation = explain(slot);
      return hit;
    });

    // Buffers back to zero: slot by slot, or whole when most of it was touched (a sequential fill is cheaper).
    const cap = this.capacity;
    if (tn > cap >>> 3) {
      lex.fill(0, 0, cap);
      ctx.fill(0, 0, cap);
    } else {
      for (let i = 0; i < tn; i++) lex[ta[i]!] = ctx[ta[i]!] = 0;
    }
    for (let i = 0; i < mn; i++) metaS[ma[i]!] = 0;
    if (en > cap >>> 3) exp.fill(0, 0, cap);
    else for (let i = 0; i < en; i++) exp[ea[i]!] = 0;
    for (const sn of sessionsTouched) sessionScore[sn] = 0;
    return hits;
  }
}

/**
 * A search's per-slot working buffers, one set per thread and shared by every index it holds (a
 * search runs to its end before another begins), grown to the largest index searched and zero
 * between searches. Each index had its own (~70 bytes a slot, 9 MB at 100,000 memories, held by
 * every index in the cache, and touched afresh by the first search of a restored one).
 */
class SearchBuffers {
  private static shared: SearchBuffers | null = null;
  lex = new Float64Array(0);
  meta = new Float64Array(0);
  ctx = new Float64Array(0);
  exp = new Float64Array(0);
  /** Per first-pass candidate (by its index in the touched list): its known score part, for ranking. */
  known = new Float64Array(0);
  /** 1 for the slots whose speaker/tags matched the current query (a byte a slot: cheaper to scan than `meta`). */
  metaHit = new Uint8Array(0);
  tfSelf = new Float64Array(0);
  tfCtx = new Float64Array(0);
  // One more than the slots: a slot is written at the end of the list before it is known to be new.
  termTouched = new Int32Array(1);
  readonly touched: SlotList = { a: new Int32Array(0), n: 0 };
  readonly metaTouched: SlotList = { a: new Int32Array(0), n: 0 };
  readonly expTouched: SlotList = { a: new Int32Array(0), n: 0 };
  private slots = 0;

  /** The thread's buffers, for an index of `slots` slots. */
  static forSlots(slots: number): SearchBuffers {
    const b = (SearchBuffers.shared ??= new SearchBuffers());
    if (slots > b.slots) b.grow(Math.max(slots, b.slots * 2));
    return b;
  }

  /** New, zero buffers (the old ones are zero: nothing to carry over). */
  private grow(slots: number): void {
    this.slots = slots;
    this.lex = new Float64Array(slots);
    this.meta = new Float64Array(slots);
    this.ctx = new Float64Array(slots);
    this.exp = new Float64Array(slots);
    this.known = new Float64Array(slots);
    this.metaHit = new Uint8Array(slots);
    this.tfSelf = new Float64Array(slots);
    this.tfCtx = new Float64Array(slots);
    this.termTouched = new Int32Array(slots + 1);
    for (const l of [this.touched, this.metaTouched, this.expTouched]) l.a = new Int32Array(slots);
  }

  /** Zero again over the first `slots`, whatever a search left. */
  clear(slots: number): void {
    for (const a of [this.lex, this.meta, this.ctx, this.exp, this.tfSelf, this.tfCtx]) a.fill(0, 0, slots);
    this.metaHit.fill(0, 0, slots);
    this.touched.n = this.metaTouched.n = this.expTouched.n = 0;
  }
}

/** The fused score mapped onto [0, 1]: 1 - e^(-s), 0 for s <= 0; monotone, so order is kept. */
export function relevanceOf(score: number): number {
  return score > 0 ? 1 - Math.exp(-score) : 0;
}

function lowerBound(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Vector candidates a query takes at least (4 k when more). */
const VECTOR_CANDIDATES = 50;

function unit(v: Float32Array): Float32Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += v[i]! * v[i]!;
  if (n === 0) return v;
  const inv = 1 / Math.sqrt(n);
  return v.map((x) => x * inv);
}

/** Bounded best-k list, best first. Offering the same slot twice keeps one entry. */
class TopK {
  // Parallel arrays (no object per offer): slots[i] scored scores[i], best first.
  private readonly slots: number[] = [];
  private readonly scores: number[] = [];
  /** The score an offer must beat: the k-th best once full, -Infinity before (kept in a field: read per candidate). */
  floor = -Infinity;
  constructor(private readonly k: number) {}
  offer(slot: number, score: number): void {
    if (score <= this.floor) return;
    const slots = this.slots;
    const scores = this.scores;
    let n = slots.length;
    for (let j = 0; j < n; j++) if (slots[j] === slot) return;
    let i = n;
    while (i > 0 && scores[i - 1]! < score) i--;
    slots.push(slot);
    scores.push(score);
    for (let j = n; j > i; j--) {
      slots[j] = slots[j - 1]!;
      scores[j] = scores[j - 1]!;
    }
    slots[i] = slot;
    scores[i] = score;
    n++;
    if (n > this.k) {
      slots.pop();
      scores.pop();
      n--;
    }
    if (n >= this.k) this.floor = scores[n - 1]!;
  }
  sorted(): { slot: number; score: number }[] {
    return this.slots.map((slot, i) => ({ slot, score: this.scores[i]! }));
  }
}
