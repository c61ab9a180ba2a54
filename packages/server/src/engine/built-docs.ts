// A page of docs for a build from scratch (MemoryIndex.addBuilt), column by column: what upsert takes of a doc,
// without an object a doc.

/** The bits of BuiltDocs.flags: what scanText found in a doc's text. */
export const TEXT_FLAGS = { namesTime: 1, firstPerson: 2, mayNameTime: 4, endsAsking: 8 } as const;

export interface BuiltDocs {
  /** Ascending, each above every id the index holds. */
  ids: Float64Array;
  /** The texts (read only for the built-in sub-word vectors, when the index has them; else they may be left out). */
  texts: readonly string[];
  createdAt: Float64Array;
  importance: Float64Array;
  feedback: Float64Array;
  /** TEXT_FLAGS of each doc's text. */
  flags: Uint8Array;
  /** Each doc's terms (scanText's, in order) as the index's term ids (MemoryIndex.textTermId): doc i's from termEnds[i - 1] (0 for the first) to termEnds[i]. */
  terms: Int32Array;
  termEnds: Int32Array;
  /** Each doc's session, as its number in sessionNames (-1: none). */
  sessions: Int32Array;
  sessionNames: readonly string[];
  /** Each doc's speaker and tags, as its number in speakerTags (upsert's `[speaker ?? '', ...tags].join(' ')`). */
  speakerTagsOf: Int32Array;
  speakerTags: readonly string[];
  /** Remote embedder vectors by id, where stored. */
  vectors: ReadonlyMap<number, Float32Array>;
}
